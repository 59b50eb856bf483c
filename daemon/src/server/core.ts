/**
 * Core: the transport-free heart of the daemon. It validates every params
 * object against the protocol's schema (unknown fields rejected), then runs the
 * handler. The daemon serves it over JSON-RPC; the CLI uses it directly when no
 * daemon is running. Handlers throw CairnError; nothing else is expected.
 */
import type { z } from 'zod';
import { CairnError, fromZodError } from '../protocol/errors';
import { explainFilter } from '../protocol/filter-explain';
import { isUnder } from '../protocol/namespace';
import { Requests, type RequestDef } from '../protocol/methods';
import * as T from '../protocol/types';
import { injectBlock } from '../retrieval/inject';
import { checkParamsShapePaced, requestContext, type RequestContext } from './limits';
import { fastUpsertParams } from './fast-params';
import { search, type VectorSearcher } from '../retrieval/search';
import type { BranchVectorSearcher } from '../index/branch-vectors';
import { readBranchHistory } from '../store/branch-history';
import { Branches } from '../store/branches';
import { GitFollow } from '../git/follow';
import { GitReader } from '../git/reader';
import { markMerged, withGit } from '../store/git-visibility';
import { Tasks } from '../store/tasks';
import { exportPage, exportRecords, importRecords } from '../store/portable';
import { erase } from '../store/erase';
import { backup } from '../store/backup';
import { synchronousInEffect } from '../store/db';
import { upsertBatchInChunks } from '../store/batch-chunks';
import { configureRetention, enforceRetentionPaced } from '../store/retention';
import { auditPage } from '../store/audit';
import { importPreview } from '../store/import-preview';
import { overview } from '../store/overview';
import { dropIdempotencyRecords, onceByKey, recordAnswer } from '../store/idempotency';
import type { Store } from '../store/store';
import type { TeamRouter } from '../team/router';
import { checkUnder } from '../anchors/check';
import { projectNamespaceFor } from '../project';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { EventVectorSearcher } from '../retrieval/events';
import type { Episodes } from '../store/episodes';
import { registerEpisodeHandlers } from './episode-handlers';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- params are validated against the method's schema before a handler runs
export type Handler = (params: any, ctx: RequestContext) => unknown | Promise<unknown>;

export interface CoreHooks {
  /** Vector arm, once an embedding model is loaded. */
  vectors?: VectorSearcher;
  /**
   * After each upsert that changed something: the state of its duplicate check (waiting for it when asked);
   * `skipped` says why no check could run.
   */
  duplicates?: (
    memory: T.Memory,
    position: number,
    wait: boolean,
  ) => Promise<{ duplicateCheck: T.DuplicateCheck; possibleDuplicates: T.PossibleDuplicate[]; skipped?: string }>;
  /** memory/duplicates: the recorded check of a memory's current version. */
  duplicatesOf?: (id: string) => { duplicateCheck: T.DuplicateCheck; possibleDuplicates: T.PossibleDuplicate[] };
  /** Embedding status for store/status. */
  embeddings?: () => T.EmbeddingStatus;
  /** Index watermarks beyond the full-text one. */
  indexes?: () => { name: string; watermark: number }[];
  indexWait?: (p: T.IndexWaitParams) => Promise<T.IndexWaitResult>;
  indexRebuild?: (p: T.IndexRebuildParams) => Promise<T.IndexRebuildResult>;
  daemonInfo?: () => NonNullable<T.StoreStatusResult['daemon']>;
  /** Progress of long store operations (the daemon broadcasts it as store/progress). */
  progress?: (p: T.ProgressParams) => void;
  /** Vector arm of events/search, once an embedding model is loaded (index/event-vectors.ts). */
  eventVectors?: EventVectorSearcher;
  /** Vector arm over a memory branch's own rows, and their embedding after each branch write (index/branch-vectors.ts). */
  branchVectors?: BranchVectorSearcher;
  /** memory/upsertBatch: after each of its transactions (tests observe the batch between them). */
  batchChunks?: { afterChunk?: (done: number) => void };
}

