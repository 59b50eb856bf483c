/**
 * The vector index in memory (VectorIndex): the active model's vectors (int8, or 4-bit in a compact index) and
 * signatures, with each memory's namespace and visibility facts, in typed arrays; the admitted set of a query is
 * built here before anything is ranked or cut (vectors.ts describes the arm).
 */
import type { Include } from '../protocol/types';
import { pack4, q4Bytes, SIG_WORDS } from './quantize';
import { RowSlots } from './row-slots';
import { SigBuckets, type BandShape } from './vector-lsh';
import { allocKernelArray, growKernelArray, kernels4Run, kernelsRun, type KernelArray, type KernelMemory } from './vector-kernels';
import type { SlotArrays } from './vector-scan';

/**
 * Slots the cache of admitted sets holds in all beyond the store's own size (4 bytes each): the whole store and a
 * dozen scopes at 100k memories, the whole store and a few large scopes at 1M. A search of a scope seen before, with no write or time bound in between, skips the pass over its slots
 * (about 0.4 ms scoped and 1 ms whole-store at 100k).
 */
export const ADMIT_CACHE_SLOTS = 262_144;
/** Scopes of more namespaces than this are not cached (their key would cost more than the pass it saves). */
const ADMIT_CACHE_MAX_NS = 1024;

export interface VecModel {
  model: string;
  dimension: number;
  table: string;
  /**
   * What this table's signatures are centred on (quantize.ts signatureInput): fixed when the table is made, null for
   * tables made before centres (their signatures stay plain).
   */
  centre?: Float32Array | null;
}

const STATUS = { active: 0, proposed: 1, superseded: 2 } as Record<string, number>;
/** A namespace's slots, packed (`n` of them); `changes` counts changes to the slots listed (VectorIndex.visibleIn). */
interface NsList {
  slots: Int32Array;
  n: number;
  changes: number;
}
const DEFAULT_INCLUDE: Include = {};
const NONE_MAX = Number.MAX_VALUE;

export interface MetaRow {
  rowid: number;
  ns: number;
  status: string;
  deleted_at: number | null;
  expires_at: number | null;
  valid_from: number | null;
  valid_to: number | null;
}

/** The active model's vectors and each memory's scope and visibility facts, kept in typed arrays. */
export class VectorIndex implements SlotArrays {
  size = 0; // slots in use (including freed ones)
  cap = 0;
  rowid = new Int32Array(0);
  ns = new Int32Array(0);
  status = new Uint8Array(0); // 255 = free slot
  deleted = new Uint8Array(0);
  /**
   * Each slot's entry in `times` (0: none — no expiry and no validity window, as for most memories), so the
   * three bounds cost 4 bytes a slot rather than 24 (25 MB less resident at a million slots).
   */
  private timeRef = new Int32Array(0);
  /** The bounds of the slots that have any, entry r at 3r: expiry, validity start, validity end (entry 0 unused). */
  private times = new Float64Array(3);
  private timesUsed = 1;
  private timesFree: number[] = [];
  inv = new Float32Array(0);
  q: Int8Array = new Int8Array(0);
  /** A compact index's 4-bit vectors (quantize.ts pack4; `q` is then empty and `inv` is 1/‖q4‖). */
  q4: Uint8Array | null = null;
  sig: Int32Array = new Int32Array(0);
  /** The memory `q` and `sig` live in when the SIMD kernels can run (vector-kernels.ts). */
  kmem: KernelMemory | null = null;
  /** Each memory's slot, by memory rowid (a typed array, not a Map: a million entries cost 4 bytes each, not ~40). */
  slotOf = new RowSlots();
  /**
   * The slots of each namespace (by namespace rowid), packed, so a duplicate check scans one namespace's
   * signatures, not the store; `nsPos` is each slot's place in its namespace's list (-1: none).
   */
  private nsList = new Map<number, NsList>();
  private nsPos = new Int32Array(0);
  free: number[] = [];
  /** The buffer admit() returns views of. */
  private admitted = new Int32Array(0);
  /**
   * Bumped by every change of a slot's facts (setMeta, which put goes through, and remove): a cached admitted set
   * holds for one version.
   */
  private version = 0;
  /**
   * The admitted sets of recent scopes (no filter), by namespaces and visibility flags: reused while the index is
   * at the same version and the time is inside the window they hold for (no slot's expiry or validity bound
   * crossed). Bounded to ADMIT_CACHE_SLOTS slots beyond the store's size in all.
   */
  private admitCache = new Map<string, { version: number; from: number; until: number; slots: Int32Array }>();
  /**
   * Each namespace's visible slots as visibleIn last listed them: the first `n` of its list looked at, `m` of them
   * visible, holding for the list's `changes` and from `from` until `until` (the nearest time bound of its slots).
   */
  private visibleLists = new Map<
    number,
    { list: NsList; changes: number; n: number; m: number; from: number; until: number; slots: Int32Array }
  >();
  private admitCached = 0;
  /** Change-log position up to which the visibility facts are current. */
  position = 0;
  /**
   * The signatures' LSH buckets by namespace (vector-lsh.ts), kept like the namespace lists: a duplicate check in a
   * large namespace reads the slots that share a band with it (vector-duplicates.ts). Null: not kept.
   */
  readonly buckets: SigBuckets | null;

