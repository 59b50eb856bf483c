/**
 * Where a hybrid search's time goes, piece by piece, as the store grows (issue 27): on a store kept by
 * `bench/million.ts --keep`, each piece of the two arms run alone over the side-by-side queries on one thread, its CPU
 * per query (process.cpuUsage: this process is one busy thread here) — the vector arm's admission (prepareKnn: the
 * admitted set and its copy for the worker), its Hamming kernel alone, the whole scan (`nearest`: Hamming pass,
 * selection, 4-bit or int8 dot products, top-k), the compact index's re-ranking read from disk, and the full-text arm
 * with the 100 candidates hybrid search asks for. Whole store and scoped (`{root: <query scope>, includeUser: false}`).
 *
 *   node --import tsx bench/search-parts.ts --db path/to/cairn.db --queries queries-N.jsonl [--json out.json]
 *
 * Opens the store as it is: no daemon may be using it.
 */
import * as fs from 'node:fs';
import { loadModel } from '../daemon/src/index/attach';
import { Indexer } from '../daemon/src/index/indexer';
import { signature } from '../daemon/src/store/quantize';
import { Store } from '../daemon/src/store/store';
import { hammingKernel } from '../daemon/src/store/vector-kernels';
import { nearest, newScratch, normalized } from '../daemon/src/store/vector-scan';
import { arg, cpuNow } from './stats';
import { readJsonl } from './workload';

async function main() {
  const store = new Store(arg('db', ''), {});
  const queries = readJsonl<{ q: string; scope: string }>(arg('queries', ''));
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const indexer = new Indexer(store, () => {});
  await indexer.use(embedder);
  const model = indexer.model!;
  store.vectors.load(model);
  const raw: Float32Array[] = [];
  for (const q of queries) raw.push((await embedder.embed([q.q]))[0]);
  const vecs = raw.map(normalized);
  const sigs = vecs.map((v) => signature(v));
  const sc = newScratch();
  const n = queries.length;
  const out: Record<string, unknown> = { vectors: store.vectors.count(model) };
  for (const scoped of [false, true]) {
    const aqs = queries.map((q) => ({ now: Date.now(), limit: 100, ...(scoped ? { scope: { root: q.scope, includeUser: false } } : {}) }));
    const res: Record<string, number> = {};
    const time = (name: string, f: (i: number) => void) => {
      for (let i = 0; i < 10; i++) f(i);
      const c0 = cpuNow();
      for (let i = 0; i < n; i++) f(i);
      res[name] = Math.round(((cpuNow() - c0) / n) * 1000) / 1000;
    };
    const preps = aqs.map((aq) => store.vectors.prepareKnn(model, aq));
    res.admitted = Math.round(preps.reduce((s, p) => s + p.admitted.length, 0) / n);
    res.candidates = Math.round(preps.reduce((s, p) => s + (p.admitted.length > p.exactMax ? p.candidates : p.admitted.length), 0) / n);
    time('admissionMs', (i) => store.vectors.prepareKnn(model, aqs[i]));
    const dist = new Uint16Array(Math.max(...preps.map((p) => p.admitted.length)));
    time('hammingMs', (i) => {
      const p = preps[i];
      if (p.arrays.kmem && p.admitted.length > p.exactMax) hammingKernel(p.arrays.kmem, p.admitted, sigs[i], dist);
    });
    const scan = (i: number) =>
      nearest(preps[i].arrays, sc, preps[i].admitted, vecs[i], 100, () => sigs[i], preps[i].exactMax, preps[i].candidates);
    const hits = preps.map((_, i) => scan(i));
    time('scanMs', scan);
    time('rerankMs', (i) => store.vectors.rerank(model, preps[i].arrays, raw[i], hits[i], 100));
    time('fullTextMs', (i) => store.fullTextArm(queries[i].q, aqs[i]));
    out[scoped ? 'scoped' : 'whole'] = res;
    console.log(scoped ? 'scoped' : 'whole', JSON.stringify(res));
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
  await indexer.stop();
  store.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
