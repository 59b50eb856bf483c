/** Namespaces of the team store: created on first write, listed with counts, renamed and deleted (admin only). */
import { CairnError } from '../../protocol/errors';
import { isUnder, namespaceProblem } from '../../protocol/namespace';
import type { NamespaceInfo } from '../../protocol/types';
import { uuidv7 } from '../../text/hash';
import { isoReq } from '../rows';
import type { PgBackend } from './backend';
import { query, type pg } from './db';
import { checkNamespace } from './lookup';
import { recordNamespaceChange, requireUser, tx } from './recording';
import { Params, scopeSql, visibilitySql } from './sql';

type C = pg.PoolClient;

export async function ensureNamespace(b: PgBackend, c: C | pg.Pool, path: string): Promise<string> {
  const id = uuidv7(b.now());
  await c.query(`INSERT INTO namespaces(id, path, created_at) VALUES ($1, $2, $3) ON CONFLICT (path) WHERE deleted_at IS NULL DO NOTHING`, [
    id,
    path,
    b.now(),
  ]);
  const r = await c.query(`SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL`, [path]);
  if (!r.rows[0]) throw new CairnError('Forbidden', `your database role may not read namespace ${path}`, { field: 'namespace' });
  return r.rows[0].id as string;
}

export async function listNamespaces(b: PgBackend, root?: string): Promise<NamespaceInfo[]> {
  if (root !== undefined) checkNamespace(root, 'root');
  const q = new Params();
  const pred = root !== undefined ? scopeSql(q, { root, includeUser: false }, 'n.path') : 'true';
  const vis = visibilitySql(q, undefined, b.now());
  const rows = await query(
    b.pool,
    `SELECT n.id, n.path, n.created_at,
      (SELECT count(*) FROM memories m WHERE m.ns_id = n.id AND ${vis}) AS cnt
    FROM namespaces n WHERE n.deleted_at IS NULL AND ${pred} ORDER BY n.path`,
    q.values,
  );
  return rows.map((r) => ({ id: r.id, path: r.path, createdAt: isoReq(r.created_at), memoryCount: Number(r.cnt) }));
}

export async function renameNamespace(
  b: PgBackend,
  from: string,
  to: string,
  actor?: string,
): Promise<{ renamed: number; position: number }> {
  checkNamespace(from, 'from');
  checkNamespace(to, 'to');
  if (from === to) throw new CairnError('InvalidState', 'from and to are the same namespace', { field: 'to' });
  if (isUnder(to, from)) throw new CairnError('InvalidState', `cannot move ${from} inside itself (${to})`, { field: 'to' });
  void actor;
  return tx(b, async (c) => {
    const q = new Params();
    const sub = scopeSql(q, { root: from, includeUser: false }, 'path');
    const rows = (await c.query(`SELECT id, path FROM namespaces WHERE deleted_at IS NULL AND ${sub} ORDER BY path`, q.values)).rows as {
      id: string;
      path: string;
    }[];
    if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${from}`, { field: 'from' });
    // Locking needs admin (the UPDATE policy): fewer rows locked than read means the role may not rename them.
    const locked = (await c.query(`SELECT id FROM namespaces WHERE id = ANY($1::text[]) FOR UPDATE`, [rows.map((r) => r.id)])).rowCount;
    if (locked !== rows.length) throw new CairnError('Forbidden', `your database role may not administer ${from}`, { field: 'from' });
    for (const r of rows) {
      const target = to + r.path.slice(from.length);
      const problem = namespaceProblem(target);
      if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'to' });
      const clash = (await c.query(`SELECT id FROM namespaces WHERE path = $1 AND deleted_at IS NULL`, [target])).rows[0];
      if (clash && !rows.some((x) => x.id === clash.id))
        throw new CairnError('InvalidState', `namespace ${target} already exists`, { field: 'to' });
    }
    // Two steps so intermediate states never collide on the unique live path; the parked path stays under
    // its own root, so row-level security judges it like the original.
    for (const r of rows) await c.query(`UPDATE namespaces SET path = $1 WHERE id = $2`, [`${r.path}.\u0001${r.id}`, r.id]);
    for (const r of rows) {
      const n = await c.query(`UPDATE namespaces SET path = $1 WHERE id = $2`, [to + r.path.slice(from.length), r.id]);
      if (n.rowCount !== 1) throw new CairnError('Forbidden', `your database role may not administer ${to}`, { field: 'to' });
    }
    const position = await recordNamespaceChange(c, 'namespace_rename', rows[0].id, to);
    return { renamed: rows.length, position };
  });
}

export async function deleteNamespace(
  b: PgBackend,
  path: string,
  actor?: string,
  reason?: string,
): Promise<{ deleted: number; memories: number; position: number }> {
  checkNamespace(path, 'path');
  return tx(b, async (c) => {
    const q = new Params();
    const sub = scopeSql(q, { root: path, includeUser: false }, 'path');
    const rows = (await c.query(`SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${sub}`, q.values)).rows as { id: string }[];
    if (rows.length === 0) throw new CairnError('NotFound', `no namespace ${path}`, { field: 'path' });
    const ids = rows.map((r) => r.id);
    const memories = Number(
      (await c.query(`SELECT count(*) AS c FROM memories WHERE ns_id = ANY($1::text[]) AND deleted_at IS NULL`, [ids])).rows[0].c,
    );
    const u = await c.query(`UPDATE namespaces SET deleted_at = $1, deleted_by = $2, delete_reason = $3 WHERE id = ANY($4::text[])`, [
      b.now(),
      requireUser(b),
      reason ?? null,
      ids,
    ]);
    if (u.rowCount !== ids.length) throw new CairnError('Forbidden', `your database role may not administer ${path}`, { field: 'path' });
    const position = await recordNamespaceChange(c, 'namespace_delete', ids[0], path);
    return { deleted: ids.length, memories, position };
  });
}
