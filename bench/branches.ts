/**
 * Memory branches (issue 26): the three figures of the issue, in process through the Core (no socket).
 *
 *   node --import tsx bench/branches.ts [--memories 100000] [--writes 1000] [--queries 200] [--mode fts|hybrid] [--json out.json]
 *
 * 1. create: branch/create of the `project` subtree (every memory but the user tree), median and p95 of 50 creates
 *    (each discarded again, empty), and the row counts before and after (nothing copied).
 * 2. search: `writes` branch writes (updates of existing memories spread over the subtree, half of them matching the
 *    queries' words), then `queries` full-text searches (mode fts: the in-process Core has no embedder; the vector
 *    arm's extra cost on a branch is one pass over its admitted set to leave out the shadowed rows) in a project
 *    scope, on the base and on the branch, interleaved; p50/p95 and the ratio branch/base, of wall time and of the
 *    process's CPU time per search.
 *    With `--mode hybrid` (or vector) the Core gets the built-in model's indexer and branch embedder (as the daemon
 *    wires them), every memory and branch row is embedded first, and the searches run in that mode: the branch's
 *    extra cost then includes its rows' exact vector arm (store/branch-vectors.ts).
 * 3. merge: branch/merge of those `writes` changes (no conflicts), wall time.
 * The corpus is bench/corpus.ts (deterministic). Speed figures depend on the machine's load: report it with them.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { Embedder } from '../daemon/src/embed';
import { BranchVectors } from '../daemon/src/index/branch-vectors';
import { Indexer } from '../daemon/src/index/indexer';
import { Core } from '../daemon/src/server/core';
import { Store } from '../daemon/src/store/store';
import { memoryAt, queryAt } from './corpus';
import { arg, cpuNow, fmt, now, summarize } from './stats';

const N = Number(arg('memories', '100000'));
const WRITES = Number(arg('writes', '1000'));
const QUERIES = Number(arg('queries', '200'));
const jsonOut = arg('json', '');
const MODE = arg('mode', 'fts') as 'fts' | 'hybrid' | 'vector';

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-bench-branches-'));
  const store = new Store(path.join(dir, 'cairn.db'), { log: () => {} });
  const core = new Core(store);
  let stopVectors = async () => {};
  try {
    let settle = async () => {};
    if (MODE !== 'fts') {
      const e = await Embedder.start({ model: 'builtin', allowRemote: false });
      const ix = new Indexer(store, () => {});
      const bv = new BranchVectors(store, ix, () => {});
      store.onChange(() => ix.kick());
      core.hooks.vectors = ix;
      core.hooks.branchVectors = bv;
      await ix.use(e);
      settle = async () => {
        if (!(await ix.waitFor(store.position(), 600_000)).reached || !(await bv.waitForAll(600_000))) throw new Error('index not ready');
      };
      stopVectors = async () => {
        await bv.stop();
        await ix.stop();
        await e.close();
      };
    }
    const t0 = now();
    for (let i = 0; i < N; i += 500) {
      const items = Array.from({ length: Math.min(500, N - i) }, (_, j) => memoryAt(i + j));
      await core.call(R.upsertBatch, { items });
    }
    store.catchUpFullText();
    const loadMs = now() - t0;
    const count = (t: string) => (store.db.prepare(`SELECT count(*) AS n FROM ${t}`).get() as { n: number }).n;
    const subtree = (
      store.db.prepare(`SELECT count(*) AS n FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path LIKE 'project.%'`).get() as {
        n: number;
      }
    ).n;

    // 1. create
    const before = { memories: count('memories'), branchRows: count('branch_memories') };
    const createMs: number[] = [];
    for (let i = 0; i < 50; i++) {
      const s = now();
      await core.call(R.branchCreate, { name: `bench-${i}`, root: 'project' });
      createMs.push(now() - s);
      await core.call(R.branchDiscard, { name: `bench-${i}` });
    }
    const after = { memories: count('memories'), branchRows: count('branch_memories') };

    // 2. search on a branch with WRITES writes vs the base
    await core.call(R.branchCreate, { name: 'work', root: 'project' });
    const rows = store.db
      .prepare(
        `SELECT n.path AS ns, m.key, m.value FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path LIKE 'project.%' ORDER BY m.rowid`,
      )
      .all() as {
      ns: string;
      key: string;
      value: string;
    }[];
    const step = Math.max(1, Math.floor(rows.length / WRITES));
    let written = 0;
    const tw = now();
    for (let i = 0; i < rows.length && written < WRITES; i += step, written++) {
      const r = rows[i];
      await core.call(R.upsert, { namespace: r.ns, key: r.key, value: `${r.value} (revised on the branch ${written})`, branch: 'work' });
    }
    const writeMs = now() - tw;
    await settle();
    const base: number[] = [];
    const onBranch: number[] = [];
    // CPU time of the process per search too (every thread's: the embedding worker's included): on a loaded machine
    // wall time also counts waiting for a core, CPU time much less so.
    const baseCpu: number[] = [];
    const branchCpu: number[] = [];
    for (let i = 0; i < QUERIES; i++) {
      const q = queryAt(i);
      const params = { query: q.query, mode: MODE, scope: { root: q.project }, limit: 10 };
      let s = now();
      let c = cpuNow();
      await core.call(R.search, params);
      baseCpu.push(cpuNow() - c);
      base.push(now() - s);
      s = now();
      c = cpuNow();
      await core.call(R.search, { ...params, branch: 'work' });
      branchCpu.push(cpuNow() - c);
      onBranch.push(now() - s);
    }
    const sb = summarize(base);
    const sr = summarize(onBranch);
    const cb = summarize(baseCpu);
    const cr = summarize(branchCpu);

    // 3. merge
    const tm = now();
    const m = await core.call(R.branchMerge, { name: 'work', actor: 'bench' });
    const mergeMs = now() - tm;

    const result = {
      mode: MODE,
      memories: N,
      subtree,
      loadMs: Math.round(loadMs),
      create: { ...summarize(createMs), rowsBefore: before, rowsAfter: after },
      branchWrites: { count: written, msPerWrite: writeMs / written },
      search: { base: sb, branch: sr, ratioP50: sr.p50 / sb.p50, ratioMean: sr.mean / sb.mean },
      searchCpu: { base: cb, branch: cr, ratioP50: cr.p50 / cb.p50, ratioMean: cr.mean / cb.mean },
      merge: { applied: m.applied, merged: m.merged, ms: mergeMs },
      loadavg: os.loadavg(),
    };
    console.log(
      `memories ${N} (subtree ${subtree}), loaded in ${fmt(loadMs / 1000, 1)} s; load average ${os
        .loadavg()
        .map((x) => fmt(x, 1))
        .join(' ')}`,
    );
    console.log(
      `create: p50 ${fmt(result.create.p50, 3)} ms, p95 ${fmt(result.create.p95, 3)} ms; rows before ${JSON.stringify(before)} after ${JSON.stringify(after)}`,
    );
    console.log(`branch writes: ${written}, ${fmt(result.branchWrites.msPerWrite, 3)} ms each`);
    console.log(
      `search (${MODE}, project scope, ${QUERIES} queries): base p50 ${fmt(sb.p50, 3)} / p95 ${fmt(sb.p95, 3)} ms; branch p50 ${fmt(sr.p50, 3)} / p95 ${fmt(sr.p95, 3)} ms; ratio p50 ${fmt(result.search.ratioP50)} mean ${fmt(result.search.ratioMean)}`,
    );
    console.log(
      `search CPU: base p50 ${fmt(cb.p50, 3)} / mean ${fmt(cb.mean, 3)} ms; branch p50 ${fmt(cr.p50, 3)} / mean ${fmt(cr.mean, 3)} ms; ratio p50 ${fmt(result.searchCpu.ratioP50)} mean ${fmt(result.searchCpu.ratioMean)}`,
    );
    console.log(`merge: ${m.applied} changes in ${fmt(mergeMs, 1)} ms (merged: ${m.merged})`);
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(result, null, 2));
  } finally {
    await stopVectors();
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
