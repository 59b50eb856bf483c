/**
 * memory/get on the team store in one round trip: one prepared statement reads
 * the row (scope inside the WHERE, row-level security as always). A row it
 * answers with counts as an access (a live one, or any with includeDeleted):
 * its access statistics are bumped after the answer, in batches
 * (store/pg/access-stats.ts), best effort as on the SQLite store.
 */
import type pg from 'pg';
import { CairnError } from '../../protocol/errors';
import { namespaceProblem } from '../../protocol/namespace';
import type { GetParams, Memory } from '../../protocol/types';
import { sha256 } from '../../text/hash';
import { iso, toMemory, type MemoryRow } from '../rows';
import type { AccessBumps } from './access-stats';
import { mapError } from './db';
import { andSql, MEMORY_COLUMNS, Params, scopeSql } from './sql';

/** A named (server-side prepared) statement: parsed and planned once per connection, then bind + execute only. */
export function prepared(text: string, values: unknown[]): pg.QueryConfig {
  return { name: `cairn_${sha256(text).slice(0, 24)}`, text, values };
}

export async function pgGet(pool: pg.Pool, p: GetParams, now: number, bumps: AccessBumps): Promise<Memory> {
  const q = new Params();
  let where: string;
  if ('id' in p) where = `m.id = ${q.p(p.id)}`;
  else {
    const problem = namespaceProblem(p.namespace);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
    where = `n.path = ${q.p(p.namespace)} AND m.key = ${q.p(p.key)}`;
  }
  where = andSql(`${where} AND n.deleted_at IS NULL`, scopeSql(q, p.scope));
  const read = `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where}`;
  const started = bumps.begin(); // a read in flight when a batch of bumps lands may not see it stored
  try {
    return await answer(pool, p, prepared(read, q.values), now, bumps, started);
  } finally {
    bumps.end(started);
  }
}

async function answer(
  pool: pg.Pool,
  p: GetParams,
  read: pg.QueryConfig,
  now: number,
  bumps: AccessBumps,
  started: number,
): Promise<Memory> {
  let row: MemoryRow | undefined;
  try {
    row = (await pool.query<MemoryRow>(read)).rows[0];
  } catch (e) {
    throw mapError(e);
  }
  const field = 'id' in p ? 'id' : 'key';
  if (!row)
    throw new CairnError('NotFound', `no memory ${'id' in p ? p.id : `${p.namespace}/${p.key}`}${p.scope ? ' in scope' : ''}`, { field });
  if (!p.includeDeleted) {
    if (row.deleted_at !== null)
      throw new CairnError('NotFound', `memory ${row.ns_path}/${row.key} was deleted at ${iso(row.deleted_at)} by ${row.deleted_by}`, {
        field,
        deletedAt: iso(row.deleted_at),
        deletedBy: row.deleted_by,
      });
    if (row.expires_at !== null && row.expires_at <= now)
      throw new CairnError('NotFound', `memory ${row.ns_path}/${row.key} expired at ${iso(row.expires_at)}`, {
        field,
        expiresAt: iso(row.expires_at),
      });
  }
  row.access_count = bumps.add(row.rowid, now, row.access_count, started); // recorded after the answer (store/pg/access-stats.ts)
  row.last_accessed_at = now;
  return toMemory(row);
}
