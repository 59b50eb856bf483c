/**
 * The vector indexer: follows the change log from its watermark and keeps the
 * active model's vectors in step, in bounded batches, with embedding done in a
 * worker thread (writes never wait for it). index/wait lets a caller wait until
 * the vectors include a given change-log position (read-your-writes).
 *
 * A model change (or a first model on a non-empty store) re-embeds every memory
 * in the background; until that backfill completes the vector arm reports
 * itself unavailable and hybrid search degrades to full-text, so results never
 * mix two models' spaces or rank against a half-built index.
 */
import { CairnError } from '../protocol/errors';
import type { ArmHit, ArmQuery } from '../store/search-fts';
import type { Store } from '../store/store';
import type { EmbedRow, MemoryLabel } from '../store/index-feed';
import { hashKey } from '../store/quantize';
import type { VecModel } from '../store/vectors';
import { runDuplicateScan, type DuplicateScan, type DuplicateScanResult } from '../store/vector-scan';
import type { EmbeddingStatus, IndexProgressParams } from '../protocol/types';
import type { WorkerKnn, WorkerKnnResult } from '../embed/shared';
import { sha256 } from '../text/hash';
import { FUSION, type VectorSearcher } from '../retrieval/search';
import type { Fusion } from '../retrieval/fusion';
import { isBuiltinModelId, isZeroVector } from '../embed';

export interface EmbeddingModel {
  readonly info: { model: string; configuredModel: string; dimension: number; fallbackReason: string | null };
  embed(texts: string[], opts?: { priority?: boolean }): Promise<Float32Array[]>;
  /** Vectors with their SimHashes computed off the event loop (the Embedder's worker); embed() is used without it. */
  embedWithSignatures?(texts: string[]): Promise<{ vectors: Float32Array[]; sigs: Int32Array[] }>;
  /** Duplicate checks scored off the event loop (the Embedder's worker); run on this thread without it. */
  scanDuplicates?(scan: DuplicateScan): Promise<DuplicateScanResult>;
  /** A search's query embedded and ranked off the event loop (the Embedder's worker); embed() + knn here without it. */
  nearest?(text: string, knn: WorkerKnn): Promise<WorkerKnnResult>;
  close(): Promise<void>;
}

export const INDEX_BATCH = 512;
/** Searches within this long make background embedding pace itself (see Indexer.paced). */
export const QUIET_MS = 1000;
/**
 * Texts per background request to the embedding worker, per model kind. A search's query embedding goes ahead of
 * queued requests but waits for the one being computed: 64 texts are well under a millisecond for the built-in
 * static model, but about 0.4 CPU-seconds for a transformer (all-MiniLM-L6-v2 here), which made hybrid search
 * during a bulk import wait that long; 8 texts (the transformer's model batch) bound the wait to one batch.
 */
export const EMBED_CHUNK = { builtin: 64, transformer: 8 } as const;
export const MAX_REST_MS = 250;
/**
 * An indexing pass starts this long after the first write that asks for it, so a stream of single writes is
 * embedded in batches (one worker round trip and a few transactions per batch instead of per write). A caller
 * waiting for the index (index/wait, waitForDuplicates) starts the pass at once instead.
 */
export const KICK_DELAY_MS = 50;
/** Vectors written per transaction (the daemon yields to requests between them). */
export const WRITE_CHUNK = 8;
/** Vectors written per transaction while no search is being served. */
export const QUIET_WRITE_CHUNK = 128;
/**
 * Cosine similarity at or above which a live memory of the same namespace is a possible duplicate, per model kind
 * (as FUSION): chosen on labelled pairs of software memories and confirmed on a held-out set
 * (bench/duplicates.ts, test/embed/duplicate-pairs.ts; figures in bench/README.md). The former single 0.93, set for
 * GloVe, caught 1 duplicate in 10 with either model.
 */
export const DUPLICATE_THRESHOLD = { builtin: 0.66, transformer: 0.67 } as const;
export const DUPLICATE_LIMIT = 5;
/**
 * A store with more vectors than this (about: the largest vector rowid, read without a scan) has its vector index
 * read into memory on first use (a hybrid search, or vectors to check for duplicates) instead of at start, so a
 * daemon nobody searches stays small (a million vectors hold ~210 MiB even compact); the first searches meanwhile
 * answer from full text (`degraded` says the index is loading). Smaller stores load at start as before.
 */
