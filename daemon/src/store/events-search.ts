/**
 * The derived indexes of events and their search arms (episodic memory, docs/episodes.md).
 *
 * The event log (`events`, schema 6) is the system of record. Two indexes follow it by position, each from its own
 * watermark in `index_state`, as the memories' indexes follow the change log:
 * - `events_fts` (FTS5, contentless, rowid = event position): text, context (path, symbol, command, tool) and kind;
 *   caught up before every full-text query, by index/wait and shortly after each append.
 * - `event_vectors` (int8 + norm, rowid = event position), written by the daemon's event embedder
 *   (index/event-vectors.ts) for the model in `index_state('events_vec').model`.
 *
 * Scope (the namespace of the event's episode, a live namespace) and every filter are part of the SQL that produces
 * an arm's candidates, before any ranking or cut.
 */
import type { Scope } from '../protocol/types';
import { STOPWORDS } from '../text/identifiers';
import { stmt, writeTx, type DB } from './db';
import { dropEventVectorCache, scanEventVectors } from './event-vector-cache';
import { and } from './rows';
import { scopePredicate, type SqlFragment } from './scope';
import { commonTermCap, FTS_MAX_NS_TOKENS, namespaceToken } from './search-fts';

export const EVENTS_FTS =
  "CREATE VIRTUAL TABLE events_fts USING fts5(text, ctx, kind, prev, ns, content='', contentless_delete=1, tokenize='porter unicode61 remove_diacritics 2')";
/**
 * BM25 column weights: text, context parts, kind, `ns` (0: the episode's namespace token only scopes, as the memories'
 * index does: search-fts.ts namespaceToken) and `prev`, the text of the event before it in its episode (what
 * the event answers or continues: a turn is often understood only with the one before it). 0.5 for `prev` was chosen
 * on LoCoMo conversations 0-2 (bench/locomo-episodes.ts; 0, 0.15, 0.3, 0.5, 0.75, 1 tried; bench/README.md).
 */
export const EVENT_BM25 = [1.0, 0.5, 0.2, 0.5, 0.0] as const; // text, ctx, kind, prev, ns
/** The event before `e` in its episode (alias e), the `prev` column's text. */
export const PREV_TEXT = '(SELECT p.text FROM events p WHERE p.episode = e.episode AND p.seq < e.seq ORDER BY p.seq DESC LIMIT 1)';
const FTS_STEP = 2000;

