/** Reading the team store (one memory: get.ts): a page of a list, anchored memories, rows by rowid, history, the change-log position. */
import { CairnError } from '../../protocol/errors';
import type { Anchor, HistoryParams, HistoryResult, ListParams, ListResult, Memory, Scope } from '../../protocol/types';
import { pgHistoryEntry, toMemory, type MemoryRow, type PgHistoryRow } from '../rows';
import type { PgBackend } from './backend';
import { query } from './db';
import { checkNamespace, rethrow, rowBy } from './lookup';
import { andSql, filterSql, MEMORY_COLUMNS, Params, scopeSql, visibilitySql } from './sql';

export async function list(b: PgBackend, p: ListParams, extra?: (q: Params) => string | null): Promise<ListResult> {
  const limit = p.limit ?? 100;
  const q = new Params();
  let cursor: string | null = null;
  if (p.cursor !== undefined) {
    const m = /^(\d+):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
    if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
    const u = q.p(Number(m[1]));
    cursor = `(m.updated_at < ${u} OR (m.updated_at = ${u} AND m.rowid < ${q.p(Number(m[2]))}))`;
  }
  const where = andSql(visibilitySql(q, p.include, b.now()), scopeSql(q, p.scope), filterSql(q, p.filter), cursor, extra?.(q));
  const rows = await query<MemoryRow>(
    b.pool,
    `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where} ORDER BY m.updated_at DESC, m.rowid DESC LIMIT ${q.p(limit + 1)}`,
    q.values,
  );
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(toMemory),
    nextCursor: more && last ? Buffer.from(`${last.updated_at}:${last.rowid}`).toString('base64url') : null,
  };
}

/** Visible memories with an anchor on one of `paths`, each with that anchor (hovers; same order as the SQLite store). */
export async function anchoredAt(b: PgBackend, paths: string[], scope: Scope | undefined): Promise<{ memory: Memory; anchor: Anchor }[]> {
  if (paths.length === 0) return [];
  const q = new Params();
  const where = andSql(`a.v->>'path' = ANY(${q.p(paths)}::text[])`, visibilitySql(q, undefined, b.now()), scopeSql(q, scope));
  const rows = await query(
    b.pool,
    `SELECT ${MEMORY_COLUMNS}, (a.idx - 1)::int AS anchor_idx FROM memories m JOIN namespaces n ON n.id = m.ns_id
      CROSS JOIN LATERAL jsonb_array_elements(m.anchors::jsonb) WITH ORDINALITY AS a(v, idx)
      WHERE ${where} ORDER BY m.importance DESC, m.updated_at DESC, m.id LIMIT 200`,
    q.values,
  );
  return rows
    .map((r) => {
      const memory = toMemory(r as MemoryRow);
      return { memory, anchor: memory.anchors[r.anchor_idx] };
    })
    .filter((x) => x.anchor !== undefined);
}

export async function byRowids(b: PgBackend, rowids: number[]): Promise<Map<number, MemoryRow>> {
  const out = new Map<number, MemoryRow>();
  if (rowids.length === 0) return out;
  const rows = await query<MemoryRow>(
    b.pool,
    `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid = ANY($1::bigint[])`,
    [rowids],
  );
  for (const r of rows) out.set(r.rowid, r);
  return out;
}

export async function history(b: PgBackend, p: HistoryParams): Promise<HistoryResult> {
  let memoryId: string;
  if (p.id !== undefined && p.scope === undefined) memoryId = p.id;
  else if (p.id !== undefined) {
    const id = p.id;
    const row = await rowBy(b.pool, (q) => andSql(`m.id = ${q.p(id)} AND n.deleted_at IS NULL`, scopeSql(q, p.scope))).catch(rethrow);
    if (!row) throw new CairnError('NotFound', `no memory ${p.id} in scope`, { field: 'id' });
    memoryId = row.id;
  } else {
    if (p.namespace === undefined || p.key === undefined)
      throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: 'id' });
    checkNamespace(p.namespace);
    const ns = p.namespace;
    const key = p.key;
    const row = await rowBy(b.pool, (q) =>
      andSql(`n.path = ${q.p(ns)} AND n.deleted_at IS NULL AND m.key = ${q.p(key)}`, scopeSql(q, p.scope)),
    ).catch(rethrow);
    if (!row) throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}${p.scope ? ' in scope' : ''}`, { field: 'key' });
    memoryId = row.id;
  }
  const rows = await query(
    b.pool,
    `SELECT *, (SELECT value FROM meta WHERE key = 'history_cap') AS cap FROM history WHERE memory_id = $1 ORDER BY seq DESC LIMIT $2`,
    [memoryId, p.limit ?? 100],
  );
  if (rows.length === 0) throw new CairnError('NotFound', `no history for ${memoryId}`, { field: 'id' });
  return {
    entries: rows.map((r) => pgHistoryEntry(r as PgHistoryRow)),
    capped: rows[0].cap !== null,
  };
}

export async function position(b: PgBackend): Promise<number> {
  const r = await query<{ p: number | null }>(b.pool, 'SELECT max(position) AS p FROM changes');
  return r[0].p ?? 0;
}
