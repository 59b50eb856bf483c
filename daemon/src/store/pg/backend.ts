/**
 * The team store: the same memory semantics as the SQLite Store (store.ts),
 * on PostgreSQL + pgvector. An upsert is one read and one guarded statement
 * (upsert.ts fastUpsert; a batch: one of each per run of items, batch.ts) that
 * writes the row, history and change-log row together, or nothing when another
 * writer moved the row in between (then it is decided again); other writes are
 * one transaction that locks the memory row (SELECT ... FOR UPDATE). Either way
 * versions stay monotonic and `ifVersion` conflicts are exact with many daemons
 * writing at once, and the change-log trigger NOTIFYs every listening daemon on
 * commit (change-feed.ts).
 *
 * Rows are visible only as row-level security allows for the login role;
 * history's actor is that role (the claimed actor is kept as detail.onBehalfOf).
 *
 * This class holds the connection and the backend's state; each operation
 * lives in a file named for what it does (reads, upsert, batch, deletion,
 * namespaces, links, embedding, status) as a function of the backend.
 */
import { AccessBumps } from './access-stats';
import { WriteCache } from './write-cache';
import { pgGet } from './get';
import {
  type Anchor,
  type DidChangeParams,
  type GetParams,
  type HistoryParams,
  type HistoryResult,
  type LinkParams,
  type LinkResult,
  type ListParams,
  type ListResult,
  type Memory,
  type NamespaceInfo,
  type NeighborsParams,
  type NeighborsResult,
  type PurgeResult,
  type Scope,
  type SweepResult,
  type UnlinkResult,
  type UpsertBatchResult,
  type UpsertParams,
  type UpsertResult,
  type WriteResult,
} from '../../protocol/types';
import { query } from './db';
import type { MemoryRow } from '../rows';
import { isConnectionError, mapError, pg, poolConfig, redactUrl, type PgOptions } from './db';
import { checkSchema } from './schema';
import { explainOpenFailure } from './access';
import { ChangeFeed } from './change-feed';
import { backfill, type PgEmbedder } from './embedding';
import type { Target } from './lookup';
import type { Params } from './sql';
import * as batch from './batch';
import * as deletion from './deletion';
import * as links from './links';
import * as namespaces from './namespaces';
import * as reads from './reads';
import * as status from './status';
import * as upsert from './upsert';

export type { Target } from './lookup';
export { embeddingText, vectorLiteral, type PgEmbedder } from './embedding';
export { ftsDocument } from './write-plan';

export class PgBackend {
  readonly pool: pg.Pool;
  /** Access statistics of reads, applied after their answers (access-stats.ts). */
  readonly bumps: AccessBumps;
  /** Namespace ids and keys this daemon has written, so a write of a new key is one round trip (write-cache.ts). */
  readonly writes = new WriteCache();
  readonly url: string;
  private feed: ChangeFeed;
  embedder: PgEmbedder | null = null;
  /** Injected clock, so tests can move time. */
  now: () => number = () => Date.now();
  /** The login role (history's actor), known after open(). */
  user = '';
  schemaVersion = 0;
  /**
   * How upserts reach the database. `fast` (default): one read, then one guarded statement that
   * writes the row (with its vector), its history and its change-log row, retried when another
   * writer moved the row in between: two round trips, no transaction held open. `locked`: the
   * transaction with row locks (BEGIN, SELECT ... FOR UPDATE, ..., COMMIT; about ten round trips),
   * still used for supersedes and after repeated lost races; kept selectable for bench/team.ts.
   */
  writePath: 'fast' | 'locked' = 'fast';

  constructor(readonly opts: PgOptions & { log?: (m: string) => void }) {
    this.url = redactUrl(opts.url);
    this.pool = new pg.Pool(poolConfig(opts));
    this.pool.on('error', (e) => this.log(`team database connection lost: ${mapError(e).message}`));
    this.feed = new ChangeFeed(opts, this.pool, (m) => this.log(m));
    this.bumps = new AccessBumps(this.pool);
  }

  log(m: string): void {
    this.opts.log?.(m);
  }

