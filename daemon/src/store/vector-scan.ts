/**
 * The vector arm's scan over typed arrays: a Hamming pass over SimHash signatures, then exact cosine of the
 * candidates with a bounded top-k heap. Pure arithmetic with no imports of the store, so the same code runs on
 * the daemon's event loop (VectorIndex in vectors.ts) and in the embedding worker (a search's KNN, duplicate checks),
 * over the same memory: the index's vectors, signatures, norms and rowids live in shared memory the worker is handed
 * with every scan. The Hamming pass and the dot products run in the SIMD kernels (vector-kernels.ts) when the index
 * lives in a kernel memory, else in the loops here.
 */
import type { ArmHit } from './search-fts';
import type { StoredAt, StoredVectorReader } from './vector-rerank';
import { q4Bytes, SIG_BITS, SIG_WORDS, signature } from './quantize';
import { dotsKernel, hammingBelowMany, hammingKernel, hammingManyKernel, KERNEL_CHUNK, type KernelMemory } from './vector-kernels';

/**
 * What a scan reads of the vector index: per slot its rowid, 1/‖q‖, int8 vector (dimension each) and signature.
 * A compact index (vector-tuning.ts COMPACT_ABOVE) holds no int8 vectors (`q` empty) but 4-bit ones (`q4`, q4Bytes each,
 * `inv` their 1/‖q4‖): its scan ranks by them and returns rerankPool(limit) hits for the caller to rank again with
 * the stored int8 vectors (VectorTables.rerank).
 */
export interface SlotArrays {
  readonly rowid: Int32Array;
  readonly inv: Float32Array;
  readonly q: Int8Array;
  readonly q4?: Uint8Array | null;
  readonly sig: Int32Array;
  readonly dimension: number;
  /** The memory `q` and `sig` live in, when the SIMD kernels can run (vector-kernels.ts); else the loops below. */
  readonly kmem?: KernelMemory | null;
  /** What the signatures are centred on (VecModel.centre): a query's signature is taken the same way. */
  readonly centre?: Float32Array | null;
}

/**
 * Hits a compact index's scan returns for `limit` asked (ranked by 4-bit vectors), to be ranked again with the
 * stored int8 vectors and cut to `limit`: a true top-`limit` member is lost only if the 4-bit ranking puts it below
 * this many. Up to this many admitted vectors the answer is exactly the int8 ranking.
 */
export const rerankPool = (limit: number): number => Math.max(limit * RERANK_FACTOR, RERANK_MIN);
export const RERANK_FACTOR = 4;
export const RERANK_MIN = 64;

/** Buffers reused between scans of one thread (grown as needed), so a scan allocates nothing per slot. */
export interface Scratch {
  dist: Uint16Array;
  pool: Int32Array;
  /** Exact scores of a pool (the dot-product kernel's output). */
  scores: Float32Array;
}

export const newScratch = (): Scratch => ({
  dist: new Uint16Array(0),
  pool: new Int32Array(0),
  scores: new Float32Array(0),
});

/**
 * The `limit` admitted slots nearest to `v` (normalized), best first; ties by rowid.
 * Up to `exactMax` admitted slots, every one is scored exactly. Above it, a Hamming pass over the admitted
 * slots' signatures (one tight loop, the query's eight signature words in locals) picks the `candidates`
 * nearest by Hamming distance (a counting pass finds the cut-off; slots at the cut-off distance are taken in
 * slot order until the count is reached), and only those are scored exactly.
 */
