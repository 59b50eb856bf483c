/**
 * Routing between the local store (SQLite, through the Core's own handlers)
 * and the team store (PostgreSQL) by namespace root. Namespaces at or under a
 * team root (`cairn.team.roots`, default `team`) live in the team database;
 * everything else stays local. Clients see one namespace tree:
 *
 * - a write goes to the store of its namespace; a request by id asks the local
 *   store first, then the team store;
 * - a list or search whose scope covers both stores runs each store's arms
 *   inside that store's part of the scope (never wider) and merges: lists by
 *   updatedAt with a cursor per store, searches by reciprocal rank;
 * - every search hit says which store it came from (`store`).
 *
 * An export or audit whose scope holds team namespaces only is the team
 * database's, for admins of what it covers (store/pg/admin.ts), and so is an
 * erase of team memory (store/pg/erasure.ts); an import whose records hold team
 * namespaces only is written into the team database, for writers of them
 * (store/pg/import.ts). A request that reaches both stores (an erase of a root
 * holding both, an import holding local and team records, an export or audit
 * whose scope covers both stores) is refused with
 * `InvalidState` (data.store = 'team') before anything is done, so it is never
 * carried out for one half alone.
 *
 * When the team database cannot be reached, team requests fail at once with
 * `Unavailable`; a search over both stores returns the local part and says so
 * in `degraded` (a list over both fails with `Unavailable`: a page with holes
 * would break its cursor).
 */
/* eslint-disable @typescript-eslint/no-explicit-any -- params reach the router already validated by the Core's zod schemas; each branch reads the shape of its own method. */
import { CairnError, ErrorCodes, type CairnErrorData } from '../protocol/errors';
import { isUnder } from '../protocol/namespace';
import type * as T from '../protocol/types';
import { rrf, type Fusion } from '../retrieval/fusion';
import { holds, missingGrant, namespaceOf } from '../store/pg/access';
import { isTeamExportCursor, teamAuditPage, TeamExports } from '../store/pg/admin';
import { teamErase } from '../store/pg/erasure';
import { teamImport, teamImportPreview } from '../store/pg/import';
import type { PgBackend, PgEmbedder } from '../store/pg/backend';
import type { Level } from '../store/pg/schema';
import { pgSearch } from '../store/pg/search';
import type { TeamOpener } from './opener';
import { DEFAULT_TEAM_ROOTS, parseRoots } from './roots';

export type LocalCall = (method: string, params: any) => Promise<any>;

/** What the router needs of the daemon's vector arm to embed team memories with the same model. */
export interface VectorSource {
  /** Why the model in use cannot embed now (during a local model switch too: Indexer.indexUnavailable). */
  indexUnavailable(): string | null;
  fusion(): Fusion;
  embedder?: PgEmbedder | null;
}

export { DEFAULT_TEAM_ROOTS, parseRoots };

const ROUTED = new Set([
  'memory/upsert',
  'memory/upsertBatch',
  'memory/get',
  'memory/list',
  'memory/delete',
  'memory/restore',
  'memory/forget',
  'memory/purge',
  'memory/history',
  'memory/link',
  'memory/unlink',
  'memory/neighbors',
  'memory/search',
  'namespaces/list',
  'namespaces/rename',
  'namespaces/delete',
  'store/sweep',
  // Served by the team store for what lies in it alone: refused (typed) when they reach both stores, never done by halves.
  'memory/erase',
  'store/export',
  'store/exportPage',
  'store/import',
  'store/importPreview',
  'store/audit',
]);

/** The grant each method needs on the team side (what the row-level-security policies check), and its verb. */
const NEEDS: Record<string, [Level, string]> = {
  'memory/upsert': ['write', 'write'],
  'memory/upsertBatch': ['write', 'write'],
  'memory/delete': ['write', 'delete in'],
  'memory/restore': ['write', 'restore in'],
  'memory/forget': ['write', 'forget in'],
  'memory/link': ['write', 'link in'],
  'memory/unlink': ['write', 'unlink in'],
  'memory/purge': ['admin', 'purge in'],
  'namespaces/rename': ['admin', 'rename'],
  'namespaces/delete': ['admin', 'delete'],
  'memory/get': ['read', 'read'],
  'memory/history': ['read', 'read'],
  'memory/neighbors': ['read', 'read'],
  'memory/list': ['read', 'read'],
  'memory/search': ['read', 'read'],
  'namespaces/list': ['read', 'read'],
  'memory/erase': ['admin', 'erase in'],
  'store/audit': ['admin', 'audit'],
  'store/export': ['admin', 'export'],
  'store/exportPage': ['admin', 'export'],
  'store/import': ['write', 'import into'],
  'store/importPreview': ['write', 'import into'],
};