  constructor(
    readonly model: VecModel,
    /** Holds 4-bit vectors instead of int8 ones (VectorTables.compactAbove): candidates are ranked again from disk. */
    public compact = false,
    /** Above this many slots an int8 index turns compact (toCompact). */
    readonly compactAbove = Infinity,
    /** How the signatures are banded for the duplicate checks' buckets (vector-tuning.ts DUP_BANDS); null: no buckets. */
    bands: BandShape | null = null,
  ) {
    this.buckets = bands ? new SigBuckets(bands) : null;
  }

  get dimension(): number {
    return this.model.dimension;
  }

  grow(n: number): void {
    if (n <= this.cap) return;
    // Grow by a quarter: at 100k vectors a doubling left up to 30k empty slots (~10 MB with a 256-d model).
    const cap = Math.max(n, Math.ceil(this.cap * 1.25), 1024);
    const d = this.model.dimension;
    const g = <T extends { length: number; set(a: T): void }>(a: T, C: new (n: number) => T, per = 1): T => {
      const b = new C(cap * per);
      b.set(a);
      return b;
    };
    // What a scan reads (vector-scan.ts SlotArrays) lives in shared memory: the embedding worker ranks a search's
    // KNN and scores duplicate checks over these same arrays, without a copy.
    const shared = <T extends { length: number; set(a: T): void }>(
      a: T,
      C: { new (b: SharedArrayBuffer): T; BYTES_PER_ELEMENT: number },
      per = 1,
    ): T => {
      const b = new C(new SharedArrayBuffer(cap * per * C.BYTES_PER_ELEMENT));
      b.set(a);
      return b;
    };
    this.rowid = shared(this.rowid, Int32Array);
    this.ns = g(this.ns, Int32Array);
    this.status = g(this.status, Uint8Array);
    this.deleted = g(this.deleted, Uint8Array);
    this.timeRef = g(this.timeRef, Int32Array);
    this.inv = shared(this.inv, Float32Array);
    // Signatures and int8 vectors in shared WebAssembly memories, where the SIMD kernels read them
    // (vector-kernels.ts); SharedArrayBuffers where the kernels cannot run.
    const km = this.growKernels(cap, d);
    const per4 = q4Bytes(d);
    if (km) {
      if (this.compact) this.q4 = new Uint8Array(km.q.mem.buffer, km.q.off, cap * per4);
      else this.q = new Int8Array(km.q.mem.buffer, km.q.off, cap * d);
      this.sig = new Int32Array(km.sig.mem.buffer, km.sig.off, cap * SIG_WORDS);
    } else {
      if (this.compact) this.q4 = shared(this.q4 ?? new Uint8Array(0), Uint8Array, per4);
      else this.q = shared(this.q, Int8Array, d);
      this.sig = shared(this.sig, Int32Array, SIG_WORDS);
    }
    this.kmem = km;
    this.nsPos = g(this.nsPos, Int32Array);
    this.nsPos.fill(-1, this.cap);
    this.cap = cap;
    this.buckets?.grow(cap, this.ns, this.sig);
  }

