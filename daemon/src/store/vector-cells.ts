/**
 * Cells of the vector index: a partition of its vectors so that a duplicate check in a large namespace reads a
 * fraction of it instead of every signature (issue 27: at a million memories the Hamming pass over a check's
 * namespace of up to ~114k was most of the embedding worker's time in a bulk import).
 *
 * CELLS unit centroids are trained (spherical k-means) on a sample of the index's own vectors, less the signature
 * centre, from the vectors the index holds in memory (int8, or 4 bits in a compact index); each vector belongs to
 * the cell whose centroid is nearest. A check in a namespace of at least CELL_MIN visible memories ranks the
 * centroids by its own vector and reads the namespace's memories of the nearest CELL_PROBES cells (~7% of it), and
 * chooses among those exactly as the whole pass chooses among all (vector-scan.ts `nearest`). At 1M
 * (bench/dup-partitions.ts, the largest namespace, two disjoint sets of checks) that finds at least as many of the
 * exact top 5 as the whole pass: the cells keep the Hamming candidates in the right region.
 *
 * Nothing of this is on disk: the centroids and each slot's cell live in shared memory beside the index, trained and
 * assigned by whoever runs a scan with `build` (the embedding worker); the event loop's scans use them as they are
 * and read the whole namespace when a namespace's cells are not all assigned. Scope and visibility are decided before
 * (the namespace's visible list, vector-duplicates.ts); cells only choose which of those memories are scored.
 * A slot's cell is cleared when its vector changes (VectorIndex.put, putStored, remove, toCompact); only the indexer
 * changes vectors and runs duplicate scans, one after the other, so a scan never assigns a cell from a vector being
 * replaced.
 */
import { q4Bytes } from './quantize';
import { dotsKernel } from './vector-kernels';
import type { SlotArrays } from './vector-scan';

/** Cells of an index. */
export const CELLS = 256;
/** Cells a check reads: 16 of 256 read 6.8-6.9% of the namespace at 1M (bench/README.md). */
export const CELL_PROBES = 16;
/** Visible memories of a namespace from which its checks read cells (below, the whole pass is cheap enough). */
export const CELL_MIN = 16_384;
/** Vectors the centroids are trained on (at most; a stride over the index's slots). */
export const CELL_SAMPLE = 40 * CELLS;
/** k-means rounds. */
export const CELL_ROUNDS = 8;
/** A slot whose cell is not assigned. */
export const UNASSIGNED = 0xffff;

/** The cells of one index, in shared memory (the embedding worker trains and assigns them). */
export interface Cells {
  /** CELLS unit centroids, `dimension` each, of vectors less the signature centre. */
  readonly centroids: Float32Array;
  /** Each centroid's dot product with the centre: a unit vector `x` scores `x · c − offset` against centroid `c`. */
  readonly offsets: Float32Array;
  /** [0]: vectors in the index when the centroids were trained (0: not trained). */
  readonly state: Int32Array;
  /** Each slot's cell (UNASSIGNED: none yet). */
  readonly cell: Uint16Array;
}

/** Cells for `cap` slots: new ones, or `prev`'s centroids and assignments with room for more slots. */
export function growCells(dimension: number, cap: number, prev: Cells | null): Cells {
  const cell = new Uint16Array(new SharedArrayBuffer(cap * 2)).fill(UNASSIGNED);
  if (prev) {
    cell.set(prev.cell.subarray(0, Math.min(cap, prev.cell.length)));
    return { ...prev, cell };
  }
  return {
    centroids: new Float32Array(new SharedArrayBuffer(CELLS * dimension * 4)),
    offsets: new Float32Array(new SharedArrayBuffer(CELLS * 4)),
    state: new Int32Array(new SharedArrayBuffer(4)),
    cell,
  };
}

/** Dot products of the slots of `pool` with `v` (the stored components, not divided by their norms), into `out`. */
export function slotDots(a: SlotArrays, pool: Int32Array, v: Float32Array, out: Float32Array): void {
  const d = a.dimension;
  if (a.kmem) return dotsKernel(a.kmem, d, pool, v, out, !!a.q4);
  if (a.q4) return dots4Loop(a.q4, d, pool, v, out);
  const Q = a.q;
  for (let p = 0; p < pool.length; p++) {
    const o = pool[p] * d;
    let s = 0;
    for (let i = 0; i < d; i++) s += Q[o + i] * v[i];
    out[p] = s;
  }
}

