/**
 * The branch embedder: keeps `branch_vectors` (store/branch-vectors.ts) in step with the memory branches' rows for
 * the memory indexer's model, in bounded batches after each branch write, with the same worker (embedding never runs
 * on a request's path except the query's). Rows of another model's vectors wait for this model's. A search on a
 * branch scores the branch's embedded rows exactly (a row not yet embedded is found by the full-text arm); index/wait
 * waits for every branch row to be embedded too.
 */
import { isZeroVector } from '../embed';
import type { ArmHit, ArmQuery } from '../store/search-fts';
import {
  branchRowsToEmbed,
  branchVectorArm,
  branchVectorCandidates,
  branchVectorStamp,
  branchVectorsPending,
  putBranchVectors,
  sameCandidates,
  scoreBranchVectors,
} from '../store/branch-vectors';
import type { Store } from '../store/store';
import { embeddingText, type Indexer } from './indexer';

/** Branch rows embedded per request to the worker. */
export const BRANCH_EMBED_BATCH = 64;

/** What a search on a branch asks of the branch embedder (SearchOverlay.vector, store/branches.ts). */
export interface BranchVectorSearcher {
  /**
   * The branch's vector arm for `query`: [] while no model serves. `vector`: the query's embedding when the base arm
   * already asked the worker for it (null: none came, the query is embedded here).
   */
  search(branchId: string, query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]>;
  /** A branch row was written: embed it (in the background). */
  kick(): void;
}

export class BranchVectors implements BranchVectorSearcher {
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;
  private waiters: (() => void)[] = [];
  /** Per branch, the stamp (store/branch-vectors.ts) at which no branch row waited for a vector. */
  private readonly noneWaiting = new Map<string, string>();
  lastError: string | null = null;

  constructor(
    private readonly store: Store,
    private readonly indexer: Indexer,
    private readonly log: (m: string) => void,
  ) {}

  async search(branchId: string, query: string, q: ArmQuery, vector?: Promise<Float32Array | null>): Promise<ArmHit[]> {
    const model = this.indexer.model?.model;
    const embedder = this.indexer.embedder;
    // Not the previous model of a switch (Indexer.serving): the branch rows are embedded with the model in use.
    if (!model || !embedder || this.indexer.indexUnavailable()) return [];
    // Rows written by another process: looked for (a scan of every branch row) only when this branch changed since.
    const stamp = branchVectorStamp(this.store.db, branchId, model);
    if (!this.running && this.noneWaiting.get(branchId) !== stamp) {
      if (branchVectorsPending(this.store.db, model)) this.kick();
      else this.noneWaiting.set(branchId, stamp);
    }
    // The admitted rows are decided now, while the worker embeds the query (rows changed meanwhile are left out
    // again below: a write bumps the branch's generation).
    const admitted = branchVectorCandidates(this.store.db, branchId, model, q);
    if (admitted.rows.length === 0) return [];
    const v = (vector && (await vector)) || (await embedder.embed([query], { priority: true }))[0];
    if (isZeroVector(v) || this.indexer.model?.model !== model) return [];
    if (!sameCandidates(this.store.db, admitted)) return branchVectorArm(this.store.db, branchId, model, v, q);
    return scoreBranchVectors(admitted, v, q.limit);
  }

  /** Start a pass; a pass already running runs once more. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.pass()
      .catch((e: Error) => {
        this.lastError = `embedding branch rows failed: ${e.message}`;
        this.log(this.lastError);
      })
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        } else this.wake();
      });
  }

  private async pass(): Promise<void> {
    const model = this.indexer.model?.model;
    const embedder = this.indexer.embedder;
    if (!model || !embedder || !this.indexer.indexing()) return;
    const db = this.store.db;
    while (!this.stopped && db.open) {
      const rows = branchRowsToEmbed(db, model, BRANCH_EMBED_BATCH);
      if (rows.length === 0) return;
      const vectors = await embedder.embed(rows.map(embeddingText));
      if (this.stopped || !db.open || this.indexer.model?.model !== model) return;
      const stored = this.store.transaction(() => putBranchVectors(db, model, rows, vectors));
      // Every row changed meanwhile (each is read again next round): yield so the writes that changed them land.
      if (stored === 0) await new Promise((r) => setImmediate(r));
    }
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Wait (at most `ms`) until no branch row waits for a vector. Returns whether none does. */
  async waitForAll(ms: number): Promise<boolean> {
    const model = this.indexer.model?.model;
    if (!model) return false;
    const pending = () => this.store.db.open && branchVectorsPending(this.store.db, model);
    // During a switch the branch rows wait for the new model (the previous one does not embed them): none waiting is
    // the only answer that can be true before it ends.
    if (!this.indexer.indexing()) return !pending();
    const end = Date.now() + ms;
    while (pending() && !this.stopped && Date.now() < end) {
      this.kick();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.max(0, end - Date.now()));
        const waiters = this.waiters;
        function done() {
          clearTimeout(timer);
          resolve();
        }
        waiters.push(done);
      });
    }
    return !pending();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    this.wake();
  }
}
