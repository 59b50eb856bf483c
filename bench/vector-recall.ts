/**
 * Recall of the vector arm against exact ranking (issue 27): for the side-by-side queries, the arm as it runs
 * (exact up to EXACT_MAX admitted vectors, else the SIMHASH_CANDIDATES nearest by Hamming distance ranked exactly)
 * against every admitted vector ranked exactly, whole store and scoped (`{root: <query scope>, includeUser: false}`).
 *
 *   node --import tsx bench/vector-recall.ts --db path/to/cairn.db [--queries queries-100000.jsonl] [--copy] [--candidates N]
 *       [--share S] [--compact-above N] [--json out.json]
 *
 * Recall@k = |arm's top k ∩ exact top k| / k, averaged over the queries, for k = 10, 25 and 100 (hybrid search asks
 * the arm for 100 candidates at limit 25). `--copy`: work on a private copy of the store (otherwise the store is
 * opened as it is; it must not be in use by a daemon). `--candidates`, `--share`: the Hamming pre-selection's
 * size to try (VectorTables.candidates and candidateShare). `--compact-above N`: the arm's index is compact above N
 * vectors (VectorTables.compactAbove; 0: always): 4-bit vectors in memory, its candidates ranked again from disk.
 * The exact ranking comes from a second, int8 index of the same store (never compact), every admitted vector scored.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadModel } from '../daemon/src/index/attach';
import { Indexer } from '../daemon/src/index/indexer';
import { Store } from '../daemon/src/store/store';
import { arg, now } from './stats';
import { storeCopy } from './store-copy';

async function main() {
  const db = arg('db', '');
  if (!db) throw new Error('--db is required');
  const queries = fs
    .readFileSync(arg('queries', path.join('bench', '.corpus', 'queries-100000.jsonl')), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { q: string; scope: string });
  const copied = process.argv.includes('--copy') ? storeCopy(db, 'cairn-recall-') : null;
  const store = new Store(copied ? copied.copy : db, {});
  if (arg('compact-above', '')) store.vectors.compactAbove = Number(arg('compact-above', ''));
  // The reference: the same store's vectors in an int8 index, every admitted one scored.
  const ref = new Store(copied ? copied.copy : db, {});
  ref.vectors.compactAbove = Infinity;
  ref.vectors.exactMax = Infinity;
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const indexer = new Indexer(store, () => {});
  await indexer.use(embedder);
  if (indexer.state !== 'ready') throw new Error(`indexer ${indexer.state}: the store's vectors are not current`);
  const model = indexer.model!;
  if (arg('candidates', '')) store.vectors.candidates = Number(arg('candidates', ''));
  if (arg('share', '')) store.vectors.candidateShare = Number(arg('share', ''));
  ref.vectors.load(model);
  const ks = [10, 25, 100];
  const out: Record<string, unknown> = {
    db,
    vectors: store.vectors.count(model),
    queries: queries.length,
    exactMax: store.vectors.exactMax,
    candidates: store.vectors.candidates,
    candidateShare: store.vectors.candidateShare,
    compactAbove: store.vectors.compactAbove,
    indexMiB: Math.round((store.vectors.memoryBytes() / 2 ** 20) * 10) / 10,
    int8IndexMiB: Math.round((ref.vectors.memoryBytes() / 2 ** 20) * 10) / 10,
  };
  console.log(JSON.stringify(out));
  for (const scoped of [false, true]) {
    const sums = ks.map(() => 0);
    let armMs = 0;
    let exactMs = 0;
    for (const q of queries) {
      const [v] = await embedder.embed([q.q]);
      const knn = { now: Date.now(), limit: 100, ...(scoped ? { scope: { root: q.scope, includeUser: false } } : {}) };
      let t = now();
      const arm = store.vectors.knn(model, v, knn);
      armMs += now() - t;
      t = now();
      const exact = ref.vectors.knn(model, v, knn);
      exactMs += now() - t;
      ks.forEach((k, i) => {
        const want = new Set(exact.slice(0, k).map((h) => h.rowid));
        if (want.size === 0) {
          sums[i] += 1;
          return;
        }
        sums[i] += arm.slice(0, k).filter((h) => want.has(h.rowid)).length / want.size;
      });
    }
    out[scoped ? 'scoped' : 'whole'] = {
      ...Object.fromEntries(ks.map((k, i) => [`recall@${k}`, Math.round((sums[i] / queries.length) * 1000) / 1000])),
      armMsMean: Math.round((armMs / queries.length) * 100) / 100,
      exactMsMean: Math.round((exactMs / queries.length) * 100) / 100,
    };
    console.log(scoped ? 'scoped' : 'whole', JSON.stringify(out[scoped ? 'scoped' : 'whole']));
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
  await indexer.stop();
  store.close();
  ref.close();
  if (copied) fs.rmSync(copied.dir, { recursive: true, force: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