  /**
   * The kernel arrays for `cap` slots: the current ones grown in place (their contents stay), or new ones holding
   * the current contents; null when the kernels do not run for this dimension.
   */
  private growKernels(cap: number, d: number): KernelMemory | null {
    if (!(this.compact ? kernels4Run(d) : kernelsRun(d))) return null;
    const place = (cur: KernelArray | undefined, perSlot: number, old: Int8Array | Uint8Array | Int32Array): KernelArray | null => {
      if (cur && growKernelArray(cur, cap, perSlot)) return cur;
      const a = allocKernelArray(cap, perSlot);
      if (a) new Uint8Array(a.mem.buffer, a.off, old.byteLength).set(new Uint8Array(old.buffer, old.byteOffset, old.byteLength));
      return a;
    };
    const q = this.compact ? place(this.kmem?.q, q4Bytes(d), this.q4 ?? new Uint8Array(0)) : place(this.kmem?.q, d, this.q);
    const sig = place(this.kmem?.sig, SIG_WORDS * 4, this.sig);
    return q && sig ? { q, sig } : null;
  }

  setMeta(slot: number, m: MetaRow): void {
    this.version++;
    this.changedListed(slot); // a listed slot's facts (or, through put, its vector) may change
    if (this.nsPos[slot] >= 0 && this.ns[slot] !== m.ns) {
      this.unlist(slot); // moved namespace: its buckets too
      if (this.buckets?.isListed(slot)) {
        this.buckets.unlist(slot, this.ns[slot], this.sig);
        this.buckets.list(slot, m.ns, this.sig);
      }
    }
    this.ns[slot] = m.ns;
    if (this.nsPos[slot] < 0) {
      let l = this.nsList.get(m.ns);
      if (!l) this.nsList.set(m.ns, (l = { slots: new Int32Array(16), n: 0, changes: 0 }));
      if (l.n === l.slots.length) {
        const b = new Int32Array(l.n * 2);
        b.set(l.slots);
        l.slots = b;
      }
      l.slots[l.n] = slot;
      this.nsPos[slot] = l.n++;
    }
    this.status[slot] = STATUS[m.status] ?? 1;
    this.deleted[slot] = m.deleted_at === null ? 0 : 1;
    this.setTimes(slot, m.expires_at ?? NONE_MAX, m.valid_from ?? -NONE_MAX, m.valid_to ?? NONE_MAX);
  }

  /** Keep a slot's time bounds: an entry in `times` when it has any, none otherwise. */
  private setTimes(slot: number, expires: number, from: number, to: number): void {
    let r = this.timeRef[slot];
    if (expires === NONE_MAX && from === -NONE_MAX && to === NONE_MAX) {
      if (r !== 0) this.freeTimes(slot);
      return;
    }
    if (r === 0) {
      r = this.timesFree.pop() ?? this.timesUsed++;
      if (r * 3 + 3 > this.times.length) {
        // By a quarter, as the slots grow: a store where every memory has bounds pays 28 bytes a slot, not 48.
        const b = new Float64Array(Math.max(r * 3 + 3, Math.ceil(this.times.length / 12) * 15, 48));
        b.set(this.times);
        this.times = b;
      }
      this.timeRef[slot] = r;
    }
    this.times[r * 3] = expires;
    this.times[r * 3 + 1] = from;
    this.times[r * 3 + 2] = to;
  }

  private freeTimes(slot: number): void {
    this.timesFree.push(this.timeRef[slot]);
    this.timeRef[slot] = 0;
  }

  put(m: MetaRow, q: Int8Array, sig: Int32Array, inv: number): void {
    const slot = this.slotFor(m);
    const d = this.model.dimension;
    this.buckets?.unlist(slot, this.ns[slot], this.sig); // listed by its former signature
    if (this.q4) this.inv[slot] = pack4(q, d, this.q4, slot * q4Bytes(d));
    else {
      this.inv[slot] = inv;
      this.q.set(q, slot * d);
    }
    this.sig.set(sig, slot * SIG_WORDS);
    this.bucket(slot);
  }