export function nearest(
  a: SlotArrays,
  sc: Scratch,
  admitted: Int32Array,
  v: Float32Array,
  limit: number,
  sigOf: () => Int32Array,
  exactMax: number,
  candidates: number,
  /** The index in `admitted` of a slot left out (a duplicate check's own memory), -1 for none. */
  skip = -1,
  /** Hits a compact index's scan returns to be ranked again (rerankPool(limit) unless given). */
  pool = rerankPool(limit),
): ArmHit[] {
  const all = admitted.length;
  const n = skip >= 0 ? all - 1 : all;
  let admittedPool = admitted;
  if (n > exactMax) {
    if (sc.dist.length < all) sc.dist = new Uint16Array(all);
    if (sc.pool.length < all) sc.pool = new Int32Array(all);
    const dist = sc.dist;
    const hist = new Int32Array(SIG_BITS + 1);
    // The kernels count the histogram in the Hamming pass itself (a second loop over a million distances took ~2.5 ms).
    if (a.kmem) hammingKernel(a.kmem, admitted, sigOf(), dist, hist);
    else hammingLoop(a.sig, admitted, sigOf(), dist, hist);
    if (skip >= 0) hist[dist[skip]]--; // as if it was never listed
    const { cut, atCut: taken } = cutOff(hist, hammingWant(candidates, limit));
    let atCut = taken;
    const keep = sc.pool;
    let m = 0;
    for (let i = 0; i < all; i++) {
      const d = dist[i];
      if (i !== skip && (d < cut || (d === cut && atCut-- > 0))) keep[m++] = admitted[i];
    }
    admittedPool = keep.subarray(0, m);
  } else if (skip >= 0) {
    if (sc.pool.length < n) sc.pool = new Int32Array(n);
    sc.pool.set(admitted.subarray(0, skip));
    sc.pool.set(admitted.subarray(skip + 1), skip);
    admittedPool = sc.pool.subarray(0, n);
  }
  return scoreTop(a, sc, admittedPool, v, a.q4 ? pool : limit);
}

/** How many slots `nearest` takes by Hamming distance for `limit` hits: `candidates`, or 8 per hit when more. */
export const hammingWant = (candidates: number, limit: number): number => Math.max(candidates, limit * 8);

/**
 * Where `nearest` cuts a list whose distances `hist` counts to keep `want` slots: every slot nearer than `cut`, and
 * the first `atCut` at distance `cut` in list order.
 */
function cutOff(hist: Int32Array, want: number): { cut: number; atCut: number } {
  let cut = 0;
  let below = 0; // slots strictly nearer than `cut`
  for (; cut < SIG_BITS && below + hist[cut] < want; cut++) below += hist[cut];
  return { cut, atCut: want - below };
}

/**
 * Cosine of a normalized float vector with a stored int8 vector (float64 sums, rounded to float32): how a compact
 * index's candidates are ranked again (the JavaScript loop of scoreTop, for one vector).
 */
export function int8Cosine(q: Int8Array, v: Float32Array): number {
  let dot = 0;
  let ss = 0;
  for (let i = 0; i < v.length; i++) {
    dot += q[i] * v[i];
    ss += q[i] * q[i];
  }
  return ss > 0 ? Math.fround(dot / Math.sqrt(ss)) : 0;
}

/** The Hamming pass in JavaScript (no SIMD kernels): distances into `dist`, their counts into `hist`. */
function hammingLoop(S: Int32Array, admitted: Int32Array, g: Int32Array, dist: Uint16Array, hist: Int32Array): void {
  const [g0, g1, g2, g3, g4, g5, g6, g7] = g;
  for (let i = 0; i < admitted.length; i++) {
    const o = admitted[i] << 3; // SIG_WORDS = 8
    const d =
      pop32(S[o] ^ g0) +
      pop32(S[o + 1] ^ g1) +
      pop32(S[o + 2] ^ g2) +
      pop32(S[o + 3] ^ g3) +
      pop32(S[o + 4] ^ g4) +
      pop32(S[o + 5] ^ g5) +
      pop32(S[o + 6] ^ g6) +
      pop32(S[o + 7] ^ g7);
    dist[i] = d;
    hist[d]++;
  }
}

/** `v` scaled to unit length (a zero vector stays zero). */
export function normalized(v: Float32Array): Float32Array {
  let ss = 0;
  for (let i = 0; i < v.length; i++) ss += v[i] * v[i];
  const out = new Float32Array(v.length);
  if (ss === 0) return out;
  const k = 1 / Math.sqrt(ss);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * k;
  return out;
}

/**
 * The vector arm's KNN of a query embedding over an admitted set (VectorTables.knn on the event loop; the embedding
 * worker for a search, `knn` message): `nearest` of the normalized query, its SimHash computed only when the Hamming
 * pass runs. One function, so both threads rank exactly alike.
 */