type Side = T.Scope | undefined | null; // undefined: whole store; null: nothing in this store

export class TeamRouter {
  vectors: VectorSource | undefined;
  /** Opens the database and keeps trying while it cannot (attach.ts); without one, calls go straight to the store. */
  opener: TeamOpener | undefined;
  private backfilled: string | null = null;
  private backfillError: string | null = null;
  /** The team store, each call made only once the database is open (TeamOpener.ensure: tries at once if it is not). */
  private readonly gated: PgBackend;
  /** Team exports in progress (each a snapshot on its own connection). */
  readonly exports: TeamExports;

  constructor(
    readonly team: PgBackend,
    readonly roots: string[] = DEFAULT_TEAM_ROOTS,
    private readonly log: (m: string) => void = () => {},
  ) {
    this.exports = new TeamExports(team);
    this.gated = new Proxy(team, {
      get: (b, k) => {
        const v: unknown = Reflect.get(b, k);
        if (typeof v !== 'function') return v;
        return async (...a: unknown[]) => {
          await this.opener?.ensure();
          return (v as (...x: unknown[]) => unknown).apply(b, a);
        };
      },
    });
  }

  private get isOpen(): boolean {
    return !this.opener || this.opener.open;
  }

  /**
   * For store/status: the database (password never included), the roots, the login role, whether it opened; while it
   * has not, why not and when the next attempt is due.
   */
  info(): NonNullable<T.StoreStatusResult['team']> {
    const o = this.opener;
    return {
      url: this.team.url,
      roots: [...this.roots],
      user: this.team.user || null,
      connected: this.team.schemaVersion > 0,
      ...(o && !o.open
        ? { error: o.error?.message ?? null, nextAttemptAt: o.nextAttemptAt === null ? null : new Date(o.nextAttemptAt).toISOString() }
        : {}),
    };
  }

  claims(method: string): boolean {
    return ROUTED.has(method);
  }

  isTeam(ns: string): boolean {
    return this.roots.some((r) => isUnder(ns, r));
  }

  /** The parts of a scope that each store serves. */
  split(scope: T.Scope | undefined): { local: Side; team: Side } {
    if (!scope || (scope.namespaces === undefined && scope.root === undefined)) return { local: scope, team: undefined };
    const ns = scope.namespaces;
    const teamNs = ns?.filter((n) => this.isTeam(n));
    const localNs = ns?.filter((n) => !this.isTeam(n));
    const r = scope.root;
    const rootTeam = r !== undefined && this.isTeam(r);
    const rootCoversTeam = r !== undefined && this.roots.some((t) => isUnder(t, r));
    const local: T.Scope = {
      ...(localNs !== undefined ? { namespaces: localNs } : {}),
      ...(r !== undefined && !rootTeam ? { root: r } : {}),
      ...(scope.includeUser !== undefined ? { includeUser: scope.includeUser } : {}),
    };
    if (local.namespaces === undefined && local.root === undefined) local.namespaces = [];
    const localEmpty = local.namespaces?.length === 0 && local.root === undefined && scope.includeUser === false;
    const teamRoot = rootTeam || rootCoversTeam ? r : undefined;
    const team: T.Scope | null =
      (teamNs && teamNs.length) || teamRoot !== undefined
        ? { ...(teamNs?.length ? { namespaces: teamNs } : {}), ...(teamRoot !== undefined ? { root: teamRoot } : {}), includeUser: false }
        : null;
    return { local: localEmpty ? null : local, team };
  }

  /**
   * Does the scope name team namespaces only (the user tree, added to a scope by default, aside)? Then an export or
   * audit of it is the team database's.
   */
  private teamOnly(scope: T.Scope | undefined): boolean {
    const s = this.split(scope);
    if (!scope || s.team === null) return false;
    return s.local === null || (s.local !== undefined && s.local.root === undefined && (s.local.namespaces?.length ?? 0) === 0);
  }

