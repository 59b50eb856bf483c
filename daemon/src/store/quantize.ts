/**
 * Vector quantization for the vector store (see vectors.ts): int8 components
 * and a 256-bit SimHash (signs of fixed, seeded random projections), plus the
 * 48-bit text-hash key. No imports: the schema migration uses it too.
 */
export const SIG_BITS = 256;
export const SIG_WORDS = SIG_BITS / 32;

/** Fixed random hyperplanes of a dimension (seeded, so every process computes the same signatures). */
const planes = new Map<number, Float32Array>();
export function hyperplanes(dim: number): Float32Array {
  let p = planes.get(dim);
  if (p) return p;
  p = new Float32Array(SIG_BITS * dim);
  let s = 0x9e3779b9 ^ dim;
  const rand = () => {
    // xorshift32
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return ((s >>> 0) + 0.5) / 4294967296;
  };
  for (let i = 0; i < p.length; i += 2) {
    // Box-Muller: Gaussian directions make the sign bits an unbiased angle estimate
    const r = Math.sqrt(-2 * Math.log(rand()));
    const t = 2 * Math.PI * rand();
    p[i] = r * Math.cos(t);
    if (i + 1 < p.length) p[i + 1] = r * Math.sin(t);
  }
  planes.set(dim, p);
  return p;
}

export interface Quantized {
  q: Int8Array;
  sig: Int32Array;
  /** 1/‖q‖, 0 for a zero vector (excluded from search). */
  inv: number;
}

/**
 * The int8 components, the SimHash and the norm. `sig`: the vector's signature when already computed (the
 * embedding worker computes it next to the vector, off the daemon's event loop; see signature()).
 */
export function quantize(v: Float32Array, sig?: Int32Array, centre?: Float32Array | null): Quantized {
  const dim = v.length;
  let max = 0;
  for (let i = 0; i < dim; i++) max = Math.max(max, Math.abs(v[i]));
  const q = new Int8Array(dim);
  let ss = 0;
  if (max > 0) {
    for (let i = 0; i < dim; i++) {
      q[i] = Math.round((v[i] / max) * 127);
      ss += q[i] * q[i];
    }
  }
  return { q, sig: ss === 0 ? new Int32Array(SIG_WORDS) : (sig ?? signature(v, centre)), inv: ss > 0 ? 1 / Math.sqrt(ss) : 0 };
}

/**
 * What a centred signature is taken of: the vector scaled to unit length, minus the index's centre (float32, in
 * order, so every thread computes the same bits). Embedding models put their vectors in a narrow cone (the built-in
 * model's share a component of ~0.6–0.85 of their length), so the signs of plain projections are the same for most
 * vectors on many of the 256 planes (76 nearly constant on the side-by-side corpus, bench/README.md "The SimHash's
 * bits"); taken of the vector minus the cone's direction, each bit splits the memories and the Hamming pre-selection
 * keeps more of the true neighbours. null centre (an index made before centres): the vector itself.
 */
export function signatureInput(v: Float32Array, centre: Float32Array | null | undefined): Float32Array {
  if (!centre || centre.length !== v.length) return v;
  let ss = 0;
  for (let i = 0; i < v.length; i++) ss += v[i] * v[i];
  const inv = ss > 0 ? 1 / Math.sqrt(ss) : 0;
  const out = new Float32Array(v.length);
  for (let i = 0; i < v.length; i++) out[i] = v[i] * inv - centre[i];
  return out;
}

/**
 * The 256-bit SimHash of a vector: the signs of its products with the fixed hyperplanes (all zero for a zero vector),
 * taken of signatureInput(v, centre) when the index has a centre.
 */
export function signature(vector: Float32Array, centre?: Float32Array | null): Int32Array {
  const dim = vector.length;
  const sig = new Int32Array(SIG_WORDS);
  let any = false;
  for (let i = 0; i < dim && !any; i++) any = vector[i] !== 0;
  if (any) {
    const v = signatureInput(vector, centre);
    const p = hyperplanes(dim);
    // Four planes per pass over v (each component loaded once for four products). Each plane's sum still
    // runs over i in order, so every bit is exactly what one plane at a time computes (stored signatures match).
    for (let b = 0; b < SIG_BITS; b += 4) {
      let d0 = 0,
        d1 = 0,
        d2 = 0,
        d3 = 0;
      const o0 = b * dim,
        o1 = o0 + dim,
        o2 = o1 + dim,
        o3 = o2 + dim;
      for (let i = 0; i < dim; i++) {
        const x = v[i];
        d0 += p[o0 + i] * x;
        d1 += p[o1 + i] * x;
        d2 += p[o2 + i] * x;
        d3 += p[o3 + i] * x;
      }
      const s = b & 31;
      sig[b >>> 5] |= (d0 >= 0 ? 1 << s : 0) | (d1 >= 0 ? 1 << (s + 1) : 0) | (d2 >= 0 ? 1 << (s + 2) : 0) | (d3 >= 0 ? 1 << (s + 3) : 0);
    }
  }
  return sig;
}

/** Bytes of one vector of `dim` components at 4 bits (pack4): 16 per block of 32 components. */
export const q4Bytes = (dim: number): number => Math.ceil(dim / 32) * 16;

/**
 * Components beyond this many root-mean-squares of their vector are clipped to ±7 at 4 bits: the step that keeps
 * most of a 256-d embedding's ranking (a vector's components are near-Gaussian; its largest is ~3 RMS, so scaling
 * to the largest left most components in -3..3).
 */
export const Q4_CLIP_RMS = 2.4;

/**
 * An int8 vector (as stored) at 4 bits, into `out` at `off` (q4Bytes(dim) bytes): each component scaled so that
 * Q4_CLIP_RMS root-mean-squares are 7, rounded and clipped to -7..7, stored as value + 8; in each block of 32
 * components, byte i holds component i in its low nibble and component 16 + i in its high one (the layout the
 * 4-bit kernel reads; padding components are 0). Returns 1/‖4-bit vector‖, 0 when it is zero.
 */
export function pack4(q: Int8Array, dim: number, out: Uint8Array, off: number): number {
  let ss = 0;
  for (let i = 0; i < dim; i++) ss += q[i] * q[i];
  const k = ss > 0 ? 7 / (Q4_CLIP_RMS * Math.sqrt(ss / dim)) : 0;
  const at = (i: number) => (i < dim ? Math.max(-7, Math.min(7, Math.round(q[i] * k))) : 0);
  let s4 = 0;
  const bytes = q4Bytes(dim);
  for (let b = 0; b < bytes; b++) {
    const i = (b >> 4) * 32 + (b & 15);
    const lo = at(i);
    const hi = at(i + 16);
    s4 += lo * lo + hi * hi;
    out[off + b] = (lo + 8) | ((hi + 8) << 4);
  }
  return s4 > 0 ? 1 / Math.sqrt(s4) : 0;
}

/** 48 bits of a hex digest, as an exact integer. */
export const hashKey = (hex: string): number => parseInt(hex.slice(0, 12), 16);
