/**
 * The vector indexer: follows the change log from its watermark and keeps the
 * active model's vectors in step, in bounded batches, with embedding done in a
 * worker thread (writes never wait for it). index/wait lets a caller wait until
 * the vectors include a given change-log position (read-your-writes).
 *
 * A model change (or a first model on a non-empty store) re-embeds every memory
 * in the background. Until that backfill completes, searches never rank against
 * the half-built index: the previous model (the one the store's vectors are of:
 * the model in use before index/rebuild with another model, or at a start with
 * another configured model when it loads from local files) keeps serving the
 * vector arm from its own complete vectors, with its own worker for the query
 * embeddings and its index following deletes as always, and is retired when the
 * new one is done; without one, hybrid search degrades to full-text. Either way
 * no ranking mixes two models' spaces. index/rebuild with
 * the model in use re-embeds every memory in place instead: the stored vectors
 * are of the same space, so searches keep using them while each is replaced,
 * and the indexing passes go on beside it (a write meanwhile gets its vector,
 * its duplicate check and index/wait's answer as at any other time).
 */
import { CairnError } from '../protocol/errors';
import type { ArmHit, ArmQuery } from '../store/search-fts';
import type { Store } from '../store/store';
import type { EmbedRow, MemoryLabel } from '../store/index-feed';
import type { VecModel } from '../store/vectors';
import type { EmbeddingStatus, IndexProgressParams } from '../protocol/types';
import { FUSION, type VectorSearcher } from '../retrieval/search';
import type { Fusion } from '../retrieval/fusion';
import { isBuiltinModelId } from '../embed';
import { checkDuplicates, type DuplicateReport } from './duplicate-check';
import { collectGarbage } from './collect-garbage';
import { embedRows, requestEmbeddings, storeEmbeddings, type EmbedRequest } from './embed-rows';
import { VectorSearch } from './vector-search';
import { WatermarkWaiters } from './watermark-waiters';
import type { Embedded, EmbeddingModel, IndexerHost } from './embedding-model';
import {
  DUPLICATE_THRESHOLD,
  EMBED_CHUNK,
  INDEX_BATCH,
  KICK_DELAY_MS,
  LAZY_LOAD_ABOVE,
  MAX_REST_MS,
  QUIET_MS,
  RELEASE_FREED_AFTER,
} from './indexer-tuning';

export type { DuplicateReport } from './duplicate-check';
export { embeddingText, type EmbeddingModel } from './embedding-model';
export * from './indexer-tuning';

