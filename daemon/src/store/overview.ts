/**
 * The dashboard's overview: live memories counted by namespace, kind and status, and writes per UTC day by
 * the memory's source, all inside a scope (the scope predicate is part of every query, as everywhere). No call reads
 * every memory: the counts add up the rows the store keeps per (namespace, status, kind, deleted) (memory-counts.ts),
 * and the writes are found from the days asked for through history_writes_at (schema.ts), then their memories by id.
 */
import { stmt } from './db';
import type { OverviewParams, OverviewResult } from '../protocol/types';
import { countRows } from './memory-counts';
import { scopePredicate } from './scope';
import type { Store } from './store';

const DAY_MS = 86_400_000;

export function overview(store: Store, p: OverviewParams): OverviewResult {
  const db = store.db;
  const days = p?.days ?? 30;
  const scope = scopePredicate(p?.scope, 'n.path');
  const where = scope ? `AND ${scope.sql}` : '';
  const params = scope ? scope.params : [];
  const counts = `FROM ${countRows(db)} c JOIN namespaces n ON n.id = c.ns_id`;
  // A count row may be 0 (its memories changed or went): a group is listed when it has a memory, as a count(*) would.
  const counted = (col: string) =>
    stmt(
      db,
      `SELECT ${col} AS name, sum(c.n) AS count ${counts} WHERE NOT c.deleted AND n.deleted_at IS NULL ${where}
        GROUP BY ${col} HAVING sum(c.n) > 0 ORDER BY count DESC, name`,
    ).all(...params) as { name: string; count: number }[];
  const byStatus = counted('c.status');
  const deleted = stmt(db, `SELECT coalesce(sum(c.n), 0) AS c ${counts} WHERE (c.deleted OR n.deleted_at IS NOT NULL) ${where}`).get(
    ...params,
  ) as { c: number };
  if (deleted.c > 0) byStatus.push({ name: 'deleted', count: deleted.c });
  const since = Math.floor(store.now() / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  const writesPerDay = stmt(
    db,
    `SELECT strftime('%Y-%m-%d', h.at / 1000, 'unixepoch') AS day, m.source AS source, count(*) AS count
       FROM history h JOIN memories m ON m.id = h.memory_id JOIN namespaces n ON n.id = m.ns_id
      WHERE h.op IN ('create', 'update', 'restore') AND h.at >= ? ${where}
      GROUP BY day, m.source ORDER BY day, m.source`,
  ).all(since, ...params) as { day: string; source: string; count: number }[];
  return { byNamespace: counted('n.path'), byKind: counted('c.kind'), byStatus, writesPerDay, days };
}
