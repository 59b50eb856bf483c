/**
 * Vector storage and the vector arm, one table per embedding model (model id and
 * dimension recorded in vec_models), so switching models never mixes spaces.
 *
 * On disk each vector is stored once, in `vq_N(rowid, q, sig, text_hash)`:
 * - `q`: the vector quantized to int8 (per-vector scale, dropped: cosine does not need it);
 * - `sig`: a 256-bit SimHash (signs of 256 fixed random projections of the float vector);
 * - `text_hash`: 48 bits of the hash of the embedded text (to skip re-embedding unchanged text).
 *
 * In memory (`VectorIndex`, vector-index.ts) the daemon keeps the active model's vectors (int8, about D + 88 bytes
 * per memory; above COMPACT_ABOVE 4-bit, about D/2 + 88, the candidates ranked again by the int8 vectors on disk)
 * with each memory's namespace and visibility facts. The visibility facts follow the change log: before every query the
 * index applies the changes after its position, so a delete, supersession,
 * expiry change or namespace deletion made by any process is seen by the next
 * query. A query builds the set of admitted slots first (the scope's live
 * namespaces, the visibility rules of `include`, and with a filter the rowids
 * the SQL WHERE admits) and only then ranks and cuts them, so an out-of-scope or
 * invisible memory can never take a place in the top-k:
 * - up to EXACT_MAX admitted vectors: exact cosine (float query × int8 vector) over all of them;
 * - more: the SIMHASH_CANDIDATES admitted vectors nearest in Hamming distance, then exact cosine
 *   over those (approximate: a true top-k member is missed only if it falls outside these).
 * A scope much smaller than the store visits only its namespaces' slots; the Hamming pass, the scoring and
 * the top-k heap are single loops over typed arrays with buffers reused between queries.
 *
 * Duplicate detection (`similarInNamespace`) uses the same index and the same two steps: up to DUP_EXACT_MAX
 * visible memories of the namespace are scored exactly; above it, the DUP_CANDIDATES nearest by Hamming distance.
 * (A Hamming bound derived from the threshold filtered nothing at the thresholds the models need, about 0.66:
 * unrelated memories of one project are often within it, so every check scored the whole namespace.)
 */
import { CairnError } from '../protocol/errors';
import type { Filter, Include, Scope } from '../protocol/types';
import { stmt, type DB } from './db';
import { compileFilter } from './filter';
import { and, visibility } from './rows';
import { scopePredicate } from './scope';
import type { ArmHit } from './search-fts';
import { quantize, SIG_WORDS } from './quantize';
import { ADMIT_CACHE_SLOTS, VectorIndex, type MetaRow, type VecModel } from './vector-index';
import {
  duplicateHits,
  int8Cosine,
  newScratch,
  normalized,
  queryNearest,
  runDuplicateScan,
  type DuplicateScan,
  type DuplicateScanResult,
  type SlotArrays,
} from './vector-scan';

export { ADMIT_CACHE_SLOTS, type VecModel };

/**
 * Admitted vectors up to which the vector arm is exact. At 100k memories (bench/sidebyside.ts workload) a
 * 16k-memory project scored every vector exactly (~4M multiply-adds, the slowest scoped queries); from 4096 on it
 * takes SIMHASH_CANDIDATES by Hamming distance first: the arm's top 100 kept 99.6% of the exact top 100 over the
 * 200 scoped queries, and hybrid hit@5/@25 of the query's source memory was unchanged. LoCoMo's conversations
 * (under 1,000 memories each) stay exact, so their figures cannot move.
 */
export const EXACT_MAX = 4096;
/**
 * Candidates taken by Hamming distance before exact rescoring, above EXACT_MAX. 5120 keeps 86.0% of the exact
 * top 100 on the whole 100k store (92.7% of the top 25); the previous selection (4096 plus every slot tied at the
 * cut-off distance, ~5,000) kept 85.1% (92.2%).
 */
