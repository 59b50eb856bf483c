/**
 * Building a DuplicateScan (vector-scan.ts) from the index in memory: many duplicate checks, each against the visible
 * memories of its namespace (VectorTables.prepareDuplicateScan).
 *
 * Duplicate detection (`similarInNamespace`) uses the same index and the same two steps: up to DUP_EXACT_MAX
 * visible memories of the namespace are scored exactly; above it, the check's candidates are the visible memories of
 * the namespace that share an LSH band with its SimHash (the index's buckets, vector-lsh.ts; without them, every
 * visible memory of the namespace), and of those, the DUP_CANDIDATES nearest by Hamming distance are scored exactly.
 * (A Hamming bound derived from the threshold filtered nothing at the thresholds the models need, about 0.66:
 * unrelated memories of one project are often within it, so every check scored the whole namespace.)
 */
import type { Include } from '../protocol/types';
import { quantize, SIG_WORDS } from './quantize';
import type { VectorIndex } from './vector-index';
import { bucketCandidates, newBucketScratch } from './vector-lsh';
import { DUP_RERANK } from './vector-tuning';
import { normalized, type DuplicateScan, type SlotArrays } from './vector-scan';

/** One duplicate check: a vector, its namespace, the memory it belongs to (left out), and its SimHash if known. */
export interface DuplicateCheck {
  vector: Float32Array;
  nsRowid: number;
  exclude: number;
  sig?: Int32Array;
}

/**
 * The scan of `checks` over `ix` (brought up to the change log by the caller). A namespace of at most `exactMax`
 * visible memories at `now` is listed once for all its checks, which score it exactly. A larger one: each check
 * gets its own list, the visible memories of the namespace in the buckets it falls in (`flips`: multi-probe depth),
 * when the index keeps buckets and `flips` is not null; else the whole namespace's visible memories, once. Above
 * `exactMax` listed, a check scores the `candidates` nearest by Hamming distance to its SimHash (computed here when
 * not given and needed). Scope (the namespace) and visibility are decided here, before anything is ranked.
 */
export function buildDuplicateScan(
  ix: VectorIndex,
  arrays: SlotArrays,
  checks: DuplicateCheck[],
  limit: number,
  now: number,
  exactMax: number,
  candidates: number,
  flips: number | null = null,
  rerank = DUP_RERANK,
): DuplicateScan {
  const d = arrays.dimension;
  const inc: Include = {};
  const visible = (s: number) => ix.visible(s, inc, now);
  const useBuckets = ix.buckets !== null && flips !== null;
  // With buckets, per namespace: does it hold more than exactMax visible memories (counted until one past it)?
  // Without, the namespace's list (made once for all its checks) says it.
  const large = new Map<number, boolean>();
  const isLarge = (ns: number): boolean => {
    let big = large.get(ns);
    if (big === undefined) {
      let n = 0;
      for (const s of ix.namespaceSlots(ns)) if (visible(s) && ++n > exactMax) break;
      large.set(ns, (big = n > exactMax));
    }
    return big;
  };
  const vectors = new Float32Array(checks.length * d);
  const sigs = new Int32Array(checks.length * SIG_WORDS);
  const group = new Int32Array(checks.length);
  const exclude = new Int32Array(checks.length);
  const lists: Int32Array[] = [];
  const shared = new Map<number, number>();
  let total = 0;
  const sc = newBucketScratch();
  // The namespace's visible memories, listed once for all its checks (not needed when buckets list a large one's).
  const listed = (ns: number): number => {
    let g = shared.get(ns);
    if (g === undefined) {
      shared.set(ns, (g = lists.length));
      const list = ix.visibleIn(ns, now); // a view on the namespace's kept list: copied into `slots` below
      lists.push(list);
      total += list.length;
    }
    return g;
  };
  for (let i = 0; i < checks.length; i++) {
    const c = checks[i];
    exclude[i] = c.exclude;
    const v = normalized(c.vector);
    vectors.set(v, i * d);
    const g = useBuckets ? null : listed(c.nsRowid);
    const big = g === null ? isLarge(c.nsRowid) : lists[g].length > exactMax;
    // The SimHash of the vector (put() returns it; it does not depend on the vector's length, centred or not).
    const sig = big ? (c.sig ?? quantize(v, undefined, arrays.centre).sig) : null;
    if (sig) sigs.set(sig, i * SIG_WORDS);
    if (sig && useBuckets) {
      const got = bucketCandidates(ix.buckets!, sig, c.nsRowid, ix.ns, ix.sig, flips!, visible, sc, ix.size);
      group[i] = lists.length;
      lists.push(got.slice());
      total += got.length;
      continue;
    }
    group[i] = g ?? listed(c.nsRowid);
  }
  const slots = new Int32Array(total);
  const starts = new Int32Array(lists.length + 1);
  let m = 0;
  lists.forEach((l, g) => {
    starts[g] = m;
    slots.set(l, m);
    m += l.length;
  });
  starts[lists.length] = m;
  return { arrays, vectors, sigs, group, exclude, starts, slots, limit, exactMax, candidates, rerank: Math.max(rerank, limit) };
}