  /** List a slot whose signature was just written in the buckets (a zero vector is never a candidate: not listed). */
  private bucket(slot: number): void {
    if (this.buckets && this.inv[slot] !== 0) this.buckets.list(slot, this.ns[slot], this.sig);
  }

  /**
   * put() of a vector as stored (the int8 bytes and the signature's bytes, views on a row's blobs): copied straight
   * into the arrays, its norm computed on the way.
   */
  putStored(m: MetaRow, q: Uint8Array, sig: Uint8Array): void {
    const slot = this.slotFor(m);
    const d = this.model.dimension;
    const at = slot * d;
    const v = new Int8Array(q.buffer, q.byteOffset, d);
    this.buckets?.unlist(slot, this.ns[slot], this.sig);
    if (this.q4) this.inv[slot] = pack4(v, d, this.q4, slot * q4Bytes(d));
    else {
      this.q.set(v, at);
      let ss = 0;
      for (let i = 0; i < d; i++) ss += v[i] * v[i];
      this.inv[slot] = ss > 0 ? 1 / Math.sqrt(ss) : 0;
    }
    new Uint8Array(this.sig.buffer, this.sig.byteOffset + slot * SIG_WORDS * 4, SIG_WORDS * 4).set(sig.subarray(0, SIG_WORDS * 4));
    this.bucket(slot);
  }

  /**
   * Turn an int8 index into a compact one in place (the store grew past VectorTables.compactAbove while loaded):
   * each int8 vector in memory packed to 4 bits, the int8 arrays dropped.
   */
  toCompact(): void {
    if (this.compact) return;
    const d = this.model.dimension;
    const per = q4Bytes(d);
    const cap = this.cap;
    const old = this.q;
    this.compact = true;
    let km: KernelMemory | null = null;
    if (this.kmem && kernels4Run(d)) {
      const q = allocKernelArray(cap, per);
      if (q) km = { sig: this.kmem.sig, q };
    }
    if (km) this.q4 = new Uint8Array(km.q.mem.buffer, km.q.off, cap * per);
    else {
      this.q4 = new Uint8Array(new SharedArrayBuffer(cap * per));
      if (this.kmem) {
        // The signatures leave the kernel memory too: without the 4-bit kernel the scan runs its JavaScript loops.
        const sig = new Int32Array(new SharedArrayBuffer(cap * SIG_WORDS * 4));
        sig.set(this.sig);
        this.sig = sig;
      }
    }
    this.kmem = km;
    this.q = new Int8Array(0);
    for (let s = 0; s < this.size; s++)
      if (this.status[s] !== 255) this.inv[s] = pack4(old.subarray(s * d, (s + 1) * d), d, this.q4, s * per);
    this.version++;
    for (const l of this.nsList.values()) l.changes++; // every norm computed again
  }

  private slotFor(m: MetaRow): number {
    let slot = this.slotOf.get(m.rowid);
    if (slot === undefined) {
      slot = this.free.pop() ?? this.size++;
      if (!this.compact && this.size > this.compactAbove) this.toCompact();
      this.grow(this.size);
      this.slotOf.set(m.rowid, slot);
    }
    this.rowid[slot] = m.rowid;
    this.setMeta(slot, m);
    return slot;
  }

  /** A slot already listed is about to change: its namespace's visible list (visibleIn) is made again. */
  private changedListed(slot: number): void {
    if (this.nsPos[slot] < 0) return;
    const l = this.nsList.get(this.ns[slot]);
    if (l) l.changes++;
  }

  private unlist(slot: number): void {
    const pos = this.nsPos[slot];
    const l = this.nsList.get(this.ns[slot]);
    if (pos < 0 || !l) return;
    l.changes++; // the last slot moves into its place
    const last = l.slots[--l.n];
    l.slots[pos] = last;
    this.nsPos[last] = pos;
    this.nsPos[slot] = -1;
    if (l.n === 0) this.nsList.delete(this.ns[slot]);
  }

