/**
 * Reading memories: one by id or key (scope checked on the row, deleted and expired ones NotFound), a page of a
 * list, rows for the search arms, and the store's counts. A read by id or key counts as an access (touch).
 */
import { excluded } from './search-fts';
import { CairnError } from '../protocol/errors';
import type { GetParams, ListParams, ListResult, Memory, Scope } from '../protocol/types';
import { stmt, writeTx, type DB } from './db';
import { compileFilter } from './filter';
import { memoryCounts } from './memory-counts';
import { checkNamespace } from './namespaces';
import { and, iso, MEMORY_COLUMNS, toMemory, visibility, type MemoryRow } from './rows';
import { scopePredicate, type SqlFragment } from './scope';
import type { Store } from './store';

/** Which memory a write or a history read names: by id, or by namespace and key. */
export interface Target {
  id?: string;
  namespace?: string;
  key?: string;
  actor?: string;
  reason?: string;
  /** When given, the memory must lie in this scope (by id or by key), else NotFound. */
  scope?: Scope;
}

export function rowBy(db: DB, where: string, ...params: unknown[]): MemoryRow | undefined {
  return stmt(db, `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where}`).get(...params) as
    MemoryRow | undefined;
}

export function rowByKey(db: DB, namespace: string, key: string): MemoryRow | undefined {
  return rowBy(db, 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', namespace, key);
}

/** The memory `t` names, in its scope (deleted ones included: the caller decides); NotFound otherwise. */
export function resolveTarget(db: DB, t: Target): MemoryRow {
  let row: MemoryRow | undefined;
  if (t.id !== undefined) {
    if (t.namespace !== undefined || t.key !== undefined)
      throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
    const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [t.id] }, scopePredicate(t.scope));
    row = rowBy(db, where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no memory ${t.id}${t.scope ? ' in scope' : ''}`, { field: 'id' });
  } else {
    if (t.namespace === undefined || t.key === undefined)
      throw new CairnError('InvalidParams', 'id or namespace+key is required', {
        field: t.namespace === undefined ? 'namespace' : 'key',
      });
    checkNamespace(t.namespace);
    const where = and({ sql: 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', params: [t.namespace, t.key] }, scopePredicate(t.scope));
    row = rowBy(db, where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no memory ${t.namespace}/${t.key}${t.scope ? ' in scope' : ''}`, { field: 'key' });
  }
  return row;
}

export function isExpired(r: MemoryRow, now: number): boolean {
  return r.expires_at !== null && r.expires_at <= now;
}

export function getMemory(store: Store, p: GetParams): Memory {
  const now = store.now();
  let row: MemoryRow | undefined;
  if ('id' in p) {
    const scope = scopePredicate(p.scope);
    const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [p.id] }, scope);
    row = rowBy(store.db, where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no memory ${p.id}${p.scope ? ' in scope' : ''}`, { field: 'id' });
  } else {
    checkNamespace(p.namespace);
    const where = and({ sql: 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', params: [p.namespace, p.key] }, scopePredicate(p.scope));
    row = rowBy(store.db, where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}${p.scope ? ' in scope' : ''}`, { field: 'key' });
  }
  if (!p.includeDeleted) {
    if (row.deleted_at !== null) {
      throw new CairnError('NotFound', `memory ${row.ns_path}/${row.key} was deleted at ${iso(row.deleted_at)} by ${row.deleted_by}`, {
        field: 'id' in p ? 'id' : 'key',
        deletedAt: iso(row.deleted_at),
        deletedBy: row.deleted_by,
      });
    }
    if (isExpired(row, now))
      throw new CairnError('NotFound', `memory ${row.ns_path}/${row.key} expired at ${iso(row.expires_at)}`, {
        field: 'id' in p ? 'id' : 'key',
        expiresAt: iso(row.expires_at),
      });
  }
  store.touch([row.rowid]);
  row.access_count += 1;
  row.last_accessed_at = now;
  return toMemory(row);
}