export const SIMHASH_CANDIDATES = 5120;
/**
 * Above SIMHASH_CANDIDATES / CANDIDATE_SHARE admitted vectors (102,400), this share of them is taken by Hamming
 * distance instead: the share 5,120 is of the 100k store, so a larger store keeps its recall. Recall@10 of the
 * whole-store arm against exact at 100k (bench/vector-recall.ts) was 0.951 with 5.1% of the vectors as candidates,
 * 0.851 with 1.6% and 0.775 with 0.5% (what a fixed 5,120 is of a million); the arm's time barely moved (the
 * Hamming pass over every admitted vector is most of it, the exact scores of the candidates run in SIMD).
 */
export const CANDIDATE_SHARE = 1 / 20;
/** A duplicate check scores every visible memory of a namespace exactly up to this many. */
export const DUP_EXACT_MAX = 256;
/**
 * Above DUP_EXACT_MAX, a duplicate check scores exactly the memories nearest by Hamming distance, this many: a
 * possible duplicate (cosine ≥ ~0.66, expected Hamming distance ≤ ~70 of 256 bits) is missed only when this many
 * memories of its namespace are nearer still, and then the ones reported are at least as similar.
 */
export const DUP_CANDIDATES = 128;
/**
 * Vectors read per slice when the index is loaded in the background (loadInSlices): about 10-20 ms of the event
 * loop each, so requests wait at most that long while a million vectors load.
 */
export const LOAD_SLICE = 8192;
/**
 * Vectors above which the index in memory is compact: 4-bit vectors (D/2 bytes) beside the signatures instead of
 * int8 ones (D bytes), each scan's best rerankPool(limit) ranked again by the int8 vectors read from disk
 * (rerank). At a million 256-d vectors that is 122 MiB less resident, for one indexed read of a few hundred rows
 * per search. At or below it (every store up to the 100k side-by-side workload) the index is int8 as before and
 * answers exactly as before. An index that grows past it while loaded turns compact in place.
 */
export const COMPACT_ABOVE = 131_072;
/** What a KNN asks: its scope, filter and visibility at `now`, and how many hits. */
export interface KnnQuery {
  scope?: Scope;
  filter?: Filter;
  include?: Include;
  now: number;
  limit: number;
  /** Rowids not admitted (the base rows a memory branch shadows). */
  exclude?: Set<number>;
}

/** A KNN's admitted set and what its scan reads (VectorTables.prepareKnn). */
export interface PreparedKnn {
  arrays: SlotArrays;
  /** Admitted slots (a copy of its own: a view on its own buffer or on the `spare` given). */
  admitted: Int32Array;
  /** The rows a filter admits, or null without a filter. */
  only: Set<number> | null;
  exactMax: number;
  candidates: number;
}

// ------------------------------------------------------------------ tables
export class VectorTables {
  private cached: VecModel[] | null = null;
  private index: VectorIndex | null = null;
  /** The index being loaded a slice at a time (loadInSlices), not yet the one searches use. */
  private loading: VectorIndex | null = null;
  /** In-memory changes of the open transaction, applied on commit. */
  private staged: (() => void)[] = [];
  /** Admitted vectors up to which the arm is exact (a knob for tests and benches). */
  exactMax = EXACT_MAX;
  /** Candidates taken by Hamming distance above exactMax (a knob for tests and benches). */
  candidates = SIMHASH_CANDIDATES;
  /** The share of the admitted vectors taken by Hamming distance when that is more than `candidates` (CANDIDATE_SHARE). */
  candidateShare = CANDIDATE_SHARE;
  /** DUP_EXACT_MAX and DUP_CANDIDATES (knobs for tests and benches). */
  dupExactMax = DUP_EXACT_MAX;
  dupCandidates = DUP_CANDIDATES;
  /** Vectors per slice of loadInSlices (LOAD_SLICE; a knob for tests). */
  loadSlice = LOAD_SLICE;
  /** Vectors above which the index in memory is compact (COMPACT_ABOVE; a knob for tests and benches). */
  compactAbove = COMPACT_ABOVE;

  constructor(
    private readonly db: DB,
    /** sqlite-vec loaded (only needed to drop the vec0 tables of stores from before schema 3). */
    readonly available: boolean,
    private readonly position: () => number,
  ) {}