  /** Keep the team store on the daemon's embedding model (and embed what it lacks once per model). */
  private syncEmbedder(): Fusion | null {
    const v = this.vectors;
    if (!v || v.indexUnavailable() || !v.embedder || !this.isOpen) {
      this.team.embedder = null;
      return null;
    }
    this.team.embedder = v.embedder;
    if (this.backfilled !== v.embedder.info.model) {
      this.backfilled = v.embedder.info.model;
      void this.team.backfill().then(
        (n) => {
          if (n) this.log(`team store: embedded ${n} memories with ${v.embedder!.info.model}`);
          this.backfillError = null;
        },
        (e) => {
          // Tried again on a later request; a failure that persists is logged once, and again only when it changes.
          this.backfilled = null;
          const m = (e as Error).message;
          if (m !== this.backfillError) this.log(`team store: embedding backlog failed: ${m} (retried on later requests)`);
          this.backfillError = m;
        },
      );
    }
    return v.fusion();
  }

  async request(method: string, p: any, local: LocalCall): Promise<unknown> {
    try {
      return await this.route(method, p, local);
    } catch (e) {
      throw await this.explain(e, method, p);
    }
  }

  /**
   * A team refusal (`Forbidden`) names the grant the request lacks: the level its method needs, on its namespace
   * (or, by id, the memory's), and the `cairn team grant` command. A refusal for any other reason (the role holds
   * that grant) passes unchanged.
   */
  private async explain(e: unknown, method: string, p: any): Promise<unknown> {
    if (!(e instanceof CairnError) || e.codeName !== 'Forbidden' || e.data.namespace !== undefined) return e;
    const need = NEEDS[method];
    if (!need) return e;
    const [level, verb] = need;
    const scopeNs = (s: T.Scope | undefined | null) => s?.root ?? s?.namespaces?.[0];
    let ns: string | undefined | null =
      method === 'namespaces/rename'
        ? p.from
        : method === 'namespaces/delete'
          ? p.path
          : method === 'memory/upsertBatch'
            ? (p.items as T.UpsertParams[]).find((it) => this.isTeam(it.namespace))?.namespace
            : method === 'memory/list' || method === 'memory/search'
              ? scopeNs(this.split(p.scope).team)
              : method === 'namespaces/list'
                ? p.root
                : p.namespace;
    if (ns && !this.isTeam(ns)) ns = undefined;
    if (!this.isOpen) {
      const user = typeof e.data.role === 'string' ? e.data.role : this.team.user;
      return missingGrant({ user, level, verb, namespace: ns ?? this.roots[0], member: false });
    }
    const id = p.id ?? (method === 'memory/link' || method === 'memory/unlink' ? p.from : undefined);
    if (ns === undefined && typeof id === 'string') ns = await namespaceOf(this.team.pool, id);
    if (!ns) return e;
    if ((await holds(this.team.pool, ns, level)) !== false) return e;
    return missingGrant({ user: this.team.user, level, verb, namespace: ns, member: true, cause: e.message });
  }