/** Indexes and index-state rows of the event tables, re-asserted at every open (schema.ts). */
export function assertEventInvariants(db: DB): void {
  db.exec(`
    CREATE INDEX IF NOT EXISTS episodes_ns ON episodes(ns_id, started_at);
    CREATE INDEX IF NOT EXISTS episodes_started ON episodes(started_at, rowid);
    CREATE INDEX IF NOT EXISTS episodes_task ON episodes(task_id) WHERE task_id IS NOT NULL;
    CREATE INDEX IF NOT EXISTS events_episode_at ON events(episode, at);
    CREATE INDEX IF NOT EXISTS events_at ON events(at, pos);
    INSERT OR IGNORE INTO index_state(name, watermark) VALUES ('events_fts', 0);
    INSERT OR IGNORE INTO index_state(name, watermark) VALUES ('events_vec', 0);
  `);
  const row = db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'events_fts'`).get() as { sql: string } | undefined;
  if (!row || row.sql !== EVENTS_FTS) {
    if (row) db.exec('DROP TABLE events_fts');
    db.exec(EVENTS_FTS);
    db.prepare(`UPDATE index_state SET watermark = 0 WHERE name = 'events_fts'`).run();
  }
}

/** What an event's context contributes to the full-text index. */
export function contextText(context: string | null): string {
  if (!context) return '';
  const c = JSON.parse(context) as Record<string, unknown>;
  return [c.path, c.symbol, c.command, c.tool].filter((x) => typeof x === 'string').join(' ');
}

export function newestEventPosition(db: DB): number {
  return (stmt(db, `SELECT seq FROM sqlite_sequence WHERE name = 'events'`).get() as { seq: number } | undefined)?.seq ?? 0;
}

export function eventWatermark(db: DB, name: 'events_fts' | 'events_vec'): number {
  return (stmt(db, 'SELECT watermark FROM index_state WHERE name = ?').get(name) as { watermark: number } | undefined)?.watermark ?? 0;
}

/** Bring `events_fts` up to the newest event (one transaction); returns the watermark. A read-only connection answers as indexed. */
export function catchUpEventText(db: DB): number {
  let wm = eventWatermark(db, 'events_fts');
  const top = newestEventPosition(db);
  if (db.readonly || wm >= top) return wm;
  return writeTx(db, () => {
    wm = eventWatermark(db, 'events_fts');
    const put = stmt(db, 'INSERT INTO events_fts(rowid, text, ctx, kind, prev, ns) VALUES (?, ?, ?, ?, ?, ?)');
    for (;;) {
      const rows = stmt(
        db,
        `SELECT e.pos, e.text, e.context, e.kind, ${PREV_TEXT} AS prev, ep.ns_id FROM events e JOIN episodes ep ON ep.rowid = e.episode
          WHERE e.pos > ? ORDER BY e.pos LIMIT ?`,
      ).all(wm, FTS_STEP) as { pos: number; text: string; context: string | null; kind: string; prev: string | null; ns_id: string }[];
      if (rows.length === 0) break;
      for (const r of rows)
        put.run(r.pos, r.text, contextText(r.context), r.kind.replace(/[_.-]+/g, ' '), r.prev ?? '', namespaceToken(r.ns_id));
      wm = rows[rows.length - 1].pos;
      if (rows.length < FTS_STEP) break;
    }
    wm = Math.max(wm, top); // positions of events erased before they were indexed
    stmt(db, `UPDATE index_state SET watermark = ? WHERE name = 'events_fts'`).run(wm);
    return wm;
  });
}

/** Index one event's full text again (its row replaced), inside the caller's transaction: its `prev` changed. */
export function reindexEventText(db: DB, pos: number): void {
  const r = stmt(
    db,
    `SELECT e.pos, e.text, e.context, e.kind, ${PREV_TEXT} AS prev, ep.ns_id FROM events e JOIN episodes ep ON ep.rowid = e.episode
      WHERE e.pos = ?`,
  ).get(pos) as { pos: number; text: string; context: string | null; kind: string; prev: string | null; ns_id: string } | undefined;
  stmt(db, 'DELETE FROM events_fts WHERE rowid = ?').run(pos);
  if (r)
    stmt(db, 'INSERT INTO events_fts(rowid, text, ctx, kind, prev, ns) VALUES (?, ?, ?, ?, ?, ?)').run(
      r.pos,
      r.text,
      contextText(r.context),
      r.kind.replace(/[_.-]+/g, ' '),
      r.prev ?? '',
      namespaceToken(r.ns_id),
    );
}

/**
 * Rebuild `events_fts` from the event log, whatever its watermark says (restore runs it on a copy before the copy
 * replaces the store: a copy taken under writers can hold an index that lags or misses an event). Returns how many
 * events were indexed.
 */
export function rebuildEventText(db: DB): number {
  writeTx(db, () => {
    db.exec(`INSERT INTO events_fts(events_fts) VALUES ('delete-all')`);
    stmt(db, `UPDATE index_state SET watermark = 0 WHERE name = 'events_fts'`).run();
  });
  catchUpEventText(db);
  return (stmt(db, 'SELECT count(*) AS c FROM events').get() as { c: number }).c;
}

/**
 * Events at or below the vector watermark without a vector (a copy whose vector table missed some): when any, the
 * watermark goes back to 0 so the daemon's event embedder embeds them all again. Returns how many were missing.
 */
export function resetEventVectorsIfMissing(db: DB): number {
  return writeTx(db, () => {
    const missing = (
      stmt(db, 'SELECT count(*) AS c FROM events WHERE pos <= ? AND pos NOT IN (SELECT pos FROM event_vectors)').get(
        eventWatermark(db, 'events_vec'),
      ) as { c: number }
    ).c;
    if (missing > 0) stmt(db, `UPDATE index_state SET watermark = 0 WHERE name = 'events_vec'`).run();
    return missing;
  });
}

/** What narrows an arm's candidates: scope and filters, applied inside the arm's query. */
export interface EventArmQuery {
  scope?: Scope;
  kinds?: string[];
  sources?: string[];
  episodeId?: string;
  since?: number;
  before?: number;
  excludeSecrets?: boolean;
  limit: number;
}

/** FROM clause every event arm reads through (aliases e, ep, n). */
export const EVENT_JOINS = 'JOIN episodes ep ON ep.rowid = e.episode JOIN namespaces n ON n.id = ep.ns_id';
export const EVENT_FROM = `events e ${EVENT_JOINS}`;

/** Scope, live namespace and filters over aliases e, ep, n. */
export function eventWhere(q: Omit<EventArmQuery, 'limit'>): SqlFragment {
  const f: (SqlFragment | null)[] = [{ sql: 'n.deleted_at IS NULL', params: [] }, scopePredicate(q.scope)];
  if (q.kinds?.length) f.push({ sql: `e.kind IN (SELECT value FROM json_each(?))`, params: [JSON.stringify(q.kinds)] });
  if (q.sources?.length) f.push({ sql: `ep.source IN (SELECT value FROM json_each(?))`, params: [JSON.stringify(q.sources)] });
  if (q.episodeId !== undefined) f.push({ sql: 'ep.id = ?', params: [q.episodeId] });
  if (q.since !== undefined) f.push({ sql: 'e.at >= ?', params: [q.since] });
  if (q.before !== undefined) f.push({ sql: 'e.at < ?', params: [q.before] });
  if (q.excludeSecrets) f.push({ sql: 'e.secret = 0', params: [] });
  return and(...f);
}

const quote = (t: string) => `"${t.replace(/"/g, '""')}"`;