  models(): VecModel[] {
    return (this.cached ??= stmt(
      this.db,
      'SELECT model, dimension, table_name AS "table" FROM vec_models ORDER BY created_at',
    ).all() as VecModel[]);
  }

  model(model: string): VecModel | undefined {
    return this.models().find((m) => m.model === model);
  }

  /** Create (or find) the table of a model. */
  ensure(model: string, dimension: number): VecModel {
    const found = this.model(model);
    if (found) {
      if (found.dimension !== dimension)
        throw new CairnError('InvalidState', `model ${model} was stored with dimension ${found.dimension}, now reports ${dimension}`);
      return found;
    }
    if (!Number.isInteger(dimension) || dimension < 1 || dimension > 8192)
      throw new CairnError('InvalidParams', `bad embedding dimension ${dimension}`);
    const n =
      ((stmt(this.db, 'SELECT coalesce(max(CAST(substr(table_name, 4) AS INTEGER)), 0) AS n FROM vec_models').get() as { n: number }).n ??
        0) + 1;
    const table = createVectorTable(this.db, n);
    stmt(this.db, 'INSERT INTO vec_models(model, dimension, table_name, created_at) VALUES (?, ?, ?, ?)').run(
      model,
      dimension,
      table,
      Date.now(),
    );
    this.cached = null;
    return { model, dimension, table };
  }

  drop(model: string): void {
    const m = this.model(model);
    if (!m) return;
    this.db.exec(`DROP TABLE IF EXISTS ${m.table}`);
    stmt(this.db, 'DELETE FROM vec_models WHERE model = ?').run(model);
    this.counted.delete(model);
    stmt(this.db, 'DELETE FROM index_state WHERE name = ?').run(`vec:${model}`);
    this.cached = null;
    if (this.index?.model.model === model) this.staged.push(() => (this.index = null));
    if (this.loading?.model.model === model) this.staged.push(() => (this.loading = null));
  }

  /** Load a model's vectors into memory (the daemon's active model) at once; search and duplicate checks use it. */
  load(model: VecModel): void {
    const l = this.startLoad(model);
    while (!l.step(LOAD_SLICE));
  }

