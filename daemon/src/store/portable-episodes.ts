/**
 * Episodes and events in export and import (docs/episodes.md#export): an `episode` record followed by its `event`
 * records in seq order, after the memories' records. Import writes an episode whose id is not stored (into the live
 * namespace of its path, as memories do) and an event whose (episode, seq) is not stored, so importing the same
 * records again adds nothing; stored ones are never changed. Imported events get new positions in this store's order
 * and are indexed like appended ones; text that looks like a credential is marked secret as on append.
 */
import { removedEventAt } from './removed-events';
import type * as T from '../protocol/types';
import { detectCredentials } from '../text/secrets';
import { stmt, type DB } from './db';
import { fromIso, iso, isoReq } from './rows';
import type { SqlFragment } from './scope';

type EpisodeRecord = Extract<T.ExportRecord, { type: 'episode' }>;
type EventRecord = Extract<T.ExportRecord, { type: 'event' }>;

/** Where an export is in the episodes phase: the last episode finished, and the one whose events are being read. */
export interface EpisodeCursor {
  after: number;
  current: { rowid: number; id: string } | null;
  seq: number;
}

export const newEpisodeCursor = (): EpisodeCursor => ({ after: 0, current: null, seq: -1 });

/**
 * Push up to `room` records of the episodes phase (scope over alias n); returns true when the phase is finished.
 * An episode's events may span pages: the cursor keeps its place.
 */
export function episodeRecords(
  db: DB,
  scope: SqlFragment | null,
  c: EpisodeCursor,
  room: number,
  push: (r: T.ExportRecord) => void,
  full: () => boolean,
): boolean {
  let left = room;
  while (left > 0 && !full()) {
    if (!c.current) {
      const ep = stmt(
        db,
        `SELECT ep.rowid, ep.id, ep.ns_id, n.path, ep.title, ep.task_id, ep.source, ep.branch, ep.git_commit, ep.started_at,
                ep.ended_at, ep.created_at, ep.actor
           FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ${scope ? scope.sql : '1'} AND ep.rowid > ? ORDER BY ep.rowid LIMIT 1`,
      ).get(...(scope ? scope.params : []), c.after) as
        | {
            rowid: number;
            id: string;
            ns_id: string;
            path: string;
            title: string;
            task_id: string | null;
            source: string;
            branch: string | null;
            git_commit: string | null;
            started_at: number;
            ended_at: number | null;
            created_at: number;
            actor: string;
          }
        | undefined;
      if (!ep) return true;
      push({
        type: 'episode',
        episode: {
          id: ep.id,
          namespace: ep.path,
          title: ep.title,
          taskId: ep.task_id,
          source: ep.source,
          branch: ep.branch,
          commit: ep.git_commit,
          startedAt: isoReq(ep.started_at),
          endedAt: iso(ep.ended_at),
        },
        namespaceId: ep.ns_id,
        createdAt: isoReq(ep.created_at),
        actor: ep.actor,
      });
      left--;
      c.current = { rowid: ep.rowid, id: ep.id };
      c.seq = -1;
      continue;
    }
    const want = left;
    const rows = stmt(
      db,
      'SELECT seq, kind, text, at, actor, context, secret, ingested_at FROM events WHERE episode = ? AND seq > ? ORDER BY seq LIMIT ?',
    ).all(c.current.rowid, c.seq, want) as {
      seq: number;
      kind: string;
      text: string;
      at: number;
      actor: string;
      context: string | null;
      secret: number;
      ingested_at: number;
    }[];
    for (const e of rows) {
      push({
        type: 'event',
        episodeId: c.current.id,
        seq: e.seq,
        kind: e.kind,
        text: e.text,
        at: isoReq(e.at),
        actor: e.actor,
        context: e.context ? (JSON.parse(e.context) as T.EventContext) : null,
        secret: e.secret === 1,
        ingestedAt: isoReq(e.ingested_at),
      });
      c.seq = e.seq;
      left--;
    }
    if (rows.length < want) {
      c.after = c.current.rowid;
      c.current = null;
    }
  }
  return false;
}

/** Counts of an import's episode records, added to ImportResult. */
export interface EpisodeCounts {
  episodes: number;
  events: number;
  skipped: number;
}

