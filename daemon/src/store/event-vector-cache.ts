/**
 * The events' vector arm over typed arrays (docs/episodes.md): a copy of `event_vectors` in memory, with each
 * event's episode, reference time, kind and secret flag beside its vector, caught up from the table by position
 * before each scan (events are append-only and the event embedder writes in position order).
 *
 * Scope first: the SQL picks the episodes the scope and episode filters admit (live namespaces only), and the scan
 * scores only events of those episodes that pass the event filters (kind, time range, secret), so nothing outside
 * the scope is ever ranked. Before, the arm read every row through a join per query (tens of milliseconds for a
 * project of 20,000 events); this scan is a pass over arrays plus the dot products of the admitted events.
 *
 * What can make the copy stale is dropped with it: a model change (resetEventVectors) and an erased episode
 * (Episodes.erase) call `dropEventVectorCache`; a different model in `index_state` (another connection) is noticed
 * at the next scan. Hits are read back through SQL with scope and filters (Episodes.byPositions) before anyone sees
 * them, so an event erased by another connection is never shown.
 */
import type { Scope } from '../protocol/types';
import { stmt, type DB } from './db';
import { and } from './rows';
import { scopePredicate, type SqlFragment } from './scope';
import { allocKernelArray, dotsKernel, growKernelArray, kernelsRun, type KernelArray, type KernelMemory } from './vector-kernels';

export interface EventVectorQuery {
  scope?: Scope;
  kinds?: string[];
  sources?: string[];
  episodeId?: string;
  since?: number;
  before?: number;
  excludeSecrets?: boolean;
  limit: number;
}

const LOAD_STEP = 5000;

class Cache {
  n = 0;
  cap = 0;
  dim = 0;
  maxPos = 0;
  pos = new Int32Array(0);
  ep = new Int32Array(0);
  at = new Float64Array(0);
  kind = new Uint16Array(0);
  secret = new Uint8Array(0);
  inv = new Float32Array(0);
  /** The int8 vectors: in a kernel memory when the SIMD kernels run (vector-kernels.ts), else in `q`. */
  q = new Int8Array(0);
  kq: KernelArray | null = null;
  readonly kinds = new Map<string, number>();
  /** Each episode's slots, in position order: a scan visits only the admitted episodes' slots. */
  readonly slots = new Map<number, number[]>();

  constructor(readonly model: string) {}

  private grow(need: number, dim: number): void {
    if (this.dim === 0) this.dim = dim;
    if (need <= this.cap) return;
    const cap = Math.max(need, Math.ceil(this.cap * 1.5), 1024);
    const n = this.n;
    function g<A extends Int32Array | Float64Array | Uint16Array | Uint8Array | Float32Array | Int8Array>(a: A, perSlot = 1): A {
      const b = new (a.constructor as new (size: number) => A)(cap * perSlot);
      b.set(a.subarray(0, n * perSlot) as never);
      return b;
    }
    this.pos = g(this.pos);
    this.ep = g(this.ep);
    this.at = g(this.at);
    this.kind = g(this.kind);
    this.secret = g(this.secret);
    this.inv = g(this.inv);
    if (this.cap === 0 && kernelsRun(this.dim)) this.kq = allocKernelArray(cap, this.dim);
    if (this.kq && !growKernelArray(this.kq, cap, this.dim)) {
      const moved = allocKernelArray(cap, this.dim);
      if (moved) new Int8Array(moved.mem.buffer, moved.off, n * this.dim).set(new Int8Array(this.kq.mem.buffer, this.kq.off, n * this.dim));
      else this.q = new Int8Array(new Int8Array(this.kq.mem.buffer, this.kq.off, n * this.dim));
      this.kq = moved;
    }
    if (!this.kq) this.q = g(this.q, this.dim);
    this.cap = cap;
  }

  /** Append the vectors written since the last catch-up (by position). */
  catchUp(db: DB): void {
    const read = stmt(
      db,
      `SELECT v.pos, e.episode, e.at, e.kind, e.secret, v.inv, v.q FROM event_vectors v JOIN events e ON e.pos = v.pos
        WHERE v.pos > ? ORDER BY v.pos LIMIT ?`,
    ).raw();
    for (;;) {
      const rows = read.all(this.maxPos, LOAD_STEP) as [number, number, number, string, number, number, Buffer][];
      if (rows.length === 0) return;
      this.grow(this.n + rows.length, this.dim || rows[0][6].byteLength);
      for (const [pos, ep, at, kind, secret, inv, q] of rows) {
        this.maxPos = pos;
        if (q.byteLength !== this.dim) continue; // not this model's dimension: never scored
        const i = this.n++;
        const list = this.slots.get(ep);
        if (list) list.push(i);
        else this.slots.set(ep, [i]);
        this.pos[i] = pos;
        this.ep[i] = ep;
        this.at[i] = at;
        let k = this.kinds.get(kind);
        if (k === undefined) this.kinds.set(kind, (k = this.kinds.size));
        this.kind[i] = k;
        this.secret[i] = secret;
        this.inv[i] = inv;
        const v = new Int8Array(q.buffer, q.byteOffset, q.byteLength);
        if (this.kq) new Int8Array(this.kq.mem.buffer, this.kq.off + i * this.dim, this.dim).set(v);
        else this.q.set(v, i * this.dim);
      }
      if (rows.length < LOAD_STEP) return;
    }
  }
}

