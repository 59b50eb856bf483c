/**
 * Episodes and their events: the episodic layer's reads and writes (docs/episodes.md).
 *
 * An episode belongs to one namespace (the project's); every read takes the caller's scope and answers NotFound for
 * an episode outside it, as memories do. Events are append-only: one position each in the store-wide order of
 * events (`events.pos`), idempotent per (episode, seq), credential-looking text tagged secret on append. The full-text
 * index follows the log (events-search.ts), caught up shortly after each append and before each query.
 */
import { lastRemovedSeq, removedEventAt } from './removed-events';
import { CairnError } from '../protocol/errors';
import { namespaceProblem } from '../protocol/namespace';
import type * as T from '../protocol/types';
import { detectCredentials } from '../text/secrets';
import { uuidv7 } from '../text/hash';
import { stmt, type DB } from './db';
import { catchUpEventText, EVENT_FROM, eventWatermark, eventWhere, newestEventPosition } from './events-search';
import { truncateWal } from './erase';
import { eraseEpisodeRows } from './episode-erase';
import { logRemoval, removals } from './episode-log';
import { eventContentHash, newSalt, signReceipt } from './receipt';
import { and, iso, isoReq } from './rows';
import { pathInScope, scopePredicate, type SqlFragment } from './scope';
import type { Store } from './store';

interface EpisodeRow {
  rowid: number;
  id: string;
  ns_id: string;
  ns_path: string;
  title: string;
  task_id: string | null;
  source: string;
  branch: string | null;
  git_commit: string | null;
  started_at: number;
  ended_at: number | null;
  events: number;
  last_at: number | null;
}

export interface EventRow {
  pos: number;
  episode_id: string;
  seq: number;
  kind: string;
  text: string;
  at: number;
  actor: string;
  context: string | null;
  secret: number;
}

const EPISODE_COLUMNS = `ep.rowid, ep.id, ep.ns_id, n.path AS ns_path, ep.title, ep.task_id, ep.source, ep.branch, ep.git_commit,
  ep.started_at, ep.ended_at, (SELECT count(*) FROM events x WHERE x.episode = ep.rowid) AS events,
  (SELECT max(x.at) FROM events x WHERE x.episode = ep.rowid) AS last_at`;
export const EVENT_COLUMNS = 'e.pos, ep.id AS episode_id, e.seq, e.kind, e.text, e.at, e.actor, e.context, e.secret';

export function toEpisode(r: EpisodeRow): T.Episode {
  return {
    id: r.id,
    title: r.title,
    namespace: r.ns_path,
    taskId: r.task_id,
    source: r.source,
    branch: r.branch,
    commit: r.git_commit,
    startedAt: isoReq(r.started_at),
    endedAt: iso(r.ended_at),
    events: r.events,
    lastEventAt: iso(r.last_at),
  };
}

export function toEvent(r: EventRow): T.EpisodeEvent {
  return {
    position: r.pos,
    episodeId: r.episode_id,
    seq: r.seq,
    kind: r.kind,
    text: r.text,
    at: isoReq(r.at),
    actor: r.actor,
    context: r.context ? (JSON.parse(r.context) as T.EventContext) : null,
    secret: r.secret === 1,
  };
}

/** An ISO time param as ms, or InvalidParams naming the field. */
function ms(s: string | undefined, field: string, fallback: number): number {
  if (s === undefined) return fallback;
  const t = Date.parse(s);
  if (!Number.isFinite(t)) throw new CairnError('InvalidParams', `${field} is not a valid time`, { field });
  return t;
}

const FTS_DELAY_MS = 25;

export class Episodes {
  private readonly db: DB;
  private ftsTimer: NodeJS.Timeout | null = null;

  constructor(private readonly store: Store) {
    this.db = store.db;
  }

  private now(): number {
    return this.store.now();
  }

  // ------------------------------------------------------------------ episodes
  private row(where: SqlFragment): EpisodeRow | undefined {
    return stmt(this.db, `SELECT ${EPISODE_COLUMNS} FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ${where.sql}`).get(
      ...where.params,
    ) as EpisodeRow | undefined;
  }