export class Indexer implements VectorSearcher {
  state: EmbeddingStatus['state'] = 'loading';
  model: VecModel | null = null;
  embedder: EmbeddingModel | null = null;
  /**
   * During a model switch made in a running daemon: the previous model, whose complete vectors and worker serve the
   * vector arm of searches until the new model's vectors are complete (serving()); null otherwise.
   */
  private retiring: { model: VecModel; embedder: EmbeddingModel } | null = null;
  /**
   * During a switch: the change-log position up to which the writes have the previous model's vectors too (retiringLoop),
   * kept in memory only: the previous model's own watermark stays where its passes left it.
   */
  private retiringAt = 0;
  private running = false;
  private kickTimer: NodeJS.Timeout | null = null;
  private lastQueryAt = 0;
  private again = false;
  private readonly waiters = new WatermarkWaiters();
  private backfill: { done: number; total: number } | null = null;
  /**
   * A rebuild in place (rebuildCurrent) is running: state 'reindexing', and yet the vector arm serves searches and
   * the indexing passes go on (indexing()).
   */
  private refreshing = false;
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
  /** RELEASE_FREED_AFTER (a knob for tests). */
  releaseFreedAfter = RELEASE_FREED_AFTER;
  /** Changes indexed and memories re-embedded since freed memory was last given back (releaseFreed). */
  private sinceRelease = 0;
  lastError: string | null = null;
  /** What the pass functions (embed-rows.ts, duplicate-check.ts) read of this indexer. */
  private readonly host: IndexerHost;
  /** The vector arm of searches (vector-search.ts). */
  private readonly arm: VectorSearch;

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
    store.fullTextFollower = () => this.indexing() && !this.stopped;
    this.host = {
      store,
      log,
      model: () => this.model,
      embedder: () => this.embedder,
      serving: () => this.serving(),
      stopped: () => this.stopped,
      searching: () => Date.now() - this.lastQueryAt < QUIET_MS,
      rollBack: (rowids) => this.rollBack(rowids),
    };
    this.arm = new VectorSearch(this.host);
  }

  // ---------------------------------------------------------------- status
  /**
   * The model and worker the vector arm of a memory search uses: the model in use while the indexing passes run (a
   * rebuild in place replaces vectors with vectors of the same model: searches keep them meanwhile), the previous
   * model during a switch (retiring), else none.
   */
  private serving(): { model: VecModel; embedder: EmbeddingModel } | null {
    if (this.indexing()) return { model: this.model!, embedder: this.embedder! };
    return this.retiring;
  }

  /** Why the vector arm of a memory search cannot serve now (null: it can). */
  unavailable(): string | null {
    const s = this.serving();
    if (!s) return this.modelUnavailable();
    if (this.store.vectors.loaded()?.model === s.model.model) return null;
    // Read on first use: this search answers from full text while the index loads (indexInMemory).
    this.indexInMemory(s.model).catch((e: Error) => {
      this.lastError = e.message;
      this.log(`reading the vector index failed: ${e.message}`); // the next search tries again
    });
    return this.loadingMessage();
  }

  /**
   * Why writes cannot be indexed now (their vectors, duplicate checks, index/wait) and the model in use cannot
   * embed for others (team memory): unlike the search arm, the previous model of a switch does not count.
   */
  indexUnavailable(): string | null {
    return this.indexing() ? this.unavailable() : this.modelUnavailable();
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
        () => this.stopped || (this.model !== model && this.retiring?.model !== model),
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
      return `the vector index is being ${this.refreshing ? 're-embedded' : 'rebuilt'} for ${this.model?.model} (${this.backfill?.done ?? 0}/${this.backfill?.total ?? 0})`;
    if (this.state !== 'ready' || !this.model || !this.embedder) return this.lastError ?? 'no embedding model is loaded';
    return null;
  }

  /**
   * The indexing passes run: the model is ready, or a rebuild in place re-embeds with it (the passes follow the
   * change log beside it: vectors, duplicate checks, index/wait). False while a model loads or a backfill runs.
   */
  indexing(): boolean {
    return !!this.model && !!this.embedder && (this.state === 'ready' || (this.state === 'reindexing' && this.refreshing));
  }

  /**
   * The vectors searches use follow the writes: the indexing passes run, or during a switch the previous model serves
   * and embeds the writes made meanwhile (retiringLoop). index/wait waits on servingWatermark() then.
   */
  followsWrites(): boolean {
    return this.indexing() || this.retiringNow();
  }

  private retiringNow(): boolean {
    return this.retiring !== null && this.state === 'reindexing' && !this.stopped;
  }

  /** Which kind of model is in use: the per-kind constants (FUSION, EMBED_CHUNK, DUPLICATE_THRESHOLD) follow it. */
  private kind(model = this.model): 'builtin' | 'transformer' {
    return model && isBuiltinModelId(model.model) ? 'builtin' : 'transformer';
  }

  /** The fusion constants of the model whose vectors serve searches (the previous one during a switch). */
  fusion(): Fusion {
    return FUSION[this.kind(this.serving()?.model)];
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
      // During a switch the new model's index is not in memory and its table grows with every batch: a count(*) per
      // call would read it all (about a second at a million), so the re-embed's own count stands in.
      vectors: this.retiring && this.backfill ? this.backfill.done : this.model ? this.store.vectors.countQuick(this.model) : 0,
      pending: this.backfill ? this.backfill.total - this.backfill.done : Math.max(0, pos - this.watermark()),
      servingModel: this.serving()?.model.model ?? null,
      vectorExtension: this.store.vecAvailable,
      index: this.store.vectors.memory(),
    };
  }

  // ---------------------------------------------------------------- lifecycle
  /** Start indexing with a loaded model; re-embeds everything when the model differs from the store's active one. */
  async use(embedder: EmbeddingModel): Promise<void> {
    // A table made now takes the model's signature centre (embed/signature-centre.ts), worked out before it exists;
    // a model that cannot give one (a stand-in without the Embedder's worker) gets plain signatures.
    const centre = this.store.vectors.model(embedder.info.model) || !embedder.signatureCentre ? null : await embedder.signatureCentre();
    if (this.stopped) return;
    const previous = this.embedder;
    const previousModel = this.model;
    this.refreshing = false; // a rebuild in place of the previous model ends at its next batch
    const model = this.store.transaction(() => this.store.vectors.ensure(embedder.info.model, embedder.info.dimension, centre));
    const needsBackfill = this.store.feed.activeModel() !== model.model || this.store.feed.watermark(model.model) === 0;
    // A switch in a running daemon: the model whose vectors are complete (the store's active one) serves searches
    // until the new one's are. A switch during a switch keeps the one already serving; a switch back ends it.
    if (!this.retiring && needsBackfill && previous && previous !== embedder && previousModel?.model === this.store.feed.activeModel()) {
      this.retiring = { model: previousModel, embedder: previous };
      this.retiringAt = this.store.feed.watermark(previousModel.model);
    }
    if (this.retiring && !needsBackfill) void this.retire();
    if (needsBackfill && this.retiring) {
      // The new model's vectors go to its table only (putMany writes the index in memory of its own model alone);
      // its index is read when they are complete (rebuildVectors), the previous model's serving meanwhile.
      this.embedder = embedder;
      this.model = model;
      if (previous && previous !== embedder && previous !== this.retiring.embedder) await previous.close().catch(() => {});
      this.state = 'reindexing';
      this.startRebuild(false, 0);
      return;
    }
    if (!needsBackfill && this.store.vectors.sizeHint(model) > this.lazyAbove) {
      // Read on first use (LAZY_LOAD_ABOVE): an index of a previous model is dropped from memory now.
      this.store.vectors.unload();
      this.embedder = embedder;
      this.model = model;
      if (previous && previous !== embedder) await previous.close().catch(() => {});
      this.readyOrResume();
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
      this.startRebuild(false, 0);
    } else {
      this.readyOrResume();
    }
  }

  /** Ready to index, unless a rebuild in place was stopped in the middle (a daemon stop): then it goes on first. */
  private readyOrResume(): void {
    const from = this.model ? this.store.feed.rebuildCursor(this.model.model) : null;
    if (from === null) {
      this.state = 'ready';
      this.kick();
      return;
    }
    this.log(`resuming the re-embedding of ${this.model!.model} after memory row ${from}`);
    this.state = 'reindexing';
    this.refreshing = true;
    this.startRebuild(true, from);
    this.kick(); // the passes go on beside it, from the watermark
  }

  /** Re-embed every memory in the background (rebuildVectors); a failure leaves the vector arm unavailable, saying why. */
  private startRebuild(inPlace: boolean, from: number): void {
    const model = this.model;
    this.rebuild = this.rebuildVectors(inPlace, from)
      .then(() => this.kick())
      .catch((e) => {
        // The daemon is stopping, or another model took over (index/rebuild with a model): its model was closed
        // under the re-embed, and nothing failed that the indexer still uses.
        if (this.stopped || this.model !== model) return;
        this.refreshing = false;
        this.lastError = (e as Error).message;
        this.state = 'unavailable';
        this.log(`re-embedding failed: ${this.lastError}`);
        this.failed(this.lastError);
      });
  }

  /**
   * index/rebuild without a model: embed every memory again with the model in use. In place: each vector is
   * replaced by a new one of the same model, and searches keep using the stored ones meanwhile (not degraded);
   * vectors of memories that are gone are removed at the end. A rebuild or re-embed already running embeds
   * everything anyway: it is left to finish. After a failed re-embed (state 'unavailable') the model's vectors are
   * dropped and embedded again from scratch.
   */
  async rebuildCurrent(): Promise<number> {
    if (!this.embedder || !this.model) throw new CairnError('InvalidState', this.unavailable() ?? 'no embedding model is loaded');
    const total = this.store.feed.liveMemoryCount(); // what the rebuild embeds (its progress' total)
    if (this.state === 'reindexing') return total;
    if (this.state !== 'ready') {
      const model = this.model.model;
      this.store.transaction(() => this.store.vectors.drop(model));
      this.model = null;
      await this.use(this.embedder);
      return total;
    }
    this.state = 'reindexing';
    this.refreshing = true;
    // The indexing passes go on beside it: a vector either writes is stored only if no other was meanwhile
    // (embed-rows.ts), so the rebuild never puts back an older text's vector over a pass's newer one.
    this.store.derivedTransaction(() => this.store.feed.setRebuildCursor(this.model!, 0));
    this.startRebuild(true, 0);
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
    await this.retire();
    await Promise.allSettled([this.pass, this.rebuild, this.loadingIndex]);
    this.waiters.settle(this.watermark(), true);
  }

  /** Remove the vectors a stopped pass stored for these memories (their changes stay past the watermark). */
  private rollBack(rowids: number[]): void {
    if (!this.store.db.open || rowids.length === 0) return;
    this.store.transaction(() => {
      for (const rowid of rowids) this.store.vectors.deleteRow(rowid);
    });
  }

  /**
   * Re-embed every memory for the current model in bounded batches, reporting progress. A backfill (a new model,
   * or its table dropped) ends by making the model the store's active one, up to the change log's position when it
   * began. A rebuild in place (`inPlace`, from the rowid after `from`) re-embeds even unchanged text, keeps its
   * cursor in the store after each batch (resumed at the next start if the daemon stops), leaves the watermark to
   * the indexing passes, which go on beside it (duplicate checks included), and removes the vectors of memories
   * that are gone.
   */
  private async rebuildVectors(inPlace = false, from = 0): Promise<void> {
    const model = this.model!;
    const startPos = this.store.position();
    const total = this.store.feed.liveMemoryCount(from);
    this.backfill = { done: 0, total };
    if (!inPlace) this.state = total > 0 ? 'reindexing' : 'ready';
    if (total > 0) this.log(`embedding ${total} memories with ${model.model}${inPlace ? ' (rebuild in place)' : ''}`);
    let after = from;
    for (;;) {
      if (this.stopped || this.model !== model) return;
      const rows = this.store.feed.pageAfter(after, INDEX_BATCH);
      if (rows.length === 0) break;
      await this.paced(async () => void (await this.embedRows(model, rows, inPlace)));
      if (this.stopped || this.model !== model) return; // the batch may be incomplete: the cursor stays before it
      after = rows[rows.length - 1].rowid;
      if (inPlace) this.store.derivedTransaction(() => this.store.feed.setRebuildCursor(model, after));
      this.backfill.done += rows.length;
      this.sinceRelease += rows.length;
      this.progress({ model: model.model, done: this.backfill.done, total, state: 'reindexing' });
      await new Promise((r) => setImmediate(r)); // let requests in between batches
    }
    if (inPlace)
      // Derived data only (vectors and the cursor): no fsync of its own at synchronous=FULL, like the batches'.
      this.store.derivedTransaction(() => {
        const pruned = this.store.vectors.pruneOrphans(model);
        if (pruned > 0) this.log(`removed ${pruned} vectors of memories that are gone`);
        this.store.feed.clearRebuildCursor(model.model);
      });
    else {
      // The previous model served searches meanwhile (a switch in a running daemon): the new index is read now.
      if (this.retiring && !(await this.takeOver(model))) return;
      this.store.transaction(() => {
        this.store.feed.setWatermark(model, startPos);
        this.store.feed.setActiveModel(model.model);
        // Other models' vectors are dropped: one space per store, re-embedded on switch.
        for (const other of this.store.vectors.models()) if (other.model !== model.model) this.store.vectors.drop(other.model);
      });
      // The previous model's vectors (~14% of the file at a million) go back to the file system now, not at the sweep.
      this.store.reclaimSoon();
    }
    this.backfill = null;
    this.refreshing = false;
    this.state = 'ready';
    this.releaseFreed();
    this.progress({ model: model.model, done: total, total, state: 'ready' });
    if (total > 0) this.log(`vector index ready: ${total} memories with ${model.model}`);
  }

  /**
   * The end of a switch whose previous model served searches: the new model's index is read (in slices, the previous
   * one serving until it is in) and the previous model retired, in the same tick as the caller's commit that makes the
   * new model the active one. Above lazyAbove the previous index is dropped from memory first and the new one read on
   * first use, as after a start: two indexes of that size at once would double the daemon's largest holding. False
   * when the daemon stopped or another model took over meanwhile.
   */
  private async takeOver(model: VecModel): Promise<boolean> {
    if (this.store.vectors.sizeHint(model) <= this.lazyAbove) {
      await this.store.vectors.loadInSlices(model, undefined, () => this.stopped || this.model !== model);
      if (this.stopped || this.model !== model) return false;
      void this.retire();
      return true;
    }
    // The previous index and the worker that scanned it go first, and their memory is collected at once: freed only
    // by a later collection, it stayed mapped while the new index was read (676 MiB peak at a million, bench/README).
    const closed = this.retire();
    this.store.vectors.unload();
    await closed;
    if (this.stopped || this.model !== model) return false;
    const t0 = performance.now();
    if (collectGarbage()) this.log(`released the previous model's index (${(performance.now() - t0).toFixed(0)} ms)`);
    return true;
  }

  /**
   * The previous model of a switch stops serving: its worker is closed (its vectors go with the switch's end).
   * Resolves when the worker has closed.
   */
  private retire(): Promise<void> {
    const r = this.retiring;
    this.retiring = null;
    return r && r.embedder !== this.embedder ? r.embedder.close().catch(() => {}) : Promise.resolve();
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
    if (this.host.searching()) await new Promise((r) => setTimeout(r, Math.min(MAX_REST_MS, 2 * (Date.now() - t0))));
  }

  /** Embed rows whose text changed since their vector was computed (embed-rows.ts). */
  private embedRows(model: VecModel, rows: EmbedRow[], force = false): Promise<Embedded[]> {
    return embedRows(this.host, model, rows, this.embedChunk(), force);
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
    if (this.stopped) return;
    // During a switch the passes wait for the new model's vectors; the writes meanwhile get the previous model's.
    const pass = this.indexing() ? () => this.loop() : this.retiringNow() ? () => this.retiringLoop() : null;
    if (!pass) return;
    this.running = true;
    this.pass = pass().finally(() => {
      this.running = false;
      if (this.again) {
        this.again = false;
        this.kickNow();
      }
    });
  }

  /** The next batch of the change log after `position`, its rows sent to the worker (null: the log is drained). */
  private readBatch(model: VecModel, position: number): { changes: { position: number }[]; request: EmbedRequest | null } | null {
    const changes = this.store.changesSince(position, INDEX_BATCH);
    if (changes.length === 0) return null;
    const ids = [...new Set(changes.map((c) => c.memoryId).filter((x): x is string => !!x))];
    const rows = this.store.feed.byIds(ids);
    return { changes, request: requestEmbeddings(this.host, model, rows, this.embedChunk()) };
  }

  private async loop(): Promise<void> {
    const model = this.model!;
    // The batch after this one, read and sent to the worker while this one's duplicate checks run (below).
    let next: ReturnType<Indexer['readBatch']> = null;
    try {
      for (;;) {
        if (this.stopped || this.model !== model) return;
        const batch = next ?? this.readBatch(model, this.watermark());
        next = null;
        if (!batch) break;
        const { changes, request } = batch;
        let embedded: Embedded[] = [];
        await this.paced(async () => {
          embedded = request ? await storeEmbeddings(this.host, model, request) : [];
        });
        if (this.stopped) this.rollBack(embedded.map((e) => e.row.rowid)); // stored, never checked: the next start does both
        if (this.stopped || this.model !== model) return;
        // The duplicate checks need the index in memory: read it now if the store opened without it.
        if (embedded.length) await this.indexInMemory(model);
        if (this.stopped || this.model !== model) return;
        const last = changes[changes.length - 1].position;
        const checking = this.checkDuplicates(model, embedded, last);
        // A full batch (or someone waiting) means more to do: the next batch's embeddings queue in the worker behind
        // these checks, so the worker embeds while this thread records the checks and stores the vectors; one at a
        // time, the worker sat idle through both (about 40% of a bulk import at a million memories). Its rows are
        // read after this batch stored its vectors, so the text hashes it compared are current. Not while searches
        // are served: the pacing (paced) gives them the time between batches.
        if ((changes.length === INDEX_BATCH || this.waiters.size > 0) && !this.host.searching()) next = this.readBatch(model, last);
        const reports = await checking;
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
        this.sinceRelease += changes.length;
        this.resolveWaiters();
        // A partial batch drained the log: writes that arrived meanwhile wait for their own kick (KICK_DELAY_MS), so
        // a stream of single writes is indexed in batches of that many milliseconds. Going on at once indexed them
        // a few at a time as they trickled in (about 6 per pass at 1,400 upserts/s), paying a pass's worker round
        // trips, statements and two commits for each few. Someone waiting for the index keeps the pass going.
        if (!next && changes.length < INDEX_BATCH && this.waiters.size === 0) break;
      }
    } catch (e) {
      if (this.stopped) return; // the model was closed under the pass: nothing failed
      this.lastError = (e as Error).message;
      this.log(`indexer: ${this.lastError}`);
    }
    if (this.stopped) return;
    this.resolveWaiters();
    this.releaseFreed(); // the backlog is drained
  }

  /**
   * During a switch: the writes since the previous model's watermark get its vectors too (its worker, its table, its
   * index in memory), so the vector arm that serves searches meanwhile finds a memory written during the switch as it
   * finds the others, rather than only at the switch's end (27 minutes at a million memories). No duplicate checks:
   * those come with the new model's vectors when the switch ends (writes say so, `duplicatesSkipped`). If the daemon
   * stops before the switch ends, the next start switches again from the beginning.
   */
  private async retiringLoop(): Promise<void> {
    const r = this.retiring!;
    const current = () => this.retiringNow() && this.retiring === r;
    try {
      for (;;) {
        if (!current()) return;
        const changes = this.store.changesSince(this.retiringAt, INDEX_BATCH);
        if (changes.length === 0) return;
        const ids = [...new Set(changes.map((c) => c.memoryId).filter((x): x is string => !!x))];
        const rows = this.store.feed.byIds(ids);
        await this.paced(async () => {
          await embedRows(this.host, r.model, rows, this.embedChunk(), false, { embedder: r.embedder, current });
        });
        if (!current()) return;
        this.retiringAt = changes[changes.length - 1].position;
        this.resolveWaiters();
        if (changes.length < INDEX_BATCH && this.waiters.size === 0) return;
      }
    } catch (e) {
      if (current()) this.log(`indexer (previous model, during the switch): ${(e as Error).message}`);
    }
  }

  /**
   * After a bulk import or a re-embed (RELEASE_FREED_AFTER changes since the last time), give the memory the process
   * freed meanwhile back to the system: RSS then stays near what a restarted daemon holds.
   */
  private releaseFreed(): void {
    if (this.sinceRelease < this.releaseFreedAfter || this.stopped || !this.store.db.open) return;
    const t0 = performance.now();
    const given = this.store.releaseFreedMemory();
    this.sinceRelease = 0;
    if (given !== null) this.log(`gave freed memory back to the system after indexing (${(performance.now() - t0).toFixed(1)} ms)`);
  }

  private resolveWaiters(): void {
    const wm = this.servingWatermark();
    this.waiters.settle(wm, wm >= this.store.position() && !this.running);
  }

  /**
   * The change-log position the vectors searches use include: during a switch the previous model's (the writes
   * meanwhile get its vectors, retiringLoop), else the model in use's watermark.
   */
  servingWatermark(): number {
    return !this.indexing() && this.retiringNow() ? this.retiringAt : this.watermark();
  }

  /** Resolve when the vectors searches use include `position` (servingWatermark), or after `timeoutMs`. */
  async waitFor(position: number, timeoutMs = 10_000): Promise<{ watermark: number; reached: boolean }> {
    if (!this.model || this.state === 'unavailable' || this.state === 'disabled') {
      const wm = this.store.catchUpFullText();
      return { watermark: wm, reached: wm >= position };
    }
    const wm = this.servingWatermark();
    if (wm >= position) return { watermark: wm, reached: true };
    const reached = this.waiters.add(position, timeoutMs, () => this.servingWatermark());
    this.kick(true);
    return reached;
  }

  // ---------------------------------------------------------------- search
  /** `queryVector`, when given, is told the query's embedding as soon as the worker returns it (a branch's own vector arm scores with it). */
  search(query: string, q: ArmQuery, queryVector?: (v: Float32Array) => void): Promise<ArmHit[]> {
    return this.arm.search(query, q, queryVector);
  }

  /** The duplicate checks of the memories just embedded (duplicate-check.ts). */
  private checkDuplicates(model: VecModel, embedded: Embedded[], position: number): Promise<DuplicateReport[] | null> {
    return checkDuplicates(this.host, model, embedded, position, this.duplicateThreshold());
  }

  /**
   * The duplicate check of a memory: `pending` while the indexer has not yet
   * embedded its latest change, `unavailable` while no vector index runs.
   */
  duplicatesOf(memory: { id: string; rowid: number }): {
    state: 'done' | 'pending' | 'unavailable';
    duplicates: { rowid: number; similarity: number }[];
  } {
    if (!this.indexing() || !this.model) return { state: 'unavailable', duplicates: [] };
    if (this.store.feed.changedAfter(memory.id, this.watermark())) return { state: 'pending', duplicates: [] };
    return {
      state: 'done',
      duplicates: this.store.feed.duplicates(memory.rowid).map((d) => ({ rowid: d.other_rowid, similarity: d.similarity })),
    };
  }
}