  private async route(method: string, p: any, local: LocalCall): Promise<unknown> {
    const fusion = this.syncEmbedder();
    const t = this.gated;
    switch (method) {
      case 'memory/upsert':
        return this.isTeam(p.namespace) ? t.upsert(p) : local(method, p);
      case 'memory/upsertBatch':
        return this.upsertBatch(p, local);
      case 'memory/get':
        if ('namespace' in p) return this.isTeam(p.namespace) ? t.get(p) : local(method, p);
        return this.byId(method, p, local, () => t.get(p));
      case 'memory/delete':
      case 'memory/restore':
      case 'memory/forget':
      case 'memory/purge':
      case 'memory/history': {
        const fn = {
          'memory/delete': t.delete,
          'memory/restore': t.restore,
          'memory/forget': t.forget,
          'memory/purge': t.purge,
          'memory/history': t.history,
        }[method].bind(t) as (x: any) => Promise<unknown>;
        if (p.namespace !== undefined && p.id === undefined) return this.isTeam(p.namespace) ? fn(p) : local(method, p);
        return this.byId(method, p, local, () => fn(p));
      }
      case 'memory/link':
      case 'memory/unlink':
        return (await this.localHas(p.from, local)) ? local(method, p) : method === 'memory/link' ? t.link(p) : t.unlink(p);
      case 'memory/neighbors':
        return (await this.localHas(p.id, local)) ? local(method, p) : t.neighbors(p);
      case 'memory/list':
        return this.list(p, local);
      case 'memory/search':
        return this.search(p, local, fusion);
      case 'namespaces/list': {
        const root: string | undefined = p.root;
        const wantTeam = root === undefined || this.isTeam(root) || this.roots.some((r) => isUnder(r, root));
        const wantLocal = root === undefined || !this.isTeam(root);
        const [l, tm] = await Promise.all([wantLocal ? local(method, p) : { namespaces: [] }, wantTeam ? t.listNamespaces(root) : []]);
        const merged = [...(l.namespaces as T.NamespaceInfo[]).filter((n) => !this.isTeam(n.path)), ...tm].sort((a, b) =>
          a.path < b.path ? -1 : a.path > b.path ? 1 : 0,
        );
        return { namespaces: merged };
      }
      case 'namespaces/rename': {
        const a = this.isTeam(p.from);
        if (a !== this.isTeam(p.to))
          throw new CairnError('InvalidState', `cannot move ${p.from} between the local and the team store`, { field: 'to' });
        return a ? t.renameNamespace(p.from, p.to, p.actor) : local(method, p);
      }
      case 'namespaces/delete':
        return this.isTeam(p.path) ? t.deleteNamespace(p.path, p.actor, p.reason) : local(method, p);
      case 'memory/erase': {
        const target = p.root ?? (p.id === undefined ? p.namespace : undefined);
        if (target !== undefined) {
          if (this.isTeam(target)) {
            await this.opener?.ensure();
            return teamErase(this.team, p); // an admin of it erases team memory, with the team database's receipt
          }
          if (p.root !== undefined && this.roots.some((r) => isUnder(r, p.root)))
            throw new CairnError(
              'InvalidState',
              `memory/erase of ${target} would reach both the local and the team store; nothing was done. Erase each part by its own root.`,
              { field: 'root', store: 'team' },
            );
          return local(method, p);
        }
        if (await this.localHas(p.id, local)) return local(method, p);
        await this.opener?.ensure();
        return teamErase(this.team, p); // NotFound when the team store has no such memory either
      }
      case 'store/export':
      case 'store/exportPage': {
        if (method === 'store/exportPage' && p.cursor !== undefined)
          return isTeamExportCursor(p.cursor) ? this.exports.page(p) : local(method, p); // the first page was checked
        if (this.teamOnly(p.scope)) {
          // An export of team namespaces only: an admin of them exports them from the team database.
          await this.opener?.ensure();
          return method === 'store/export' ? this.exports.all(p) : this.exports.page(p);
        }
        if (this.split(p.scope).team !== null)
          throw new CairnError(
            'InvalidState',
            `${method} covers one store at a time and ${p.scope ? 'the scope covers both local and team namespaces' : 'the whole store includes the team namespaces'}; nothing was done. Export local namespaces, and (as their admin) team namespaces, separately.`,
            { field: 'scope', store: 'team' },
          );
        return local(method, p);
      }
      case 'store/import':
      case 'store/importPreview': {
        const records = p.records as unknown[];
        // Episodes live in the local store only: a team episode record is refused before anything is written.
        const teamEpisode = records.findIndex((r) => (r as { type?: unknown })?.type === 'episode' && this.recordStore(r) === 'team');
        if (teamEpisode >= 0)
          throw new CairnError(
            'InvalidState',
            `${method}: episodes live in the local store only and the records hold episodes of team namespaces; nothing was done. Import the episode and event records into local namespaces.`,
            { field: `records[${teamEpisode}]`, store: 'team' },
          );
        const team = records.findIndex((r) => this.recordStore(r) === 'team');
        if (team < 0) return local(method, p);
        if (records.some((r) => this.recordStore(r) === 'local'))
          throw new CairnError(
            'InvalidState',
            `${method} covers one store at a time and the records hold both local and team namespaces; nothing was done. Import the local and the team records separately.`,
            { field: `records[${team}]`, store: 'team' },
          );
        // Records of team namespaces only: written into the team database by a writer of them.
        await this.opener?.ensure();
        return method === 'store/import' ? teamImport(this.team, p) : teamImportPreview(this.team, p);
      }
      case 'store/audit': {
        if (!p?.scope || this.split(p.scope).team === null) return local(method, p ?? {});
        if (!this.teamOnly(p.scope))
          throw new CairnError(
            'InvalidState',
            'store/audit covers one store at a time and the scope covers both local and team namespaces; nothing was done. Audit each separately.',
            { field: 'scope', store: 'team' },
          );
        await this.opener?.ensure();
        return teamAuditPage(this.team, p);
      }
      case 'store/sweep': {
        const l = await local(method, p);
        if (!this.isOpen) return l; // the opener keeps trying; a sweep does not add a failure per minute to the log
        try {
          const r = await t.sweep(p?.batch);
          return { ...l, expired: l.expired + r.expired, purged: l.purged + r.purged };
        } catch (e) {
          this.log(`team sweep failed: ${(e as Error).message}`);
          return l;
        }
      }
    }
    return local(method, p);
  }

