/** Typed links between live memories (both ends in the caller's scope), and a memory's neighbours along them. */
import { CairnError } from '../protocol/errors';
import type { Link, LinkParams, LinkResult, NeighborsParams, NeighborsResult, Scope, UnlinkResult } from '../protocol/types';
import { stmt } from './db';
import { isExpired, rowBy } from './reads';
import { and, isoReq, MEMORY_COLUMNS, toMemory, visibility, type MemoryRow } from './rows';
import { scopePredicate } from './scope';
import type { Store } from './store';

interface LinkRow {
  src: string;
  dst: string;
  type: Link['type'];
  created_at: number;
  actor: string;
}
const toLink = (r: LinkRow): Link => ({ from: r.src, to: r.dst, type: r.type, createdAt: isoReq(r.created_at), actor: r.actor });

function liveInScope(store: Store, id: string, scope: Scope | undefined, field: string): MemoryRow {
  const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL AND m.deleted_at IS NULL', params: [id] }, scopePredicate(scope));
  const row = rowBy(store.db, where.sql, ...where.params);
  if (!row) throw new CairnError('NotFound', `no live memory ${id}${scope ? ' in scope' : ''}`, { field });
  if (isExpired(row, store.now())) throw new CairnError('NotFound', `memory ${id} has expired`, { field });
  return row;
}

export function link(store: Store, p: LinkParams): LinkResult {
  if (p.from === p.to) throw new CairnError('InvalidState', 'a memory cannot link to itself', { field: 'to' });
  const db = store.db;
  return store.transaction(() => {
    const a = liveInScope(store, p.from, p.scope, 'from');
    liveInScope(store, p.to, p.scope, 'to');
    const actor = p.actor ?? 'user';
    const now = store.now();
    const created =
      stmt(db, 'INSERT OR IGNORE INTO links(src, dst, type, created_at, actor) VALUES (?, ?, ?, ?, ?)').run(
        p.from,
        p.to,
        p.type,
        now,
        actor,
      ).changes > 0;
    const row = stmt(db, 'SELECT * FROM links WHERE src = ? AND dst = ? AND type = ?').get(p.from, p.to, p.type) as LinkRow;
    const position = created ? store.logChange('link', a.id, a.ns_id, a.ns_path, a.key) : store.position();
    return { link: toLink(row), created, position };
  });
}

export function unlink(store: Store, p: LinkParams): UnlinkResult {
  return store.transaction(() => {
    const a = liveInScope(store, p.from, p.scope, 'from');
    liveInScope(store, p.to, p.scope, 'to');
    const removed = stmt(store.db, 'DELETE FROM links WHERE src = ? AND dst = ? AND type = ?').run(p.from, p.to, p.type).changes > 0;
    if (!removed) throw new CairnError('NotFound', `no ${p.type} link from ${p.from} to ${p.to}`, { field: 'type' });
    return { removed, position: store.logChange('unlink', a.id, a.ns_id, a.ns_path, a.key) };
  });
}

export function neighbors(store: Store, p: NeighborsParams): NeighborsResult {
  liveInScope(store, p.id, p.scope, 'id');
  const dir = p.direction ?? 'both';
  const now = store.now();
  const where = and(visibility(undefined, now), scopePredicate(p.scope));
  const typeSql = p.type ? ' AND l.type = ?' : '';
  const typeParams = p.type ? [p.type] : [];
  const out: NeighborsResult['neighbors'] = [];
  const q = (join: string, match: string, direction: 'out' | 'in') => {
    const rows = stmt(
      store.db,
      `SELECT ${MEMORY_COLUMNS}, l.type AS link_type FROM links l JOIN memories m ON m.id = l.${join} JOIN namespaces n ON n.id = m.ns_id WHERE l.${match} = ?${typeSql} AND ${where.sql} ORDER BY l.created_at, m.id`,
    ).all(p.id, ...typeParams, ...where.params) as (MemoryRow & { link_type: Link['type'] })[];
    for (const r of rows) out.push({ memory: toMemory(r), type: r.link_type, direction });
  };
  if (dir !== 'in') q('dst', 'src', 'out');
  if (dir !== 'out') q('src', 'dst', 'in');
  return { neighbors: out };
}