const caches = new WeakMap<DB, Cache>();

/** Forget the in-memory copy of the event vectors (a model change, an erased episode): the next scan reloads it. */
export function dropEventVectorCache(db: DB): void {
  caches.delete(db);
}

/** The episodes (rowids) the scope and the episode filters admit, live namespaces only. */
function admittedEpisodes(db: DB, q: EventVectorQuery): number[] {
  const f: (SqlFragment | null)[] = [{ sql: 'n.deleted_at IS NULL', params: [] }, scopePredicate(q.scope)];
  if (q.sources?.length) f.push({ sql: `ep.source IN (SELECT value FROM json_each(?))`, params: [JSON.stringify(q.sources)] });
  if (q.episodeId !== undefined) f.push({ sql: 'ep.id = ?', params: [q.episodeId] });
  const where = and(...f);
  return stmt(db, `SELECT ep.rowid FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ${where.sql}`)
    .pluck()
    .all(...where.params) as number[];
}

/**
 * Cosine similarity of `query` (unit length) to every embedded event the scope and filters admit, best first (ties:
 * newer first), at most `limit`. `model`: the model the event vectors belong to (index_state).
 */
export function scanEventVectors(
  db: DB,
  model: string,
  query: Float32Array,
  q: EventVectorQuery,
): { pos: number; ep: number; score: number }[] {
  let c = caches.get(db);
  if (!c || c.model !== model) caches.set(db, (c = new Cache(model)));
  c.catchUp(db);
  const admitted = admittedEpisodes(db, q);
  const kindOk = new Uint8Array(c.kinds.size).fill(q.kinds?.length ? 0 : 1);
  for (const k of q.kinds ?? []) {
    const i = c.kinds.get(k);
    if (i !== undefined) kindOk[i] = 1;
  }
  const since = q.since ?? -Infinity;
  const before = q.before ?? Infinity;
  const noSecrets = q.excludeSecrets === true;
  const { kind, at, secret, inv, pos, ep } = c;
  // The admitted slots (scope, then the event filters), then their dot products with the query.
  let n = 0;
  for (const e of admitted) n += c.slots.get(e)?.length ?? 0;
  const pool = new Int32Array(n);
  let m = 0;
  for (const e of admitted)
    for (const i of c.slots.get(e) ?? []) {
      if (kindOk[kind[i]] === 0 || at[i] < since || at[i] >= before || (noSecrets && secret[i] === 1) || inv[i] === 0) continue;
      pool[m++] = i;
    }
  const slots = pool.subarray(0, m);
  const dots = new Float32Array(m);
  if (c.kq && query.length === c.dim) dotsKernel({ q: c.kq, sig: c.kq } as KernelMemory, c.dim, slots, query, dots);
  else dotLoop(c.q, c.dim, slots, query, dots);
  const top: { pos: number; ep: number; score: number }[] = [];
  let floor = -Infinity;
  for (let k = 0; k < m; k++) {
    const i = slots[k];
    const score = dots[k] * inv[i];
    if (top.length >= q.limit && score <= floor) continue;
    top.push({ pos: pos[i], ep: ep[i], score });
    if (top.length > q.limit * 2) {
      top.sort((a, b) => b.score - a.score || b.pos - a.pos);
      top.length = q.limit;
      floor = top[top.length - 1].score;
    }
  }
  top.sort((a, b) => b.score - a.score || b.pos - a.pos);
  return top.slice(0, q.limit);
}

/** The dot products in JavaScript (no SIMD kernels, or a query of another dimension). */
function dotLoop(vecs: Int8Array, stride: number, slots: Int32Array, query: Float32Array, out: Float32Array): void {
  const dim = Math.min(stride, query.length);
  for (let k = 0; k < slots.length; k++) {
    const o = slots[k] * stride;
    let dot = 0;
    for (let j = 0; j < dim; j++) dot += vecs[o + j] * query[j];
    out[k] = dot;
  }
}