  /** Team memories anchored to one of `paths`, inside the team part of `scope` (hovers); [] when it covers no team root. */
  async anchoredAt(paths: string[], scope: T.Scope): Promise<{ memory: T.Memory; anchor: T.Anchor }[]> {
    const s = this.split(scope);
    if (s.team === null) return [];
    return this.gated.anchoredAt(paths, s.team ?? undefined);
  }

  /** The store of the namespace an export record names, if it names one. (Malformed records are left to the import to refuse.) */
  private recordStore(r: unknown): 'local' | 'team' | null {
    const x = r as {
      type?: unknown;
      path?: unknown;
      memory?: { namespace?: unknown };
      episode?: { namespace?: unknown };
      branch?: { root?: unknown };
    };
    if (!x || typeof x !== 'object') return null;
    if (x.type === 'branch' || x.type === 'branchMemory' || x.type === 'branchHistory') return 'local'; // branches are local only
    const ns =
      x.type === 'namespace' ? x.path : x.type === 'memory' ? x.memory?.namespace : x.type === 'episode' ? x.episode?.namespace : undefined;
    if (typeof ns !== 'string') return null;
    return this.isTeam(ns) ? 'team' : 'local';
  }

  /** Is this memory id in the local store? (history rows outlive deletes, so this finds deleted memories too.) */
  private async localHas(id: string, local: LocalCall): Promise<boolean> {
    try {
      await local('memory/history', { id, limit: 1 });
      return true;
    } catch (e) {
      if (e instanceof CairnError && e.codeName === 'NotFound') return false;
      throw e;
    }
  }

  private async byId(method: string, p: any, local: LocalCall, team: () => Promise<unknown>): Promise<unknown> {
    try {
      return await local(method, p);
    } catch (e) {
      if (!(e instanceof CairnError) || e.codeName !== 'NotFound') throw e;
      if (await this.localHas(p.id, local)) throw e; // a local memory: its answer stands
      return team();
    }
  }

  private async upsertBatch(p: T.UpsertBatchParams, local: LocalCall): Promise<T.UpsertBatchResult> {
    const idx = { local: [] as number[], team: [] as number[] };
    p.items.forEach((it, i) => idx[this.isTeam(it.namespace) ? 'team' : 'local'].push(i));
    if (idx.team.length === 0) return local('memory/upsertBatch', p);
    if (idx.local.length === 0) return this.explainItems(await this.gated.upsertBatch(p.items, p.actor, p.idempotencyKey), p.items);
    // A mixed batch: each store applies its part at most once under the same key (each records its own part).
    const [l, t] = await Promise.all([
      local('memory/upsertBatch', { ...p, items: idx.local.map((i) => p.items[i]) }) as Promise<T.UpsertBatchResult>,
      this.gated.upsertBatch(
        idx.team.map((i) => p.items[i]),
        p.actor,
        p.idempotencyKey,
      ),
    ]);
    const results: T.UpsertBatchResult['results'] = new Array(p.items.length);
    idx.local.forEach((i, k) => (results[i] = l.results[k]));
    const te = await this.explainItems(
      t,
      idx.team.map((i) => p.items[i]),
    );
    idx.team.forEach((i, k) => (results[i] = te.results[k]));
    return { results, position: l.position };
  }

  /** The team items of a batch refused with `Forbidden` name the grant they lacked, as a single upsert does. */
  private async explainItems(r: T.UpsertBatchResult, items: T.UpsertParams[]): Promise<T.UpsertBatchResult> {
    if (!r.results.some((x) => !x.ok && x.error.code === ErrorCodes.Forbidden)) return r;
    const results = await Promise.all(
      r.results.map(async (x, k) => {
        if (x.ok || x.error.code !== ErrorCodes.Forbidden) return x;
        const data = (x.error.data ?? {}) as Omit<CairnErrorData, 'name'>;
        const e = await this.explain(new CairnError('Forbidden', x.error.message, data), 'memory/upsert', items[k]);
        return e instanceof CairnError ? { ok: false as const, error: { code: e.code, message: e.message, data: e.data } } : x;
      }),
    );
    return { ...r, results };
  }

