/** Links between team memories: link, unlink and neighbors, between live memories in scope. */
import { CairnError } from '../../protocol/errors';
import type { Link, LinkParams, LinkResult, NeighborsParams, NeighborsResult, UnlinkResult } from '../../protocol/types';
import { isoReq, toMemory, type MemoryRow } from '../rows';
import type { PgBackend } from './backend';
import { query } from './db';
import { liveInScope } from './lookup';
import { positionIn, recordChange, requireUser, tx } from './recording';
import { andSql, MEMORY_COLUMNS, Params, scopeSql, visibilitySql } from './sql';

export function link(b: PgBackend, p: LinkParams): Promise<LinkResult> {
  if (p.from === p.to) throw new CairnError('InvalidState', 'a memory cannot link to itself', { field: 'to' });
  return tx(b, async (c) => {
    const a = await liveInScope(b, c, p.from, p.scope, 'from');
    await liveInScope(b, c, p.to, p.scope, 'to');
    const actor = requireUser(b);
    const created =
      ((
        await c.query(
          `INSERT INTO links(src, dst, type, ns_id, created_at, actor) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
          [p.from, p.to, p.type, a.ns_id, b.now(), actor],
        )
      ).rowCount ?? 0) > 0;
    const row = (await c.query(`SELECT * FROM links WHERE src = $1 AND dst = $2 AND type = $3`, [p.from, p.to, p.type])).rows[0];
    const position = created ? await recordChange(c, 'link', a.id) : await positionIn(c);
    return {
      link: { from: row.src, to: row.dst, type: row.type, createdAt: isoReq(row.created_at), actor: row.actor } as Link,
      created,
      position,
    };
  });
}

export function unlink(b: PgBackend, p: LinkParams): Promise<UnlinkResult> {
  return tx(b, async (c) => {
    const a = await liveInScope(b, c, p.from, p.scope, 'from');
    await liveInScope(b, c, p.to, p.scope, 'to');
    const removed =
      ((await c.query(`DELETE FROM links WHERE src = $1 AND dst = $2 AND type = $3`, [p.from, p.to, p.type])).rowCount ?? 0) > 0;
    if (!removed) throw new CairnError('NotFound', `no ${p.type} link from ${p.from} to ${p.to}`, { field: 'type' });
    return { removed, position: await recordChange(c, 'unlink', a.id) };
  });
}

export async function neighbors(b: PgBackend, p: NeighborsParams): Promise<NeighborsResult> {
  await liveInScope(b, b.pool, p.id, p.scope, 'id');
  const dir = p.direction ?? 'both';
  const out: NeighborsResult['neighbors'] = [];
  const run = async (join: string, match: string, direction: 'out' | 'in') => {
    const q = new Params();
    const where = andSql(
      `l.${match} = ${q.p(p.id)}`,
      p.type ? `l.type = ${q.p(p.type)}` : null,
      visibilitySql(q, undefined, b.now()),
      scopeSql(q, p.scope),
    );
    const rows = await query(
      b.pool,
      `SELECT ${MEMORY_COLUMNS}, l.type AS link_type FROM links l JOIN memories m ON m.id = l.${join} JOIN namespaces n ON n.id = m.ns_id WHERE ${where} ORDER BY l.created_at, m.id`,
      q.values,
    );
    for (const r of rows) out.push({ memory: toMemory(r as MemoryRow), type: r.link_type, direction });
  };
  if (dir !== 'in') await run('dst', 'src', 'out');
  if (dir !== 'out') await run('src', 'dst', 'in');
  return { neighbors: out };
}
