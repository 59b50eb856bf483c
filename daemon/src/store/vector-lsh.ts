/**
 * Banded LSH over the vector index's SimHash signatures (store/quantize.ts, 256 bits), so a duplicate check in a
 * large namespace reads the memories that share a band of bits with it instead of every signature of the namespace
 * (vector-duplicates.ts). Each signature is cut into `bands` bands of `bits` bits (band k: bits k·bits ..
 * (k + 1)·bits − 1); a slot is listed, per band, in the bucket of its namespace and its band's value. The buckets are
 * chains through typed arrays: one head per hash bucket per band (a power of two at least the capacity, so a
 * bucket holds about one key) and one `next` per slot per band, 8 bytes per slot per band in all, plus a byte per
 * slot saying whether it is listed. Keys of different namespaces or values may share a chain (hash collisions):
 * a reader keeps only the slots of its namespace and value (`probe`), and the caller still decides visibility.
 */
import { SIG_BITS, SIG_WORDS } from './quantize';

/** How signatures are banded: `bands` bands of `bits` bits (a divisor of 32), bands × bits ≤ SIG_BITS. */
export interface BandShape {
  bits: number;
  bands: number;
}

/** The value of band `k` of the signature at `off` in `sig` (bits of one 32-bit word). */
export function bandValue(sig: Int32Array, off: number, k: number, bits: number): number {
  const at = k * bits;
  const w = sig[off + (at >>> 5)] >>> (at & 31);
  return bits === 32 ? w >>> 0 : (w & ((1 << bits) - 1)) >>> 0;
}

/** A well-mixed 32-bit hash of (band, namespace, value). */
function keyHash(k: number, ns: number, v: number): number {
  let h = Math.imul(v ^ Math.imul(ns, 0x9e3779b1), 0x85ebca6b) ^ Math.imul(k + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b);
  return h ^ (h >>> 16);
}

export class SigBuckets {
  /** Per band, the first slot of each hash bucket's chain (-1: empty); `mask + 1` buckets each. */
  private heads: Int32Array[] = [];
  private mask = -1;
  /** Slot `s`'s successor in its chain of band `k`: next[s · bands + k] (-1: the end). */
  private next = new Int32Array(0);
  /** 1 when the slot is listed (listed with the namespace and signature it had then: unlist before they change). */
  private listed = new Uint8Array(0);

  constructor(readonly shape: BandShape) {
    if (32 % shape.bits !== 0 || shape.bits * shape.bands > SIG_BITS) throw new Error(`bad band shape ${shape.bits}x${shape.bands}`);
  }

  /**
   * Room for `cap` slots. The heads grow with the capacity (rehashing every listed slot: `ns` and `sig` are the
   * index's arrays).
   */
  grow(cap: number, ns: Int32Array, sig: Int32Array): void {
    const B = this.shape.bands;
    if (this.listed.length < cap) {
      const next = new Int32Array(cap * B).fill(-1);
      next.set(this.next);
      this.next = next;
      const listed = new Uint8Array(cap);
      listed.set(this.listed);
      this.listed = listed;
    }
    let size = 1024;
    while (size < cap) size *= 2;
    if (size - 1 === this.mask) return;
    this.mask = size - 1;
    this.heads = Array.from({ length: B }, () => new Int32Array(size).fill(-1));
    for (let s = 0; s < this.listed.length; s++)
      if (this.listed[s]) {
        this.listed[s] = 0;
        this.list(s, ns[s], sig);
      }
  }

  isListed(slot: number): boolean {
    return this.listed[slot] === 1;
  }

  /** List `slot` under namespace `ns` and its signature in `sig`. */
  list(slot: number, ns: number, sig: Int32Array): void {
    if (this.listed[slot]) return;
    const { bits, bands } = this.shape;
    const off = slot * SIG_WORDS;
    for (let k = 0; k < bands; k++) {
      const head = this.heads[k];
      const h = keyHash(k, ns, bandValue(sig, off, k, bits)) & this.mask;
      this.next[slot * bands + k] = head[h];
      head[h] = slot;
    }
    this.listed[slot] = 1;
  }