/**
 * A query's words as FTS5 expressions (stopwords left out unless nothing else is left): `any`, their disjunction, and
 * `all`, their conjunction when a common word was left out of `any`; null without words.
 */
export function eventMatch(query: string, common?: (word: string) => boolean): { any: string; all: string | null } | null {
  const words = [...query.toLowerCase().matchAll(/[\p{L}\p{N}_]+/gu)].map((m) => m[0]);
  const content = words.filter((w) => !STOPWORDS.has(w));
  const use = [...new Set(content.length ? content : words)];
  if (use.length === 0) return null;
  // Words in many events (the memories' common-term cut-off, search-fts.ts) add little to BM25 but most of its cost:
  // left out of the disjunction while a rarer word remains; the events holding every word still come first (`all`).
  const rare = common ? use.filter((w) => !common(w)) : use;
  const cut = rare.length > 0 && rare.length < use.length;
  return { any: (cut ? rare : use).map(quote).join(' OR '), all: cut ? use.map(quote).join(' AND ') : null };
}

const dfCaches = new WeakMap<DB, Map<string, { common: boolean; events: number }>>();

/**
 * Whether a word is in more events than the common-term cap of search-fts.ts (3% of them and over 1,000): counted
 * through the index's tokenizer (so stemming applies), stopped at the cap, and remembered until the log has grown by
 * 10%.
 */
function commonWords(db: DB): (word: string) => boolean {
  const events = Math.max(1, newestEventPosition(db));
  const cap = commonTermCap(events);
  if (events < cap) return () => false;
  let cache = dfCaches.get(db);
  if (!cache) dfCaches.set(db, (cache = new Map()));
  const dfs = cache;
  return (w) => {
    const hit = dfs.get(w);
    if (hit && hit.events * 1.1 >= events) return hit.common;
    const n = (
      stmt(db, 'SELECT count(*) AS c FROM (SELECT rowid FROM events_fts WHERE events_fts MATCH ? LIMIT ?)').get(
        `text:${quote(w)}`,
        cap,
      ) as {
        c: number;
      }
    ).c;
    if (dfs.size >= 10_000) dfs.clear();
    dfs.set(w, { common: n >= cap, events });
    return n >= cap;
  };
}

/** The full-text arm: BM25 over the events the scope and filters admit, best first. Catches the index up first. */
/** One arm's candidate: the event's position, its episode (rowid) and the arm's score (higher is better). */
export interface EventArmHit {
  pos: number;
  ep: number;
  score: number;
}

