/**
 * Could a banded bucket lookup over the SimHash signatures replace the whole-store Hamming pass (issue 27)? For the
 * side-by-side queries, the exact top 10 of the whole store (every vector scored in int8) against the slots that a
 * banded index would hand over: those sharing at least one band of `r` bits with the query's signature (b = 256 / r
 * bands; LSH), and, for comparison, the Hamming pre-selection's nearest share of the store. Reports, per scheme, the
 * share of the store it hands over and the recall@10 of the exact top 10 among them (what the arm could keep at most).
 *
 *   node --import tsx bench/simhash-bands.ts --db path/to/cairn.db --queries queries-N.jsonl [--bits 4,8,16]
 *
 * Offline: reads the store's vector index into memory (never written), scans every slot per scheme and query.
 */
import { loadModel } from '../daemon/src/index/attach';
import { Indexer } from '../daemon/src/index/indexer';
import { signature, SIG_BITS, SIG_WORDS } from '../daemon/src/store/quantize';
import { Store } from '../daemon/src/store/store';
import { normalized, pop32 } from '../daemon/src/store/vector-scan';
import { arg } from './stats';
import { readJsonl } from './workload';

async function main() {
  const store = new Store(arg('db', ''), {});
  const queries = readJsonl<{ q: string }>(arg('queries', ''));
  const bits = arg('bits', '4,8,16').split(',').map(Number);
  store.vectors.compactAbove = Infinity; // int8 in memory: the exact reference
  store.vectors.exactMax = Infinity;
  const embedder = await loadModel({ model: 'builtin', allowRemote: false }, () => {});
  const indexer = new Indexer(store, () => {});
  await indexer.use(embedder);
  const model = indexer.model!;
  store.vectors.load(model);
  const ix = (store.vectors as unknown as { index: { sig: Int32Array; size: number; slotOf: { get(r: number): number | undefined } } })
    .index;
  const n = ix.size;
  const rows: Record<string, { share: number; recall: number }> = {};
  const add = (k: string, share: number, recall: number) => {
    const r = (rows[k] ??= { share: 0, recall: 0 });
    r.share += share / queries.length;
    r.recall += recall / queries.length;
  };
  const dist = new Uint16Array(n);
  for (const q of queries) {
    const [raw] = await embedder.embed([q.q]);
    const v = normalized(raw);
    const g = signature(v);
    const top = store.vectors.knn(model, raw, { now: Date.now(), limit: 10 }).map((h) => ix.slotOf.get(h.rowid)!);
    for (let s = 0; s < n; s++) {
      let d = 0;
      for (let w = 0; w < SIG_WORDS; w++) d += pop32(ix.sig[s * SIG_WORDS + w] ^ g[w]);
      dist[s] = d;
    }
    // The Hamming pre-selection's shares (what the arm does today: 5% above 102,400 admitted).
    const sorted = Uint16Array.from(dist).sort();
    for (const share of [0.01, 0.05]) {
      const cut = sorted[Math.floor(n * share)];
      add(`hamming nearest ${share * 100}%`, share, top.filter((s) => dist[s] < cut).length / top.length);
    }
    // Bands: slot s is handed over when one of its bands of r bits equals the query's.
    for (const r of bits) {
      const mask = r === 32 ? -1 : (1 << r) - 1;
      const bands = SIG_BITS / r;
      const hit = (s: number) => {
        for (let b = 0; b < bands; b++) {
          const bit = b * r;
          const w = bit >> 5;
          const sh = bit & 31;
          if ((((ix.sig[s * SIG_WORDS + w] ^ g[w]) >>> sh) & mask) === 0) return true;
        }
        return false;
      };
      let c = 0;
      for (let s = 0; s < n; s++) if (hit(s)) c++;
      add(`${bands} bands of ${r} bits`, c / n, top.filter(hit).length / top.length);
    }
  }
  console.log(`${n} vectors, ${queries.length} queries: share of the store handed over, recall@10 of the exact top 10 in it`);
  for (const [k, r] of Object.entries(rows)) console.log(`| ${k} | ${(r.share * 100).toFixed(1)}% | ${r.recall.toFixed(3)} |`);
  await indexer.stop();
  store.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
