/** Deleting on the team store: delete, forget (delete and reject the value), restore, purge, and the expiry sweep. */
import { CairnError } from '../../protocol/errors';
import type { PurgeResult, SweepResult, WriteResult } from '../../protocol/types';
import { iso, toMemory } from '../rows';
import type { PgBackend } from './backend';
import { query, type pg } from './db';
import { refetch, resolveTarget, rowBy, type Target } from './lookup';
import { keyed, record, recordChange, requireUser } from './recording';

type C = pg.PoolClient;

export function remove(b: PgBackend, t: Target): Promise<WriteResult> {
  return keyed(b, 'memory/delete', t, (c) => softDelete(b, c, t, 'delete'));
}

export function forget(b: PgBackend, t: Target): Promise<WriteResult> {
  return keyed(b, 'memory/forget', t, async (c) => {
    const r = await softDelete(b, c, t, 'forget');
    const row = (await rowBy(c, (q) => `m.id = ${q.p(r.memory.id)}`))!;
    await c.query(
      `INSERT INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (ns_id, value_hash) DO UPDATE SET actor = excluded.actor, at = excluded.at, memory_id = excluded.memory_id`,
      [row.ns_id, row.value_hash, row.id, requireUser(b), b.now()],
    );
    return r;
  });
}

export async function softDelete(b: PgBackend, c: C, t: Target, op: 'delete' | 'forget'): Promise<WriteResult> {
  const row = await resolveTarget(c, t);
  if (row.deleted_at !== null) {
    if (op === 'forget') return { memory: toMemory(row), position: await recordChange(c, 'forget', row.id) };
    throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is already deleted`, {
      field: t.id !== undefined ? 'id' : 'key',
      deletedAt: iso(row.deleted_at),
      deletedBy: row.deleted_by,
    });
  }
  const now = b.now();
  const before = toMemory(row);
  const u = await c.query(
    `UPDATE memories SET deleted_at = $1, deleted_by = $2, delete_reason = $3, version = version + 1, updated_at = $1 WHERE rowid = $4`,
    [now, requireUser(b), t.reason ?? null, row.rowid],
  );
  if (u.rowCount !== 1)
    throw new CairnError('Forbidden', `your database role may not change ${row.ns_path}`, { field: t.id !== undefined ? 'id' : 'key' });
  const position = await record(b, c, row.id, op, t.actor, t.reason, before);
  return { memory: toMemory(await refetch(c, row.rowid)), position };
}

export function restore(b: PgBackend, t: Target): Promise<WriteResult> {
  return keyed(b, 'memory/restore', t, async (c) => {
    const row = await resolveTarget(c, t);
    if (row.deleted_at === null)
      throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is not deleted`, { field: t.id !== undefined ? 'id' : 'key' });
    const now = b.now();
    const before = toMemory(row);
    const lifted =
      ((await c.query(`DELETE FROM rejected_values WHERE ns_id = $1 AND value_hash = $2`, [row.ns_id, row.value_hash])).rowCount ?? 0) > 0;
    const expires = row.expires_at !== null && row.expires_at <= now ? null : row.expires_at;
    await c.query(
      `UPDATE memories SET deleted_at = NULL, deleted_by = NULL, delete_reason = NULL, expires_at = $1, version = version + 1, updated_at = $2 WHERE rowid = $3`,
      [expires, now, row.rowid],
    );
    const position = await record(b, c, row.id, 'restore', t.actor, t.reason, before, lifted ? { unrejected: true } : undefined);
    return { memory: toMemory(await refetch(c, row.rowid)), position };
  });
}

export function purge(b: PgBackend, t: Target): Promise<PurgeResult> {
  return keyed(b, 'memory/purge', t, async (c) => {
    const row = await resolveTarget(c, t);
    if (row.deleted_at === null)
      throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is live; delete it before purging`, {
        field: t.id !== undefined ? 'id' : 'key',
      });
    // The database's own cairn.purge_memory removes the row, its links and history and records the purge
    // (members may not delete history or memories themselves); it needs admin on the memory's namespace.
    const r = await c.query(`SELECT cairn.purge_memory($1, $2, $3, $4) AS position`, [row.id, t.reason ?? null, t.actor ?? null, b.now()]);
    return { id: row.id, position: r.rows[0].position as number };
  });
}

/**
 * Expiry and the purge of deleted namespaces are the database's own jobs (cairn.expire_due,
 * cairn.purge_deleted_namespaces), the only writers of `system:` actors; each covers the namespaces this role
 * may write (expiry) or administer (purge), and records the role as detail.sweptBy.
 */
export async function sweep(b: PgBackend, batch = 500): Promise<SweepResult> {
  requireUser(b);
  const expired = (await query<{ n: number }>(b.pool, `SELECT cairn.expire_due($1, $2) AS n`, [b.now(), batch]))[0].n;
  const purged = (await query<{ n: number }>(b.pool, `SELECT cairn.purge_deleted_namespaces($1, $2) AS n`, [b.now(), batch]))[0].n;
  return { expired, purged, position: await b.position() };
}