  /** Take `slot` out of its buckets: `ns` and `sig` must still be what it was listed with. */
  unlist(slot: number, ns: number, sig: Int32Array): void {
    if (!this.listed[slot]) return;
    const { bits, bands } = this.shape;
    const off = slot * SIG_WORDS;
    const next = this.next;
    for (let k = 0; k < bands; k++) {
      const head = this.heads[k];
      const h = keyHash(k, ns, bandValue(sig, off, k, bits)) & this.mask;
      const at = slot * bands + k;
      if (head[h] === slot) head[h] = next[at];
      else
        for (let s = head[h]; s >= 0; s = next[s * bands + k])
          if (next[s * bands + k] === slot) {
            next[s * bands + k] = next[at];
            break;
          }
      next[at] = -1;
    }
    this.listed[slot] = 0;
  }

  /**
   * The slots listed under namespace `ns` whose band `k` has value `v` (of the index's signatures `sig`; namespaces
   * `nsOf`), not yet marked in `seen` with `stamp`, each marked and passed to `keep`; those it keeps go into
   * `out` from `n` on. Returns the new count (at most `out.length`).
   */
  probe(
    k: number,
    ns: number,
    v: number,
    nsOf: Int32Array,
    sig: Int32Array,
    seen: Int32Array,
    stamp: number,
    keep: (slot: number) => boolean,
    out: Int32Array,
    n: number,
  ): number {
    const { bits, bands } = this.shape;
    const next = this.next;
    const word = (k * bits) >>> 5;
    const shift = (k * bits) & 31;
    const mask = bits === 32 ? -1 : (1 << bits) - 1;
    for (let s = this.heads[k][keyHash(k, ns, v) & this.mask]; s >= 0 && n < out.length; s = next[s * bands + k]) {
      if (seen[s] === stamp || nsOf[s] !== ns || ((sig[s * SIG_WORDS + word] >>> shift) & mask) >>> 0 !== v) continue;
      seen[s] = stamp;
      if (keep(s)) out[n++] = s;
    }
    return n;
  }

  /** Bytes of the typed arrays held. */
  get bytes(): number {
    return this.next.byteLength + this.listed.byteLength + this.heads.reduce((n, h) => n + h.byteLength, 0);
  }
}

/** Scratch of bucketCandidates: a mark per slot (which call saw it last) and the output buffer. */
export interface BucketScratch {
  seen: Int32Array;
  stamp: number;
  out: Int32Array;
}

export const newBucketScratch = (): BucketScratch => ({ seen: new Int32Array(0), stamp: 0, out: new Int32Array(0) });

/**
 * The slots of namespace `ns` sharing a band with the signature `q` (multi-probe: with `flips` 1, also the values
 * one bit away in each band), each once, that `keep` keeps: a view on `sc.out`, valid until the next call.
 */
export function bucketCandidates(
  b: SigBuckets,
  q: Int32Array,
  ns: number,
  nsOf: Int32Array,
  sig: Int32Array,
  flips: number,
  keep: (slot: number) => boolean,
  sc: BucketScratch,
  slots: number,
): Int32Array {
  const { bits, bands } = b.shape;
  if (sc.seen.length < slots) {
    sc.seen = new Int32Array(slots);
    sc.stamp = 0;
  }
  if (sc.out.length < slots) sc.out = new Int32Array(slots);
  const stamp = ++sc.stamp;
  let n = 0;
  for (let k = 0; k < bands; k++) {
    const v = bandValue(q, 0, k, bits);
    n = b.probe(k, ns, v, nsOf, sig, sc.seen, stamp, keep, sc.out, n);
    if (flips >= 1) for (let i = 0; i < bits; i++) n = b.probe(k, ns, (v ^ (1 << i)) >>> 0, nsOf, sig, sc.seen, stamp, keep, sc.out, n);
  }
  return sc.out.subarray(0, n);
}