/** 4-bit dot products in JavaScript (no kernels): the layout of quantize.ts pack4. */
export function dots4Loop(Q4: Uint8Array, d: number, pool: Int32Array, v: Float32Array, out: Float32Array): void {
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

/** A slot's vector at unit length, from the components the index holds (int8, or 4 bits), into `out`. */
function unitOf(a: SlotArrays, slot: number, out: Float32Array): void {
  const d = a.dimension;
  const k = a.inv[slot];
  if (a.q4) {
    const per = q4Bytes(d);
    const o = slot * per;
    for (let b = 0; b < per; b++) {
      const x = a.q4[o + b];
      const i = (b >> 4) * 32 + (b & 15);
      if (i < d) out[i] = ((x & 15) - 8) * k;
      if (i + 16 < d) out[i + 16] = ((x >> 4) - 8) * k;
    }
  } else for (let i = 0; i < d; i++) out[i] = a.q[slot * d + i] * k;
}

/** Slots assigned per round of centroids (the dot products' buffer). */
const ASSIGN_CHUNK = 4096;

/** Each slot of `pool`'s nearest centroid into `out` (ties: the lower cell). */
function nearestCells(a: SlotArrays, c: Cells, pool: Int32Array, out: Uint16Array): void {
  const d = a.dimension;
  const dots = new Float32Array(Math.min(pool.length, ASSIGN_CHUNK));
  const best = new Float64Array(dots.length);
  for (let from = 0; from < pool.length; from += ASSIGN_CHUNK) {
    const part = pool.subarray(from, from + ASSIGN_CHUNK);
    best.fill(-Infinity);
    for (let k = 0; k < CELLS; k++) {
      slotDots(a, part, c.centroids.subarray(k * d, (k + 1) * d), dots);
      const off = c.offsets[k];
      for (let p = 0; p < part.length; p++) {
        const x = dots[p] * a.inv[part[p]] - off;
        if (x > best[p]) {
          best[p] = x;
          out[from + p] = k;
        }
      }
    }
  }
}

function setOffsets(c: Cells, centre: Float32Array | null | undefined, d: number): void {
  for (let k = 0; k < CELLS; k++) {
    let x = 0;
    if (centre) for (let i = 0; i < d; i++) x += c.centroids[k * d + i] * centre[i];
    c.offsets[k] = x;
  }
}

/**
 * Train the centroids on a stride over the index's first `size` slots (its live vectors), every cell cleared after;
 * false (nothing changed) when fewer than CELLS vectors are there.
 */
export function trainCells(a: SlotArrays, c: Cells, size: number, live: number): boolean {
  const d = a.dimension;
  const stride = Math.max(1, Math.floor(size / CELL_SAMPLE));
  const at: number[] = [];
  for (let s = 0; s < size; s += stride) if (a.inv[s] !== 0) at.push(s);
  if (at.length < CELLS) return false;
  const pool = Int32Array.from(at);
  const n = pool.length;
  // The sample less the centre, each at unit length: what the centroids average.
  const Y = new Float32Array(n * d);
  const x = new Float32Array(d);
  for (let j = 0; j < n; j++) {
    unitOf(a, pool[j], x);
    let ss = 0;
    for (let i = 0; i < d; i++) {
      const y = x[i] - (a.centre ? a.centre[i] : 0);
      Y[j * d + i] = y;
      ss += y * y;
    }
    const k = ss > 0 ? 1 / Math.sqrt(ss) : 0;
    for (let i = 0; i < d; i++) Y[j * d + i] *= k;
  }
  const step = Math.floor(n / CELLS);
  for (let k = 0; k < CELLS; k++) c.centroids.set(Y.subarray(k * step * d, (k * step + 1) * d), k * d);
  setOffsets(c, a.centre, d);
  const owner = new Uint16Array(n);
  const sums = new Float64Array(CELLS * d);
  const counts = new Int32Array(CELLS);
  for (let round = 0; round < CELL_ROUNDS; round++) {
    nearestCells(a, c, pool, owner);
    sums.fill(0);
    counts.fill(0);
    for (let j = 0; j < n; j++) {
      const k = owner[j];
      counts[k]++;
      for (let i = 0; i < d; i++) sums[k * d + i] += Y[j * d + i];
    }
    for (let k = 0; k < CELLS; k++) {
      if (counts[k] === 0) continue; // an empty cell keeps its centroid
      let ss = 0;
      for (let i = 0; i < d; i++) ss += sums[k * d + i] * sums[k * d + i];
      const inv = ss > 0 ? 1 / Math.sqrt(ss) : 0;
      for (let i = 0; i < d; i++) c.centroids[k * d + i] = sums[k * d + i] * inv;
    }
    setOffsets(c, a.centre, d);
  }
  c.cell.fill(UNASSIGNED);
  Atomics.store(c.state, 0, Math.max(1, live));
  return true;
}

/**
 * Whether a scan's checks can read cells: with `build`, the centroids are trained first when they never were or the
 * index has doubled since (their cells then describe a store that has changed), so the cells follow an import.
 */
export function cellsReady(a: SlotArrays, size: number, live: number, build: boolean): boolean {
  const c = a.cells;
  if (!c) return false;
  const trained = Atomics.load(c.state, 0);
  if (build && (trained === 0 || live >= 2 * trained)) return trainCells(a, c, size, live) || trained !== 0;
  return trained !== 0;
}

/**
 * Whether every slot of `list` has a cell: with `build`, those without one are assigned first (each against every
 * centroid, the kernels' dot products); without, false when any has none.
 */
export function cellsAssigned(a: SlotArrays, list: Int32Array, build: boolean): boolean {
  const cell = a.cells!.cell;
  let n = 0;
  for (let j = 0; j < list.length; j++) if (cell[list[j]] === UNASSIGNED) n++;
  if (n === 0) return true;
  if (!build) return false;
  const pool = new Int32Array(n);
  n = 0;
  for (let j = 0; j < list.length; j++) if (cell[list[j]] === UNASSIGNED) pool[n++] = list[j];
  const out = new Uint16Array(n);
  nearestCells(a, a.cells!, pool, out);
  for (let p = 0; p < n; p++) cell[pool[p]] = out[p];
  return true;
}

/** The slots of `list` ordered by cell (in list order within one): cell k's are order[starts[k] .. starts[k + 1]). */
export interface ByCell {
  order: Int32Array;
  starts: Int32Array;
}

export function byCell(list: Int32Array, cell: Uint16Array): ByCell {
  const starts = new Int32Array(CELLS + 1);
  for (let j = 0; j < list.length; j++) starts[cell[list[j]] + 1]++;
  for (let k = 0; k < CELLS; k++) starts[k + 1] += starts[k];
  const next = starts.slice(0, CELLS);
  const order = new Int32Array(list.length);
  for (let j = 0; j < list.length; j++) order[next[cell[list[j]]]++] = list[j];
  return { order, starts };
}

/** The `probes` cells whose centroids are nearest to `v` (a unit vector), nearest first; ties: the lower cell. */
export function nearestCellsOf(c: Cells, v: Float32Array, probes: number): Int32Array {
  const d = v.length;
  const P = Math.min(probes, CELLS);
  const top = new Int32Array(P);
  const topScore = new Float64Array(P).fill(-Infinity);
  const C = c.centroids;
  for (let k = 0; k < CELLS; k++) {
    const o = k * d;
    let s0 = 0,
      s1 = 0,
      s2 = 0,
      s3 = 0;
    let i = 0;
    for (; i + 3 < d; i += 4) {
      s0 += C[o + i] * v[i];
      s1 += C[o + i + 1] * v[i + 1];
      s2 += C[o + i + 2] * v[i + 2];
      s3 += C[o + i + 3] * v[i + 3];
    }
    for (; i < d; i++) s0 += C[o + i] * v[i];
    const x = s0 + s1 + s2 + s3 - c.offsets[k];
    if (x <= topScore[P - 1]) continue; // at a tie the lower cell, met first, stays
    let j = P - 1;
    for (; j > 0 && topScore[j - 1] < x; j--) {
      topScore[j] = topScore[j - 1];
      top[j] = top[j - 1];
    }
    topScore[j] = x;
    top[j] = k;
  }
  return top;
}

/**
 * A check's list: the slots of `cells` (in that order, each cell's in list order), and where its own memory's slot
 * `self` is in it (-1: not there), for `nearest` to skip.
 */
export function slotsOfCells(by: ByCell, cells: Int32Array, self: number): { slots: Int32Array; skip: number } {
  let n = 0;
  for (let j = 0; j < cells.length; j++) n += by.starts[cells[j] + 1] - by.starts[cells[j]];
  const slots = new Int32Array(n);
  let m = 0;
  let skip = -1;
  for (let j = 0; j < cells.length; j++) {
    const from = by.starts[cells[j]];
    const to = by.starts[cells[j] + 1];
    if (self >= 0 && skip < 0) for (let i = from; i < to; i++) if (by.order[i] === self) skip = m + i - from;
    slots.set(by.order.subarray(from, to), m);
    m += to - from;
  }
  return { slots, skip };
}