/** A zod failure of a method's params as InvalidParams / InvalidFilter naming the field (see protocol/errors.ts). */
export function validationError(err: z.ZodError, method: string, params?: unknown): CairnError {
  return fromZodError(err, method, { input: params, explain: (field, value) => (field === 'filter' ? explainFilter(value) : null) });
}

/** Each request's definition by method name (looked up on every request). */
const REQUEST_DEFS = new Map<string, RequestDef<z.ZodType, z.ZodType>>(
  Object.values(Requests).map((d) => [d.method, d as unknown as RequestDef<z.ZodType, z.ZodType>]),
);

export class Core {
  private handlers = new Map<string, Handler>();
  readonly tasks: Tasks;
  /** Episodic memory: episodes and their events (server/episode-handlers.ts). */
  readonly episodes: Episodes;
  readonly branches: Branches;
  /** Git-aware memory: what a reader's checkout hides (git/reader.ts). */
  readonly git: GitReader;
  /** Team memory: namespaces under the team roots are served by the team database (daemon/src/team/). */
  team?: TeamRouter;
  /** Per-request time limit (ms) for chunked work (server/limits.ts `pace`); Limits.requestTimeMs unless set. */
  requestTimeMs: number = T.Limits.requestTimeMs;

  constructor(
    readonly store: Store,
    public hooks: CoreHooks = {},
  ) {
    const s = store;
    const tasks = (this.tasks = new Tasks(store));
    const br = (this.branches = new Branches(store));
    br.onWrite = () => this.hooks.branchVectors?.kick();
    const gr = (this.git = new GitReader(store));
    const follow = new GitFollow(store, br, gr.oracle);
    gr.onContext = (ctx) => follow.onRead(ctx);
    const git = <M extends T.Memory>(ms: M[]) => withGit(s.db, ms);
    // Team namespaces are shared by many writers: a branch of them is refused (docs/branches.md).
    const refuseTeamBranch = (root: string) => {
      if (this.team?.isTeam(root) || this.team?.roots.some((r) => isUnder(r, root)))
        throw new CairnError('InvalidParams', `branches of team namespaces are not supported (${root})`, { field: 'root' });
    };
    const on = <P extends z.ZodType, R extends z.ZodType>(
      def: RequestDef<P, R>,
      fn: (p: z.infer<P>, ctx: RequestContext) => z.infer<R> | Promise<z.infer<R>>,
    ) => this.handlers.set(def.method, fn as Handler);

    on(Requests.upsert, async (p) => {
      if (p.branch !== undefined) return onceByKey(s, 'memory/upsert', p, () => br.upsert({ ...p, branch: p.branch! }));
      // A keyed write records its answer with the write: `pending` while the duplicate check (after the commit) runs,
      // then the answer the client gets, so a replay returns exactly that (store/idempotency.ts recordAnswer).
      const hasCheck = !!this.hooks.duplicates;
      const r = onceByKey(s, 'memory/upsert', p, () => {
        const u = s.upsert(p);
        const w = p.git ? { ...u, memory: git([u.memory])[0] } : u; // the version's git record, as a read shows it
        return w.changed ? { ...w, duplicateCheck: hasCheck ? ('pending' as const) : ('unavailable' as const) } : w;
      });
      if (!r.changed || 'replayed' in r || !this.hooks.duplicates) return r;
      const d = await this.hooks.duplicates(r.memory, r.position, p.waitForDuplicates === true).catch((e: Error) => ({
        duplicateCheck: 'unavailable' as const,
        possibleDuplicates: [],
        skipped: `the duplicate check failed: ${e?.message ?? String(e)}`,
      }));
      const answer = {
        ...r,
        duplicateCheck: d.duplicateCheck,
        ...(d.possibleDuplicates.length ? { possibleDuplicates: d.possibleDuplicates } : {}),
        ...(d.skipped ? { duplicatesSkipped: d.skipped } : {}),
      };
      if (p.idempotencyKey !== undefined && JSON.stringify(answer) !== JSON.stringify(r))
        recordAnswer(s, p.idempotencyKey, 'memory/upsert', answer);
      return answer;
    });
    on(Requests.duplicates, (p) => {
      const m = s.peek(p.id, p.scope);
      const d = this.hooks.duplicatesOf
        ? this.hooks.duplicatesOf(m.id)
        : { duplicateCheck: 'unavailable' as const, possibleDuplicates: [] };
      return { id: m.id, version: m.version, ...d };
    });
    // In transactions of bounded work, serving others between them (store/batch-chunks.ts, docs/protocol.md).
    on(Requests.upsertBatch, (p) => upsertBatchInChunks(s, p, this.hooks.batchChunks));
    on(Requests.get, async (p) => {
      if (p.branch !== undefined) return br.get({ ...p, branch: p.branch });
      await gr.checkOne(p.git, 'id' in p ? { id: p.id } : { namespace: p.namespace, key: p.key });
      return git([s.get(p)])[0];
    });
    on(Requests.list, async (p) => {
      if (p.branch !== undefined) return br.listMemories({ ...p, branch: p.branch });
      const r = s.list(p, await gr.hidden(p.git, p.scope));
      return { ...r, items: git(r.items) };
    });
    on(Requests.delete, (p) =>
      onceByKey(s, 'memory/delete', p, () => (p.branch !== undefined ? br.delete({ ...p, branch: p.branch }) : s.delete(p))),
    );
    on(Requests.restore, (p) => onceByKey(s, 'memory/restore', p, () => s.restore(p)));
    on(Requests.forget, (p) => onceByKey(s, 'memory/forget', p, () => s.forget(p)));
    on(Requests.purge, (p) =>
      onceByKey(s, 'memory/purge', p, () => {
        const r = s.purge(p);
        dropIdempotencyRecords(s.db, [r.id]); // recorded results of earlier writes hold the purged text
        return r;
      }),
    );
    on(Requests.erase, (p) => erase(s, p));
    on(Requests.history, (p) => (p.branch !== undefined ? readBranchHistory(s.db, { ...p, branch: p.branch }) : s.history(p)));
    on(Requests.link, (p) => s.link(p));
    on(Requests.unlink, (p) => s.unlink(p));
    on(Requests.neighbors, (p) => s.neighbors(p));
    on(Requests.search, async (p) => {
      const hidden = await gr.hidden(p.git, p.scope);
      const r = await search(
        s,
        p,
        this.hooks.vectors,
        p.branch !== undefined ? br.overlay(p.branch, this.hooks.branchVectors) : undefined,
        hidden,
      );
      const ms = p.branch !== undefined ? r.hits.map((h) => h.memory) : git(r.hits.map((h) => h.memory));
      return { ...r, hits: r.hits.map((h, i) => ({ ...h, memory: ms[i] })) };
    });
    on(Requests.gitMarkMerged, (p) => {
      const merged = p.merged ?? true;
      return { branch: p.branch, merged, wasMerged: markMerged(s.db, p.branch, merged, p.actor ?? 'user', s.now()) };
    });
    on(Requests.branchCreate, async (p) => {
      refuseTeamBranch(p.root);
      return br.create(await follow.bindAt(p));
    });
    on(Requests.branchList, (p) => ({ branches: br.list(p.all) }));
    on(Requests.branchDiff, (p) => br.diff(p.name));
    on(Requests.branchMerge, (p) => br.merge(p));
    on(Requests.branchDiscard, (p) => br.discard(p.name, p.actor));
    on(Requests.branchSync, (p) => {
      const { actor, ...ctx } = p;
      return follow.sync(ctx, actor ?? 'git');
    });
    on(Requests.namespacesList, (p) => ({ namespaces: s.listNamespaces(p.root) }));
    on(Requests.namespacesRename, (p) => s.renameNamespace(p.from, p.to, p.actor));
    on(Requests.namespacesDelete, (p) => s.deleteNamespace(p.path, p.actor, p.reason));
    on(Requests.status, () => this.status());
    on(Requests.configure, (p) => {
      if (p.historyCap !== undefined) s.setHistoryCap(p.historyCap);
      if (p.injectAuto !== undefined) tasks.setInjectAuto(p.injectAuto);
      return { historyCap: s.historyCap(), injectAuto: tasks.injectAuto() };
    });
    on(Requests.sweep, async (p, ctx) => {
      const r = s.sweep(p?.batch);
      const retention = await enforceRetentionPaced(s, p?.batch, ctx);
      return { ...r, position: s.position(), retention };
    });
    on(Requests.retention, (p) => configureRetention(s, p));
    on(Requests.audit, (p) => auditPage(s, p));
    const progress = (operation: T.ProgressParams['operation']) => (done: number, total: number) =>
      this.hooks.progress?.({ operation, done, total });
    on(Requests.exportRecords, async (p, ctx) => ({ records: await exportRecords(s, p, ctx, progress('export')) }));
    on(Requests.exportPage, (p) => exportPage(s, p));
    on(Requests.backup, (p) => backup(s, p, (x) => this.hooks.progress?.(x)));
    on(Requests.importRecords, (p, ctx) => importRecords(s, p.records, p.actor, ctx, progress('import'), p.scope, () => br.onWrite()));
    on(Requests.importPreview, (p) => importPreview(s, p));
    on(Requests.overview, (p) => overview(s, p));
    on(Requests.tasksCreate, async (p) => {
      if (!p.branch) {
        if (p.gitBranch !== undefined) throw new CairnError('InvalidParams', 'gitBranch needs branch: true', { field: 'gitBranch' });
        return tasks.create(p);
      }
      // A burner branch of the task's scope root: its agent's writes (with `branch`) stay there until merged.
      const root = p.scope?.root;
      if (root === undefined)
        throw new CairnError('InvalidParams', 'a task branch needs scope.root (the subtree it branches)', { field: 'scope.root' });
      refuseTeamBranch(root);
      const bind = p.gitBranch !== undefined ? await follow.bindAt({ name: 'task', root, gitBranch: p.gitBranch, gitRepo: p.gitRepo }) : {};
      return s.transaction(() => {
        const t = tasks.create(p);
        br.create({ ...bind, name: `task/${t.id}`, root }, t.id);
        return tasks.get(t.id);
      });
    });
    on(Requests.tasksUpdate, (p) => tasks.update(p));
    on(Requests.tasksGet, (p) => tasks.get(p.id));
    on(Requests.tasksList, (p) => ({ tasks: tasks.list(p.status, p.limit) }));
    on(Requests.tasksDelete, (p) => tasks.delete(p.id));
    on(Requests.injectBlock, (p) =>
      injectBlock(
        s,
        tasks,
        p,
        this.hooks.vectors,
        // Routed when team memory is attached or the task has a branch (its injection sees the branch's writes).
        (sp) =>
          this.team || sp.branch !== undefined || sp.git !== undefined
            ? (this.request(Requests.search.method, sp) as Promise<T.SearchResult>)
            : search(s, sp, this.hooks.vectors),
        { episodes: this.episodes, vectors: this.hooks.eventVectors },
      ),
    );
    on(Requests.injectLog, (p) => tasks.log(p));
    on(Requests.anchorsCheck, (p, ctx) => {
      if (!path.isAbsolute(p.root)) throw new CairnError('InvalidParams', 'root must be an absolute path', { field: 'root' });
      let folder = false;
      try {
        folder = !!fs.statSync(p.root, { throwIfNoEntry: false })?.isDirectory();
      } catch {
        /* a path the OS refuses (a NUL byte, too long): no such folder */
      }
      if (!folder) throw new CairnError('NotFound', `no folder ${p.root}`, { field: 'root' });
      const scope = p.scope ?? { root: projectNamespaceFor(p.root).namespace, includeUser: false };
      return checkUnder(s, p.root, scope, p.paths, ctx);
    });
    this.episodes = registerEpisodeHandlers(on, s, { team: () => this.team, vectors: () => this.hooks.eventVectors });
    on(Requests.indexWait, async (p) => {
      // The events' full text catches up with the event log first (the daemon's hook also waits for their vectors).
      const ev = this.episodes.catchUp();
      if (this.hooks.indexWait) return this.hooks.indexWait(p);
      // No embedding index runs here: the full-text index is the only one; it catches up with the log first.
      const wm = s.catchUpFullText();
      return {
        watermark: wm,
        reached: wm >= p.position,
        index: 'fts' as const,
        events: { position: ev.position, fts: ev.watermark, vector: null, reached: ev.watermark >= ev.position },
      };
    });
    on(Requests.indexRebuild, async (p) => {
      if (!this.hooks.indexRebuild)
        throw new CairnError('InvalidState', 'no embedding index is running in this process (start the daemon)');
      return this.hooks.indexRebuild(p);
    });
  }