export function queryNearest(
  a: SlotArrays,
  sc: Scratch,
  admitted: Int32Array,
  query: Float32Array,
  limit: number,
  exactMax: number,
  candidates: number,
): ArmHit[] {
  const v = normalized(query);
  return nearest(a, sc, admitted, v, limit, () => signature(v, a.centre), exactMax, candidates);
}

/**
 * Exact cosine of every slot of `pool` with `v`, the best `limit` kept in a bounded min-heap; best first, ties by
 * rowid. The dot products come from the SIMD kernel (float32 sums) when the index lives in a kernel memory, else
 * from the loop below (float64 sums); either way the score is rounded to float32.
 */
function scoreTop(a: SlotArrays, sc: Scratch, pool: Int32Array, v: Float32Array, limit: number): ArmHit[] {
  const k = Math.min(limit, pool.length);
  if (k <= 0) return [];
  const d = a.dimension;
  const Q = a.q;
  const inv = a.inv;
  const rowid = a.rowid;
  const hs = new Float64Array(k); // heap of the k best so far: scores (min at 0) and their slots
  const hslot = new Int32Array(k);
  let size = 0;
  // The heap's order: lower score first, and at equal scores the larger rowid first (it is the one to drop).
  const worse = (a: number, b: number) => hs[a] < hs[b] || (hs[a] === hs[b] && rowid[hslot[a]] > rowid[hslot[b]]);
  const swap = (a: number, b: number) => {
    const t = hs[a];
    hs[a] = hs[b];
    hs[b] = t;
    const u = hslot[a];
    hslot[a] = hslot[b];
    hslot[b] = u;
  };
  let dots: Float32Array | null = null;
  if (a.kmem || a.q4) {
    if (sc.scores.length < pool.length) sc.scores = new Float32Array(pool.length);
    dots = sc.scores;
    if (a.kmem) dotsKernel(a.kmem, d, pool, v, dots, !!a.q4);
    else dots4Loop(a.q4!, d, pool, v, dots);
  }
  for (let p = 0; p < pool.length; p++) {
    const slot = pool[p];
    let dot: number;
    if (dots) dot = dots[p];
    else {
      const o = slot * d;
      let s0 = 0,
        s1 = 0,
        s2 = 0,
        s3 = 0;
      let i = 0;
      for (; i + 3 < d; i += 4) {
        s0 += Q[o + i] * v[i];
        s1 += Q[o + i + 1] * v[i + 1];
        s2 += Q[o + i + 2] * v[i + 2];
        s3 += Q[o + i + 3] * v[i + 3];
      }
      for (; i < d; i++) s0 += Q[o + i] * v[i];
      dot = s0 + s1 + s2 + s3;
    }
    const score = Math.fround(dot * inv[slot]);
    if (size < k) {
      hs[size] = score;
      hslot[size] = slot;
      for (let j = size++; j > 0;) {
        const par = (j - 1) >> 1;
        if (!worse(j, par)) break;
        swap(j, par);
        j = par;
      }
    } else if (score > hs[0] || (score === hs[0] && rowid[slot] < rowid[hslot[0]])) {
      hs[0] = score;
      hslot[0] = slot;
      for (let j = 0; ;) {
        const l = 2 * j + 1;
        const r = l + 1;
        let w = j;
        if (l < size && worse(l, w)) w = l;
        if (r < size && worse(r, w)) w = r;
        if (w === j) break;
        swap(j, w);
        j = w;
      }
    }
  }
  const out: ArmHit[] = [];
  for (let j = 0; j < size; j++) out.push({ rowid: rowid[hslot[j]], score: hs[j] });
  return out.sort((x, y) => y.score - x.score || x.rowid - y.rowid);
}

/** 4-bit dot products in JavaScript (no kernels): the layout of quantize.ts pack4. */
function dots4Loop(Q4: Uint8Array, d: number, pool: Int32Array, v: Float32Array, out: Float32Array): void {
  const per = q4Bytes(d);
  for (let p = 0; p < pool.length; p++) {
    const o = pool[p] * per;
    let s = 0;
    for (let b = 0; b < per; b++) {
      const x = Q4[o + b];
      const i = (b >> 4) * 32 + (b & 15);
      if (i < d) s += ((x & 15) - 8) * v[i];
      if (i + 16 < d) s += ((x >> 4) - 8) * v[i + 16];
    }
    out[p] = s;
  }
}