export const LAZY_LOAD_ABOVE = 131_072;

/** What the indexer found for one memory it embedded (reported as memory/possibleDuplicates). */
export interface DuplicateReport {
  rowid: number;
  id: string;
  version: number;
  position: number;
  duplicates: { rowid: number; similarity: number }[];
}

/** The text a memory's vector is computed from. */
export function embeddingText(m: { key: string; value: string; tags: string[] | string }): string {
  const tags = Array.isArray(m.tags) ? m.tags : (JSON.parse(m.tags) as string[]);
  return `${m.key.replace(/[._:/-]+/g, ' ')}\n${tags.join(' ')}\n${m.value}`;
}

/** A memory just embedded: its vector and (when stored) the vector's SimHash. */
type Embedded = { row: EmbedRow; vector: Float32Array; sig?: Int32Array };

type Waiter = { position: number; resolve: (wm: number) => void };

export class Indexer implements VectorSearcher {
  state: EmbeddingStatus['state'] = 'loading';
  model: VecModel | null = null;
  embedder: EmbeddingModel | null = null;
  private running = false;
  private kickTimer: NodeJS.Timeout | null = null;
  private lastQueryAt = 0;
  private again = false;
  private waiters: Waiter[] = [];
  private backfill: { done: number; total: number } | null = null;
  private stopped = false;
  /** The indexing pass and the re-embed in progress: stop() waits for both, so neither touches a closed store. */
  private pass: Promise<void> | null = null;
  private rebuild: Promise<void> | null = null;
  /** The stored vectors being read into memory (use): stop() waits for it too. */
  private loadingIndex: Promise<void> | null = null;
  private indexLoad: { done: number; total: number } | null = null;
  /** The index being read on first use (LAZY_LOAD_ABOVE), until it is in. */
  private lazyLoad: Promise<void> | null = null;
  /** LAZY_LOAD_ABOVE (a knob for tests). */
  lazyAbove = LAZY_LOAD_ABOVE;
  lastError: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly log: (m: string) => void,
    private readonly progress: (p: IndexProgressParams) => void = () => {},
    /**
     * Told of the memories whose duplicate check found candidates, after the checks committed: all of one batch at
     * once, with what its notifications name of each memory and candidate (read in one statement per batch).
     */
    private readonly duplicatesFound: (reports: DuplicateReport[], labels: Map<number, MemoryLabel>) => void = () => {},
    /** Told when a re-embed fails, so whoever waits for the vector index (index/wait) learns it at once. */
    private readonly failed: (reason: string) => void = () => {},
  ) {
    // Each pass's last commit also indexes the full text of the writes since the store's `fts` watermark (loop).
    store.fullTextFollower = () => this.state === 'ready' && !this.stopped;
  }

  // ---------------------------------------------------------------- status
  unavailable(): string | null {
    const why = this.modelUnavailable();
    if (why || !this.model || this.store.vectors.loaded()?.model === this.model.model) return why;
    // Read on first use: this search answers from full text while the index loads (indexInMemory).
    this.indexInMemory(this.model).catch((e: Error) => {
      this.lastError = e.message;
      this.log(`reading the vector index failed: ${e.message}`); // the next search tries again
    });
    return this.loadingMessage();
  }

  private loadingMessage(): string {
    return this.indexLoad ? `the vector index is loading (${this.indexLoad.done}/${this.indexLoad.total})` : 'the vector index is loading';
  }

  /**
   * Read the model's vectors into memory if they are not (a store above lazyAbove opens without them), a slice at
   * a time between requests; resolves when they are in (or the indexer stopped). One load at a time.
   */
  indexInMemory(model: VecModel): Promise<void> {
    if (this.store.vectors.loaded()?.model === model.model) return Promise.resolve();
    if (this.lazyLoad) return this.lazyLoad;
    this.indexLoad = { done: 0, total: 0 };
    this.log(`reading the vector index of ${model.model} into memory (first use)`);
    const load = this.store.vectors
      .loadInSlices(
        model,
        (done, total) => (this.indexLoad = { done, total }),
        () => this.stopped || this.model !== model,
      )
      .then(() => {})
      .finally(() => {
        this.indexLoad = null;
        this.lazyLoad = null;
      });
    this.lazyLoad = load;
    this.loadingIndex = Promise.allSettled([this.loadingIndex, load]).then(() => {});
    return load;
  }

  /** Why the embedding model cannot serve (unavailable() without the index in memory: the event vectors' arm). */
  modelUnavailable(): string | null {
    if (this.state === 'loading')
      return this.indexLoad
        ? `the vector index is loading (${this.indexLoad.done}/${this.indexLoad.total})`
        : 'the embedding model is still loading';
    if (this.state === 'reindexing')
      return `the vector index is being rebuilt for ${this.model?.model} (${this.backfill?.done ?? 0}/${this.backfill?.total ?? 0})`;
    if (this.state !== 'ready' || !this.model || !this.embedder) return this.lastError ?? 'no embedding model is loaded';
    return null;
  }

  /** Which kind of model is in use: the per-kind constants (FUSION, EMBED_CHUNK, DUPLICATE_THRESHOLD) follow it. */
  private kind(): 'builtin' | 'transformer' {
    return this.model && isBuiltinModelId(this.model.model) ? 'builtin' : 'transformer';
  }

  fusion(): Fusion {
    return FUSION[this.kind()];
  }

  /** Texts per background request to the worker for the model in use (EMBED_CHUNK). */
  embedChunk(): number {
    return EMBED_CHUNK[this.kind()];
  }

  duplicateThreshold(): number {
    return DUPLICATE_THRESHOLD[this.kind()];
  }

  watermark(): number {
    return this.model ? this.store.feed.watermark(this.model.model) : 0;
  }

  status(): EmbeddingStatus {
    const pos = this.store.position();
    return {
      model: this.embedder?.info.model ?? null,
      configuredModel: this.embedder?.info.configuredModel ?? null,
      dimension: this.embedder?.info.dimension ?? null,
      state: this.state,
      fallbackReason: this.embedder?.info.fallbackReason ?? (this.state === 'unavailable' ? this.lastError : null),
      vectors: this.model ? this.store.vectors.countQuick(this.model) : 0,
      pending: this.backfill ? this.backfill.total - this.backfill.done : Math.max(0, pos - this.watermark()),
      vectorExtension: this.store.vecAvailable,
      index: this.store.vectors.memory(),
    };
  }

  // ---------------------------------------------------------------- lifecycle
  /** Start indexing with a loaded model; re-embeds everything when the model differs from the store's active one. */
  async use(embedder: EmbeddingModel): Promise<void> {
    const previous = this.embedder;
    const model = this.store.transaction(() => this.store.vectors.ensure(embedder.info.model, embedder.info.dimension));
    const needsBackfill = this.store.feed.activeModel() !== model.model || this.store.feed.watermark(model.model) === 0;
    if (!needsBackfill && this.store.vectors.sizeHint(model) > this.lazyAbove) {
      // Read on first use (LAZY_LOAD_ABOVE): an index of a previous model is dropped from memory now.
      this.store.vectors.unload();
      this.embedder = embedder;
      this.model = model;
      if (previous && previous !== embedder) await previous.close().catch(() => {});
      this.state = 'ready';
      this.kick();
      return;
    }
    // The stored vectors are read into memory a slice at a time, the daemon serving meanwhile (search full-text,
    // `degraded` saying the index is loading): a million of them take seconds.
    this.state = 'loading';
    this.indexLoad = { done: 0, total: 0 };
    const loading = this.store.vectors.loadInSlices(
      model,
      (done, total) => (this.indexLoad = { done, total }),
      () => this.stopped,
    );
    this.loadingIndex = loading.then(() => {});
    const loaded = await loading.finally(() => (this.indexLoad = null));
    if (this.stopped) return;
    if (!loaded) this.store.vectors.load(model); // dropped and re-created meanwhile: at once
    this.embedder = embedder;
    this.model = model;
    if (previous && previous !== embedder) await previous.close().catch(() => {});
    if (needsBackfill) {
      this.state = 'reindexing';
      // In the background: the daemon serves (degraded to full-text) meanwhile.
      this.rebuild = this.rebuildVectors()
        .then(() => this.kick())
        .catch((e) => {
          if (this.stopped) return; // the daemon is stopping: the model was closed under the re-embed
          this.lastError = (e as Error).message;
          this.state = 'unavailable';
          this.log(`re-embedding failed: ${this.lastError}`);
          this.failed(this.lastError);
        });
    } else {
      this.state = 'ready';
      this.kick();
    }
  }

  /** index/rebuild without a model: drop this model's vectors and embed everything again. */
  async rebuildCurrent(): Promise<number> {
    if (!this.embedder || !this.model) throw new CairnError('InvalidState', this.unavailable() ?? 'no embedding model is loaded');
    const model = this.model.model;
    this.store.transaction(() => this.store.vectors.drop(model));
    this.model = null;
    const total = this.store.feed.memoryCount();
    await this.use(this.embedder);
    return total;
  }

  /**
   * Stop indexing. Closing the model ends any embedding in flight; the pass or re-embed that was waiting for it
   * then returns without touching the store, and stop() resolves only after that, so the caller may close the
   * store next (a pass resuming after the store closed used to throw "The database connection is not open").
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.kickTimer) clearTimeout(this.kickTimer);
    await this.embedder?.close().catch(() => {});
    await Promise.allSettled([this.pass, this.rebuild, this.loadingIndex]);
    for (const w of this.waiters) w.resolve(this.watermark());
    this.waiters = [];
  }

  /** Remove the vectors a stopped pass stored for these memories (their changes stay past the watermark). */
  private rollBack(rowids: number[]): void {
    if (!this.store.db.open || rowids.length === 0) return;
    this.store.transaction(() => {
      for (const rowid of rowids) this.store.vectors.deleteRow(rowid);
    });
  }

  /** Re-embed every memory for the current model in bounded batches, reporting progress. */
  private async rebuildVectors(): Promise<void> {
    const model = this.model!;
    const startPos = this.store.position();
    const total = this.store.feed.liveMemoryCount();
    this.backfill = { done: 0, total };
    this.state = total > 0 ? 'reindexing' : 'ready';
    if (total > 0) this.log(`embedding ${total} memories with ${model.model}`);
    let after = 0;
    for (;;) {
      if (this.stopped || this.model !== model) return;
      const rows = this.store.feed.pageAfter(after, INDEX_BATCH);
      if (rows.length === 0) break;
      await this.paced(async () => void (await this.embedRows(model, rows)));
      after = rows[rows.length - 1].rowid;
      this.backfill.done += rows.length;
      this.progress({ model: model.model, done: this.backfill.done, total, state: 'reindexing' });
      await new Promise((r) => setImmediate(r)); // let requests in between batches
    }
    this.store.transaction(() => {
      this.store.feed.setWatermark(model, startPos);
      this.store.feed.setActiveModel(model.model);
      // Other models' vectors are dropped: one space per store, re-embedded on switch.
      for (const other of this.store.vectors.models()) if (other.model !== model.model) this.store.vectors.drop(other.model);
    });
    this.backfill = null;
    this.state = 'ready';
    this.progress({ model: model.model, done: total, total, state: 'ready' });
    if (total > 0) this.log(`vector index ready: ${total} memories with ${model.model}`);
  }

  /** A search was served: background embedding backs off for a while (see paced). */
  noteQuery(): void {
    this.lastQueryAt = Date.now();
  }

  /**
   * Run one batch of background embedding. While searches are being served
   * (one in the last QUIET_MS), rest as long as the batch took afterwards, so
   * embedding takes at most half of the time and searches keep their latency;
   * when nobody searches, batches run back to back at full speed.
   */
  private async paced(batch: () => Promise<void>): Promise<void> {
    const t0 = Date.now();
    await batch();
    if (Date.now() - this.lastQueryAt < QUIET_MS) await new Promise((r) => setTimeout(r, Math.min(MAX_REST_MS, 2 * (Date.now() - t0))));
  }

  /**
   * Embed rows whose text changed since their vector was computed; write them in
   * small transactions. Returns the rows embedded, with their vectors.
   */
  private async embedRows(model: VecModel, rows: EmbedRow[]): Promise<Embedded[]> {
    const todo: { row: EmbedRow; rowid: number; text: string; hash: number }[] = [];
    const have = this.store.vectors.textHashes(
      model,
      rows.map((r) => r.rowid),
    );
    for (const r of rows) {
      const text = embeddingText(r);
      const hash = hashKey(sha256(model.model + '\u0000' + text));
      if (have.get(r.rowid) !== hash) todo.push({ row: r, rowid: r.rowid, text, hash });
    }
    if (todo.length === 0) return [];
    // Queued as small requests, so a search's query embedding (priority) waits for one chunk at most.
    const embedder = this.embedder!;
    const chunks: Promise<{ vectors: Float32Array[]; sigs?: Int32Array[] }>[] = [];
    const per = this.embedChunk();
    for (let i = 0; i < todo.length; i += per) {
      const texts = todo.slice(i, i + per).map((t) => t.text);
      chunks.push(
        embedder.embedWithSignatures ? embedder.embedWithSignatures(texts) : embedder.embed(texts).then((vectors) => ({ vectors })),
      );
    }
    const done = await Promise.all(chunks);
    const vectors = done.flatMap((c) => c.vectors);
    const given = done.flatMap((c) => c.sigs ?? c.vectors.map(() => undefined));
    // While searches are served, write in small transactions and yield in between, so a search is never queued
    // behind a long write; with no search in the last QUIET_MS, in one transaction (one commit instead of one per
    // WRITE_CHUNK vectors).
    const chunk = Date.now() - this.lastQueryAt < QUIET_MS ? WRITE_CHUNK : QUIET_WRITE_CHUNK;
    const sigs: (Int32Array | null)[] = [];
    for (let i = 0; i < todo.length; i += chunk) {
      if (this.stopped || this.model !== model) {
        // Stopped or switched meanwhile. Vectors already stored by this call would have no duplicate check (the next
        // start skips a memory whose text has its vector): they go, and the next start embeds and checks them.
        if (this.stopped && i > 0) this.rollBack(todo.slice(0, i).map((t) => t.rowid));
        return [];
      }
      this.store.derivedTransaction(() => {
        const end = Math.min(todo.length, i + chunk);
        const put = this.store.vectors.putMany(
          model,
          todo.slice(i, end).map((t, k) => ({ rowid: t.rowid, vector: vectors[i + k], textHash: t.hash, sig: given[i + k] })),
        );
        for (let j = i; j < end; j++) sigs[j] = put[j - i];
      });
      await new Promise((r) => setImmediate(r));
    }
    return todo.map((t, i) => ({ row: t.row, vector: vectors[i], sig: sigs[i] ?? undefined }));
  }

  /** Process the change log from the watermark. Called after every write; runs one loop at a time. */
  kick(now = false): void {
    if (now) {
      // Someone waits for the index: no reason to wait for more writes to batch.
      if (this.kickTimer) clearTimeout(this.kickTimer);
      this.kickTimer = null;
      this.kickNow();
      return;
    }
    // Coalesce the kicks of a burst of writes into one indexing pass.
    if (this.kickTimer) return;
    this.kickTimer = setTimeout(() => {
      this.kickTimer = null;
      this.kickNow();
    }, KICK_DELAY_MS);
  }

  private kickNow(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.state !== 'ready' || !this.model || this.stopped) return;
    this.running = true;
    this.pass = this.loop().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.kickNow();
      }
    });
  }

  private async loop(): Promise<void> {
    const model = this.model!;
    try {
      for (;;) {
        if (this.stopped || this.model !== model) return;
        const wm = this.watermark();
        const changes = this.store.changesSince(wm, INDEX_BATCH);
        if (changes.length === 0) break;
        const ids = [...new Set(changes.map((c) => c.memoryId).filter((x): x is string => !!x))];
        const rows = this.store.feed.byIds(ids);
        let embedded: Embedded[] = [];
        await this.paced(async () => {
          embedded = await this.embedRows(model, rows);
        });
        if (this.stopped) this.rollBack(embedded.map((e) => e.row.rowid)); // stored, never checked: the next start does both
        if (this.stopped || this.model !== model) return;
        // The duplicate checks need the index in memory: read it now if the store opened without it.
        if (embedded.length) await this.indexInMemory(model);
        if (this.stopped || this.model !== model) return;
        const last = changes[changes.length - 1].position;
        const reports = await this.checkDuplicates(model, embedded, last);
        // Stopping still records the checks just scored (stop() waits for this pass before the store closes); a batch
        // whose scan the stop cut off was rolled back (null).
        if (reports === null || this.model !== model) return;
        // The checks were scored off the event loop, so a memory may have been purged meanwhile: only pairs of
        // memories that still exist are recorded (read in the same transaction; a purged rowid may be reused).
        let labels = new Map<number, MemoryLabel>();
        const found: DuplicateReport[] = [];
        this.store.derivedTransaction(() => {
          // Most checks of a bulk import find nothing: their earlier records (if any) go in one statement, and only the
          // memories with candidates, and those candidates, are read (labels, one statement). A memory purged since
          // has no records left to clear; a record cleared for a rowid reused meanwhile is written again by the new
          // memory's own check (its change comes after this pass's).
          const withHits = reports.filter((r) => r.duplicates.length > 0);
          this.store.feed.clearDuplicates(reports.filter((r) => r.duplicates.length === 0).map((r) => r.rowid));
          labels = this.store.feed.labels(withHits.flatMap((r) => [r.rowid, ...r.duplicates.map((h) => h.rowid)]));
          for (const r of withHits) {
            if (!labels.has(r.rowid)) continue;
            r.duplicates = r.duplicates.filter((h) => labels.has(h.rowid));
            this.store.feed.setDuplicates(r.rowid, r.version, r.duplicates);
            if (r.duplicates.length) found.push(r);
          }
          this.store.feed.setWatermark(model, last);
          // The full text of the writes so far, in this commit rather than one of its own (Store.fullTextFollower):
          // one FTS5 segment and one commit per pass. A failure leaves it to the store's own timer or the next read.
          try {
            this.store.catchUpFullText();
          } catch {
            /* rolled back to its savepoint: the pass's own records stand */
          }
        });
        if (found.length) this.duplicatesFound(found, labels);
        this.resolveWaiters();
        // A partial batch drained the log: writes that arrived meanwhile wait for their own kick (KICK_DELAY_MS), so
        // a stream of single writes is indexed in batches of that many milliseconds. Going on at once indexed them
        // a few at a time as they trickled in (about 6 per pass at 1,400 upserts/s), paying a pass's worker round
        // trips, statements and two commits for each few. Someone waiting for the index keeps the pass going.
        if (changes.length < INDEX_BATCH && this.waiters.length === 0) break;
      }
    } catch (e) {
      if (this.stopped) return; // the model was closed under the pass: nothing failed
      this.lastError = (e as Error).message;
      this.log(`indexer: ${this.lastError}`);
    }
    if (!this.stopped) this.resolveWaiters();
  }

  private resolveWaiters(): void {
    const wm = this.watermark();
    const pos = this.store.position();
    this.waiters = this.waiters.filter((w) => {
      // Positions that are not memory writes (or beyond the log) count as reached once the log is drained.
      if (wm >= w.position || (wm >= pos && !this.running)) {
        w.resolve(wm);
        return false;
      }
      return true;
    });
  }

  /** Resolve when the vector watermark reaches `position`, or after `timeoutMs`. */
  async waitFor(position: number, timeoutMs = 10_000): Promise<{ watermark: number; reached: boolean }> {
    if (!this.model || this.state === 'unavailable' || this.state === 'disabled') {
      const wm = this.store.catchUpFullText();
      return { watermark: wm, reached: wm >= position };
    }
    const wm = this.watermark();
    if (wm >= position) return { watermark: wm, reached: true };
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve({ watermark: this.watermark(), reached: false });
      }, timeoutMs);
      const waiter: Waiter = {
        position,
        resolve: (w) => {
          clearTimeout(timer);
          resolve({ watermark: w, reached: w >= position });
        },
      };
      this.waiters.push(waiter);
      this.kick(true);
    });
  }

  // ---------------------------------------------------------------- search
  /** The buffer of the last worker KNN's admitted slots, given back for the next search's (Embedder.nearest). */
  private knnSpare: Int32Array | null = null;

  /** `queryVector`, when given, is told the query's embedding as soon as the worker returns it (a branch's own vector arm scores with it). */
  async search(query: string, q: ArmQuery, queryVector?: (v: Float32Array) => void): Promise<ArmHit[]> {
    if (!this.model || !this.embedder) throw new CairnError('InvalidState', 'no embedding model is loaded');
    const model = this.model;
    if (this.embedder.nearest) {
      // The admitted set is decided here, now; the worker embeds the query and scans it while this thread runs the
      // full-text arm (retrieval/search.ts); what it finds is admitted again before fusion sees it.
      const prepared = this.store.vectors.prepareKnn(model, q, this.knnSpare ?? undefined);
      const { arrays, admitted, exactMax, candidates } = prepared;
      if (admitted.length === 0) return [];
      if (admitted.buffer === this.knnSpare?.buffer) this.knnSpare = null; // transferred: a search meanwhile allocates
      const { hits, spare, query: v } = await this.embedder.nearest(query, { arrays, admitted, limit: q.limit, exactMax, candidates });
      if (!this.knnSpare || this.knnSpare.length < spare.length) this.knnSpare = spare;
      queryVector?.(v);
      if (this.model !== model) return []; // the index was switched to another model meanwhile
      return this.store.vectors.rerank(model, arrays, v, this.store.vectors.stillAdmitted(model, hits, q, prepared), q.limit);
    }
    const [v] = await this.embedder.embed([query], { priority: true });
    queryVector?.(v);
    if (isZeroVector(v)) return []; // nothing the model knows: no meaning to compare
    return this.store.vectors.knn(model, v, q);
  }

  /**
   * Duplicate check of the memories just embedded: live memories of the same namespace at least
   * duplicateThreshold() cosine-similar (exact up to DUP_EXACT_MAX, then the DUP_CANDIDATES nearest by Hamming
   * distance; see VectorTables.prepareDuplicateScan). The checks of a batch go to the embedding worker as one scan
   * when the model runs there (the scoring is the event loop's largest share of indexing a write); what they admit
   * (namespace, visibility, not itself) is decided here first, so the answer is what a check on this thread gives.
   */
  private async checkDuplicates(model: VecModel, embedded: Embedded[], position: number): Promise<DuplicateReport[] | null> {
    const live = embedded.filter((e) => !e.row.deleted);
    const checked = live.filter((e) => !isZeroVector(e.vector));
    let hits: ArmHit[][] = [];
    if (checked.length) {
      const now = this.store.now();
      const prepare = () =>
        this.store.vectors.prepareDuplicateScan(
          model,
          checked.map((e) => ({ vector: e.vector, nsRowid: e.row.ns_rowid, exclude: e.row.rowid, sig: e.sig })),
          DUPLICATE_LIMIT,
          now,
        );
      const embedder = this.embedder;
      let result: DuplicateScanResult | null = null;
      // What the scan ran over (its arrays are shared, not transferred): a compact index's hits are ranked again.
      let scanned: DuplicateScan | null = null;
      if (embedder?.scanDuplicates)
        result = await embedder.scanDuplicates((scanned = prepare())).catch((e: Error) => {
          // The worker died after this pass stored its vectors: a later pass would not embed them again (same
          // text), so their checks are scored here instead of being lost.
          if (!this.stopped) this.log(`duplicate checks scored on the event loop: ${e.message}`);
          return null;
        });
      if (this.model !== model) return [];
      if (!result && this.stopped) {
        // The daemon is stopping (the worker was closed under the scan): scoring the whole batch here would hold the
        // stop for as long as the scan (seconds to minutes on a large store). The batch is rolled back instead; its
        // changes stay past the watermark, so the next start embeds and checks them.
        this.rollBack(embedded.map((e) => e.row.rowid));
        return null;
      }
      if (!result) result = runDuplicateScan((scanned = prepare()));
      hits = this.store.vectors.duplicateResults(
        model,
        scanned!,
        checked.map((e) => e.vector),
        result,
      );
    }
    const threshold = this.duplicateThreshold();
    const byRow = new Map(checked.map((e, i) => [e.row.rowid, hits[i]]));
    return live.map((e) => ({
      rowid: e.row.rowid,
      id: e.row.id,
      version: e.row.version,
      position,
      duplicates: (byRow.get(e.row.rowid) ?? []).filter((h) => h.score >= threshold).map((h) => ({ rowid: h.rowid, similarity: h.score })),
    }));
  }

  /**
   * The duplicate check of a memory: `pending` while the indexer has not yet
   * embedded its latest change, `unavailable` while no vector index runs.
   */
  duplicatesOf(memory: { id: string; rowid: number }): {
    state: 'done' | 'pending' | 'unavailable';
    duplicates: { rowid: number; similarity: number }[];
  } {
    if (this.modelUnavailable() || !this.model) return { state: 'unavailable', duplicates: [] };
    if (this.store.feed.changedAfter(memory.id, this.watermark())) return { state: 'pending', duplicates: [] };
    return {
      state: 'done',
      duplicates: this.store.feed.duplicates(memory.rowid).map((d) => ({ rowid: d.other_rowid, similarity: d.similarity })),
    };
  }
}
