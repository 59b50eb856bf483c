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
 */
import { CairnError } from '../protocol/errors';
import { stmt, type DB } from './db';
import type { ArmHit } from './search-fts';
import { quantize } from './quantize';
import { buildDuplicateScan, type DuplicateCheck } from './vector-duplicates';
import { ADMIT_CACHE_SLOTS, VectorIndex, type MetaRow, type VecModel } from './vector-index';
import { vectorPages } from './vector-load';
import { addModel, listModels } from './vector-models';
import { rerankStored, storedVectorsSql, type StoredAt } from './vector-rerank';
import {
  duplicateHits,
  newScratch,
  queryNearest,
  runDuplicateScan,
  type DuplicateScan,
  type DuplicateScanResult,
  type SlotArrays,
} from './vector-scan';
import type { BandShape } from './vector-lsh';
import {
  CANDIDATE_SHARE,
  COMPACT_ABOVE,
  DUP_BANDS,
  DUP_CANDIDATES,
  DUP_EXACT_MAX,
  DUP_FLIPS,
  DUP_LSH_SHAPE,
  EXACT_MAX,
  LOAD_SLICE,
  SIMHASH_CANDIDATES,
} from './vector-tuning';
import { filterRows, followChanges, scopeNamespaces, vectorMeta, type KnnQuery, type PreparedKnn } from './vector-visibility';

