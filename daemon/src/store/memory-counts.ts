/**
 * Memory counts kept by the store itself (store/status). Counting by scanning every memory row and joining it with its
 * namespace cost 1.1–1.8 s at 100k memories, on the daemon's event loop. Triggers on `memories` keep one row per
 * (namespace, status, deleted) with its count instead, in the same transaction as the write, so every writer (this
 * build, an older one, an import, an erase, retention) keeps them exact; status adds up a few rows per namespace.
 * A namespace's own deletion needs no trigger: status joins these rows with the namespaces, which are few.
 */
import type { DB } from './db';
import { stmt } from './db';

const TRIGGERS = ['memory_counts_insert', 'memory_counts_delete', 'memory_counts_update'];

/** Create the counts table and its triggers when missing, and (re)count from the rows when either was missing. */
export function ensureMemoryCounts(db: DB): void {
  const present = db
    .prepare(`SELECT count(*) AS c FROM sqlite_master WHERE name IN ('memory_counts', ${TRIGGERS.map(() => '?').join(', ')})`)
    .get(...TRIGGERS) as { c: number };
  if (present.c === TRIGGERS.length + 1) return;
  db.exec(`
    CREATE TABLE IF NOT EXISTS memory_counts (
      ns_id TEXT NOT NULL,
      status TEXT NOT NULL,
      deleted INTEGER NOT NULL,
      n INTEGER NOT NULL,
      PRIMARY KEY (ns_id, status, deleted)
    ) WITHOUT ROWID;
    CREATE TRIGGER IF NOT EXISTS memory_counts_insert AFTER INSERT ON memories BEGIN
      INSERT INTO memory_counts(ns_id, status, deleted, n) VALUES (new.ns_id, new.status, new.deleted_at IS NOT NULL, 1)
        ON CONFLICT(ns_id, status, deleted) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER IF NOT EXISTS memory_counts_delete AFTER DELETE ON memories BEGIN
      UPDATE memory_counts SET n = n - 1 WHERE ns_id = old.ns_id AND status = old.status AND deleted = (old.deleted_at IS NOT NULL);
    END;
    CREATE TRIGGER IF NOT EXISTS memory_counts_update AFTER UPDATE OF ns_id, status, deleted_at ON memories
      WHEN old.ns_id IS NOT new.ns_id OR old.status IS NOT new.status OR (old.deleted_at IS NULL) <> (new.deleted_at IS NULL)
    BEGIN
      UPDATE memory_counts SET n = n - 1 WHERE ns_id = old.ns_id AND status = old.status AND deleted = (old.deleted_at IS NOT NULL);
      INSERT INTO memory_counts(ns_id, status, deleted, n) VALUES (new.ns_id, new.status, new.deleted_at IS NOT NULL, 1)
        ON CONFLICT(ns_id, status, deleted) DO UPDATE SET n = n + 1;
    END;
    DELETE FROM memory_counts;
    INSERT INTO memory_counts(ns_id, status, deleted, n)
      SELECT ns_id, status, deleted_at IS NOT NULL, count(*) FROM memories GROUP BY 1, 2, 3;
  `);
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
  // A read-only open of a store no writer of this build has opened yet has no counts table: count the rows then.
  const kept = !!stmt(db, `SELECT 1 FROM sqlite_master WHERE name = 'memory_counts'`).get();
  const from = kept
    ? `FROM memory_counts c JOIN namespaces n ON n.id = c.ns_id`
    : `FROM (SELECT ns_id, status, deleted_at IS NOT NULL AS deleted, count(*) AS n FROM memories GROUP BY 1, 2, 3) c
         JOIN namespaces n ON n.id = c.ns_id`;
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