/**
 * Write one episode record (inside the caller's transaction) unless its id is stored: into the namespace `nsId`
 * (the import's own mapping of namespace records). An id stored in another namespace is skipped.
 */
export function importEpisode(db: DB, rec: EpisodeRecord, nsId: string, counts: EpisodeCounts): void {
  const e = rec.episode;
  const had = stmt(db, 'SELECT n.path FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ep.id = ?').get(e.id) as
    { path: string } | undefined;
  if (had) {
    if (had.path !== e.namespace) counts.skipped++;
    return;
  }
  stmt(
    db,
    `INSERT INTO episodes(id, ns_id, title, task_id, source, branch, git_commit, started_at, ended_at, created_at, actor)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    e.id,
    nsId,
    e.title,
    e.taskId,
    e.source,
    e.branch,
    e.commit,
    fromIso(e.startedAt),
    fromIso(e.endedAt),
    fromIso(rec.createdAt),
    rec.actor,
  );
  counts.episodes++;
}

/**
 * Write one event record unless its (episode, seq) is stored; an event whose episode is not stored is skipped, and
 * so is one of an episode outside `inScope` (a scoped import). Returns the new position, or 0.
 */
export function importEvent(db: DB, rec: EventRecord, counts: EpisodeCounts, inScope: (path: string) => boolean, now: number): number {
  const ep = stmt(db, 'SELECT ep.rowid, n.path FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ep.id = ?').get(
    rec.episodeId,
  ) as { rowid: number; path: string } | undefined;
  if (!ep || !inScope(ep.path)) {
    counts.skipped++;
    return 0;
  }
  if (stmt(db, 'SELECT 1 FROM events WHERE episode = ? AND seq = ?').get(ep.rowid, rec.seq)) return 0;
  if (removedEventAt(db, ep.rowid, rec.seq) !== undefined) return 0; // removed by retention: it stays removed
  const secret = rec.secret || detectCredentials(rec.text).length > 0;
  const context = rec.context && Object.keys(rec.context).length ? JSON.stringify(rec.context) : null;
  const pos = Number(
    stmt(
      db,
      'INSERT INTO events(episode, seq, kind, text, at, actor, context, secret, ingested_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(ep.rowid, rec.seq, rec.kind, rec.text, fromIso(rec.at), rec.actor, context, secret ? 1 : 0, fromIso(rec.ingestedAt) ?? now)
      .lastInsertRowid,
  );
  counts.events++;
  return pos;
}

/** store/importPreview's account of episode and event records: what importEpisode and importEvent would do. */
export function previewEpisodes(
  db: DB,
  records: T.ExportRecord[],
): { episodes: { new: number; existing: number; refused: number }; events: { new: number; existing: number; refused: number } } {
  const episodes = { new: 0, existing: 0, refused: 0 };
  const events = { new: 0, existing: 0, refused: 0 };
  const inFile = new Set<string>();
  const seen = new Set<string>();
  const stored = stmt(db, 'SELECT ep.rowid, n.path FROM episodes ep JOIN namespaces n ON n.id = ep.ns_id WHERE ep.id = ?');
  for (const r of records) {
    if (r.type !== 'episode') continue;
    const had = stored.get(r.episode.id) as { rowid: number; path: string } | undefined;
    if (!had) {
      episodes.new++;
      inFile.add(r.episode.id);
    } else if (had.path === r.episode.namespace) episodes.existing++;
    else episodes.refused++;
  }
  const hasEvent = stmt(db, 'SELECT 1 FROM events WHERE episode = ? AND seq = ?');
  for (const r of records) {
    if (r.type !== 'event') continue;
    const key = `${r.episodeId}\u0000${r.seq}`;
    if (inFile.has(r.episodeId)) {
      if (seen.has(key)) events.existing++;
      else events.new++;
      seen.add(key);
      continue;
    }
    const had = stored.get(r.episodeId) as { rowid: number } | undefined;
    if (!had) events.refused++;
    else if (hasEvent.get(had.rowid, r.seq) || removedEventAt(db, had.rowid, r.seq) !== undefined) events.existing++;
    else if (seen.has(key)) events.existing++;
    else {
      events.new++;
      seen.add(key);
    }
  }
  return { episodes, events };
}
