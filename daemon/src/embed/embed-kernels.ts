/**
 * The embedding worker's two inner loops in WebAssembly SIMD (embed-kernels.wat): the built-in model's sum of token
 * vectors (StaticModel.embed) and the SimHash of each vector it returns (quantize.ts signature). They were most of the
 * worker's CPU in a batched import (about 50 and 65 µs a memory of the 0.23 ms it spent; bench/README.md, "A million
 * memories on one machine"). Both compute in float64 lanes exactly what the JavaScript loops compute, so a vector and
 * its signature are bit-identical either way (test/unit/embed-kernels.test.ts): stored vectors and signatures stay
 * comparable with new ones. Without WebAssembly SIMD (not expected on Node 20) the JavaScript loops run.
 */
import { hyperplanes, signature, signatureInput, SIG_BITS, SIG_WORDS } from '../store/quantize';
import { EMBED_KERNELS_WASM } from './embed-kernels-wasm';

interface Exports {
  accumulate(rows: number, dim: number, toks: number, n: number, acc: number): void;
  signature(planes: number, dim: number, vec: number, out: number): void;
}

const PAGE = 65536;

let module: WebAssembly.Module | null | undefined;
/** The compiled kernels, or null when this runtime cannot run them (compiled once per thread). */
function kernelModule(): WebAssembly.Module | null {
  if (module === undefined) {
    try {
      module = new WebAssembly.Module(Buffer.from(EMBED_KERNELS_WASM, 'base64'));
    } catch {
      module = null;
    }
  }
  return module;
}

/** The kernels over a memory of their own of at least `bytes` (pages are zero and not resident until touched). */
function instantiate(bytes: number): { mem: WebAssembly.Memory; k: Exports } | null {
  const m = kernelModule();
  if (!m) return null;
  try {
    const mem = new WebAssembly.Memory({ initial: Math.max(1, Math.ceil(bytes / PAGE)) });
    return { mem, k: new WebAssembly.Instance(m, { e: { m: mem } }).exports as unknown as Exports };
  } catch {
    return null;
  }
}

/**
 * A static model's rows and token sums in a kernel memory: `rows` (vocabulary × dimension int8, at offset 0) is
 * where the model keeps its vectors, read in a block at a time on first use as before; `add` queues a token's row
 * and scale, `take` sums the queued tokens into a new vector (float32, as the JavaScript loop's) and starts over.
 */
export class TokenSums {
  readonly rows: Int8Array;
  private readonly ids: Int32Array;
  private readonly scales: Float32Array;
  private readonly acc: Float32Array;
  private readonly at: { toks: number; acc: number };
  private n = 0;

  private constructor(
    private readonly k: Exports,
    mem: WebAssembly.Memory,
    rows: number,
    private readonly dim: number,
    private readonly cap: number,
  ) {
    const acc = Math.ceil(rows / 16) * 16;
    const toks = acc + dim * 4;
    this.at = { toks, acc };
    this.rows = new Int8Array(mem.buffer, 0, rows);
    this.acc = new Float32Array(mem.buffer, acc, dim);
    this.ids = new Int32Array(mem.buffer, toks, cap * 2);
    this.scales = new Float32Array(mem.buffer, toks, cap * 2);
  }

  /** For a vocabulary of `n` rows of `dim` int8, or null when the kernels cannot run (or not at this dimension). */
  static create(n: number, dim: number, cap = 512): TokenSums | null {
    if (dim % 16 !== 0 || dim <= 0) return null;
    const rows = n * dim;
    const bytes = Math.ceil(rows / 16) * 16 + dim * 4 + cap * 8;
    if (bytes > 1 << 30) return null;
    const inst = instantiate(bytes);
    return inst ? new TokenSums(inst.k, inst.mem, rows, dim, cap) : null;
  }

  /** Queue row `id` (read in by the caller) with its scale (not 0: such tokens do not count). */
  add(id: number, scale: number): void {
    if (this.n === this.cap) this.flush();
    this.ids[2 * this.n] = id;
    this.scales[2 * this.n + 1] = scale;
    this.n++;
  }

  private flush(): void {
    this.k.accumulate(0, this.dim, this.at.toks, this.n, this.at.acc);
    this.n = 0;
  }

  /** The sum of every token queued since the last take (a copy); the sums start again from zero. */
  take(): Float32Array {
    this.flush();
    const out = this.acc.slice();
    this.acc.fill(0);
    return out;
  }
}

/** The signature kernel per dimension: its memory holds the planes (planeLayout), then the vector and the signature. */
const sigKernels = new Map<number, { k: Exports; vec: Float64Array; out: Int32Array; at: { vec: number; out: number } } | null>();

/**
 * The planes of `dim` as the signature kernel reads them: by groups of 8 planes, and in a group, for each
 * component i, planes (0, 1), (2, 3), (4, 5), (6, 7)'s component i as float64 pairs.
 */
export function planeLayout(dim: number): Float64Array {
  const p = hyperplanes(dim);
  const out = new Float64Array(SIG_BITS * dim);
  for (let g = 0; g < SIG_BITS / 8; g++)
    for (let i = 0; i < dim; i++) for (let j = 0; j < 8; j++) out[(g * dim + i) * 8 + j] = p[(8 * g + j) * dim + i];
  return out;
}

function sigKernel(dim: number) {
  let s = sigKernels.get(dim);
  if (s !== undefined) return s;
  const planes = SIG_BITS * dim * 8;
  const inst = instantiate(planes + dim * 8 + SIG_WORDS * 4);
  if (inst) {
    new Float64Array(inst.mem.buffer, 0, SIG_BITS * dim).set(planeLayout(dim));
    const at = { vec: planes, out: planes + dim * 8 };
    s = { k: inst.k, vec: new Float64Array(inst.mem.buffer, at.vec, dim), out: new Int32Array(inst.mem.buffer, at.out, SIG_WORDS), at };
  } else s = null;
  sigKernels.set(dim, s);
  return s;
}

/** quantize.ts signature(v, centre), by the SIMD kernel when it runs here (bit-identical), else by its JavaScript loop. */
export function fastSignature(v: Float32Array, centre?: Float32Array | null): Int32Array {
  const dim = v.length;
  let any = false;
  for (let i = 0; i < dim && !any; i++) any = v[i] !== 0;
  const s = any ? sigKernel(dim) : null;
  if (!s) return signature(v, centre);
  s.vec.set(signatureInput(v, centre));
  s.k.signature(0, dim, s.at.vec, s.at.out);
  return s.out.slice();
}
