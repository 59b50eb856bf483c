/**
 * The dashboard's overview: live memories counted by namespace, kind and status, and writes per UTC day by
 * the memory's source, all inside a scope (the scope predicate is part of every query, as everywhere).
 */
import { stmt } from './db';
import type { OverviewParams, OverviewResult } from '../protocol/types';
import { scopePredicate } from './scope';
import type { Store } from './store';

const DAY_MS = 86_400_000;

export function overview(store: Store, p: OverviewParams): OverviewResult {
  const db = store.db;
  const days = p?.days ?? 30;
  const scope = scopePredicate(p?.scope, 'n.path');
  const where = scope ? `AND ${scope.sql}` : '';
  const params = scope ? scope.params : [];
  const live = `FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL ${where}`;
  const counted = (col: string) =>
    stmt(db, `SELECT ${col} AS name, count(*) AS count ${live} GROUP BY ${col} ORDER BY count DESC, name`).all(...params) as {
      name: string;
      count: number;
    }[];
  const byStatus = counted('m.status');
  const deleted = stmt(
    db,
    `SELECT count(*) AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE (m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL) ${where}`,
  ).get(...params) as { c: number };
  if (deleted.c > 0) byStatus.push({ name: 'deleted', count: deleted.c });
  const since = Math.floor(store.now() / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  const writesPerDay = stmt(
    db,
    `SELECT strftime('%Y-%m-%d', h.at / 1000, 'unixepoch') AS day, m.source AS source, count(*) AS count
       FROM history h JOIN memories m ON m.id = h.memory_id JOIN namespaces n ON n.id = m.ns_id
      WHERE h.op IN ('create', 'update', 'restore') AND h.at >= ? ${where}
      GROUP BY day, m.source ORDER BY day, m.source`,
  ).all(since, ...params) as { day: string; source: string; count: number }[];
  return { byNamespace: counted('n.path'), byKind: counted('m.kind'), byStatus, writesPerDay, days };
}
