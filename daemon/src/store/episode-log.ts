/**
 * The log of removals from the event log (schema 9, `episode_removals`): each erased episode and, per episode, the
 * events a retention sweep removed. It holds ids, counts, who, when and why, never an event's text, so it outlives
 * what it describes without keeping any of it (docs/episodes.md#erasure-retention-export-and-backup).
 */
import type * as T from '../protocol/types';
import { stmt, type DB } from './db';
import { and, isoReq } from './rows';
import { scopePredicate } from './scope';

export interface Removal {
  op: T.EpisodeRemoval['op'];
  episodeId: string;
  namespace: string;
  events: number;
  actor: string;
  reason: string | null;
  at: number;
  detail: Record<string, unknown> | null;
}

/** Record one removal (inside the caller's transaction). */
export function logRemoval(db: DB, r: Removal): void {
  stmt(
    db,
    'INSERT INTO episode_removals(op, episode_id, namespace, events, actor, reason, at, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(r.op, r.episodeId, r.namespace, r.events, r.actor, r.reason, r.at, r.detail ? JSON.stringify(r.detail) : null);
}

/** episodes/removals: newest first, inside the scope (by the namespace the episode was in). */
export function removals(db: DB, p: T.EpisodeRemovalsParams): T.EpisodeRemovalsResult {
  const where = and(
    { sql: '1', params: [] },
    scopePredicate(p.scope, 'r.namespace'),
    p.episodeId !== undefined ? { sql: 'r.episode_id = ?', params: [p.episodeId] } : null,
  );
  const rows = stmt(db, `SELECT * FROM episode_removals r WHERE ${where.sql} ORDER BY r.seq DESC LIMIT ?`).all(
    ...where.params,
    p.limit ?? 100,
  ) as {
    seq: number;
    op: T.EpisodeRemoval['op'];
    episode_id: string;
    namespace: string;
    events: number;
    actor: string;
    reason: string | null;
    at: number;
    detail: string | null;
  }[];
  return {
    entries: rows.map((r) => ({
      seq: r.seq,
      op: r.op,
      episodeId: r.episode_id,
      namespace: r.namespace,
      events: r.events,
      actor: r.actor,
      reason: r.reason,
      at: isoReq(r.at),
      detail: r.detail ? (JSON.parse(r.detail) as Record<string, unknown>) : null,
    })),
  };
}
