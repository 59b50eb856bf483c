/**
 * The vector arm's inner loops in WebAssembly (vector-kernels.wat): the Hamming pass over SimHash signatures (64-bit
 * words and i64.popcnt; a bounded variant for duplicate checks that writes only the slots within a distance) and, in
 * SIMD, the int8 × float dot products of exact scoring, about 7× and 3× faster than the same loops in JavaScript
 * (bench/README.md); a compact index's 4-bit × i16 dot products in integers (query16). They read the index where it lives: VectorIndex keeps its signatures and its int8 vectors each
 * in a shared WebAssembly memory (`KernelMemory`), which the embedding worker is handed with every scan, so both
 * threads run the kernels over the same bytes without a copy.
 *
 * Layout of a kernel memory: a header (one lock word per scratch area), two scratch areas (one for the daemon's
 * main thread, one for worker threads: a kernel's inputs and outputs are copied through them in chunks), then the
 * array (`off`). As the index grows, the memory grows in place (growKernelArray) up to its maximum; past it, the
 * index moves to a new, larger one. Without WebAssembly SIMD and shared memory (not expected on Node 20) or for a
 * dimension the kernels do not take (`kernelsRun`), the index keeps SharedArrayBuffers and the scan runs its
 * JavaScript loops.
 */
import { isMainThread } from 'node:worker_threads';
import { SIG_BITS, SIG_WORDS } from './quantize';
import { VECTOR_KERNELS_WASM } from './vector-kernels-wasm';

/** One array of the index in a shared WebAssembly memory: slot 0's bytes at `off` (after the header and scratch). */
export interface KernelArray {
  readonly mem: WebAssembly.Memory;
  readonly off: number;
  /** The memory's maximum (pages): it grows in place up to there. */
  readonly maxPages: number;
}

/** Where the index keeps what the kernels read: its signatures and its int8 vectors, each in its own memory. */
export interface KernelMemory {
  readonly sig: KernelArray;
  readonly q: KernelArray;
}

interface Exports {
  hamming(sigBase: number, adm: number, n: number, qsig: number, dist: number, hist: number): void;
  hammingBelow(sigBase: number, adm: number, n: number, qsig: number, bound: number, pos: number, dist: number): number;
  dots(qBase: number, dim: number, pool: number, n: number, vec: number, out: number): void;
  dots4(qBase: number, dim: number, pool: number, n: number, vec: number, out: number, bias: number, scale: number): void;
}

const PAGE = 65536;
const HEADER = 64;
/** Slots per kernel call: a scratch area holds this many slot numbers and results. */
export const KERNEL_CHUNK = 8192;
const CHUNK = KERNEL_CHUNK;
/** Largest dimension the scratch area holds a query of (a larger model's scans run in JavaScript). */
export const KERNEL_MAX_DIM = 4096;
/** Distances a Hamming histogram counts (0..SIG_BITS). */
const HIST = SIG_BITS + 1;
/** Queries of hammingManyKernel with a histogram each in the scratch area (more run in several calls). */
const HIST_QUERIES = 16;
// One scratch area: slot numbers (i32), then distances (u16), then scores (f32), then the query signature and vector,
// then the Hamming histograms (i32, HIST per query).
const A_SLOTS = 0;
const A_DIST = A_SLOTS + CHUNK * 4;
const A_OUT = A_DIST + CHUNK * 2;
const A_QSIG = A_OUT + CHUNK * 4;
const A_VEC = A_QSIG + 64;
const A_HIST = A_VEC + KERNEL_MAX_DIM * 4;
const AREA = A_HIST + HIST_QUERIES * HIST * 4;
const AREAS = 2;
const DATA = HEADER + AREAS * AREA;

let module: WebAssembly.Module | null | undefined;
/** The compiled kernels, or null when this runtime cannot run them (compiled once per thread). */
function kernelModule(): WebAssembly.Module | null {
  if (module === undefined) {
    try {
      module = new WebAssembly.Module(Buffer.from(VECTOR_KERNELS_WASM, 'base64'));
      // Shared memory is part of the contract: a runtime without it cannot hand the index to the worker this way.
      new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
    } catch {
      module = null;
    }
  }
  return module;
}

/** Whether kernels run here for vectors of `dimension` (else the scan's JavaScript loops run). */
export function kernelsRun(dimension: number): boolean {
  return dimension % 16 === 0 && dimension <= KERNEL_MAX_DIM && kernelModule() !== null;
}

const pagesFor = (bytes: number) => Math.ceil(bytes / PAGE);

/**
 * A kernel array for `cap` slots of `perSlot` bytes, or null (kernels cannot run, or too large). Its memory may
 * grow in place (growKernelArray) to 16 times `cap`, at least a million slots: shared memory reserves address space
 * for its maximum up front, and growing in place leaves no old copy for the worker's garbage collector to find late
 * (copies to a new memory at every growth kept 40 MB more resident after 100k writes).
 */
