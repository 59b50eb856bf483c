/**
 * Memory counts kept by the store itself (store/status, and the dashboard's overview: store/overview.ts). Counting by
 * scanning every memory row and joining it with its namespace cost 1.1–1.8 s at 100k memories, on the daemon's event
 * loop. Triggers on `memories` keep one row per (namespace, status, kind, deleted) with its count instead, in the same
 * transaction as the write, so every writer (this build, an older one, an import, an erase, retention) keeps them
 * exact; status and the overview add up a few rows per namespace. A namespace's own deletion needs no trigger: both
 * join these rows with the namespaces, which are few. (Before the overview read them the rows had no kind: a store
 * counted that way is counted again at open.)
 */
import type { DB } from './db';
import { stmt } from './db';

const TRIGGERS = ['memory_counts_insert', 'memory_counts_delete', 'memory_counts_update'];

/** Whether the kept counts are there with their kind (a store counted by an older build has none). */
function keptWithKind(db: DB): boolean {
  return !!stmt(db, `SELECT 1 FROM pragma_table_info('memory_counts') WHERE name = 'kind'`).get();
}

/**
 * Create the counts table and its triggers when missing (or counted without kind: then made again), and (re)count
 * from the rows when any of them was missing.
 */
export function ensureMemoryCounts(db: DB): void {
  const present = db
    .prepare(`SELECT count(*) AS c FROM sqlite_master WHERE name IN ('memory_counts', ${TRIGGERS.map(() => '?').join(', ')})`)
    .get(...TRIGGERS) as { c: number };
  const withKind = keptWithKind(db);
  if (present.c === TRIGGERS.length + 1 && withKind) return;
  if (!withKind) db.exec(`${TRIGGERS.map((t) => `DROP TRIGGER IF EXISTS ${t};`).join(' ')} DROP TABLE IF EXISTS memory_counts;`);
  const row = (r: 'old' | 'new') => `${r}.ns_id, ${r}.status, ${r}.kind, ${r}.deleted_at IS NOT NULL`;
  const same = (r: 'old' | 'new') =>
    `ns_id = ${r}.ns_id AND status = ${r}.status AND kind = ${r}.kind AND deleted = (${r}.deleted_at IS NOT NULL)`;
  db.exec(`
    CREATE TABLE IF NOT EXISTS memory_counts (
      ns_id TEXT NOT NULL,
      status TEXT NOT NULL,
      kind TEXT NOT NULL,
      deleted INTEGER NOT NULL,
      n INTEGER NOT NULL,
      PRIMARY KEY (ns_id, status, kind, deleted)
    ) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS memory_counts_insert AFTER INSERT ON memories BEGIN
      INSERT INTO memory_counts(ns_id, status, kind, deleted, n) VALUES (${row('new')}, 1)
        ON CONFLICT(ns_id, status, kind, deleted) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER IF NOT EXISTS memory_counts_delete AFTER DELETE ON memories BEGIN
      UPDATE memory_counts SET n = n - 1 WHERE ${same('old')};
    END;
    CREATE TRIGGER IF NOT EXISTS memory_counts_update AFTER UPDATE OF ns_id, status, kind, deleted_at ON memories
      WHEN old.ns_id IS NOT new.ns_id OR old.status IS NOT new.status OR old.kind IS NOT new.kind
        OR (old.deleted_at IS NULL) <> (new.deleted_at IS NULL)
    BEGIN
      UPDATE memory_counts SET n = n - 1 WHERE ${same('old')};
      INSERT INTO memory_counts(ns_id, status, kind, deleted, n) VALUES (${row('new')}, 1)
        ON CONFLICT(ns_id, status, kind, deleted) DO UPDATE SET n = n + 1;
    END;
    DELETE FROM memory_counts;
    INSERT INTO memory_counts(ns_id, status, kind, deleted, n)
      SELECT ns_id, status, kind, deleted_at IS NOT NULL, count(*) FROM memories GROUP BY 1, 2, 3, 4;
  `);
}

/**
 * The counts as rows c(ns_id, status, kind, deleted, n), for a FROM clause: the kept table, or counted from the
 * memory rows where it is not there yet (a read-only open of a store no writer of this build has opened). Without
 * `byKind` an older build's table (no kind) serves too.
 */
export function countRows(db: DB, byKind = true): string {
  const kept = byKind ? keptWithKind(db) : !!stmt(db, `SELECT 1 FROM sqlite_master WHERE name = 'memory_counts'`).get();
  return kept
    ? 'memory_counts'
    : '(SELECT ns_id, status, kind, deleted_at IS NOT NULL AS deleted, count(*) AS n FROM memories GROUP BY 1, 2, 3, 4)';
}

export interface MemoryCounts {
  memories: number;
  active: number;
  proposed: number;
  superseded: number;
  deleted: number;
}

/** The counts by status; a memory in a deleted namespace counts as deleted. */
export function memoryCounts(db: DB): MemoryCounts {
  const from = `FROM ${countRows(db, false)} c JOIN namespaces n ON n.id = c.ns_id`;
  const live = `NOT c.deleted AND n.deleted_at IS NULL`;
  return stmt(
    db,
    `SELECT coalesce(sum(c.n), 0) AS memories,
         coalesce(sum(CASE WHEN ${live} AND c.status = 'active' THEN c.n END), 0) AS active,
         coalesce(sum(CASE WHEN ${live} AND c.status = 'proposed' THEN c.n END), 0) AS proposed,
         coalesce(sum(CASE WHEN ${live} AND c.status = 'superseded' THEN c.n END), 0) AS superseded,
         coalesce(sum(CASE WHEN ${live} THEN 0 ELSE c.n END), 0) AS deleted
       ${from}`,
  ).get() as MemoryCounts;
}
