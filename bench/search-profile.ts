/**
 * Where a search's time goes (issue 8): per-arm timings of memory/search on a store built from the
 * side-by-side workload (`bench/sidebyside.ts`), in process, so each arm is timed on its own.
 *
 *   node --import tsx bench/search-profile.ts --db path/to/cairn.db [--queries queries-100000.jsonl]
 *       [--build corpus-100000.jsonl [--cairn bin/cairn.js]] [--rounds 2] [--slow 10] [--clock wall|cpu] [--json out.json]
 *       [--two-passes] [--knn-here]
 *
 * - `--build`: first load the corpus into `--db` through a daemon (`memory/upsertBatch`, 500 per call,
 *   then `index/wait`), so the store is what the daemon writes; without it `--db` must exist.
 * - then, on a private copy of the store, for each query (unscoped and scoped to the query's scope, limit 25,
 *   as the side-by-side does), after 10 warm-ups, `--rounds` times: query embedding, full-text arm, vector arm
 *   (the scope's admitted set and KNN), fusion + rank facts (`fuse`, as search() reads them: only the candidates
 *   that can still reach the top; `fuseAll`: every candidate's, the plan before, alternating which runs first), row
 *   reads, and the whole `search()` call; p50/p95 per part, the facts read per search, and the slowest queries with
 *   their parts and admitted-set sizes.
 * - `--two-passes`: also time, for each query right after the parts above, the full-text arm and the whole
 *   `search()` with the arm's conjunctive and disjunctive passes as two statements (the plan before they were
 *   merged, search-fts.ts): `fts2` and `search2`, a before/after in one run on one store copy. Which plan runs
 *   first for a query alternates per round (the first one finds colder pages).
 * - `--knn-here`: also time the whole `search()` with the vector arm's KNN on the event loop after the full-text
 *   arm (the query embedded in the worker, then VectorTables.knn here: the plan before the worker ran the KNN while
 *   the full-text arm runs): `searchHere`, alternating which one runs first, as above.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadModel } from '../daemon/src/index/attach';
import { Indexer, type EmbeddingModel } from '../daemon/src/index/indexer';
import { Requests as R } from '../daemon/src/protocol/methods';
import { fuseArms, rankFused, rankFusedLazy } from '../daemon/src/retrieval/fusion';
import { CANDIDATE_FACTOR, HYBRID_MIN_SIMILARITY, MIN_CANDIDATES, search } from '../daemon/src/retrieval/search';
import { ftsArm, type ArmQuery } from '../daemon/src/store/search-fts';
import { Store } from '../daemon/src/store/store';
import { spawnDaemon } from '../test/helpers';
import { arg, cpuNow, fmt, now, summarize } from './stats';
import { storeCopy } from './store-copy';
import { toUpsert, type CorpusRecord } from './workload';

async function build(db: string, corpus: string, bin?: string): Promise<void> {
  const dir = path.dirname(path.resolve(db));
  fs.mkdirSync(dir, { recursive: true });
  const d = await spawnDaemon({ dir, bin, args: ['--model', 'builtin'], env: { CAIRN_ALLOW_REMOTE_MODELS: '0' } });
  if (path.resolve(d.db) !== path.resolve(db)) fs.renameSync(d.db, db);
  try {
    const c = await d.client();
    const lines = fs.readFileSync(corpus, 'utf8').split('\n').filter(Boolean);
    let last = 0;
    for (let i = 0; i < lines.length; i += 500) {
      const items = lines.slice(i, i + 500).map((l) => toUpsert(JSON.parse(l) as CorpusRecord));
      last = (await c.call(R.upsertBatch, { items })).position;
    }
    for (let i = 0; i < 3000 && (await c.call(R.status, {})).embeddings.state !== 'ready'; i++)
      await new Promise((r) => setTimeout(r, 100));
    let reached = false;
    for (let round = 0; round < 10 && !reached; round++)
      reached = (await c.call(R.indexWait, { position: last, timeoutMs: 600_000 })).reached;
    if (!reached) throw new Error(`index did not reach ${last}`);
  } finally {
    await d.stop();
  }
}

async function main() {
  const db = arg('db', '');
  if (!db) throw new Error('--db is required');
  const corpus = arg('build', '');
  if (corpus) await build(db, corpus, arg('cairn', '') || undefined);
  const queriesFile = arg('queries', path.join(path.dirname(corpus || db), 'queries-100000.jsonl'));
  const queries = fs
    .readFileSync(queriesFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { q: string; scope: string });
  const rounds = Number(arg('rounds', '2'));
  // `--clock cpu`: this process's CPU time (user + system; the embedding worker's share included) instead of
  // wall time, for a loaded machine, where wall time mostly measures waiting for a core.
  const cpuClock = arg('clock', 'wall') === 'cpu';
  const clock = cpuClock ? cpuNow : now;
  const slowN = Number(arg('slow', '10'));
  // A private copy: nothing this process does touches the store given.
  const { dir: work, copy } = storeCopy(db, 'cairn-prof-');
  const store = new Store(copy, {});
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const indexer = new Indexer(store, () => {});
  await indexer.use(embedder);
  if (indexer.state !== 'ready') throw new Error(`indexer ${indexer.state}: the store's vectors are not current`);
  const model = indexer.model!;
  const knnHere = process.argv.includes('--knn-here');
  // The same worker without `nearest`: Indexer.search embeds there and runs the KNN on this thread.
  const embedOnly: EmbeddingModel = { info: embedder.info, embed: (t, o) => embedder.embed(t, o), close: async () => {} };
  const indexerHere = new Indexer(store, () => {});
  if (knnHere) await indexerHere.use(embedOnly);
  const limit = 25;
  const candidates = Math.max(limit * CANDIDATE_FACTOR, MIN_CANDIDATES);
  const twoPasses = process.argv.includes('--two-passes');
  const oneStatementArm = store.fullTextArm.bind(store);
  const twoPassArm = (query: string, q: ArmQuery) => ftsArm(store.db, query, q, { twoPasses: true });
  type Row = {
    q: string;
    scope: string | null;
    embed: number;
    fts: number;
    vector: number;
    fuse: number;
    fuseAll: number;
    candidates: number;
    factsRead: number;
    rows: number;
    search: number;
    fts2: number;
    search2: number;
    searchHere: number;
  };
  const out: Record<string, unknown> = {
    clock: cpuClock ? 'cpu' : 'wall',
    db,
    memories: store.feed.memoryCount(),
    vectors: store.vectors.count(model),
  };
  for (const scoped of [false, true]) {
    const rows: Row[] = [];
    for (let round = -1; round < rounds; round++) {
      const qs = round < 0 ? queries.slice(0, 10) : queries;
      for (const qq of qs) {
        const arm: ArmQuery = { scope: scoped ? { root: qq.scope, includeUser: false } : undefined, now: store.now(), limit: candidates };
        let t = clock();
        const [v] = await embedder.embed([qq.q], { priority: true });
        const embed = clock() - t;
        // --two-passes: the arm with two statements right before (odd rounds) or after (even) the one timed here
        let fts2 = 0;
        const timeFts2 = () => {
          if (!twoPasses) return;
          const t0 = clock();
          ftsArm(store.db, qq.q, arm, { twoPasses: true });
          fts2 = clock() - t0;
        };
        if (round % 2 !== 0) timeFts2();
        t = clock();
        const fts = ftsArm(store.db, qq.q, arm);
        const ftsMs = clock() - t;
        if (round % 2 === 0) timeFts2();
        t = clock();
        const vec = store.vectors.knn(model, v, arm);
        const vector = clock() - t;
        // Fusion and ranking as search() does (the facts of the candidates that can still reach the top), and
        // `fuseAll`, every candidate's facts read (the plan before rankFusedLazy), which one first alternating.
        const fuseAllFirst = round % 2 !== 0;
        let fuseAll = 0;
        let factsRead = 0;
        const timeFuseAll = () => {
          const t0 = clock();
          const f = fuseArms(fts, vec, indexer.fusion(), HYBRID_MIN_SIMILARITY);
          rankFused(f, store.rankFacts([...f.keys()]), arm.now, limit);
          fuseAll = clock() - t0;
        };
        if (fuseAllFirst) timeFuseAll();
        t = clock();
        const fused = fuseArms(fts, vec, indexer.fusion(), HYBRID_MIN_SIMILARITY);
        const ranked = rankFusedLazy(
          fused,
          (rowids) => {
            factsRead += rowids.length;
            return store.rankFacts(rowids);
          },
          arm.now,
          limit,
        );
        const fuse = clock() - t;
        if (!fuseAllFirst) timeFuseAll();
        t = clock();
        store.byRowids(ranked.map((x) => x.rowid));
        const rowsMs = clock() - t;
        const params = { query: qq.q, limit, mode: 'hybrid' as const, ...(arm.scope ? { scope: arm.scope } : {}) };
        const timeSearch = async (plan: 'one' | 'two') => {
          store.fullTextArm = plan === 'two' ? twoPassArm : oneStatementArm;
          const t0 = clock();
          await search(store, params, indexer);
          return clock() - t0;
        };
        let search2 = 0;
        let searchHere = 0;
        const timeHere = async () => {
          if (!knnHere) return;
          store.fullTextArm = oneStatementArm;
          const t0 = clock();
          await search(store, params, indexerHere);
          searchHere = clock() - t0;
        };
        if (twoPasses && round % 2 !== 0) search2 = await timeSearch('two');
        if (round % 2 !== 0) await timeHere();
        const whole = await timeSearch('one');
        if (round % 2 === 0) await timeHere();
        if (twoPasses && round % 2 === 0) search2 = await timeSearch('two');
        if (round >= 0)
          rows.push({
            q: qq.q,
            scope: scoped ? qq.scope : null,
            embed,
            fts: ftsMs,
            vector,
            fuse,
            fuseAll,
            candidates: fused.size,
            factsRead,
            rows: rowsMs,
            search: whole,
            fts2,
            search2,
            searchHere,
          });
      }
    }
    const label = scoped ? 'scoped' : 'whole';
    const part: Record<string, unknown> = {};
    const extra = [...(twoPasses ? (['fts2', 'search2'] as const) : []), ...(knnHere ? (['searchHere'] as const) : [])];
    for (const k of ['embed', 'fts', 'vector', 'fuse', 'fuseAll', 'rows', 'search', ...extra] as const) {
      const s = summarize(rows.map((r) => r[k]));
      part[k] = s;
      console.log(`[${label}] ${k.padEnd(6)} p50 ${fmt(s.p50)} p95 ${fmt(s.p95)} mean ${fmt(s.mean)} ms`);
    }
    const sum = (k: 'candidates' | 'factsRead') => rows.reduce((a, r) => a + r[k], 0);
    part.factsRead = { candidates: sum('candidates') / rows.length, read: sum('factsRead') / rows.length };
    console.log(
      `[${label}] facts read per search ${fmt(sum('factsRead') / rows.length)} of ${fmt(sum('candidates') / rows.length)} candidates`,
    );
    const slow = [...rows].sort((a, b) => b.search - a.search).slice(0, slowN);
    for (const r of slow)
      console.log(
        `[${label}] slow ${fmt(r.search)} ms: fts ${fmt(r.fts)} vector ${fmt(r.vector)} embed ${fmt(r.embed)} fuse ${fmt(r.fuse)} rows ${fmt(r.rows)}  ${r.scope ?? ''} "${r.q}"`,
      );
    part.slowest = slow;
    out[label] = part;
  }
  await indexer.stop();
  await indexerHere.stop();
  await embedder.close();
  store.close();
  fs.rmSync(work, { recursive: true, force: true });
  const jsonOut = arg('json', '');
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(out, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