  /** The episode `id` inside the scope (live namespace), else NotFound. */
  private find(id: string, scope: T.Scope | undefined, field = 'id'): EpisodeRow {
    const r = this.row(and({ sql: 'ep.id = ? AND n.deleted_at IS NULL', params: [id] }, scopePredicate(scope)));
    if (!r) throw new CairnError('NotFound', `no episode ${id}${scope ? ' in scope' : ''}`, { field });
    return r;
  }

  start(p: T.EpisodeStartParams): T.EpisodeStartResult {
    const problem = namespaceProblem(p.namespace);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
    scopePredicate(p.scope); // validates the scope's names
    if (!pathInScope(p.namespace, p.scope))
      throw new CairnError('NotFound', `namespace ${p.namespace} is outside the caller's scope`, { field: 'namespace' });
    const now = this.now();
    const startedAt = ms(p.startedAt, 'startedAt', now);
    return this.store.transaction(() => {
      if (p.id !== undefined) {
        const existing = this.row({ sql: 'ep.id = ?', params: [p.id] });
        if (existing) {
          if (existing.ns_path !== p.namespace)
            throw new CairnError('InvalidState', `episode ${p.id} already exists in another namespace`, { field: 'id' });
          return { episode: toEpisode(existing), created: false };
        }
      }
      const nsId = this.ensureNamespace(p.namespace, now);
      const id = p.id ?? uuidv7(now);
      stmt(
        this.db,
        `INSERT INTO episodes(id, ns_id, title, task_id, source, branch, git_commit, started_at, created_at, actor)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(id, nsId, p.title, p.taskId ?? null, p.source ?? 'user', p.branch ?? null, p.commit ?? null, startedAt, now, p.actor ?? 'user');
      return { episode: toEpisode(this.row({ sql: 'ep.id = ?', params: [id] })!), created: true };
    });
  }

  private ensureNamespace(path: string, now: number): string {
    const live = stmt(this.db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL').get(path) as { id: string } | undefined;
    if (live) return live.id;
    const id = uuidv7(now);
    stmt(this.db, 'INSERT INTO namespaces(id, path, created_at) VALUES (?, ?, ?)').run(id, path, now);
    return id;
  }

  end(p: T.EpisodeEndParams): T.Episode {
    const r = this.find(p.id, p.scope);
    const endedAt = ms(p.endedAt, 'endedAt', this.now());
    if (endedAt < r.started_at) throw new CairnError('InvalidParams', 'endedAt is before the episode started', { field: 'endedAt' });
    this.store.transaction(() => stmt(this.db, 'UPDATE episodes SET ended_at = ? WHERE rowid = ?').run(endedAt, r.rowid));
    return toEpisode(this.find(p.id, p.scope));
  }

  get(p: T.EpisodeGetParams): T.EpisodeGetResult {
    const r = this.find(p.id, p.scope);
    const limit = p.limit ?? 100;
    const rows =
      limit === 0
        ? []
        : (stmt(
            this.db,
            `SELECT ${EVENT_COLUMNS} FROM ${EVENT_FROM} WHERE e.episode = ? AND e.seq > ? ${p.excludeSecrets ? 'AND e.secret = 0' : ''}
              ORDER BY e.seq LIMIT ?`,
          ).all(r.rowid, p.afterSeq ?? -1, limit + 1) as EventRow[]);
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    return { episode: toEpisode(r), events: page.map(toEvent), nextSeq: more ? page[page.length - 1].seq : null };
  }

  list(p: T.EpisodeListParams): T.EpisodeListResult {
    const limit = p.limit ?? 50;
    const f: (SqlFragment | null)[] = [{ sql: 'n.deleted_at IS NULL', params: [] }, scopePredicate(p.scope)];
    if (p.since !== undefined) f.push({ sql: 'ep.started_at >= ?', params: [ms(p.since, 'since', 0)] });
    if (p.before !== undefined) f.push({ sql: 'ep.started_at < ?', params: [ms(p.before, 'before', 0)] });
    if (p.taskId !== undefined) f.push({ sql: 'ep.task_id = ?', params: [p.taskId] });
    if (p.source !== undefined) f.push({ sql: 'ep.source = ?', params: [p.source] });
    if (p.branch !== undefined) f.push({ sql: 'ep.branch = ?', params: [p.branch] });
    if (p.open) f.push({ sql: 'ep.ended_at IS NULL', params: [] });
    if (p.cursor !== undefined) {
      const m = /^(-?\d+):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
      if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
      const [t, rid] = [Number(m[1]), Number(m[2])];
      f.push({ sql: '(ep.started_at < ? OR (ep.started_at = ? AND ep.rowid < ?))', params: [t, t, rid] });
    }
    const where = and(...f);
    const rows = stmt(
      this.db,
      `SELECT ${EPISODE_COLUMNS} FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ${where.sql}
        ORDER BY ep.started_at DESC, ep.rowid DESC LIMIT ?`,
    ).all(...where.params, limit + 1) as EpisodeRow[];
    const more = rows.length > limit;
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      episodes: page.map(toEpisode),
      nextCursor: more && last ? Buffer.from(`${last.started_at}:${last.rowid}`).toString('base64url') : null,
    };
  }

  // ------------------------------------------------------------------ events
  append(p: T.EventAppendParams): T.EventAppendResult {
    const ep = this.find(p.episodeId, p.scope, 'episodeId');
    const now = this.now();
    const ats = p.events.map((e, i) => ms(e.at, `events[${i}].at`, now));
    const result = this.store.transaction(() => {
      const existing = stmt(this.db, 'SELECT pos FROM events WHERE episode = ? AND seq = ?');
      const insert = stmt(
        this.db,
        'INSERT INTO events(episode, seq, kind, text, at, actor, context, secret, ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
      );
      // The next seq is past every stored and every removed one (a removed seq is never given to another event).
      const stored = (stmt(this.db, 'SELECT max(seq) AS s FROM events WHERE episode = ?').get(ep.rowid) as { s: number | null }).s ?? -1;
      let next = Math.max(stored, lastRemovedSeq(this.db, ep.rowid)) + 1;
      const ended = (stmt(this.db, 'SELECT ended_at FROM episodes WHERE rowid = ?').get(ep.rowid) as { ended_at: number | null }).ended_at;
      const results: T.EventAppendResult['results'] = [];
      p.events.forEach((e, i) => {
        const seq = e.seq ?? next;
        const had = existing.get(ep.rowid, seq) as { pos: number } | undefined;
        if (had) {
          results.push({ seq, position: had.pos, created: false });
          return;
        }
        // A retry of an event retention has removed since: answered as removed, never stored again.
        const removed = removedEventAt(this.db, ep.rowid, seq);
        if (removed !== undefined) {
          results.push({ seq, position: removed, created: false, removed: true });
          return;
        }
        if (ended !== null)
          throw new CairnError('InvalidState', `episode ${ep.id} has ended; start a new one to record more events`, {
            field: `events[${i}]`,
          });
        const found = detectCredentials(e.text);
        const secret = e.secret === true || found.length > 0;
        const context = e.context && Object.keys(e.context).length ? JSON.stringify(e.context) : null;
        const pos = Number(
          insert.run(ep.rowid, seq, e.kind, e.text, ats[i], e.actor ?? p.actor ?? 'user', context, secret ? 1 : 0, now).lastInsertRowid,
        );
        next = Math.max(next, seq + 1);
        const warnings = found.map((c) => ({
          code: 'credential' as const,
          kind: c.kind,
          message: `the text looks like it contains a credential (${c.kind}): the event is marked secret and is not shown to agents`,
        }));
        results.push({ seq, position: pos, created: true, ...(warnings.length ? { warnings } : {}) });
      });
      return { episodeId: ep.id, results, position: newestEventPosition(this.db) };
    });
    if (result.results.some((r) => r.created)) this.scheduleFullText();
    this.onAppend?.(result.position);
    return result;
  }

  /** Told of each append (the daemon's event embedder starts a pass). */
  onAppend: ((position: number) => void) | null = null;

  private scheduleFullText(): void {
    if (this.ftsTimer) return;
    this.ftsTimer = setTimeout(() => {
      this.ftsTimer = null;
      try {
        if (this.db.open) catchUpEventText(this.db);
      } catch {
        /* busy or closed: the next search, index/wait or append catches up */
      }
    }, FTS_DELAY_MS);
    this.ftsTimer.unref?.();
  }

  /** Full-text watermark, brought up to the newest event first (index/wait, store/status). */
  catchUp(): { watermark: number; position: number } {
    return { watermark: catchUpEventText(this.db), position: newestEventPosition(this.db) };
  }

  /**
   * store/status: counts, the newest event position and the events' index watermarks (full text caught up first; the
   * vectors' only where events are embedded).
   */
  status(withVectors: boolean): {
    counts: { episodes: number; events: number; position: number };
    indexes: { name: string; watermark: number; behind: number }[];
  } {
    const { watermark, position } = this.catchUp();
    const c = stmt(this.db, 'SELECT (SELECT count(*) FROM episodes) AS episodes, (SELECT count(*) FROM events) AS events').get() as {
      episodes: number;
      events: number;
    };
    const vec = this.vectorWatermark();
    return {
      counts: { ...c, position },
      indexes: [
        { name: 'events_fts', watermark, behind: Math.max(0, position - watermark) },
        ...(withVectors ? [{ name: 'events_vec', watermark: vec, behind: Math.max(0, position - vec) }] : []),
      ],
    };
  }

  vectorWatermark(): number {
    return eventWatermark(this.db, 'events_vec');
  }

  /** Episodes by rowid inside the scope (live namespaces), keyed by rowid. */
  byRowids(rowids: number[], scope: T.Scope | undefined): Map<number, T.Episode> {
    const where = and({ sql: 'n.deleted_at IS NULL', params: [] }, scopePredicate(scope), {
      sql: 'ep.rowid IN (SELECT value FROM json_each(?))',
      params: [JSON.stringify(rowids)],
    });
    const rows = stmt(this.db, `SELECT ${EPISODE_COLUMNS} FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ${where.sql}`).all(
      ...where.params,
    ) as EpisodeRow[];
    return new Map(rows.map((r) => [r.rowid, toEpisode(r)]));
  }

  /** Events by position that the scope and filters admit, keyed by position. */
  byPositions(
    positions: number[],
    q: { scope?: T.Scope; excludeSecrets?: boolean },
  ): Map<number, EventRow & { ep_title: string; ep_ns: string; ep_source: string; ep_started: number }> {
    const where = and(eventWhere({ scope: q.scope, excludeSecrets: q.excludeSecrets }), {
      sql: 'e.pos IN (SELECT value FROM json_each(?))',
      params: [JSON.stringify(positions)],
    });
    const rows = stmt(
      this.db,
      `SELECT ${EVENT_COLUMNS}, ep.title AS ep_title, n.path AS ep_ns, ep.source AS ep_source, ep.started_at AS ep_started
         FROM ${EVENT_FROM} WHERE ${where.sql}`,
    ).all(...where.params) as (EventRow & { ep_title: string; ep_ns: string; ep_source: string; ep_started: number })[];
    return new Map(rows.map((r) => [r.pos, r]));
  }

  /** One event in scope (an agent's view leaves secret ones out), else NotFound. */
  private event(position: number, q: { scope?: T.Scope; excludeSecrets?: boolean }, field: string): EventRow & { episode: number } {
    const where = and(eventWhere({ scope: q.scope }), { sql: 'e.pos = ?', params: [position] });
    const r = stmt(this.db, `SELECT ${EVENT_COLUMNS}, e.episode AS episode FROM ${EVENT_FROM} WHERE ${where.sql}`).get(...where.params) as
      (EventRow & { episode: number }) | undefined;
    if (!r) throw new CairnError('NotFound', `no event ${position}${q.scope ? ' in scope' : ''}`, { field });
    if (q.excludeSecrets && r.secret === 1)
      throw new CairnError(
        'NotFound',
        `event ${position} is marked secret and is not shown to agents (the user can allow it with cairn.agents.allowSecrets)`,
        { field },
      );
    return r;
  }

  /** The neighbours of each event in its own episode, `n` each side (search's `expand`). */
  around(positions: number[], n: number, excludeSecrets: boolean): Map<number, T.EpisodeEvent[]> {
    const out = new Map<number, T.EpisodeEvent[]>();
    for (const pos of positions) {
      const r = stmt(this.db, 'SELECT episode, seq FROM events WHERE pos = ?').get(pos) as { episode: number; seq: number } | undefined;
      if (!r) continue;
      out.set(pos, this.neighbours(r.episode, r.seq, n, n, excludeSecrets).map(toEvent));
    }
    return out;
  }

  private neighbours(episode: number, seq: number, before: number, after: number, excludeSecrets: boolean): EventRow[] {
    const secret = excludeSecrets ? 'AND e.secret = 0' : '';
    const earlier = stmt(
      this.db,
      `SELECT ${EVENT_COLUMNS} FROM ${EVENT_FROM} WHERE e.episode = ? AND e.seq < ? ${secret} ORDER BY e.seq DESC LIMIT ?`,
    ).all(episode, seq, before) as EventRow[];
    const later = stmt(
      this.db,
      `SELECT ${EVENT_COLUMNS} FROM ${EVENT_FROM} WHERE e.episode = ? AND e.seq >= ? ${secret} ORDER BY e.seq LIMIT ?`,
    ).all(episode, seq, after + 1) as EventRow[];
    return [...earlier.reverse(), ...later];
  }

  expand(p: T.EventExpandParams): T.EventExpandResult {
    const anchor = this.event(p.position, p, 'position');
    const ep = this.row({ sql: 'ep.rowid = ?', params: [anchor.episode] })!;
    let rows: EventRow[];
    if (p.windowMinutes !== undefined) {
      if (p.before !== undefined || p.after !== undefined)
        throw new CairnError('InvalidParams', 'give either before/after counts or windowMinutes, not both', { field: 'windowMinutes' });
      const w = p.windowMinutes * 60_000;
      rows = stmt(
        this.db,
        `SELECT ${EVENT_COLUMNS} FROM ${EVENT_FROM} WHERE e.episode = ? AND e.at >= ? AND e.at <= ? ${p.excludeSecrets ? 'AND e.secret = 0' : ''}
          ORDER BY e.seq LIMIT 1000`,
      ).all(anchor.episode, anchor.at - w, anchor.at + w) as EventRow[];
    } else {
      rows = this.neighbours(anchor.episode, anchor.seq, p.before ?? 3, p.after ?? 3, p.excludeSecrets === true);
    }
    return { episode: toEpisode(ep), anchor: anchor.pos, events: rows.map(toEvent) };
  }

  timeline(p: T.EpisodeTimelineParams): T.EpisodeTimelineResult {
    const anchor = this.event(p.anchor, p, 'anchor');
    const where = eventWhere({ scope: p.scope, excludeSecrets: p.excludeSecrets });
    const cols = `e.pos, ep.id AS episode_id, ep.title AS title, e.kind, e.at, substr(e.text, 1, 400) AS text`;
    type Row = { pos: number; episode_id: string; title: string; kind: string; at: number; text: string };
    const earlier = stmt(
      this.db,
      `SELECT ${cols} FROM ${EVENT_FROM} WHERE ${where.sql} AND (e.at < ? OR (e.at = ? AND e.pos < ?)) ORDER BY e.at DESC, e.pos DESC LIMIT ?`,
    ).all(...where.params, anchor.at, anchor.at, anchor.pos, p.before ?? 5) as Row[];
    const later = stmt(
      this.db,
      `SELECT ${cols} FROM ${EVENT_FROM} WHERE ${where.sql} AND (e.at > ? OR (e.at = ? AND e.pos >= ?)) ORDER BY e.at, e.pos LIMIT ?`,
    ).all(...where.params, anchor.at, anchor.at, anchor.pos, (p.after ?? 5) + 1) as Row[];
    return {
      entries: [...earlier.reverse(), ...later].map((r) => ({
        position: r.pos,
        episodeId: r.episode_id,
        episodeTitle: r.title,
        kind: r.kind,
        at: isoReq(r.at),
        excerpt: excerpt(r.text),
        anchor: r.pos === anchor.pos,
      })),
    };
  }

  /** Reference time of the newest event in scope (null: none), the default reference of relative time phrases. */
  newestAt(scope: T.Scope | undefined): number | null {
    const where = eventWhere({ scope });
    const r = stmt(this.db, `SELECT max(e.at) AS at FROM ${EVENT_FROM} WHERE ${where.sql}`).get(...where.params) as { at: number | null };
    return r.at;
  }

  /** The source events of a proposal: each in scope (and not secret for agents), in the order given. */
  sources(positions: number[], q: { scope?: T.Scope; excludeSecrets?: boolean }): (EventRow & { ns_path: string })[] {
    return positions.map((pos, i) => {
      const r = this.event(pos, q, `events[${i}]`);
      const ns = stmt(this.db, 'SELECT n.path FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ep.rowid = ?').get(r.episode) as {
        path: string;
      };
      return { ...r, ns_path: ns.path };
    });
  }

  /**
   * Remove an episode with its events, their full-text rows (FTS5 secure-delete, then a merge so no older segment
   * holds their terms) and vectors, in one transaction, logged in `episode_removals` (ids and counts only); then
   * truncate the WAL. secure_delete (on for every store) zeroes the freed pages. Returns a receipt signed with the
   * store's key, as memory/erase does (store/erase.ts, store/receipt.ts).
   */
  erase(p: T.EpisodeEraseParams): T.EpisodeEraseResult {
    const keys = this.store.keys;
    if (!keys) throw new CairnError('InvalidState', 'this store was opened read-only; it cannot erase');
    const ep = this.find(p.id, p.scope);
    const at = this.now();
    const actor = p.actor ?? 'user';
    const receiptId = uuidv7(at);
    const salt = newSalt();
    let content: unknown[][] = [];
    const r = this.store.transaction(() => {
      const gone = eraseEpisodeRows(this.db, { sql: 'ep.rowid = ?', params: [ep.rowid] });
      content = gone.content;
      logRemoval(this.db, {
        op: 'erase',
        episodeId: ep.id,
        namespace: ep.ns_path,
        events: gone.events,
        actor,
        reason: p.reason ?? null,
        at,
        detail: { receipt: receiptId },
      });
      return { events: gone.events, vectors: gone.vectors };
    });
    const walTruncated = truncateWal(this.store);
    const receipt = signReceipt(
      {
        format: 'cairn-erasure-receipt',
        version: 1,
        id: receiptId,
        erasedAt: new Date(at).toISOString(),
        actor,
        reason: p.reason ?? null,
        target: { episode: ep.id },
        memories: [],
        episodes: [{ id: ep.id, namespace: ep.ns_path, events: r.events }],
        removed: { history: 0, links: 0, vectors: r.vectors, namespaces: 0, events: r.events },
        contentHash: eventContentHash(salt, content),
        salt,
        walTruncated,
        publicKey: keys.publicKeyB64,
      },
      keys.privateKey,
    );
    return { id: ep.id, ...r, walTruncated, receipt };
  }

  /** episodes/removals: what erase and retention removed from the event log (episode-log.ts). */
  removals(p: T.EpisodeRemovalsParams): T.EpisodeRemovalsResult {
    scopePredicate(p.scope); // validates the scope's names
    return removals(this.db, p);
  }
}

/** The first line of a text, at most 160 characters. */
export function excerpt(text: string): string {
  const line =
    text
      .split('\n')
      .find((l) => l.trim().length > 0)
      ?.trim() ?? '';
  return line.length > 160 ? line.slice(0, 159) + '…' : line;
}