/** A live memory by id without counting it as an access (NotFound otherwise). */
export function peekMemory(db: DB, id: string, scope?: Scope): Memory {
  const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL AND m.deleted_at IS NULL', params: [id] }, scopePredicate(scope));
  const row = rowBy(db, where.sql, ...where.params);
  if (!row) throw new CairnError('NotFound', `no live memory ${id}${scope ? ' in scope' : ''}`, { field: 'id' });
  return toMemory(row);
}

export function rowidOf(db: DB, id: string): number | undefined {
  return (stmt(db, 'SELECT rowid FROM memories WHERE id = ?').get(id) as { rowid: number } | undefined)?.rowid;
}

/** Record reads (lastAccessedAt, accessCount). Not a change of content: no version, history or change-log row. */
export function touch(store: Store, rowids: number[]): void {
  const db = store.db;
  if (rowids.length === 0 || db.readonly) return;
  const now = store.now();
  try {
    writeTx(db, () => {
      const st = stmt(db, 'UPDATE memories SET last_accessed_at = ?, access_count = access_count + 1 WHERE rowid = ?');
      for (const r of rowids) st.run(now, r);
    });
  } catch {
    /* access statistics are best effort: a busy store must not fail a read */
  }
}

export function listMemories(store: Store, p: ListParams, hidden?: Set<number> | null): ListResult {
  const limit = p.limit ?? 100;
  const now = store.now();
  let cursorSql: SqlFragment | null = null;
  if (p.cursor !== undefined) {
    const m = /^(\d+):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
    if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
    cursorSql = { sql: '(m.updated_at < ? OR (m.updated_at = ? AND m.rowid < ?))', params: [Number(m[1]), Number(m[1]), Number(m[2])] };
  }
  const where = and(
    visibility(p.include, now),
    scopePredicate(p.scope),
    compileFilter(p.filter),
    cursorSql,
    excluded({ exclude: hidden ?? undefined }),
  );
  const rows = stmt(
    store.db,
    `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where.sql} ORDER BY m.updated_at DESC, m.rowid DESC LIMIT ?`,
  ).all(...where.params, limit + 1) as MemoryRow[];
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(toMemory),
    nextCursor: more && last ? Buffer.from(`${last.updated_at}:${last.rowid}`).toString('base64url') : null,
  };
}

/** What ranking a fused candidate needs (search fusion), without reading its value and JSON fields. */
export function rankFacts(
  db: DB,
  rowids: number[],
): Map<number, { id: string; importance: number; confidence: number; updated_at: number }> {
  const rows = stmt(
    db,
    'SELECT rowid, id, importance, confidence, updated_at FROM memories WHERE rowid IN (SELECT value FROM json_each(?))',
  ).all(JSON.stringify(rowids)) as {
    rowid: number;
    id: string;
    importance: number;
    confidence: number;
    updated_at: number;
  }[];
  return new Map(rows.map((r) => [r.rowid, r]));
}

/** Memories by rowid (for search arms). */
export function byRowids(db: DB, rowids: number[]): Map<number, MemoryRow> {
  const out = new Map<number, MemoryRow>();
  if (rowids.length === 0) return out;
  // CROSS JOIN keeps memories as the outer loop (a rowid lookup each); one statement for any list length.
  const rows = stmt(
    db,
    `SELECT ${MEMORY_COLUMNS} FROM memories m CROSS JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid IN (SELECT value FROM json_each(?))`,
  ).all(JSON.stringify(rowids)) as MemoryRow[];
  for (const r of rows) out.set(r.rowid, r);
  return out;
}

/** The store's counts (status). */
export function counts(db: DB) {
  const c = memoryCounts(db);
  const one = (sql: string) => (stmt(db, sql).get() as { c: number }).c;
  return {
    ...c,
    namespaces: one('SELECT count(*) AS c FROM namespaces WHERE deleted_at IS NULL'),
    history: one('SELECT count(*) AS c FROM history'),
    links: one('SELECT count(*) AS c FROM links'),
    rejectedValues: one('SELECT count(*) AS c FROM rejected_values'),
  };
}