  has(method: string): boolean {
    return this.handlers.has(method);
  }

  methods(): string[] {
    return [...this.handlers.keys()];
  }

  /** Validate and run one request. Throws CairnError. */
  async request(method: string, params: unknown): Promise<unknown> {
    const def = REQUEST_DEFS.get(method);
    const fn = this.handlers.get(method);
    if (!fn || !def) throw new CairnError('NotFound', `unknown method ${method}`, { field: 'method' });
    await checkParamsShapePaced(params); // depth, filter size, forbidden keys, unpaired surrogates: before any recursive validation
    // memory/upsert's common shapes skip zod (fast-params.ts: it only accepts, the same result); the schema decides the rest.
    const fast = method === Requests.upsert.method ? fastUpsertParams(params) : null;
    const parsed = fast ? { success: true as const, data: fast } : def.params.safeParse(params ?? undefined);
    if (!parsed.success) throw validationError(parsed.error, method, params);
    const ctx = requestContext(this.requestTimeMs);
    // A request on a memory branch stays local: branches are refused under team roots, and their writes must lie under them.
    const onBranch = typeof parsed.data === 'object' && parsed.data !== null && 'branch' in parsed.data && parsed.data.branch !== undefined;
    if (this.team?.claims(method) && !onBranch)
      return this.team.request(method, parsed.data, async (m, p) => this.handlers.get(m)!(p, ctx));
    return fn(parsed.data, ctx);
  }