  /** Bytes of the typed arrays this index holds (capacity included; a kernel memory counts its committed pages). */
  memoryBytes(): number {
    let n = this.slotOf.bytes + this.admitted.byteLength + this.admitCached * 4;
    for (const a of [this.rowid, this.ns, this.status, this.deleted, this.timeRef, this.times, this.inv, this.nsPos]) n += a.byteLength;
    for (const l of this.nsList.values()) n += l.slots.byteLength;
    for (const c of this.visibleLists.values()) n += c.slots.byteLength;
    n += this.buckets?.bytes ?? 0;
    if (this.kmem) n += this.kmem.q.mem.buffer.byteLength + this.kmem.sig.mem.buffer.byteLength;
    else n += this.q.byteLength + (this.q4?.byteLength ?? 0) + this.sig.byteLength;
    return n;
  }

  /**
   * The slots of namespace `ns` visible by default (no include flag) at `now`, in its list's order: a duplicate
   * check's candidates. Kept per namespace and only extended by the slots appended to its list since, while none of
   * its listed slots changed (setMeta of one, a removal, a namespace move, toCompact: `changes`) and `now` has not
   * reached a time bound of its slots, so a bulk import's indexing passes look at the memories they add, not at the
   * whole namespace each (a pass over a 114k namespace per pass was the event loop's largest cost of an import at
   * 1M). A view, valid until the next call for this namespace.
   */
  visibleIn(ns: number, now: number): Int32Array {
    const l = this.nsList.get(ns);
    if (!l) {
      this.visibleLists.delete(ns);
      return new Int32Array(0);
    }
    let c = this.visibleLists.get(ns);
    if (!c || c.list !== l || c.changes !== l.changes || now < c.from || now >= c.until) {
      c = { list: l, changes: l.changes, n: 0, m: 0, from: now, until: Infinity, slots: c?.slots ?? new Int32Array(16) };
      this.visibleLists.set(ns, c);
    }
    if (c.slots.length < c.m + (l.n - c.n)) {
      const b = new Int32Array(Math.max(c.m + (l.n - c.n), c.slots.length * 2));
      b.set(c.slots.subarray(0, c.m));
      c.slots = b;
    }
    const { timeRef, times } = this;
    for (let j = c.n; j < l.n; j++) {
      const s = l.slots[j];
      const r = timeRef[s] * 3;
      // Any bound after `now`, of a visible slot or not, ends the list's validity (an expiry, a validity start or end).
      if (r !== 0) for (let k = r; k < r + 3; k++) if (times[k] > now && times[k] < c.until) c.until = times[k];
      if (this.visible(s, DEFAULT_INCLUDE, now)) c.slots[c.m++] = s;
    }
    c.n = l.n;
    return c.slots.subarray(0, c.m);
  }

  /** The slots of one namespace (a view: valid until the index changes). */
  namespaceSlots(ns: number): Int32Array {
    const l = this.nsList.get(ns);
    return l ? l.slots.subarray(0, l.n) : new Int32Array(0);
  }

  remove(rowid: number): void {
    const slot = this.slotOf.get(rowid);
    if (slot === undefined) return;
    this.version++;
    this.unlist(slot);
    this.buckets?.unlist(slot, this.ns[slot], this.sig);
    this.slotOf.delete(rowid);
    this.status[slot] = 255;
    this.inv[slot] = 0;
    if (this.timeRef[slot] !== 0) this.freeTimes(slot);
    this.free.push(slot);
  }

