/**
 * Retention of events (a retention rule's `events` limits, docs/episodes.md#retention): events of the episodes under
 * the rule's root that happened (`at`) longer ago than the shortest limit that applies to them — the rule's
 * `maxAgeDays`, the one for the episode's source (exact, or a prefix ending in `:`), the one for the event's kind —
 * are removed with their full-text rows and vectors. The event after a removed one in its episode is indexed again,
 * so no index row keeps a removed event's text (its `prev` column). Each episode acted on gets one row in the log of
 * removals (episode-log.ts: ids and counts per kind, never text). Episodes themselves stay, even when emptied.
 */
import { dropEventVectorCache } from './event-vector-cache';
import type { RetentionReport, RetentionRule } from '../protocol/types';
import { stmt, type DB } from './db';
import { logRemoval } from './episode-log';
import { recordRemovedEvents } from './removed-events';
import { eventWatermark, reindexEventText } from './events-search';
import { scopePredicate, type SqlFragment } from './scope';
import type { Store } from './store';

const DAY = 86_400_000;
const NEVER = 1e9; // days: no limit applies

/** The rule's limit in days for an event (aliases e, ep), as SQL; NEVER when none applies. */
function limitDays(ev: NonNullable<RetentionRule['events']>): SqlFragment {
  const parts: SqlFragment[] = [];
  if (ev.maxAgeDays !== undefined) parts.push({ sql: '?', params: [ev.maxAgeDays] });
  // Shortest first, so the first entry that matches is the shortest of those that match.
  const sources = Object.entries(ev.bySource ?? {}).sort((a, b) => a[1] - b[1]);
  if (sources.length)
    parts.push({
      sql: `CASE ${sources.map(([s]) => (s.endsWith(':') ? 'WHEN substr(ep.source, 1, ?) = ? THEN ?' : 'WHEN ep.source = ? THEN ?')).join(' ')} ELSE ${NEVER} END`,
      params: sources.flatMap(([s, d]) => (s.endsWith(':') ? [s.length, s, d] : [s, d])),
    });
  const kinds = Object.entries(ev.byKind ?? {});
  if (kinds.length)
    parts.push({
      sql: `CASE e.kind ${kinds.map(() => 'WHEN ? THEN ?').join(' ')} ELSE ${NEVER} END`,
      params: kinds.flat(),
    });
  if (parts.length === 0) return { sql: String(NEVER), params: [] };
  if (parts.length === 1) return parts[0];
  return { sql: `min(${parts.map((p) => p.sql).join(', ')})`, params: parts.flatMap((p) => p.params) };
}

/** A short account of the limits, for the removal log's reason. */
function describe(root: string, ev: NonNullable<RetentionRule['events']>): string {
  const parts = [
    ...(ev.maxAgeDays !== undefined ? [`events ${ev.maxAgeDays} days`] : []),
    ...Object.entries(ev.bySource ?? {}).map(([s, d]) => `source ${s} ${d} days`),
    ...Object.entries(ev.byKind ?? {}).map(([k, d]) => `${k} ${d} days`),
  ];
  return `retention: ${root} keeps ${parts.join(', ')}`;
}

/**
 * Remove at most `batch` events past the rule's limits, in one transaction; adds to the report. Returns how many
 * events were removed. `compact`: merge the events' full-text segments afterwards (the paced sweep merges once per rule).
 */
export function enforceEventRetention(store: Store, rule: RetentionRule, batch: number, report: RetentionReport, compact: boolean): number {
  const ev = rule.events;
  if (!ev) return 0;
  const db = store.db;
  const now = store.now();
  const sub = scopePredicate({ root: rule.root, includeUser: false }, 'n.path')!;
  const days = limitDays(ev);
  return store.transaction(() => {
    const rows = stmt(
      db,
      `SELECT e.pos, e.episode, e.seq, e.kind, ep.id AS episode_id, n.path AS ns_path
         FROM events e JOIN episodes ep ON ep.rowid = e.episode JOIN namespaces n ON n.id = ep.ns_id
        WHERE ${sub.sql} AND e.at < ? - (${days.sql}) * ${DAY} ORDER BY e.pos LIMIT ?`,
    ).all(...sub.params, now, ...days.params, batch) as {
      pos: number;
      episode: number;
      seq: number;
      kind: string;
      episode_id: string;
      ns_path: string;
    }[];
    if (rows.length === 0) return 0;
    removeEvents(db, rows);
    const byEpisode = new Map<number, { id: string; ns: string; byKind: Record<string, number>; count: number }>();
    for (const r of rows) {
      const e = byEpisode.get(r.episode) ?? { id: r.episode_id, ns: r.ns_path, byKind: {}, count: 0 };
      e.byKind[r.kind] = (e.byKind[r.kind] ?? 0) + 1;
      e.count++;
      byEpisode.set(r.episode, e);
    }
    const reason = describe(rule.root, ev);
    for (const e of byEpisode.values()) {
      logRemoval(db, {
        op: 'retention',
        episodeId: e.id,
        namespace: e.ns,
        events: e.count,
        actor: 'retention',
        reason,
        at: now,
        detail: { root: rule.root, byKind: e.byKind },
      });
      const actions = (report.eventActions ??= []);
      if (actions.length < 200) actions.push({ root: rule.root, episodeId: e.id, count: e.count });
    }
    report.removedEvents = (report.removedEvents ?? 0) + rows.length;
    if (compact) compactEventText(db);
    return rows.length;
  });
}

/**
 * Remove events (inside the caller's transaction): their full-text rows, vectors and rows; then the first event after
 * each in its episode that stays is indexed again, since its full-text row holds the removed one's text as `prev`.
 */
function removeEvents(db: DB, rows: { pos: number; episode: number; seq: number }[]): void {
  const wm = eventWatermark(db, 'events_fts');
  const delFts = stmt(db, 'DELETE FROM events_fts WHERE rowid = ?');
  const delVec = stmt(db, 'DELETE FROM event_vectors WHERE pos = ?');
  const del = stmt(db, 'DELETE FROM events WHERE pos = ?');
  recordRemovedEvents(db, rows); // a retried append of one of them answers it as removed (removed-events.ts)
  for (const r of rows) {
    if (r.pos <= wm) delFts.run(r.pos);
    delVec.run(r.pos);
    del.run(r.pos);
  }
  if (rows.length > 0) dropEventVectorCache(db); // removed events leave the in-memory copy of the vectors too
  const next = stmt(db, 'SELECT pos FROM events WHERE episode = ? AND seq > ? ORDER BY seq LIMIT 1');
  const again = new Set<number>();
  for (const r of rows) {
    const n = next.get(r.episode, r.seq) as { pos: number } | undefined;
    if (n && n.pos <= wm) again.add(n.pos);
  }
  for (const pos of again) reindexEventText(db, pos);
}

/** Merge the events' full-text segments, so no older segment keeps a removed event's terms. */
export function compactEventText(db: DB): void {
  db.exec(`INSERT INTO events_fts(events_fts) VALUES ('optimize')`);
}