  /** Typed convenience for in-process callers. */
  async call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>> {
    return (await this.request(def.method, params)) as z.infer<R>;
  }

  status(): T.StoreStatusResult {
    const s = this.store;
    const pos = s.position();
    // The full-text index follows writes in batches; like a search, status first brings it up to the log.
    const indexes = [{ name: 'fts', watermark: s.catchUpFullText() }, ...(this.hooks.indexes?.() ?? [])].map((i) => ({
      ...i,
      behind: Math.max(0, pos - i.watermark),
    }));
    const ev = this.episodes.status(!!this.hooks.eventVectors);
    return {
      path: s.path,
      sizeBytes: s.fileSize(),
      free: s.freeSpace(),
      schemaVersion: s.schemaVersion,
      position: pos,
      counts: s.counts(),
      indexes: [...indexes, ...ev.indexes],
      historyCap: s.historyCap(),
      signingKey: s.keys ? { algorithm: 'ed25519', publicKey: s.keys.publicKeyB64 } : null,
      synchronous: synchronousInEffect(s.db),
      embeddings: this.hooks.embeddings?.() ?? {
        model: null,
        configuredModel: null,
        dimension: null,
        state: 'disabled',
        fallbackReason: null,
        vectors: 0,
        pending: 0,
        vectorExtension: s.vecAvailable,
      },
      ...(this.hooks.daemonInfo ? { daemon: this.hooks.daemonInfo() } : {}),
      ...(this.team ? { team: this.team.info() } : {}),
      episodes: ev.counts,
    };
  }
}
