/** Reads on a memory branch (store/branches.ts): memory/get and memory/list see the branch's own rows over the base. */
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem } from '../protocol/namespace';
import type { GetParams, ListParams, ListResult, Memory, Scope } from '../protocol/types';
import { BASE_FROM, baseRow, notShadowed, OWN_FROM, ownRow, type BranchRow, type OwnRow } from './branch-common';
import type { Branches } from './branches';
import { stmt } from './db';
import { compileFilter } from './filter';
import { and, iso, MEMORY_COLUMNS, toMemory, visibility, type MemoryRow } from './rows';
import { pathInScope, scopePredicate, type SqlFragment } from './scope';

/** The row a branch read or write of (namespace, key) or id starts from: the branch's own, else the base's. */
export function resolveTarget(
  br: Branches,
  b: BranchRow,
  t: { id?: string; namespace?: string; key?: string; scope?: Scope },
): { own?: OwnRow; base?: MemoryRow; field: string } {
  const scope = scopePredicate(t.scope);
  if (t.id !== undefined) {
    if (t.namespace !== undefined || t.key !== undefined)
      throw new CairnError('InvalidParams', 'give either id or namespace+key, not both', { field: 'id' });
    const w = and({ sql: 'm.branch_id = ? AND m.id = ?', params: [b.id, t.id] }, scope);
    const own = stmt(br.db, `SELECT ${MEMORY_COLUMNS}, m.base_version FROM ${OWN_FROM} WHERE ${w.sql}`).get(...w.params) as
      OwnRow | undefined;
    if (own) return { own, field: 'id' };
    const wb = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [t.id] }, scope);
    const base = stmt(br.db, `SELECT ${MEMORY_COLUMNS} FROM ${BASE_FROM} WHERE ${wb.sql}`).get(...wb.params) as MemoryRow | undefined;
    return { base, field: 'id' };
  }
  if (t.namespace === undefined || t.key === undefined)
    throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: t.namespace === undefined ? 'namespace' : 'key' });
  const problem = namespaceProblem(t.namespace);
  if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
  if (t.scope && !pathInScope(t.namespace, t.scope)) return { field: 'key' };
  const own = isUnder(t.namespace, b.root) ? ownRow(br.db, b.id, t.namespace, t.key) : undefined;
  return own ? { own, field: 'key' } : { base: baseRow(br.db, t.namespace, t.key), field: 'key' };
}

/** memory/get on a branch: the branch's own row of the key or id, else the base's. */
export function getOnBranch(br: Branches, p: GetParams & { branch: string }): Memory {
  const b = br.open(p.branch);
  const t = 'id' in p ? { id: p.id, scope: p.scope } : { namespace: p.namespace, key: p.key, scope: p.scope };
  const { own, field } = resolveTarget(br, b, t);
  if (!own) {
    const { branch: _b, ...rest } = p;
    return br.store.get(rest as GetParams);
  }
  if (!p.includeDeleted) {
    if (own.deleted_at !== null)
      throw new CairnError(
        'NotFound',
        `memory ${own.ns_path}/${own.key} was deleted on branch ${b.name} at ${iso(own.deleted_at)} by ${own.deleted_by}`,
        {
          field,
          deletedAt: iso(own.deleted_at),
          deletedBy: own.deleted_by,
        },
      );
    if (own.expires_at !== null && own.expires_at <= br.store.now())
      throw new CairnError('NotFound', `memory ${own.ns_path}/${own.key} expired at ${iso(own.expires_at)}`, {
        field,
        expiresAt: iso(own.expires_at),
      });
  }
  return toMemory(own);
}

/** memory/list on a branch: the base's rows the branch has not written and the branch's own, newest update first. */
export function listOnBranch(br: Branches, p: ListParams & { branch: string }): ListResult {
  const b = br.open(p.branch);
  const limit = p.limit ?? 100;
  const now = br.store.now();
  let cursor: SqlFragment | null = null;
  if (p.cursor !== undefined) {
    const c = /^(\d+):([01]):(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
    if (!c) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
    const [u, s, r] = [Number(c[1]), Number(c[2]), Number(c[3])];
    cursor = { sql: '(updated_at < ? OR (updated_at = ? AND (src < ? OR (src = ? AND rowid < ?))))', params: [u, u, s, s, r] };
  }
  const where = and(visibility(p.include, now), scopePredicate(p.scope), compileFilter(p.filter));
  const rows = stmt(
    br.db,
    `SELECT * FROM (
       SELECT ${MEMORY_COLUMNS}, 0 AS src FROM ${BASE_FROM} WHERE ${where.sql} AND ${notShadowed(b.id).sql}
       UNION ALL
       SELECT ${MEMORY_COLUMNS}, 1 AS src FROM ${OWN_FROM} WHERE m.branch_id = ? AND ${where.sql}
     ) WHERE ${cursor ? cursor.sql : '1'} ORDER BY updated_at DESC, src DESC, rowid DESC LIMIT ?`,
  ).all(...where.params, b.id, b.id, ...where.params, ...(cursor?.params ?? []), limit + 1) as (MemoryRow & { src: number })[];
  const more = rows.length > limit;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(toMemory),
    nextCursor: more && last ? Buffer.from(`${last.updated_at}:${last.src}:${last.rowid}`).toString('base64url') : null,
  };
}