  private async list(p: T.ListParams, local: LocalCall): Promise<T.ListResult & { degraded?: string }> {
    const s = this.split(p.scope);
    if (s.team === null) return local('memory/list', p);
    if (s.local === null) return this.gated.list({ ...p, scope: s.team ?? undefined });
    // Both stores: one cursor per store.
    const limit = p.limit ?? 100;
    let st: { l: string | null | false; t: string | null | false } = { l: null, t: null };
    if (p.cursor !== undefined) {
      try {
        const raw = Buffer.from(p.cursor, 'base64url').toString('utf8');
        if (!raw.startsWith('2:')) throw new Error();
        st = JSON.parse(raw.slice(2));
      } catch {
        throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
      }
    }
    const lp = { ...p, scope: s.local ?? undefined };
    const tp = { ...p, scope: s.team ?? undefined };
    const page = (side: 'l' | 't', n: number): Promise<T.ListResult> => {
      const c = st[side];
      if (c === false) return Promise.resolve({ items: [], nextCursor: null });
      const q = { ...(side === 'l' ? lp : tp), limit: n, ...(c ? { cursor: c } : { cursor: undefined }) };
      if (q.cursor === undefined) delete (q as { cursor?: string }).cursor;
      return side === 'l' ? local('memory/list', q) : this.gated.list(q);
    };
    const [l, t] = await Promise.all([page('l', limit), page('t', limit)]);
    const merged = [...l.items.map((m) => ({ m, side: 'l' as const })), ...t.items.map((m) => ({ m, side: 't' as const }))].sort((a, b) =>
      a.m.updatedAt < b.m.updatedAt ? 1 : a.m.updatedAt > b.m.updatedAt ? -1 : a.side === 'l' ? -1 : 1,
    );
    const take = merged.slice(0, limit);
    const next = async (side: 'l' | 't', r: T.ListResult): Promise<string | null | false> => {
      const used = take.filter((x) => x.side === side).length;
      if (used === r.items.length) return r.nextCursor ?? false;
      if (used === 0) return st[side];
      return (await page(side, used)).nextCursor ?? false;
    };
    const nl = await next('l', l);
    const nt = await next('t', t);
    const done = nl === false && nt === false;
    return {
      items: take.map((x) => x.m),
      nextCursor: done ? null : Buffer.from('2:' + JSON.stringify({ l: nl, t: nt })).toString('base64url'),
    };
  }

  private async search(p: T.SearchParams, local: LocalCall, fusion: Fusion | null): Promise<T.SearchResult> {
    const s = this.split(p.scope);
    const tag = (r: T.SearchResult, store: 'local' | 'team'): T.SearchResult => ({ ...r, hits: r.hits.map((h) => ({ ...h, store })) });
    const teamPart = async () => {
      await this.opener?.ensure();
      return pgSearch(this.team, { ...p, scope: s.team ?? undefined }, fusion);
    };
    if (s.team === null) return tag(await local('memory/search', p), 'local');
    if (s.local === null) return tag(await teamPart(), 'team');
    const [l, t] = await Promise.all([
      local('memory/search', { ...p, scope: s.local ?? undefined }) as Promise<T.SearchResult>,
      teamPart().catch((e: unknown) => e as Error),
    ]);
    if (t instanceof Error) {
      if (!(t instanceof CairnError) || (t.codeName !== 'Unavailable' && t.codeName !== 'Forbidden')) throw t;
      const why = t.codeName === 'Forbidden' ? await this.explain(t, 'memory/search', p) : t;
      return {
        ...tag(l, 'local'),
        degraded: `team store ${t.codeName === 'Forbidden' ? 'refused' : 'unavailable'}: ${(why as Error).message}`,
      };
    }
    // Reciprocal-rank fusion across the stores: scores of different stores are not on one scale, ranks are.
    const limit = p.limit ?? 10;
    const all = [
      ...tag(l, 'local').hits.map((h, i) => ({ h, f: rrf(i + 1) })),
      ...tag(t, 'team').hits.map((h, i) => ({ h, f: rrf(i + 1) })),
    ];
    all.sort((a, b) => b.f - a.f || b.h.score - a.h.score || (a.h.memory.id < b.h.memory.id ? -1 : 1));
    const degraded = [l.degraded, t.degraded && `team: ${t.degraded}`].filter(Boolean).join('; ');
    return { hits: all.slice(0, limit).map((x) => x.h), mode: l.mode, ...(degraded ? { degraded } : {}) };
  }
}
