/**
 * Finding rows of the team store: a memory row by id or namespace+key (optionally locked for a write,
 * which row-level security admits only where the role may write), and the typed refusals when none is found.
 */
import { CairnError } from '../../protocol/errors';
import { namespaceProblem } from '../../protocol/namespace';
import type { Scope } from '../../protocol/types';
import type { MemoryRow } from '../rows';
import type { PgBackend } from './backend';
import { mapError, type pg } from './db';
import { andSql, MEMORY_COLUMNS, Params, scopeSql } from './sql';

type C = pg.PoolClient;

export interface Target {
  id?: string;
  namespace?: string;
  key?: string;
  actor?: string;
  reason?: string;
  /** When given, the memory must lie in this scope (by id or by key), else NotFound. */
  scope?: Scope;
  /** Applied at most once per key (keyed()). */
  idempotencyKey?: string;
}

/** A database error as the protocol's typed error. */
export function rethrow(e: unknown): never {
  throw mapError(e);
}

export function checkNamespace(path: string, field = 'namespace'): void {
  const p = namespaceProblem(path);
  if (p) throw new CairnError('InvalidNamespace', p, { field });
}

export async function rowBy(c: C | pg.Pool, where: (q: Params) => string, lock = false): Promise<MemoryRow | undefined> {
  const q = new Params();
  const w = where(q);
  const rows = await c.query(
    `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${w}${lock ? ' FOR UPDATE OF m' : ''}`,
    q.values,
  );
  return rows.rows[0] as MemoryRow | undefined;
}

export function rowByKey(c: C, namespace: string, key: string, lock = false) {
  return rowBy(c, (q) => `n.path = ${q.p(namespace)} AND n.deleted_at IS NULL AND m.key = ${q.p(key)}`, lock);
}

/**
 * The target row, locked for a write: SELECT ... FOR UPDATE admits only rows the role may write (the UPDATE policy),
 * so a row it can read but not write is Forbidden, and one it cannot read is NotFound.
 */
export async function resolveTarget(c: C, t: Target, lock = true): Promise<MemoryRow> {
  try {
    return await findTarget(c, t, lock);
  } catch (e) {
    if (!lock || !(e instanceof CairnError) || e.codeName !== 'NotFound') throw e;
    const row = await findTarget(c, t, false);
    throw new CairnError('Forbidden', `your database role may not change ${row.ns_path}`, { field: t.id !== undefined ? 'id' : 'key' });
  }
}

export async function findTarget(c: C, t: Target, lock: boolean): Promise<MemoryRow> {
  let row: MemoryRow | undefined;
  if (t.id !== undefined) {
    if (t.namespace !== undefined || t.key !== undefined)
      throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
    row = await rowBy(c, (q) => andSql(`m.id = ${q.p(t.id)} AND n.deleted_at IS NULL`, scopeSql(q, t.scope)), lock);
    if (!row) throw new CairnError('NotFound', `no memory ${t.id}${t.scope ? ' in scope' : ''}`, { field: 'id' });
  } else {
    if (t.namespace === undefined || t.key === undefined)
      throw new CairnError('InvalidParams', 'id or namespace+key is required', {
        field: t.namespace === undefined ? 'namespace' : 'key',
      });
    checkNamespace(t.namespace);
    const ns = t.namespace;
    const key = t.key;
    row = await rowBy(c, (q) => andSql(`n.path = ${q.p(ns)} AND n.deleted_at IS NULL AND m.key = ${q.p(key)}`, scopeSql(q, t.scope)), lock);
    if (!row) throw new CairnError('NotFound', `no memory ${t.namespace}/${t.key}${t.scope ? ' in scope' : ''}`, { field: 'key' });
  }
  return row;
}

export async function refetch(c: C, rowid: number): Promise<MemoryRow> {
  return (await rowBy(c, (q) => `m.rowid = ${q.p(rowid)}`))!;
}

export function isExpired(r: MemoryRow, now: number): boolean {
  return r.expires_at !== null && r.expires_at <= now;
}

export async function liveInScope(b: PgBackend, c: C | pg.Pool, id: string, scope: Scope | undefined, field: string): Promise<MemoryRow> {
  const row = await rowBy(c, (q) =>
    andSql(`m.id = ${q.p(id)} AND n.deleted_at IS NULL AND m.deleted_at IS NULL`, scopeSql(q, scope)),
  ).catch(rethrow);
  if (!row) throw new CairnError('NotFound', `no live memory ${id}${scope ? ' in scope' : ''}`, { field });
  if (isExpired(row, b.now())) throw new CairnError('NotFound', `memory ${id} has expired`, { field });
  return row;
}