export { ADMIT_CACHE_SLOTS, type KnnQuery, type PreparedKnn, type VecModel };
export {
  CANDIDATE_SHARE,
  COMPACT_ABOVE,
  DUP_BANDS,
  DUP_CANDIDATES,
  DUP_EXACT_MAX,
  DUP_FLIPS,
  DUP_LSH_SHAPE,
  EXACT_MAX,
  LOAD_SLICE,
  SIMHASH_CANDIDATES,
};

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
  /** How an index loaded from now on bands its signatures for the duplicate checks (DUP_BANDS; null: no buckets, the default). */
  dupBands: BandShape | null = DUP_BANDS;
  /** Multi-probe depth of a duplicate check's buckets when the index keeps them (DUP_FLIPS; null: the whole namespace). */
  dupFlips: number | null = DUP_FLIPS;
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
    return (this.cached ??= listModels(this.db));
  }

  model(model: string): VecModel | undefined {
    return this.models().find((m) => m.model === model);
  }

  /** Create (or find) the table of a model; a new table's signatures are centred on `centre` (null: plain). */
  ensure(model: string, dimension: number, centre: Float32Array | null = null): VecModel {
    const found = this.model(model);
    if (found) {
      if (found.dimension !== dimension)
        throw new CairnError('InvalidState', `model ${model} was stored with dimension ${found.dimension}, now reports ${dimension}`);
      return found;
    }
    const added = addModel(this.db, model, dimension, centre);
    this.cached = null;
    return added;
  }

  drop(model: string): void {
    const m = this.model(model);
    if (!m) return;
    // Its pages are freed without being zeroed (secure_delete off for this one statement): they hold vectors and keyed
    // hashes of the text of memories that are still stored, never text, and a memory that is purged or erased loses
    // its vectors in every model's table as it goes (deleteRow, with secure_delete on). Zeroed, the pages were all
    // written again (a million vectors: ~300 MB into the WAL), and inside a transaction, as at a switch's end, SQLite
    // kept each page's previous content in its statement journal, in memory (temp_store = MEMORY): +270 MiB resident
    // for that moment at a million memories (bench/README.md, "The end of a model switch").
    const secure = this.db.pragma('secure_delete', { simple: true }) as number;
    this.db.pragma('secure_delete = OFF');
    try {
      this.db.exec(`DROP TABLE IF EXISTS ${m.table}`);
    } finally {
      this.db.pragma(`secure_delete = ${Number(secure)}`);
    }
    stmt(this.db, 'DELETE FROM vec_models WHERE model = ?').run(model);
    this.counted.delete(model);
    stmt(this.db, 'DELETE FROM index_state WHERE name IN (?, ?)').run(`vec:${model}`, `rebuild:${model}`);
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
    const ix = new VectorIndex(model, total > this.compactAbove, this.compactAbove, this.dupBands);
    ix.position = this.position();
    ix.grow(total); // sized once for what is stored, not by repeated growth
    this.loading = ix;
    const read = vectorPages(this.db, model, ix);
    const state = {
      ix,
      done: 0,
      total,
      /** Reads up to `n` more vectors; true when the load is complete. */
      step: (n: number): boolean => {
        const got = read(n);
        state.done += got;
        if (got === n) return false;
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

  /**
   * Bring the in-memory visibility facts up to the change log: every memory
   * changed after the index's position gets its current facts; purged memories
   * leave the index.
   */
  refresh(): void {
    if (this.index) followChanges(this.db, this.index, this.position());
  }

  /** Called inside a purge: the memory's vectors go with it. */
  deleteRow(rowid: number): void {
    this.counted.clear();
    for (const m of this.models()) stmt(this.db, `DELETE FROM ${m.table} WHERE rowid = ?`).run(rowid);
    if (this.index) this.staged.push(() => this.index?.remove(rowid));
    if (this.loading) this.staged.push(() => this.loading?.remove(rowid));
  }

  /**
   * Remove the model's vectors of memories that are gone or whose namespace was deleted (the end of a rebuild in
   * place, which re-embedded every other one; a rebuild that dropped the table first has none). Returns how many.
   */
  pruneOrphans(model: VecModel): number {
    const gone = stmt(
      this.db,
      `DELETE FROM ${model.table} WHERE rowid NOT IN
         (SELECT m.rowid FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.deleted_at IS NULL) RETURNING rowid`,
    ).all() as { rowid: number }[];
    if (gone.length === 0) return 0;
    this.counted.delete(model.model);
    for (const { rowid } of gone) {
      if (this.index?.model.model === model.model) this.staged.push(() => this.index?.remove(rowid));
      if (this.loading?.model.model === model.model) this.staged.push(() => this.loading?.remove(rowid));
    }
    return gone.length;
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
    for (const m of vectorMeta(
      this.db,
      items.map((x) => x.rowid),
    ))
      metas.set(m.rowid, m);
    const ins = stmt(
      this.db,
      `INSERT INTO ${model.table}(rowid, q, sig, text_hash) VALUES (?, ?, ?, ?) ON CONFLICT(rowid) DO UPDATE SET q = excluded.q, sig = excluded.sig, text_hash = excluded.text_hash`,
    );
    const indexed = this.index?.model.model === model.model;
    const loading = this.loading?.model.model === model.model;
    return items.map(({ rowid, vector, textHash, sig }) => {
      const m = metas.get(rowid);
      if (!m) return null; // purged meanwhile
      const z = quantize(vector, sig, model.centre);
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
    return rerankStored(stmt(this.db, storedVectorsSql(model.table)), scans, limit);
  }

  /**
   * Where the embedding worker reads a compact index's int8 vectors to rank its own scan's hits again
   * (StoredVectorReader); null for an int8 index (its scan's scores are final) or a store with no file.
   */
  storedAt(model: VecModel, arrays: SlotArrays): StoredAt | null {
    return arrays.q4 && !this.db.memory ? { file: this.db.name, table: model.table } : null;
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
    if (!scan.arrays.q4 || result.reranked) return hits; // final, or ranked again where the scan ran
    return this.rerankMany(
      model,
      hits.map((h, i) => ({ query: vectors[i], hits: h })),
      scan.limit,
    );
  }

  /**
   * A KNN to run on another thread (the embedding worker, with the query's embedding; vector-scan.ts queryNearest):
   * the admitted set as knn builds it (a cached one as it is, in shared memory; else copied so it can be transferred,
   * into `spare` when it fits), and the
   * shared arrays a scan reads.
   * Its hits go through `stillAdmitted` before they are used.
   */
  prepareKnn(model: VecModel, q: KnnQuery, spare?: Int32Array): PreparedKnn {
    const { ix, admitted: found, only } = this.admission(model, q);
    // A cached set (VectorIndex.admit) is in shared memory and never written to: the worker reads it as it is. At a
    // million memories the whole store's set is 4 MB, and its copy per search ~3 ms before the worker could start.
    // Otherwise (a view on the index's reused buffer) a copy: into `spare` when it is large enough (the buffer the
    // worker gave back after the last search), else a new one.
    const shared = found.buffer instanceof SharedArrayBuffer;
    const admitted = shared
      ? found
      : spare && spare.length >= found.length
        ? spare.subarray(0, found.length)
        : new Int32Array(found.length);
    if (!shared) admitted.set(found);
    const arrays = this.arrays(ix, model);
    const stored = this.storedAt(model, arrays);
    return { arrays, admitted, only, exactMax: this.exactMax, candidates: this.candidatesFor(admitted.length), stored };
  }

  /**
   * A KNN's admitted slots (a view on the index's reused buffer: valid until its next admission): live namespaces
   * of the scope, visibility at `q.now`, and with a filter the rows the SQL WHERE admits (`only`).
   */
  private admission(model: VecModel, q: KnnQuery): { ix: VectorIndex; admitted: Int32Array; only: Set<number> | null } {
    const ix = this.liveIndex(model);
    const only = q.filter ? filterRows(this.db, q.filter, q.scope, q.include, q.now) : null;
    const ns = scopeNamespaces(this.db, q.scope);
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
    return {
      rowid: ix.rowid,
      inv: ix.inv,
      q: ix.q,
      q4: ix.q4,
      sig: ix.sig,
      dimension: model.dimension,
      kmem: ix.kmem,
      centre: model.centre ?? null,
    };
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
    const ns = scopeNamespaces(this.db, q.scope);
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
   * needed). With LSH buckets (dupBands, off by default), a check in a larger namespace takes only the visible
   * memories in the buckets its SimHash falls in (dupFlips) and ranks those the same way.
   */
  prepareDuplicateScan(model: VecModel, checks: DuplicateCheck[], limit: number, now: number): DuplicateScan {
    const ix = this.liveIndex(model);
    const arrays = this.arrays(ix, model);
    const scan = buildDuplicateScan(ix, arrays, checks, limit, now, this.dupExactMax, this.dupCandidates, this.dupFlips);
    scan.stored = this.storedAt(model, arrays);
    return scan;
  }

  /** Scratch buffers of the scans run on this thread. */
  private scratch = newScratch();
}
