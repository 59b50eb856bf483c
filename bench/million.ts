/**
 * The cost curve 10k → 100k → 1M on the side-by-side workload (issue 27, "A million memories on one machine"):
 * one daemon per size, started as a user would, measured from outside over its socket.
 *
 *   node --import tsx bench/million.ts [--sizes 10000,100000,1000000] [--corpus DIR] [--gen gen_corpus.py]
 *       [--cairn path/to/bin/cairn.js] [--phases import,search,restart,rebuild] [--keep DIR] [--json out.json]
 *       [--hits out-hits.json] [--reuse DIR] [--queries N] [--cpu-prof DIR] [--model ID|DIR]
 *       [--rebuild-model copy|builtin|DIR] [--rebuild-writes on|off]
 *
 * Per size, on a fresh store in private XDG directories, built-in embedding model, remote models off:
 * - import: `memory/upsertBatch`, 500 records per call, then `index/wait` on the last position (vectors) and one
 *   `fts` search (the full-text index is caught up before a search answers): records/s until both indexes hold
 *   everything; the daemon's peak RSS (VmHWM) over it; disk (`.db` + `-wal` + `-shm`) after it and after the
 *   daemon stops;
 * - search: 10 warm-ups and a wait for the vector index (read on first use), then the 200 queries with `limit: 25`, `hybrid` and `fts`, whole store and scoped
 *   (`{root: <query scope>, includeUser: false}`); nearest-rank percentiles of the client round trip, the daemon's
 *   CPU per query (all threads: what a loaded machine moves least); peak RSS;
 * - restart: the daemon stopped and started again on the same store; cold start = from the spawn to the first
 *   answered `hybrid` search (whatever arm answered: `degraded` says when the vector arm was not ready yet), and
 *   to the first one not degraded; RSS idle 10 s later; then the search phase again (RSS under search after a
 *   restart); then stopped and started once more and left alone 10 s (RSS idle before any search: a large store's
 *   vector index is read on first use, indexer-tuning.ts LAZY_LOAD_ABOVE);
 * - rebuild: `index/rebuild` (a full re-embed), the 200 whole-store hybrid queries in a loop while it runs, the
 *   progress (`store/status` embeddings.pending) sampled, and p95 during vs idle; every 5 s one write (namespace
 *   `bench.rebuild-writes`) and `index/wait` on it: how long until a write is searchable by vector, idle vs during,
 *   and before the rebuild a minute of the same searches and writes without it (`--rebuild-writes off`: no writes,
 *   the searches alone). `--rebuild-model copy` (or a model folder) makes it a model switch instead: `index/rebuild`
 *   with that model (`copy`: the built-in model's folder copied under another name, so every memory is re-embedded
 *   at the built-in model's speed; `builtin`: back to the built-in model); the previous model serves the searches
 *   meanwhile. Searches answered `degraded`
 *   (full text only) are counted, and the daemon's peak RSS during it recorded; the disk right after it, and again
 *   once the free pages it left are given back (a store that gives them back, store/status `free`). With writes, a
 *   write during a switch gets the previous model's vector and index/wait answers on it (before c4c73ab: at the end).
 * - writes: whole-store hybrid searches in a loop for a minute without writes, then a minute with one write every 5 s
 *   (as in rebuild, `index/wait` on each), then a minute without again: what writes alone cost the searches.
 *   `--trace`: each of those loops also records every search's start and time, and each write's start (time -1).
 * `uptime`'s load average is recorded with every phase: other work on the machine moves wall-clock figures.
 * `--hits`: the ids of every query's top 10 (hybrid, whole and scoped) for a before/after comparison of results.
 * `--keep DIR`: keep the last size's store there (for profiling). `--cpu-prof DIR`: each daemon's CPU profile
 * (node --cpu-prof: the event loop's, and each worker's in a file of its own) goes there.
 * The disk peer: kube-coder's store measured 135 MiB at 100k (issue 8, same workload); the table scales it linearly.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { StreamClient } from '../daemon/src/client/socket-client';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon, tempDir, ROOT, type SpawnedDaemon } from '../test/helpers';
import { builtinModelPath } from '../daemon/src/embed';
import { RECLAIM_MIN_PAGES } from '../daemon/src/store/wal';
import { cpuMs, diskMiB, loadAvg as load, memoryMiB, perThread, resetPeak, threadCpuMs } from './proc';
import { arg, fmt, now, summarize } from './stats';
import { ensureCorpus, readJsonl, streamRecords, toUpsert, type CorpusQuery } from './workload';

const sizes = arg('sizes', '10000,100000,1000000').split(',').map(Number);
const corpusDir = path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus')));
const gen = path.resolve(ROOT, arg('gen', path.join('..', 'shared', 'bench', 'gen_corpus.py')));
const bin = path.resolve(arg('cairn', path.join(ROOT, 'daemon', 'bin', 'cairn.js')));
const phases = new Set(arg('phases', 'import,search,restart,rebuild').split(','));
const jsonOut = arg('json', '');
const hitsOut = arg('hits', '');
const keep = arg('keep', '');
/** `--reuse DIR`: a store kept by `--keep` (one size): no import, the other phases run on it. */
/** `--queries N`: only the first N of the 200 queries (a loaded machine at 1M). */
const queryCount = Number(arg('queries', '200'));
const reuse = arg('reuse', '');
const cpuProf = arg('cpu-prof', '');
const rebuildWrites = arg('rebuild-writes', 'on') !== 'off';
const tracing = process.argv.includes('--trace');
const rebuildModel = arg('rebuild-model', '');
/** `--model ID|DIR`: the daemon's embedding model (default the built-in one), e.g. a kept store's after a switch. */
const daemonModel = arg('model', 'builtin');
/** kube-coder's disk at 100k on this workload (issue 8); no peer code runs here, so 1M is scaled from it. */
const PEER_DISK_MIB_PER_100K = 135;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Running {
  d: SpawnedDaemon;
  c: StreamClient;
  pid: number;
}
async function start(dir: string): Promise<Running> {
  const env = {
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
  };
  const nodeFlags = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(cpuProf)}`] : [];
  const d = await spawnDaemon({ bin, dir, args: ['--model', daemonModel], env, nodeFlags });
  const c = await d.client();
  return { d, c, pid: d.proc.pid! };
}
async function waitReady(c: StreamClient): Promise<void> {
  for (let i = 0; (await c.call(R.status, {})).embeddings?.state !== 'ready'; i++) {
    if (i > 6000) throw new Error('embedding model not ready after 10 min');
    await sleep(100);
  }
}

async function importPhase(r: Running, size: number) {
  await waitReady(r.c);
  resetPeak(r.pid);
  const cpu0 = cpuMs(r.pid);
  const threads0 = threadCpuMs(r.pid);
  const t0 = now();
  let last = 0;
  let batch: ReturnType<typeof toUpsert>[] = [];
  let lastLog = t0;
  let done = 0;
  for (const rec of streamRecords(path.join(corpusDir, `corpus-${size}.jsonl`))) {
    batch.push(toUpsert(rec));
    if (batch.length === 500) {
      last = (await r.c.call(R.upsertBatch, { items: batch })).position;
      done += batch.length;
      batch = [];
      if (now() - lastLog > 30_000) {
        lastLog = now();
        console.log(`  import ${done}/${size}, ${Math.round(done / ((lastLog - t0) / 1000))}/s, load ${load().join(' ')}`);
      }
    }
  }
  if (batch.length) last = (await r.c.call(R.upsertBatch, { items: batch })).position;
  const writtenMs = now() - t0;
  const diskAfterWrites = diskMiB(r.d.db);
  for (let i = 0; i < 20; i++) if ((await r.c.call(R.indexWait, { position: last, timeoutMs: 600_000 })).reached) break;
  await r.c.call(R.search, { query: 'catch up', mode: 'fts', limit: 1 });
  const caughtUpMs = now() - t0;
  return {
    records: size,
    perSecWritten: Math.round(size / (writtenMs / 1000)),
    perSec: Math.round(size / (caughtUpMs / 1000)),
    indexLagMs: Math.round(caughtUpMs - writtenMs),
    /** The daemon's CPU (all threads) per record: what a loaded machine moves least. */
    daemonCpuMsPerRecord: Math.round(((cpuMs(r.pid) - cpu0) / size) * 1000) / 1000,
    /** The same per thread: the event loop (`main`) and the others by id (embedding and checkpoint workers, V8's helpers). */
    threadCpuMsPerRecord: perThread(threads0, threadCpuMs(r.pid), size),
    peakRssMiB: memoryMiB(r.pid, 'VmHWM'),
    diskMiBAfterWrites: diskAfterWrites,
    diskMiBCaughtUp: diskMiB(r.d.db),
    load: load(),
  };
}

/**
 * A large store's vector index is read on first use (`--reuse`, or after a restart): measured searches start once a
 * hybrid search has the vector arm, or the index loading counts in the first ones' time and CPU (at most 10 min).
 */
async function untilIndexRead(r: Running, queries: CorpusQuery[]): Promise<void> {
  const t0 = now();
  while ((await r.c.call(R.search, { query: queries[0].q, limit: 25 })).degraded && now() - t0 < 600_000) await sleep(100);
}

const hitLog: Record<string, Record<string, string[][]>> = {};
async function searchPhase(r: Running, queries: CorpusQuery[], label: string) {
  resetPeak(r.pid);
  for (let i = 0; i < 10; i++) await r.c.call(R.search, { query: queries[i % queries.length].q, limit: 25 });
  await untilIndexRead(r, queries);
  const out: Record<string, unknown> = { load: load() };
  let degraded = 0;
  for (const mode of ['hybrid', 'fts'] as const)
    for (const scoped of [false, true]) {
      const ms: number[] = [];
      const tops: string[][] = [];
      const cpu0 = cpuMs(r.pid);
      const threads0 = threadCpuMs(r.pid);
      for (const q of queries) {
        const t = now();
        const res = await r.c.call(R.search, {
          query: q.q,
          mode,
          limit: 25,
          ...(scoped ? { scope: { root: q.scope, includeUser: false } } : {}),
        });
        ms.push(now() - t);
        if (res.degraded) degraded++;
        tops.push(res.hits.slice(0, 10).map((h) => h.memory.id));
      }
      // The daemon's CPU per query (all threads): on a loaded machine the wall time is mostly waiting for a core.
      out[`${mode}_${scoped ? 'scoped' : 'whole'}`] = {
        ...summarize(ms),
        daemonCpuMsPerQuery: Math.round(((cpuMs(r.pid) - cpu0) / queries.length) * 100) / 100,
        // The same per thread: the event loop, the embedding worker (the vector arm's scan), and any background work
        // (the checkpoint worker's full-text merge) that ran beside the queries and took a core from them.
        threadCpuMsPerQuery: perThread(threads0, threadCpuMs(r.pid), queries.length),
      };
      if (mode === 'hybrid') (hitLog[label] ??= {})[scoped ? 'scoped' : 'whole'] = tops;
    }
  out.degraded = degraded;
  out.peakRssMiB = memoryMiB(r.pid, 'VmHWM');
  return out;
}

async function restartPhase(dir: string, queries: CorpusQuery[], size: number) {
  const t0 = now();
  const r = await start(dir);
  const socketMs = now() - t0;
  let firstMs = NaN;
  let firstDegraded: string | undefined;
  let fullMs = NaN;
  for (let i = 0; ; i++) {
    try {
      const res = await r.c.call(R.search, { query: queries[i % queries.length].q, limit: 25 });
      if (Number.isNaN(firstMs)) {
        firstMs = now() - t0;
        firstDegraded = res.degraded;
      }
      if (!res.degraded) {
        fullMs = now() - t0;
        break;
      }
    } catch {
      /* not serving yet */
    }
    if (now() - t0 > 600_000) break;
    await sleep(20);
  }
  console.log(
    `  restart: socket ${Math.round(socketMs)} ms, first answer ${Math.round(firstMs)} ms (${firstDegraded ?? 'hybrid'}), first hybrid ${Math.round(fullMs)} ms`,
  );
  await sleep(10_000);
  const idleRssMiB = memoryMiB(r.pid, 'VmRSS');
  console.log(`  restart: idle RSS ${idleRssMiB} MiB`);
  const search = await searchPhase(r, queries, `restart_${size}`);
  // Restarted again and left alone: a store above the lazy-load limit (indexer-tuning.ts LAZY_LOAD_ABOVE) has no vector
  // index in memory until a search or a write needs it.
  await r.d.stop();
  const again = await start(dir);
  await sleep(10_000);
  const unusedRssMiB = memoryMiB(again.pid, 'VmRSS');
  console.log(`  restart: idle RSS before any search ${unusedRssMiB} MiB`);
  return {
    r: again,
    result: {
      unusedRssMiB,
      socketMs: Math.round(socketMs),
      firstSearchMs: Math.round(firstMs),
      firstDegraded,
      firstFullSearchMs: Math.round(fullMs),
      idleRssMiB,
      search,
      load: load(),
    },
  };
}

/** One write and `index/wait` on it: ms until its vector is in (read-your-writes), and whether it got there. */
async function writeAndWait(r: Running, i: number, value: string): Promise<{ ms: number; reached: boolean }> {
  const t = now();
  const u = await r.c.call(R.upsert, { namespace: 'bench.rebuild-writes', key: `w${i}`, value });
  const w = await r.c.call(R.indexWait, { position: u.position, timeoutMs: 120_000 });
  return { ms: now() - t, reached: w.reached };
}

/** Whole-store hybrid searches in a loop for `ms`, with a write (and `index/wait` on it) every 5 s when `writes`. */
async function searchLoop(r: Running, queries: CorpusQuery[], ms: number, writes: { ms: number; reached: boolean }[] | null) {
  const lat: number[] = [];
  // `--trace`: each search's start (ms into the loop) and time, and each write's start, to see when the slow ones are.
  const trace: number[][] = [];
  let degraded = 0;
  for (let i = 0, t0 = now(), last = now(); now() - t0 < ms; i++) {
    const t = now();
    const res = await r.c.call(R.search, { query: queries[i % queries.length].q, limit: 25 });
    lat.push(now() - t);
    if (tracing) trace.push([Math.round(t - t0), Math.round((now() - t) * 10) / 10]);
    if (res.degraded) degraded++;
    if (writes && now() - last > 5000) {
      last = now();
      if (tracing) trace.push([Math.round(last - t0), -1]);
      writes.push(await writeAndWait(r, 1000 + writes.length, queries[i % queries.length].q));
    }
  }
  return { ...summarize(lat), degraded, ...(tracing ? { trace } : {}) };
}

async function writesPhase(r: Running, queries: CorpusQuery[]) {
  await waitReady(r.c);
  await untilIndexRead(r, queries);
  const writes: { ms: number; reached: boolean }[] = [];
  const before = await searchLoop(r, queries, 60_000, null);
  const withWrites = await searchLoop(r, queries, 60_000, writes);
  const after = await searchLoop(r, queries, 60_000, null);
  return { before, withWrites, after, writeToIndexed: summarize(writes.map((w) => w.ms)), load: load() };
}

async function rebuildPhase(r: Running, queries: CorpusQuery[], dir: string) {
  await waitReady(r.c);
  await untilIndexRead(r, queries); // a daemon just started on a large store: its idle figures start once it is in
  let model: string | undefined;
  if (rebuildModel === 'copy') {
    model = path.join(dir, `switch-model-${Date.now()}`);
    fs.cpSync(builtinModelPath(), model, { recursive: true });
  } else if (rebuildModel === 'builtin') model = 'builtin';
  else if (rebuildModel) model = path.resolve(rebuildModel);
  const writesIdle: { ms: number; reached: boolean }[] = [];
  for (let i = 0; i < 5 && rebuildWrites; i++) writesIdle.push(await writeAndWait(r, i, queries[i].q));
  // With writes: the same searches for a minute with a write every 5 s and no rebuild, so what the writes cost the
  // searches by themselves is told apart from what the rebuild costs them.
  const idleWithWrites = rebuildWrites ? await searchLoop(r, queries, 60_000, writesIdle) : summarize([]);
  // Idle reference: the same loop of whole-store hybrid queries before the rebuild.
  const idle: number[] = [];
  for (const q of queries) {
    const t = now();
    await r.c.call(R.search, { query: q.q, limit: 25 });
    idle.push(now() - t);
  }
  const rssMiBBefore = memoryMiB(r.pid, 'VmRSS'); // under the idle searches just run
  resetPeak(r.pid);
  const t0 = now();
  const rb = await r.c.call(R.indexRebuild, model ? { model } : {});
  const during: number[] = [];
  const progress: { s: number; pending: number; state: string; rssMiB: number }[] = [];
  let degraded = 0;
  let lastProgress = 0;
  const writesDuring: { ms: number; reached: boolean }[] = [];
  // The searches that start within a second of the 5-s status read (and write, with writes), apart from the others:
  // what a write costs the searches after it during the switch (a run without writes tells the status read's part).
  const afterMark: number[] = [];
  const apart: number[] = [];
  let lastMark = -Infinity;
  for (let i = 0; ; i++) {
    const q = queries[i % queries.length];
    const t = now();
    const res = await r.c.call(R.search, { query: q.q, limit: 25 });
    during.push(now() - t);
    (t - lastMark < 1000 ? afterMark : apart).push(now() - t);
    if (res.degraded) degraded++;
    // store/status reads the store's counts (a scan of the memories): sampled every 5 s, not to weigh on the searches.
    if (now() - lastProgress > 5000) {
      lastProgress = now();
      const st = (await r.c.call(R.status, {})).embeddings;
      // RSS with it: when during the re-embed the daemon holds most (the peak alone does not say).
      progress.push({
        s: Math.round((now() - t0) / 100) / 10,
        pending: st?.pending ?? -1,
        state: st?.state ?? '?',
        rssMiB: memoryMiB(r.pid, 'VmRSS'),
      });
      if (st?.state === 'ready' && (st.pending ?? 0) === 0) break;
      if (rebuildWrites) writesDuring.push(await writeAndWait(r, 5 + writesDuring.length, q.q));
      lastMark = now();
    }
    if (now() - t0 > 1_800_000) break;
  }
  const sampled = progress.length > 40 ? progress.filter((_, i) => i % Math.ceil(progress.length / 40) === 0) : progress;
  const took = Math.round(now() - t0);
  // Disk right after, and once the daemon gave back the free pages the switch left (the previous model's vectors: at
  // the switch's end since 45da0bd, before at the next sweep, every 60 s), when the store gives them back (store/status `free.reclaims`; a build before it has no `free`).
  const diskMiBAfter = diskMiB(r.d.db);
  const t1 = now();
  let free = (await r.c.call(R.status, {})).free;
  const freeMiBAfter = free ? Math.round(free.bytes / 1048576) : null;
  // Given back means the file is cut too: that takes a checkpoint that copies the whole WAL (the WAL then 0 bytes).
  const walBytes = () => (fs.existsSync(r.d.db + '-wal') ? fs.statSync(r.d.db + '-wal').size : 0);
  while (free?.reclaims && (free.bytes >= RECLAIM_MIN_PAGES * 4096 || walBytes() >= 1 << 20) && now() - t1 < 180_000) {
    await new Promise((res) => setTimeout(res, 2000));
    free = (await r.c.call(R.status, {})).free;
  }
  return {
    queued: rb.queued,
    model: rb.model,
    ms: took,
    peakRssMiBDuring: memoryMiB(r.pid, 'VmHWM'),
    rssMiBBefore,
    diskMiBAfter,
    freeMiBAfter,
    diskMiBReclaimed: free?.reclaims ? diskMiB(r.d.db) : null,
    reclaimedAfterMs: free?.reclaims ? Math.round(now() - t1) : null,
    idle: summarize(idle),
    idleWithWrites,
    during: summarize(during),
    duringWithinASecondOfStatusAndWrite: summarize(afterMark),
    duringOthers: summarize(apart),
    degradedDuring: degraded,
    writeToIndexedIdle: summarize(writesIdle.map((w) => w.ms)),
    writeToIndexedDuring: summarize(writesDuring.map((w) => w.ms)),
    writesReachedDuring: `${writesDuring.filter((w) => w.reached).length}/${writesDuring.length}`,
    progress: sampled,
    load: load(),
  };
}

async function main() {
  ensureCorpus(corpusDir, gen, sizes);
  const results: Record<string, Record<string, unknown>> = {};
  const write = () => {
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ sizes, bin, results }, null, 2));
    if (hitsOut) fs.writeFileSync(hitsOut, JSON.stringify(hitLog));
  };
  for (const size of sizes) {
    const queries = readJsonl<CorpusQuery>(path.join(corpusDir, `queries-${size}.jsonl`)).slice(0, queryCount);
    const res: Record<string, unknown> = (results[size] = {});
    const kept = (keep || reuse) && size === sizes[sizes.length - 1];
    const dir = reuse ? path.resolve(reuse) : kept ? path.resolve(keep) : tempDir('cairn-1m-');
    fs.mkdirSync(dir, { recursive: true });
    let r = await start(dir);
    try {
      if (phases.has('import') && !reuse) {
        res.import = await importPhase(r, size);
        console.log(`[${size}] import`, JSON.stringify(res.import));
      }
      if (phases.has('search')) {
        res.search = await searchPhase(r, queries, `first_${size}`);
        console.log(`[${size}] search`, JSON.stringify(res.search));
      }
      await r.d.stop();
      res.diskMiBStopped = diskMiB(r.d.db);
      res.peerDiskMiB = (PEER_DISK_MIB_PER_100K * size) / 100_000;
      console.log(`[${size}] disk after stop ${res.diskMiBStopped} MiB (kube-coder, scaled: ${res.peerDiskMiB} MiB)`);
      write();
      if (phases.has('restart')) {
        const rs = await restartPhase(dir, queries, size);
        r = rs.r;
        res.restart = rs.result;
        console.log(`[${size}] restart`, JSON.stringify(rs.result));
      } else r = await start(dir);
      if (phases.has('writes')) {
        res.writes = await writesPhase(r, queries);
        console.log(`[${size}] writes`, JSON.stringify(res.writes));
      }
      if (phases.has('rebuild')) {
        res.rebuild = await rebuildPhase(r, queries, dir);
        console.log(`[${size}] rebuild`, JSON.stringify({ ...(res.rebuild as object), progress: undefined }));
      }
      write();
    } finally {
      await r.d.stop();
      if (!kept) fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  write();
  console.log(table(results));
}

function table(results: Record<string, Record<string, any>>): string {
  const sz = Object.keys(results);
  const rows = ['| what | ' + sz.join(' | ') + ' |', '| --- |' + ' --- |'.repeat(sz.length)];
  const p = (s: { p50: number; p95: number }) => `${fmt(s.p50, 1)} / ${fmt(s.p95, 1)}`;
  const row = (what: string, f: (r: any) => string) =>
    rows.push(
      `| ${what} | ${sz
        .map((k) => {
          try {
            return f(results[k]);
          } catch {
            return '—';
          }
        })
        .join(' | ')} |`,
    );
  row('batched import, both indexes caught up (records/s; written)', (r) => `${r.import.perSec} (${r.import.perSecWritten})`);
  row('hybrid whole p50 / p95 ms', (r) => p(r.search.hybrid_whole));
  row('hybrid scoped p50 / p95 ms', (r) => p(r.search.hybrid_scoped));
  row(
    'daemon CPU ms per query: hybrid whole / scoped',
    (r) => `${r.search.hybrid_whole.daemonCpuMsPerQuery} / ${r.search.hybrid_scoped.daemonCpuMsPerQuery}`,
  );
  row('fts whole / scoped p95 ms', (r) => `${fmt(r.search.fts_whole.p95, 1)} / ${fmt(r.search.fts_scoped.p95, 1)}`);
  row('peak RSS MiB: import / search', (r) => `${r.import.peakRssMiB} / ${r.search.peakRssMiB}`);
  row(
    'after a restart: RSS idle before any search / idle after one / under search MiB',
    (r) => `${r.restart.unusedRssMiB} / ${r.restart.idleRssMiB} / ${r.restart.search.peakRssMiB}`,
  );
  row(
    'after a restart: hybrid whole / scoped p95 ms',
    (r) => `${fmt(r.restart.search.hybrid_whole.p95, 1)} / ${fmt(r.restart.search.hybrid_scoped.p95, 1)}`,
  );
  row(
    'cold start to first answered search / first with vectors (ms)',
    (r) => `${r.restart.firstSearchMs} / ${r.restart.firstFullSearchMs}`,
  );
  row(
    'disk MiB (stopped) / kube-coder scaled',
    (r) => `${r.diskMiBStopped} / ${r.peerDiskMiB} (${fmt(r.diskMiBStopped / r.peerDiskMiB, 2)}×)`,
  );
  row(
    'index/rebuild: ms, hybrid p95 idle / during',
    (r) => `${r.rebuild.ms}, ${fmt(r.rebuild.idle.p95, 1)} / ${fmt(r.rebuild.during.p95, 1)}`,
  );
  row(
    'index/rebuild: a write until indexed (index/wait) p50 / p95 ms, idle / during (reached)',
    (r) =>
      `${fmt(r.rebuild.writeToIndexedIdle.p50, 0)} / ${fmt(r.rebuild.writeToIndexedIdle.p95, 0)}, ` +
      `${fmt(r.rebuild.writeToIndexedDuring.p50, 0)} / ${fmt(r.rebuild.writeToIndexedDuring.p95, 0)} (${r.rebuild.writesReachedDuring})`,
  );
  row(
    'hybrid whole p95 ms: no writes / a write every 5 s / no writes',
    (r) => `${fmt(r.writes.before.p95, 1)} / ${fmt(r.writes.withWrites.p95, 1)} / ${fmt(r.writes.after.p95, 1)}`,
  );
  row('load (1 min) at import / search / restart', (r) => `${r.import.load[0]} / ${r.search.load[0]} / ${r.restart.load[0]}`);
  return rows.join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
