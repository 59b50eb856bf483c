/**
 * The events retention removed, by (episode, seq) and position: ids only, never text (like the log of removals,
 * episode-log.ts). Appends are idempotent per (episode, seq), and a client retrying an append it never saw answered
 * must not bring back an event retention has since removed: `events/append` and import answer such a seq as removed
 * and store nothing, and the next seq an append picks is past every removed one. An erased episode leaves no rows
 * here (a trigger on its deletion), so a later episode given the same rowid starts clean.
 */
import { stmt, type DB } from './db';

/** Create the table and its trigger when missing (re-asserted at every open, schema.ts). */
export function ensureRemovedEvents(db: DB): void {
  db.exec(`
    CREATE TABLE IF NOT EXISTS removed_events (
      episode INTEGER NOT NULL,
      seq INTEGER NOT NULL,
      pos INTEGER NOT NULL,
      PRIMARY KEY (episode, seq)
    ) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS removed_events_episode_gone AFTER DELETE ON episodes BEGIN
      DELETE FROM removed_events WHERE episode = old.rowid;
    END;
  `);
}

/** Record removed events (inside the remover's transaction). */
export function recordRemovedEvents(db: DB, rows: { pos: number; episode: number; seq: number }[]): void {
  const put = stmt(db, 'INSERT OR IGNORE INTO removed_events(episode, seq, pos) VALUES (?, ?, ?)');
  for (const r of rows) put.run(r.episode, r.seq, r.pos);
}

/** The position the event at (episode, seq) had before retention removed it; undefined when none was removed there. */
export function removedEventAt(db: DB, episode: number, seq: number): number | undefined {
  return (stmt(db, 'SELECT pos FROM removed_events WHERE episode = ? AND seq = ?').get(episode, seq) as { pos: number } | undefined)?.pos;
}

/** The highest removed seq of an episode, or -1. */
export function lastRemovedSeq(db: DB, episode: number): number {
  return (stmt(db, 'SELECT max(seq) AS s FROM removed_events WHERE episode = ?').get(episode) as { s: number | null }).s ?? -1;
}