  /**
   * Load a model's vectors into memory a slice at a time, yielding to the event loop between slices, so a daemon
   * opening a large store serves requests meanwhile (its search is full-text until the vectors are in: the caller
   * keeps the vector arm unavailable). Writes committed meanwhile reach the index being built (putMany, deleteRow),
   * and its visibility facts are those of the change log when the load began, brought up to date by the first
   * refresh. `progress(done, total)` after each slice. Returns whether the model's index is in place at the end
   * (false when `cancelled()` said stop or the model was dropped meanwhile; a search that could not wait, liveIndex,
   * may have loaded it at once instead).
   */
  async loadInSlices(
    model: VecModel,
    progress: (done: number, total: number) => void = () => {},
    cancelled: () => boolean = () => false,
  ): Promise<boolean> {
    const l = this.startLoad(model);
    try {
      for (;;) {
        if (cancelled() || this.loading !== l.ix) return !cancelled() && this.index?.model.model === model.model;
        const done = l.step(this.loadSlice);
        progress(l.done, l.total);
        if (done) return this.index?.model.model === model.model;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      if (this.loading === l.ix) this.loading = null;
    }
  }

  /**
   * A load in rowid order: each step reads up to `n` vectors after the last one read, with their memories' scope
   * and visibility facts, into the index being built; the last step makes it the index. A vector written meanwhile
   * with a rowid above the cursor is read by a later step; below it, putMany put it in already.
   */
  private startLoad(model: VecModel): { ix: VectorIndex; step: (n: number) => boolean; done: number; total: number } {
    // About how many (the largest rowid): a count(*) reads the whole table, about a second at a million vectors,
    // and a load on first use runs it in the tick of the search that asked.
    const total = this.sizeHint(model);
    const ix = new VectorIndex(model, total > this.compactAbove, this.compactAbove);
    ix.position = this.position();
    ix.grow(total); // sized once for what is stored, not by repeated growth
    this.loading = ix;
    // Its own statement (raw rows: arrays, not objects), not the shared cache's.
    const page = this.db
      .prepare(
        `SELECT v.rowid, v.q, v.sig, nn.rowid, m.status, m.deleted_at, m.expires_at, m.valid_from, m.valid_to
        FROM ${model.table} v JOIN memories m ON m.rowid = v.rowid JOIN namespaces nn ON nn.id = m.ns_id
        WHERE v.rowid > ? ORDER BY v.rowid LIMIT ?`,
      )
      .raw(true);
    let after = 0;
    const meta: MetaRow = { rowid: 0, ns: 0, status: '', deleted_at: null, expires_at: null, valid_from: null, valid_to: null };
    const state = {
      ix,
      done: 0,
      total,
      /** Reads up to `n` more vectors; true when the load is complete. */
      step: (n: number): boolean => {
        const rows = page.all(after, n) as [
          number,
          Buffer,
          Buffer,
          number,
          string,
          number | null,
          number | null,
          number | null,
          number | null,
        ][];
        for (const r of rows) {
          meta.rowid = r[0];
          meta.ns = r[3];
          meta.status = r[4];
          meta.deleted_at = r[5];
          meta.expires_at = r[6];
          meta.valid_from = r[7];
          meta.valid_to = r[8];
          ix.putStored(meta, r[1], r[2]);
        }
        state.done += rows.length;
        if (rows.length > 0) after = rows[rows.length - 1][0];
        if (rows.length === n) return false;
        if (this.loading === ix) {
          this.loading = null;
          this.index = ix;
        }
        return true;
      },
    };
    return state;
  }

  loaded(): VecModel | null {
    return this.index?.model ?? null;
  }

  /** Drop the index from memory (it is read again by the next load). */
  unload(): void {
    this.index = null;
  }

  /** About how many vectors a model has, without reading its table: the largest rowid (rowids are dense). */
  sizeHint(model: VecModel): number {
    return (stmt(this.db, `SELECT coalesce(max(rowid), 0) AS n FROM ${model.table}`).get() as { n: number }).n;
  }

  /** Bytes the index in memory holds (0 when it is not in memory): its typed arrays, including unused capacity. */
  memoryBytes(): number {
    const ix = this.index;
    if (!ix) return 0;
    return ix.memoryBytes();
  }

  /** The index in memory for store/status (embeddings.index). */
  memory(): { bytes: number; compact: boolean } {
    return { bytes: this.memoryBytes(), compact: this.index?.compact ?? false };
  }

  /** Apply (or drop) the in-memory side of a transaction; called by the Store after commit or rollback. */
  settle(committed: boolean): void {
    const s = this.staged;
    this.staged = [];
    if (committed) for (const f of s) f();
  }

  private meta(rowids: number[]): MetaRow[] {
    return stmt(
      this.db,
      `SELECT m.rowid, nn.rowid AS ns, m.status, m.deleted_at, m.expires_at, m.valid_from, m.valid_to
      FROM memories m CROSS JOIN namespaces nn ON nn.id = m.ns_id WHERE m.rowid IN (SELECT value FROM json_each(?))`,
    ).all(JSON.stringify(rowids)) as MetaRow[];
  }

  /**
   * Bring the in-memory visibility facts up to the change log: every memory
   * changed after the index's position gets its current facts; purged memories
   * leave the index.
   */
  refresh(): void {
    const ix = this.index;
    if (!ix) return;
    const pos = this.position();
    if (pos <= ix.position) return;
    let purged = false;
    for (let after = ix.position; after < pos;) {
      const ch = stmt(
        this.db,
        'SELECT c.position, m.rowid, c.op FROM changes c LEFT JOIN memories m ON m.id = c.memory_id WHERE c.position > ? ORDER BY c.position LIMIT 2000',
      ).all(after) as { position: number; rowid: number | null; op: string }[];
      if (ch.length === 0) break;
      const rowids = [...new Set(ch.filter((c) => c.rowid !== null && ix.slotOf.has(c.rowid)).map((c) => c.rowid!))];
      for (const m of this.meta(rowids)) {
        const s = ix.slotOf.get(m.rowid);
        if (s !== undefined) ix.setMeta(s, m);
      }
      if (ch.some((c) => c.op === 'purge' || c.op === 'erase' || c.op === 'import')) purged = true;
      after = ch[ch.length - 1].position;
    }
    if (purged) {
      // Purges leave no memory row to find the slot by: drop the slots whose vector row is gone.
      const live = new Set((stmt(this.db, `SELECT rowid FROM ${ix.model.table}`).all() as { rowid: number }[]).map((r) => r.rowid));
      for (const r of ix.slotOf.keys()) if (!live.has(r)) ix.remove(r);
    }
    ix.position = pos;
  }

  /** Called inside a purge: the memory's vectors go with it. */
  deleteRow(rowid: number): void {
    this.counted.clear();
    for (const m of this.models()) stmt(this.db, `DELETE FROM ${m.table} WHERE rowid = ?`).run(rowid);
    if (this.index) this.staged.push(() => this.index?.remove(rowid));
    if (this.loading) this.staged.push(() => this.loading?.remove(rowid));
  }

  /** Hashes of the texts the memories' vectors were computed from (to skip re-embedding unchanged text). */
  textHashes(model: VecModel, rowids: number[]): Map<number, number> {
    const rows = stmt(this.db, `SELECT rowid, text_hash FROM ${model.table} WHERE rowid IN (SELECT value FROM json_each(?))`).all(
      JSON.stringify(rowids),
    ) as { rowid: number; text_hash: number }[];
    return new Map(rows.map((r) => [r.rowid, r.text_hash]));
  }

  textHash(model: VecModel, rowid: number): number | undefined {
    return this.textHashes(model, [rowid]).get(rowid);
  }

  /**
   * Store a memory's vector; returns its SimHash (for a duplicate check of the same vector), null when the memory
   * is gone. `sig`: the vector's SimHash when the embedding worker computed it already.
   */
  put(model: VecModel, rowid: number, vector: Float32Array, textHash: number, sig?: Int32Array): Int32Array | null {
    return this.putMany(model, [{ rowid, vector, textHash, sig }])[0];
  }

  /**
   * put() for many memories (call inside a transaction): their scope and visibility facts in one statement
   * instead of one per vector. Returns each one's SimHash, null for a memory that is gone.
   */
  putMany(model: VecModel, items: { rowid: number; vector: Float32Array; textHash: number; sig?: Int32Array }[]): (Int32Array | null)[] {
    for (const { vector } of items) {
      if (vector.length !== model.dimension)
        throw new CairnError('Internal', `vector of dimension ${vector.length} for a ${model.dimension}-d model`);
      for (let i = 0; i < vector.length; i++)
        if (!Number.isFinite(vector[i])) throw new CairnError('Internal', 'refusing to store a vector with NaN or infinite components');
    }
    this.counted.delete(model.model);
    const metas = new Map<number, MetaRow>();
    for (const m of this.meta(items.map((x) => x.rowid))) metas.set(m.rowid, m);
    const ins = stmt(
      this.db,
      `INSERT INTO ${model.table}(rowid, q, sig, text_hash) VALUES (?, ?, ?, ?) ON CONFLICT(rowid) DO UPDATE SET q = excluded.q, sig = excluded.sig, text_hash = excluded.text_hash`,
    );
    const indexed = this.index?.model.model === model.model;
    const loading = this.loading?.model.model === model.model;
    return items.map(({ rowid, vector, textHash, sig }) => {
      const m = metas.get(rowid);
      if (!m) return null; // purged meanwhile
      const z = quantize(vector, sig);
      ins.run(
        rowid,
        Buffer.from(z.q.buffer, z.q.byteOffset, z.q.byteLength),
        Buffer.from(z.sig.buffer, z.sig.byteOffset, z.sig.byteLength),
        textHash,
      );
      if (indexed) this.staged.push(() => this.index?.model.model === model.model && this.index.put(m, z.q, z.sig, z.inv));
      if (loading) this.staged.push(() => this.loading?.model.model === model.model && this.loading.put(m, z.q, z.sig, z.inv));
      return z.sig;
    });
  }

  /** How many models hold a vector of this memory. */
  rowCount(rowid: number): number {
    let n = 0;
    for (const m of this.models())
      n += (stmt(this.db, `SELECT count(*) AS c FROM ${m.table} WHERE rowid = ?`).get(rowid) as { c: number }).c;
    return n;
  }

  /**
   * count() from the index in memory when it holds this model (a count(*) reads the whole table: about a second at
   * a million vectors, on every store/status), else from the table.
   */
  countQuick(model: VecModel): number {
    if (this.index?.model.model === model.model) return this.index.slotOf.size;
    // Not in memory (a large store before its first use): counted once, until a vector is written or removed.
    let n = this.counted.get(model.model);
    if (n === undefined) this.counted.set(model.model, (n = this.count(model)));
    return n;
  }

  /** count() of models whose index is not in memory, until one of their vectors changes (countQuick). */
  private counted = new Map<string, number>();

  count(model: VecModel): number {
    return (stmt(this.db, `SELECT count(*) AS c FROM ${model.table}`).get() as { c: number }).c;
  }

  private liveIndex(model: VecModel): VectorIndex {
    if (this.index?.model.model !== model.model) this.load(model);
    this.refresh();
    return this.index!;
  }

  /** The live namespaces of a scope: a mask by namespace rowid, and their rowids. */
  private nsMask(scope: Scope | undefined): { mask: Uint8Array; ids: number[] } {
    const pred = scopePredicate(scope, 'path');
    const ns = stmt(this.db, `SELECT rowid FROM namespaces WHERE deleted_at IS NULL AND ${pred ? pred.sql : '1'}`).all(
      ...(pred ? pred.params : []),
    ) as { rowid: number }[];
    let max = 0;
    for (const r of ns) max = Math.max(max, r.rowid);
    const mask = new Uint8Array(max + 1);
    for (const r of ns) mask[r.rowid] = 1;
    return { mask, ids: ns.map((r) => r.rowid) };
  }

  /**
   * KNN inside the scope: the admitted set (live namespaces of the scope,
   * visibility, and with a filter the rows the SQL WHERE admits) is built
   * before anything is ranked or cut.
   */
  knn(model: VecModel, query: Float32Array, q: KnnQuery): ArmHit[] {
    const { ix, admitted } = this.admission(model, q);
    const arrays = this.arrays(ix, model);
    const hits = queryNearest(arrays, this.scratch, admitted, query, q.limit, this.exactMax, this.candidatesFor(admitted.length));
    return this.rerank(model, arrays, query, hits, q.limit);
  }

  /**
   * The best `limit` of a scan's hits. From a compact index (`arrays.q4`: hits ranked by 4-bit vectors,
   * rerankPool(limit) of them) they are ranked again by the int8 vectors stored on disk, read in one statement
   * (a memory purged meanwhile has none and is left out); otherwise they are the answer already.
   */
  rerank(model: VecModel, arrays: SlotArrays, query: Float32Array, hits: ArmHit[], limit: number): ArmHit[] {
    if (!arrays.q4 || hits.length === 0) return hits.slice(0, limit);
    return this.rerankMany(model, [{ query, hits }], limit)[0];
  }

  /** rerank() of many scans' hits, each with its own query vector, reading their int8 vectors in one statement. */
  rerankMany(model: VecModel, scans: { query: Float32Array; hits: ArmHit[] }[], limit: number): ArmHit[][] {
    const ids = new Set<number>();
    for (const x of scans) for (const h of x.hits) ids.add(h.rowid);
    const stored = new Map<number, Int8Array>();
    if (ids.size)
      for (const r of stmt(this.db, `SELECT rowid, q FROM ${model.table} WHERE rowid IN (SELECT value FROM json_each(?))`).all(
        JSON.stringify([...ids]),
      ) as { rowid: number; q: Buffer }[])
        stored.set(r.rowid, new Int8Array(r.q.buffer, r.q.byteOffset, r.q.byteLength));
    return scans.map(({ query, hits }) => {
      const v = normalized(query);
      const out: ArmHit[] = [];
      for (const h of hits) {
        const q = stored.get(h.rowid);
        if (q && q.length === v.length) out.push({ rowid: h.rowid, score: int8Cosine(q, v) });
      }
      return out.sort((x, y) => y.score - x.score || x.rowid - y.rowid).slice(0, limit);
    });
  }

  /**
   * The hits of a DuplicateScan's checks (`vectors`: each check's vector, as given to prepareDuplicateScan), ranked
   * again from disk when the scan ran over a compact index (rerank), each cut to the scan's limit.
   */
  duplicateResults(
    model: VecModel,
    scan: { arrays: SlotArrays; limit: number },
    vectors: Float32Array[],
    result: DuplicateScanResult,
  ): ArmHit[][] {
    const hits = duplicateHits(result);
    if (!scan.arrays.q4) return hits;
    return this.rerankMany(
      model,
      hits.map((h, i) => ({ query: vectors[i], hits: h })),
      scan.limit,
    );
  }

  /**
   * A KNN to run on another thread (the embedding worker, with the query's embedding; vector-scan.ts queryNearest):
   * the admitted set as knn builds it, copied (so it can be transferred; into `spare` when it fits), and the
   * shared arrays a scan reads.
   * Its hits go through `stillAdmitted` before they are used.
   */
  prepareKnn(model: VecModel, q: KnnQuery, spare?: Int32Array): PreparedKnn {
    const { ix, admitted: found, only } = this.admission(model, q);
    // Into `spare` when it is large enough (the buffer the worker gave back after the last search), else a new one.
    const admitted = spare && spare.length >= found.length ? spare.subarray(0, found.length) : new Int32Array(found.length);
    admitted.set(found);
    return { arrays: this.arrays(ix, model), admitted, only, exactMax: this.exactMax, candidates: this.candidatesFor(admitted.length) };
  }

  /**
   * A KNN's admitted slots (a view on the index's reused buffer: valid until its next admission): live namespaces
   * of the scope, visibility at `q.now`, and with a filter the rows the SQL WHERE admits (`only`).
   */
  private admission(model: VecModel, q: KnnQuery): { ix: VectorIndex; admitted: Int32Array; only: Set<number> | null } {
    const ix = this.liveIndex(model);
    let only: Set<number> | null = null;
    if (q.filter) {
      const where = and(visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
      only = new Set(
        (
          stmt(this.db, `SELECT m.rowid AS rowid FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where.sql}`).all(
            ...where.params,
          ) as { rowid: number }[]
        ).map((r) => r.rowid),
      );
    }
    const ns = this.nsMask(q.scope);
    const admitted = ix.admit(ns.mask, q.include, q.now, only, ns.ids);
    if (!q.exclude || q.exclude.size === 0) return { ix, admitted, only };
    // A memory branch's shadowed base rows: left out of a copy (the admitted set may be a cached one, never written to).
    const kept = new Int32Array(admitted.length);
    let n = 0;
    for (const s of admitted) if (!q.exclude.has(ix.rowid[s])) kept[n++] = s;
    return { ix, admitted: kept.subarray(0, n), only };
  }

  /** How many of `admitted` vectors a KNN takes by Hamming distance before ranking them exactly. */
  private candidatesFor(admitted: number): number {
    return Math.max(this.candidates, Math.ceil(admitted * this.candidateShare));
  }

  /** What a scan reads of the index (vector-scan.ts SlotArrays). */
  private arrays(ix: VectorIndex, model: VecModel): SlotArrays {
    return { rowid: ix.rowid, inv: ix.inv, q: ix.q, q4: ix.q4, sig: ix.sig, dimension: model.dimension, kmem: ix.kmem };
  }

  /**
   * The hits of a KNN that ran on another thread while this one went on, without any memory the query would not
   * admit now: one deleted, hidden or moved out of the scope meanwhile, or a reused slot's new memory. The same
   * admission as knn (scope mask, visibility at `q.now`, the filter's rows as prepared), so an out-of-scope memory
   * never reaches fusion.
   */
  stillAdmitted(model: VecModel, hits: ArmHit[], q: KnnQuery, prepared: PreparedKnn): ArmHit[] {
    if (hits.length === 0) return hits;
    const ix = this.liveIndex(model);
    const want = new Set<number>();
    for (const h of hits) if ((!prepared.only || prepared.only.has(h.rowid)) && !q.exclude?.has(h.rowid)) want.add(h.rowid);
    const ns = this.nsMask(q.scope);
    const ok = new Set<number>();
    for (const s of ix.admit(ns.mask, q.include, q.now, want)) ok.add(ix.rowid[s]);
    return hits.filter((h) => ok.has(h.rowid));
  }

  /** Visible memories of one namespace at least `threshold` cosine-similar to `vector`, best first (duplicate detection). */
  similarInNamespace(
    model: VecModel,
    vector: Float32Array,
    nsRowid: number,
    exclude: number,
    threshold: number,
    limit: number,
    now: number,
    sig?: Int32Array,
  ): ArmHit[] {
    const scan = this.prepareDuplicateScan(model, [{ vector, nsRowid, exclude, sig }], limit, now);
    return this.duplicateResults(model, scan, [vector], runDuplicateScan(scan, this.scratch))[0].filter((h) => h.score >= threshold);
  }

  /**
   * Many duplicate checks as one DuplicateScan (store/vector-scan.ts), to run here (runDuplicateScan) or in the
   * embedding worker over the same shared arrays. What needs the store is decided now, on this thread: the index
   * is brought up to the change log, and each namespace's visible memories at `now` are listed once for all its
   * checks (each check leaves itself out). A check scores them exactly up to dupExactMax, above that the
   * dupCandidates nearest by Hamming distance to `sig` (the vector's SimHash; computed here when not given and
   * needed).
   */
  prepareDuplicateScan(
    model: VecModel,
    checks: { vector: Float32Array; nsRowid: number; exclude: number; sig?: Int32Array }[],
    limit: number,
    now: number,
  ): DuplicateScan {
    const ix = this.liveIndex(model);
    const d = model.dimension;
    const inc: Include = {};
    const groupOf = new Map<number, number>();
    let total = 0;
    for (const c of checks)
      if (!groupOf.has(c.nsRowid)) {
        groupOf.set(c.nsRowid, groupOf.size);
        total += ix.namespaceSlots(c.nsRowid).length;
      }
    const slots = new Int32Array(total);
    const starts = new Int32Array(groupOf.size + 1);
    let m = 0;
    for (const [ns, g] of groupOf) {
      starts[g] = m;
      for (const s of ix.namespaceSlots(ns)) if (ix.visible(s, inc, now)) slots[m++] = s;
    }
    starts[groupOf.size] = m;
    const vectors = new Float32Array(checks.length * d);
    const sigs = new Int32Array(checks.length * SIG_WORDS);
    const group = new Int32Array(checks.length);
    const exclude = new Int32Array(checks.length);
    for (let i = 0; i < checks.length; i++) {
      const c = checks[i];
      const g = groupOf.get(c.nsRowid)!;
      group[i] = g;
      exclude[i] = c.exclude;
      const v = normalized(c.vector);
      vectors.set(v, i * d);
      // The SimHash of the vector (put() returns it; the signs of projections do not depend on the vector's length).
      if (starts[g + 1] - starts[g] > this.dupExactMax) sigs.set(c.sig ?? quantize(v).sig, i * SIG_WORDS);
    }
    return {
      arrays: this.arrays(ix, model),
      vectors,
      sigs,
      group,
      exclude,
      starts,
      slots,
      limit,
      exactMax: this.dupExactMax,
      candidates: this.dupCandidates,
    };
  }

  /** Scratch buffers of the scans run on this thread. */
  private scratch = newScratch();
}

/** The table of one model's vectors (`vq_<n>`). */
export function createVectorTable(db: DB, n: number): string {
  const table = `vq_${n}`;
  db.exec(`CREATE TABLE ${table} (rowid INTEGER PRIMARY KEY, q BLOB NOT NULL, sig BLOB NOT NULL, text_hash INTEGER NOT NULL)`);
  return table;
}
