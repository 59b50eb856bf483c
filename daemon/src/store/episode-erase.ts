/**
 * Removing episodes for good (episodes/erase, and memory/erase of a namespace subtree holding episodes): each
 * episode's events, their full-text rows (FTS5's own delete, then one merge so no older segment keeps their terms) and
 * vectors, then the episode, inside the caller's transaction. Returns what an erasure receipt states: the episodes,
 * the counts, and the rows its content hash is computed over (receipt.ts eventContentHash).
 */
import { dropEventVectorCache } from './event-vector-cache';
import { stmt, type DB } from './db';
import { eventWatermark } from './events-search';
import { isoReq } from './rows';
import type { SqlFragment } from './scope';

export interface ErasedEpisodes {
  episodes: { id: string; namespace: string; events: number }[];
  events: number;
  vectors: number;
  /** [episode id, seq, kind, at (ISO), text] per event, episodes in rowid order, events in seq order. */
  content: unknown[][];
}

/** Erase every episode `where` admits (a predicate over aliases ep, n). */
export function eraseEpisodeRows(db: DB, where: SqlFragment): ErasedEpisodes {
  const out: ErasedEpisodes = { episodes: [], events: 0, vectors: 0, content: [] };
  const eps = stmt(
    db,
    `SELECT ep.rowid, ep.id, n.path FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ${where.sql} ORDER BY ep.rowid`,
  ).all(...where.params) as { rowid: number; id: string; path: string }[];
  if (eps.length === 0) return out;
  const wm = eventWatermark(db, 'events_fts');
  const delFts = stmt(db, 'DELETE FROM events_fts WHERE rowid = ?');
  for (const ep of eps) {
    const rows = stmt(db, 'SELECT pos, seq, kind, at, text FROM events WHERE episode = ? ORDER BY seq').all(ep.rowid) as {
      pos: number;
      seq: number;
      kind: string;
      at: number;
      text: string;
    }[];
    for (const e of rows) {
      out.content.push([ep.id, e.seq, e.kind, isoReq(e.at), e.text]);
      if (e.pos <= wm) delFts.run(e.pos);
    }
    out.vectors += stmt(db, 'DELETE FROM event_vectors WHERE pos IN (SELECT pos FROM events WHERE episode = ?)').run(ep.rowid).changes;
    const events = stmt(db, 'DELETE FROM events WHERE episode = ?').run(ep.rowid).changes;
    stmt(db, 'DELETE FROM episodes WHERE rowid = ?').run(ep.rowid);
    out.events += events;
    out.episodes.push({ id: ep.id, namespace: ep.path, events });
  }
  if (out.events > 0) db.exec(`INSERT INTO events_fts(events_fts) VALUES ('optimize')`);
  if (out.episodes.length > 0) dropEventVectorCache(db); // no erased event's vector stays in memory
  return out;
}