/** Bits set in a 32-bit word (a plain function in this module, so the hot loop calls it directly). */
export function pop32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return Math.imul((x + (x >>> 4)) & 0x0f0f0f0f, 0x01010101) >>> 24;
}

/**
 * Many duplicate checks in one message (VectorTables.prepareDuplicateScan builds it on the event loop; the
 * embedding worker runs it). The visible memories of each namespace checked are listed once, as group `g`:
 * `slots[starts[g] .. starts[g + 1])`, decided on the event loop. Check `c` scores `vectors[c]` (normalized)
 * against its group `group[c]` without the memory of rowid `exclude[c]` (itself) with `nearest`, its signature
 * `sigs[c]` used above `exactMax` slots.
 */
export interface DuplicateScan {
  arrays: SlotArrays;
  vectors: Float32Array;
  sigs: Int32Array;
  group: Int32Array;
  exclude: Int32Array;
  starts: Int32Array;
  slots: Int32Array;
  limit: number;
  exactMax: number;
  candidates: number;
  /** Hits per check a compact index's scan returns to be ranked again from disk (vector-tuning.ts DUP_RERANK). */
  rerank: number;
  /** Where a compact index's int8 vectors are stored: the embedding worker ranks the hits again from there. */
  stored?: StoredAt | null;
}

/** The hits of each check of a DuplicateScan, flat: check `c`'s are the next `counts[c]` of rowids / scores. */
export interface DuplicateScanResult {
  counts: Int32Array;
  rowids: Int32Array;
  scores: Float64Array;
  /** Ranked again by the stored int8 vectors (scan.stored) and cut to the scan's limit where the scan ran. */
  reranked?: boolean;
}

/**
 * Checks of one namespace whose Hamming passes run together (nearestCandidates): each chunk of the namespace's
 * signatures is read from memory once for up to this many of them. A bulk import's pass checks hundreds of memories
 * of a few large namespaces; at a million memories a pass over a namespace's scattered slots read ~3 times longer
 * than over the same number in a row (bench/README.md).
 */
export const DUP_PASS_QUERIES = 16;

/** Run a DuplicateScan: each check's best `limit` slots, exactly as `nearest` ranks them. */
export function runDuplicateScan(scan: DuplicateScan, sc: Scratch = newScratch()): DuplicateScanResult {
  const checks = scan.group.length;
  const d = scan.arrays.dimension;
  const selfAt = ownSlots(scan);
  const hits: ArmHit[][] = new Array<ArmHit[]>(checks);
  const listOf = (g: number) => scan.slots.subarray(scan.starts[g], scan.starts[g + 1]);
  const sizeOf = (g: number) => scan.starts[g + 1] - scan.starts[g];
  const sigOf = (c: number) => scan.sigs.subarray(c * SIG_WORDS, (c + 1) * SIG_WORDS);
  // The group's slots in order; the check's own memory is skipped where it is listed (selfAt).
  const one = (c: number) => {
    hits[c] = nearest(
      scan.arrays,
      sc,
      listOf(scan.group[c]),
      scan.vectors.subarray(c * d, (c + 1) * d),
      scan.limit,
      () => sigOf(c),
      scan.exactMax,
      scan.candidates,
      selfAt[c],
      scan.rerank,
    );
  };
  // The checks that take the Hamming pass in the kernels (more than exactMax slots besides their own), by group.
  const km = scan.arrays.kmem;
  const passes = new Map<number, number[]>();
  for (let c = 0; c < checks; c++) {
    const g = scan.group[c];
    const n = sizeOf(g) - (selfAt[c] >= 0 ? 1 : 0);
    if (!km || n <= scan.exactMax) one(c);
    else {
      const list = passes.get(g);
      if (list) list.push(c);
      else passes.set(g, [c]);
    }
  }
  // Checks run together per group, up to DUP_PASS_QUERIES: each takes `nearest`'s candidates (nearestCandidates), or,
  // when the estimate of its bound fell short, the whole pass (`one`).
  const want = hammingWant(scan.candidates, scan.limit);
  for (const [g, cs] of passes) {
    const list = listOf(g);
    for (let i = 0; i < cs.length; i += DUP_PASS_QUERIES) {
      const part = cs.slice(i, i + DUP_PASS_QUERIES);
      const qsigs = new Int32Array(part.length * SIG_WORDS);
      part.forEach((c, j) => qsigs.set(sigOf(c), j * SIG_WORDS));
      const chosen = nearestCandidates(
        km!,
        list,
        qsigs,
        Int32Array.from(part, (c) => selfAt[c]),
        want,
      );
      part.forEach((c, j) => {
        const pool = chosen[j];
        if (pool === null) one(c);
        else
          hits[c] = scoreTop(scan.arrays, sc, pool, scan.vectors.subarray(c * d, (c + 1) * d), scan.arrays.q4 ? scan.rerank : scan.limit);
      });
    }
  }
  return flatHits(hits);
}