export function allocKernelArray(cap: number, perSlot: number): KernelArray | null {
  if (!kernelModule()) return null;
  const initial = pagesFor(DATA + cap * perSlot);
  const maxPages = Math.min(65536, Math.max(initial, pagesFor(DATA + Math.max(cap * 16, 1 << 20) * perSlot)));
  if (initial > maxPages) return null;
  try {
    return { mem: new WebAssembly.Memory({ initial, maximum: maxPages, shared: true }), off: DATA, maxPages };
  } catch {
    return null; // no address space for the reservation: the index keeps SharedArrayBuffers
  }
}

/** Grow `a` in place to hold `cap` slots of `perSlot` bytes; false when that is past its maximum. */
export function growKernelArray(a: KernelArray, cap: number, perSlot: number): boolean {
  const need = pagesFor(a.off + cap * perSlot);
  const have = a.mem.buffer.byteLength / PAGE;
  if (need <= have) return true;
  if (need > a.maxPages) return false;
  try {
    a.mem.grow(need - have);
  } catch {
    return false; // the caller moves the array to a new memory (or to a SharedArrayBuffer)
  }
  return true;
}

/**
 * The kernels instantiated over a memory, by memory object: the main thread keeps its index's memory object, so it
 * instantiates once per memory; a worker gets a new object with every message, so once per scan.
 */
const instances = new WeakMap<WebAssembly.Memory, Exports>();

/**
 * Run `fn` with this thread's kernels and scratch area of `km` (the main thread uses area 0, worker threads area 1;
 * the area's lock word keeps two threads of one kind from sharing it at once).
 */
function withKernels<T>(mem: WebAssembly.Memory, fn: (k: Exports, area: number, bytes: ArrayBufferLike) => T): T {
  let k = instances.get(mem);
  if (!k) instances.set(mem, (k = new WebAssembly.Instance(kernelModule()!, { e: { m: mem } }).exports as unknown as Exports));
  const a = isMainThread ? 0 : 1;
  const lock = new Int32Array(mem.buffer, 0, AREAS);
  while (Atomics.compareExchange(lock, a, 0, 1) !== 0) Atomics.wait(lock, a, 1, 5);
  try {
    return fn(k, HEADER + a * AREA, mem.buffer);
  } finally {
    Atomics.store(lock, a, 0);
    Atomics.notify(lock, a);
  }
}

/**
 * Hamming distance of each of `admitted`'s slots' signatures to `qsig`, into `dist` (same order), and with `hist` how
 * many slots are at each distance (SIG_BITS + 1 counts), counted in the same pass: hammingManyKernel with one query.
 */
export function hammingKernel(km: KernelMemory, admitted: Int32Array, qsig: Int32Array, dist: Uint16Array, hist?: Int32Array): void {
  hammingManyKernel(km, admitted, qsig, dist, hist);
}

/**
 * The Hamming distances of `admitted`'s slots to each of several signatures (`qsigs`, SIG_WORDS each), into `dists`:
 * query `j`'s distances at `j * admitted.length`, each in `admitted`'s order. Chunk by
 * chunk, every query runs over a chunk before the next is read, so the chunk's signatures come from memory once for
 * all the queries: a namespace's slots are spread over the whole index (writes of many namespaces interleave), and
 * at a million slots reading each one's signature, not the arithmetic, was most of a pass (bench/README.md). With
 * `hists`, query `j`'s histogram (how many slots are at each distance) at `j * (SIG_BITS + 1)`.
 */
export function hammingManyKernel(km: KernelMemory, admitted: Int32Array, qsigs: Int32Array, dists: Uint16Array, hists?: Int32Array): void {
  const words = SIG_WORDS;
  const n = admitted.length;
  // HIST_QUERIES at a time: each keeps its histogram in the scratch area for the whole pass.
  for (let first = 0; first < qsigs.length / words; first += HIST_QUERIES) {
    const queries = Math.min(HIST_QUERIES, qsigs.length / words - first);
    withKernels(km.sig.mem, (k, area, buf) => {
      const qsig = new Int32Array(buf, area + A_QSIG, words);
      const slots = new Int32Array(buf, area + A_SLOTS, CHUNK);
      const out = new Uint16Array(buf, area + A_DIST, CHUNK);
      const counts = new Int32Array(buf, area + A_HIST, queries * HIST).fill(0);
      for (let from = 0; from < n; from += CHUNK) {
        const m = Math.min(CHUNK, n - from);
        slots.set(admitted.subarray(from, from + m));
        for (let j = 0; j < queries; j++) {
          qsig.set(qsigs.subarray((first + j) * words, (first + j + 1) * words));
          k.hamming(km.sig.off, area + A_SLOTS, m, area + A_QSIG, area + A_DIST, area + A_HIST + j * HIST * 4);
          dists.set(out.subarray(0, m), (first + j) * n + from);
        }
      }
      hists?.set(counts, first * HIST);
    });
  }
}