  /** Check the schema's invariants and learn who we are. Throws Unavailable when the server can't be reached. */
  async open(): Promise<this> {
    // A role that cannot use the schema is told which grant it lacks (store/pg/access.ts), not "not set up".
    this.schemaVersion = await checkSchema(this.pool).catch(async (e: unknown) => {
      throw await explainOpenFailure(this.pool, e);
    });
    this.user = (await query<{ u: string }>(this.pool, 'SELECT session_user AS u'))[0].u;
    return this;
  }

  async close(): Promise<void> {
    await this.bumps.flushed();
    await this.feed.close();
    await this.pool.end().catch(() => undefined);
  }

  // live changes (change-feed.ts)
  onChange(fn: (c: DidChangeParams) => void): () => void {
    return this.feed.onChange(fn);
  }

  /** Resolves once LISTEN is active (tests wait on it). */
  listening(): Promise<void> {
    return this.feed.listening();
  }

  // namespaces (namespaces.ts)
  listNamespaces(root?: string): Promise<NamespaceInfo[]> {
    return namespaces.listNamespaces(this, root);
  }

  renameNamespace(from: string, to: string, actor?: string): Promise<{ renamed: number; position: number }> {
    return namespaces.renameNamespace(this, from, to, actor);
  }

  deleteNamespace(path: string, actor?: string, reason?: string): Promise<{ deleted: number; memories: number; position: number }> {
    return namespaces.deleteNamespace(this, path, actor, reason);
  }

  // reading (reads.ts)
  get(p: GetParams): Promise<Memory> {
    return pgGet(this.pool, p, this.now(), this.bumps); // one round trip (store/pg/get.ts)
  }

  list(p: ListParams, extra?: (q: Params) => string | null): Promise<ListResult> {
    return reads.list(this, p, extra);
  }

  /** Visible memories with an anchor on one of `paths`, each with that anchor (hovers; same order as the SQLite store). */
  anchoredAt(paths: string[], scope: Scope | undefined): Promise<{ memory: Memory; anchor: Anchor }[]> {
    return reads.anchoredAt(this, paths, scope);
  }

  byRowids(rowids: number[]): Promise<Map<number, MemoryRow>> {
    return reads.byRowids(this, rowids);
  }

  history(p: HistoryParams): Promise<HistoryResult> {
    return reads.history(this, p);
  }

  position(): Promise<number> {
    return reads.position(this);
  }

  // writing (upsert.ts, batch.ts, deletion.ts)
  upsert(p: UpsertParams): Promise<UpsertResult> {
    return upsert.upsert(this, p);
  }

  upsertBatch(items: UpsertParams[], actor?: string, idempotencyKey?: string): Promise<UpsertBatchResult> {
    return batch.upsertBatch(this, items, actor, idempotencyKey);
  }

  /** Embed live memories that have no vector for the current model (after a model load or a failed embed). */
  backfill(size = 256): Promise<number> {
    return backfill(this, size);
  }

  delete(t: Target): Promise<WriteResult> {
    return deletion.remove(this, t);
  }

  forget(t: Target): Promise<WriteResult> {
    return deletion.forget(this, t);
  }

  restore(t: Target): Promise<WriteResult> {
    return deletion.restore(this, t);
  }

  purge(t: Target): Promise<PurgeResult> {
    return deletion.purge(this, t);
  }

  /** Expiry and the purge of deleted namespaces (deletion.ts sweep). */
  sweep(size = 500): Promise<SweepResult> {
    return deletion.sweep(this, size);
  }

  // links (links.ts)
  link(p: LinkParams): Promise<LinkResult> {
    return links.link(this, p);
  }

  unlink(p: LinkParams): Promise<UnlinkResult> {
    return links.unlink(this, p);
  }

  neighbors(p: NeighborsParams): Promise<NeighborsResult> {
    return links.neighbors(this, p);
  }

  // status (status.ts)
  counts(): Promise<status.Counts> {
    return status.counts(this);
  }

  /** Server facts for `cairn team status` (never the password). */
  status(): Promise<status.Status> {
    return status.status(this);
  }
}

export { isConnectionError };