/**
 * For each query of `qsigs`, the `want` slots of `list` nearest to it by Hamming distance, leaving out the one at
 * index `skips[j]` (-1: none), chosen as `nearest` chooses them (every slot below the cut-off distance, then those at
 * the cut-off in list order), or null when this way cannot tell (the caller runs nearest's whole pass). A duplicate
 * check keeps ~128 of a namespace's ~100k slots: instead of every slot's distance and a histogram of them (and a
 * pass over the distances to pick them), the first chunk's histogram estimates, for each query, a distance within
 * which about twice `want` slots of the list lie, and the rest of the list is read for the slots within it only
 * (hammingBelowMany). Every slot nearer than the cut-off is within that bound whenever at least `want` slots are
 * (the cut-off is then at most the bound), so the choice is exactly nearest's; when fewer are (the first chunk was
 * nearer to the query than the rest), null.
 */
export function nearestCandidates(
  km: KernelMemory,
  list: Int32Array,
  qsigs: Int32Array,
  skips: Int32Array,
  want: number,
): (Int32Array | null)[] {
  const queries = skips.length;
  const first = Math.min(list.length, KERNEL_CHUNK);
  const H = SIG_BITS + 1;
  const dists = new Uint16Array(queries * first);
  const hists = new Int32Array(queries * H);
  hammingManyKernel(km, list.subarray(0, first), qsigs, dists, hists);
  const bounds = new Int32Array(queries);
  for (let j = 0; j < queries; j++) {
    const hist = hists.subarray(j * H, (j + 1) * H);
    const skip = skips[j];
    if (skip >= 0 && skip < first) hist[dists[j * first + skip]]--;
    // The list's slots at each distance, estimated from the first chunk's (exact when the chunk is the whole list):
    // the bound holds about twice `want` of them, exactly `want` when exact.
    const scale = list.length / first;
    const target = first === list.length ? want : 2 * want;
    let bound = 0;
    for (let seen = hist[0]; bound < SIG_BITS && seen * scale < target;) seen += hist[++bound];
    bounds[j] = bound;
  }
  const rest = first < list.length ? hammingBelowMany(km, list.subarray(first), qsigs, bounds) : null;
  const out: (Int32Array | null)[] = [];
  for (let j = 0; j < queries; j++) {
    const bound = bounds[j];
    const skip = skips[j];
    // The slots within the bound, in list order: the first chunk's, then the rest's.
    const pos: number[] = [];
    const dist: number[] = [];
    for (let i = 0; i < first; i++) {
      const dd = dists[j * first + i];
      if (dd <= bound && i !== skip) {
        pos.push(i);
        dist.push(dd);
      }
    }
    if (rest)
      for (let k = 0; k < rest[j].pos.length; k++) {
        const i = first + rest[j].pos[k];
        if (i !== skip) {
          pos.push(i);
          dist.push(rest[j].dist[k]);
        }
      }
    if (pos.length < want && bound < SIG_BITS) {
      out.push(null); // fewer than `want` within the bound: the cut-off may lie beyond it
      continue;
    }
    // nearest's choice among them: every slot below the cut-off, then those at the cut-off in list order.
    const hist = new Int32Array(H);
    for (const dd of dist) hist[dd]++;
    const { cut, atCut: taken } = cutOff(hist, want);
    let atCut = taken;
    const chosen: number[] = [];
    for (let k = 0; k < pos.length; k++) {
      const dd = dist[k];
      if (dd < cut || (dd === cut && atCut-- > 0)) chosen.push(list[pos[k]]);
    }
    out.push(Int32Array.from(chosen));
  }
  return out;
}