  /**
   * Admitted slots: scope namespaces (mask, null = all), visibility of `include` at `now`, optional rowid set.
   * The result is a view on a buffer reused by the next call, or a cached set (valid until the next call; never
   * to be written to).
   */
  admit(
    nsMask: Uint8Array | null,
    include: Include | undefined,
    now: number,
    only: Set<number> | null,
    nsIds: number[] | null = null,
  ): Int32Array {
    const inc = include ?? {};
    const want = only ? Math.min(only.size, this.size) : this.size;
    if (this.admitted.length < want) this.admitted = new Int32Array(Math.max(want, this.cap));
    const out = this.admitted;
    let n = 0;
    if (only) {
      for (const r of only) {
        const s = this.slotOf.get(r);
        if (s === undefined) continue;
        if (nsMask && (this.ns[s] >= nsMask.length || nsMask[this.ns[s]] === 0)) continue;
        if (this.visible(s, inc, now)) out[n++] = s;
      }
      return out.subarray(0, n);
    }
    // The common case in one loop over the typed arrays: live, non-zero, in scope, visible.
    const { status, inv, ns, deleted, timeRef, times } = this;
    const mlen = nsMask ? nsMask.length : 0;
    const wDeleted = !!inc.deleted,
      wProposed = !!inc.proposed,
      wSuperseded = !!inc.superseded,
      wExpired = !!inc.expired,
      wOut = !!inc.outOfValidity;
    const key =
      nsMask && nsIds && nsIds.length <= ADMIT_CACHE_MAX_NS
        ? `${+wDeleted}${+wProposed}${+wSuperseded}${+wExpired}${+wOut}:${nsIds.join(',')}`
        : null;
    const hit = key === null ? undefined : this.admitCache.get(key);
    if (hit && hit.version === this.version && now >= hit.from && now < hit.until) return hit.slots;
    // A scope much smaller than the store: only its namespaces' slots are visited (the mask still decides).
    let lists: Int32Array[] | null = null;
    if (nsMask && nsIds) {
      let total = 0;
      lists = [];
      for (const id of nsIds) {
        const l = this.nsList.get(id);
        if (l) {
          lists.push(l.slots.subarray(0, l.n));
          total += l.n;
        }
      }
      if (total * 4 > this.size) lists = null;
    }
    const visit = lists ?? [null];
    let until = Infinity;
    for (const list of visit)
      for (let j = 0, size = list ? list.length : this.size; j < size; j++) {
        const s = list ? list[j] : j;
        const st = status[s];
        if (st === 255 || inv[s] === 0) continue;
        if (nsMask) {
          const x = ns[s];
          if (x >= mlen || nsMask[x] === 0) continue;
        }
        if (!wDeleted && deleted[s]) continue;
        if ((st === 1 && !wProposed) || (st === 2 && !wSuperseded)) continue;
        // Time: the answer holds until the nearest bound after `now` (an expiry or validity end of a visible
        // slot, a validity start of one not yet valid); a bound at or before `now` stays crossed.
        const r = timeRef[s] * 3;
        if (r !== 0) {
          if (!wExpired) {
            const e = times[r];
            if (e <= now) continue;
            if (e < until) until = e;
          }
          if (!wOut) {
            const f = times[r + 1];
            if (f > now) {
              if (f < until) until = f;
              continue;
            }
            const t = times[r + 2];
            if (t <= now) continue;
            if (t < until) until = t;
          }
        }
        out[n++] = s;
      }
    const found = out.subarray(0, n);
    if (key === null) return found;
    if (hit) {
      this.admitCache.delete(key);
      this.admitCached -= hit.slots.length;
    }
    // The budget grows with the store, so the whole store's set (a million slots at 1M memories, where building it
    // is a pass over every slot per search) is cached beside the scopes' sets.
    const budget = ADMIT_CACHE_SLOTS + this.size;
    if (n > budget) return found; // never cached: the other scopes' sets stay
    if (this.admitCached + n > budget) {
      this.admitCache.clear();
      this.admitCached = 0;
    }
    // In shared memory: a KNN in the embedding worker reads a cached set where it is, without a copy per search
    // (VectorTables.prepareKnn); it is never written to.
    const slots = new Int32Array(new SharedArrayBuffer(n * 4));
    slots.set(found);
    this.admitCache.set(key, { version: this.version, from: now, until, slots });
    this.admitCached += n;
    return slots;
  }

  /** A live slot with a non-zero vector that the visibility rules of `inc` admit at `now`. */
  visible(s: number, inc: Include, now: number): boolean {
    const st = this.status[s];
    if (st === 255 || this.inv[s] === 0) return false;
    if (!inc.deleted && this.deleted[s]) return false;
    if ((st === 1 && !inc.proposed) || (st === 2 && !inc.superseded)) return false;
    const r = this.timeRef[s] * 3;
    if (r === 0) return true;
    if (!inc.expired && this.times[r] <= now) return false;
    if (!inc.outOfValidity && (this.times[r + 1] > now || this.times[r + 2] <= now)) return false;
    return true;
  }
}