/**
 * Per query of `qsigs` (SIG_WORDS each), the slots of `admitted` at Hamming distance at most `bounds[j]` from it:
 * their indexes in `admitted` and their distances, in `admitted`'s order. Chunk by chunk like hammingManyKernel (a
 * chunk's signatures are read from memory once for all the queries), but only the few slots within the bound are
 * written out (hammingBelow).
 */
export function hammingBelowMany(
  km: KernelMemory,
  admitted: Int32Array,
  qsigs: Int32Array,
  bounds: Int32Array,
): { pos: Int32Array; dist: Uint16Array }[] {
  const words = SIG_WORDS;
  const queries = bounds.length;
  const pos: number[][] = Array.from({ length: queries }, () => []);
  const dist: number[][] = Array.from({ length: queries }, () => []);
  withKernels(km.sig.mem, (k, area, buf) => {
    const qsig = new Int32Array(buf, area + A_QSIG, words);
    const slots = new Int32Array(buf, area + A_SLOTS, CHUNK);
    const outPos = new Int32Array(buf, area + A_OUT, CHUNK);
    const outDist = new Uint16Array(buf, area + A_DIST, CHUNK);
    for (let from = 0; from < admitted.length; from += CHUNK) {
      const m = Math.min(CHUNK, admitted.length - from);
      slots.set(admitted.subarray(from, from + m));
      for (let j = 0; j < queries; j++) {
        qsig.set(qsigs.subarray(j * words, (j + 1) * words));
        const c = k.hammingBelow(km.sig.off, area + A_SLOTS, m, area + A_QSIG, bounds[j], area + A_OUT, area + A_DIST);
        for (let i = 0; i < c; i++) {
          pos[j].push(from + outPos[i]);
          dist[j].push(outDist[i]);
        }
      }
    }
  });
  return pos.map((p, j) => ({ pos: Int32Array.from(p), dist: Uint16Array.from(dist[j]) }));
}

/** Whether the 4-bit kernel runs for `dimension` (a compact index: store/quantize.ts pack4). */
export const kernels4Run = (dimension: number): boolean => dimension % 32 === 0 && kernelsRun(dimension);

/**
 * Dot product (float32) of each of `pool`'s slots' vectors with `v`, into `out` (same order): int8 vectors, or with
 * `bits4` the 4-bit vectors of a compact index (`km.q` then holds those).
 */
export function dotsKernel(km: KernelMemory, dimension: number, pool: Int32Array, v: Float32Array, out: Float32Array, bits4 = false): void {
  withKernels(km.q.mem, (k, area, buf) => {
    // The 4-bit kernel takes the query in i16 (query16): its products and sums are integers.
    const q16 = bits4 ? query16(v, new Int16Array(buf, area + A_VEC, dimension)) : null;
    if (!q16) new Float32Array(buf, area + A_VEC, dimension).set(v);
    const slots = new Int32Array(buf, area + A_SLOTS, CHUNK);
    const scores = new Float32Array(buf, area + A_OUT, CHUNK);
    for (let from = 0; from < pool.length; from += CHUNK) {
      const n = Math.min(CHUNK, pool.length - from);
      slots.set(pool.subarray(from, from + n));
      if (q16) k.dots4(km.q.off, dimension, area + A_SLOTS, n, area + A_VEC, area + A_OUT, q16.bias, q16.scale);
      else k.dots(km.q.off, dimension, area + A_SLOTS, n, area + A_VEC, area + A_OUT);
      out.set(scores.subarray(0, n), from);
    }
  });
}

/**
 * The query of the 4-bit kernel: `v` as i16 into `out` (each component over `scale`, rounded: the largest is ±32767),
 * and `bias`, what the kernel subtracts for the nibbles' + 8 (8 × the sum of the i16 components). A dot product
 * of the kernel is then (Σ nibble × i16 − bias) × scale: the float product within about 1/32767 of the query's
 * largest component per component, which only chooses the candidates a compact index ranks again from disk.
 */
export function query16(v: Float32Array, out: Int16Array): { bias: number; scale: number } {
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]));
  if (max === 0 || !Number.isFinite(max)) {
    out.fill(0);
    return { bias: 0, scale: 0 };
  }
  const scale = max / 32767;
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += out[i] = Math.round(v[i] / scale);
  return { bias: 8 * sum, scale };
}