/** Each check's hits, flat (DuplicateScanResult); duplicateHits reads them back. */
export function flatHits(hits: ArmHit[][]): DuplicateScanResult {
  const counts = new Int32Array(hits.length);
  const rowids: number[] = [];
  const scores: number[] = [];
  for (let c = 0; c < hits.length; c++) {
    counts[c] = hits[c].length;
    for (const h of hits[c]) {
      rowids.push(h.rowid);
      scores.push(h.score);
    }
  }
  return { counts, rowids: Int32Array.from(rowids), scores: Float64Array.from(scores) };
}

/**
 * Run a DuplicateScan where its int8 vectors can be read (the embedding worker, `reader`): a compact index's hits
 * are ranked again from the stored vectors right away (scan.stored), as VectorTables.duplicateResults would on the
 * event loop, and marked `reranked`; when they cannot be read, the event loop does it.
 */
export function runDuplicateScanReranked(scan: DuplicateScan, sc: Scratch, reader: StoredVectorReader): DuplicateScanResult {
  const result = runDuplicateScan(scan, sc);
  if (!scan.stored || !scan.arrays.q4) return result;
  const d = scan.arrays.dimension;
  const scans = duplicateHits(result).map((hits, c) => ({ query: scan.vectors.subarray(c * d, (c + 1) * d), hits }));
  const again = reader.rerank(scan.stored, scans, scan.limit, true);
  return again ? { ...flatHits(again), reranked: true } : result;
}

/**
 * Where each check's own memory is listed in its group (an index from the group's start), -1 when it is not: one
 * pass over each group's slots for all of its checks. A bulk import checks hundreds of memories of a few namespaces per
 * pass, and a copy of the group without the memory, per check, read the whole namespace's rowids once per check. The
 * pass runs from the group's end and stops when every check's memory is found: a namespace lists its memories in
 * the order they were indexed (vector-index.ts: a removal moves the last one into its place), so the memories a pass
 * just embedded are near the end.
 */
const OWN_FILTER = 1 << 16;
function ownSlots(scan: DuplicateScan): Int32Array {
  const checks = scan.group.length;
  const rowid = scan.arrays.rowid;
  const selfAt = new Int32Array(checks).fill(-1);
  const byGroup = new Map<number, number[]>();
  for (let c = 0; c < checks; c++) {
    const g = scan.group[c];
    const list = byGroup.get(g);
    if (list) list.push(c);
    else byGroup.set(g, [c]);
  }
  for (const [g, list] of byGroup) {
    const from = scan.starts[g];
    const to = scan.starts[g + 1];
    if (list.length === 1) {
      const self = scan.exclude[list[0]];
      for (let j = to - 1; j >= from; j--)
        if (rowid[scan.slots[j]] === self) {
          selfAt[list[0]] = j - from;
          break;
        }
      continue;
    }
    const want = new Map<number, number[]>();
    // The wanted rowids' low bits, so most slots are passed over without a lookup in `want` (at a million memories a
    // lookup per slot was most of this pass: a pass's few hundred checks of one namespace of ~100k).
    const maybe = new Uint8Array(OWN_FILTER);
    for (const c of list) {
      const r = scan.exclude[c];
      maybe[r & (OWN_FILTER - 1)] = 1;
      const same = want.get(r);
      if (same) same.push(c);
      else want.set(r, [c]);
    }
    let left = want.size;
    for (let j = to - 1; j >= from && left > 0; j--) {
      const r = rowid[scan.slots[j]];
      if (maybe[r & (OWN_FILTER - 1)] === 0) continue;
      const cs = want.get(r);
      if (!cs) continue;
      for (const c of cs) selfAt[c] = j - from;
      left--;
    }
  }
  return selfAt;
}

/** A DuplicateScanResult as each check's hits. */
export function duplicateHits(r: DuplicateScanResult): ArmHit[][] {
  const out: ArmHit[][] = [];
  let k = 0;
  for (const n of r.counts) {
    const hits: ArmHit[] = [];
    for (let j = 0; j < n; j++, k++) hits.push({ rowid: r.rowids[k], score: r.scores[k] });
    out.push(hits);
  }
  return out;
}