export function eventTextArm(db: DB, query: string, q: EventArmQuery): EventArmHit[] {
  catchUpEventText(db);
  const match = eventMatch(query, commonWords(db));
  if (!match) return [];
  // The scope inside MATCH too (its live namespaces' tokens, when few enough), so FTS5 only scores in-scope events;
  // the SQL predicate below still decides.
  let ns = '';
  const scopeSql = scopePredicate(q.scope, 'path');
  if (scopeSql) {
    const ids = stmt(db, `SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${scopeSql.sql} LIMIT ?`).all(
      ...scopeSql.params,
      FTS_MAX_NS_TOKENS + 1,
    ) as { id: string }[];
    if (ids.length === 0) return [];
    if (ids.length <= FTS_MAX_NS_TOKENS) ns = ` AND ns:(${ids.map((r) => quote(namespaceToken(r.id))).join(' OR ')})`;
  }
  const where = eventWhere(q);
  const w = EVENT_BM25.join(', ');
  const run = (expr: string, limit: number) =>
    stmt(
      db,
      `SELECT e.pos AS pos, e.episode AS ep, -bm25(events_fts, ${w}) AS score
         FROM events_fts JOIN events e ON e.pos = events_fts.rowid ${EVENT_JOINS}
        WHERE events_fts MATCH ? AND ${where.sql}
        ORDER BY bm25(events_fts, ${w}), e.pos DESC LIMIT ?`,
    ).all(`(${expr})${ns}`, ...where.params, limit) as EventArmHit[];
  if (!match.all) return run(match.any, q.limit);
  // A common word left out: the events holding every word first, then the rarer words' matches; scores kept
  // non-increasing down the list (each statement's BM25 is on its own scale).
  const out = run(match.all, q.limit);
  if (out.length < q.limit) {
    const seen = new Set(out.map((h) => h.pos));
    for (const h of run(match.any, q.limit + out.length)) if (!seen.has(h.pos) && out.length < q.limit) out.push(h);
  }
  for (let i = 1; i < out.length; i++) out[i].score = Math.min(out[i].score, out[i - 1].score);
  return out;
}

/** Events the scope and filters admit, newest first (a query that was only a time phrase). */
export function eventsByTime(db: DB, q: EventArmQuery): EventArmHit[] {
  const where = eventWhere(q);
  return stmt(
    db,
    `SELECT e.pos AS pos, e.episode AS ep, 0 AS score FROM ${EVENT_FROM} WHERE ${where.sql} ORDER BY e.at DESC, e.pos DESC LIMIT ?`,
  ).all(...where.params, q.limit) as EventArmHit[];
}

// ---------------------------------------------------------------------------------------------------------------------
// Vectors
// ---------------------------------------------------------------------------------------------------------------------
/** The model the stored event vectors belong to (null: none yet). */
export function eventVectorModel(db: DB): string | null {
  return (stmt(db, `SELECT model FROM index_state WHERE name = 'events_vec'`).get() as { model: string | null }).model;
}

/** Start the event vectors over for `model` (a model change): every vector is dropped and the watermark reset. */
export function resetEventVectors(db: DB, model: string): void {
  writeTx(db, () => {
    stmt(db, 'DELETE FROM event_vectors').run();
    stmt(db, `UPDATE index_state SET watermark = 0, model = ? WHERE name = 'events_vec'`).run(model);
  });
  dropEventVectorCache(db);
}

/** Events after the vector watermark, oldest first: what the event embedder embeds next. */
export function eventsToEmbed(db: DB, limit: number): { pos: number; text: string; context: string | null; kind: string }[] {
  return stmt(db, 'SELECT pos, text, context, kind FROM events WHERE pos > ? ORDER BY pos LIMIT ?').all(
    eventWatermark(db, 'events_vec'),
    limit,
  ) as { pos: number; text: string; context: string | null; kind: string }[];
}

/**
 * Store embedded events' vectors and move the watermark to `upTo`, in one transaction, unless the model changed in
 * between (then nothing is written). Events erased since they were read are skipped.
 */
export function putEventVectors(db: DB, model: string, rows: { pos: number; q: Int8Array; inv: number }[], upTo: number): boolean {
  return writeTx(db, () => {
    if (eventVectorModel(db) !== model) return false;
    const put = stmt(
      db,
      'INSERT OR REPLACE INTO event_vectors(pos, q, inv) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM events WHERE pos = ?)',
    );
    for (const r of rows) put.run(r.pos, Buffer.from(r.q.buffer, r.q.byteOffset, r.q.byteLength), r.inv, r.pos);
    stmt(db, `UPDATE index_state SET watermark = max(watermark, ?) WHERE name = 'events_vec'`).run(upTo);
    return true;
  });
}

/**
 * The vector arm: cosine similarity of the query to every embedded event the scope and filters admit (the scope picks
 * the episodes before any scoring: event-vector-cache.ts), best first. `query` is the unit-length query vector.
 */
export function eventVectorArm(db: DB, query: Float32Array, q: EventArmQuery): EventArmHit[] {
  const model = eventVectorModel(db);
  return model === null ? [] : scanEventVectors(db, model, query, q);
}
