/**
 * SQL builders for the PostgreSQL team store: scope, visibility and filter
 * trees as predicates over a memory (alias `m`) joined to its namespace
 * (alias `n`). Same rules as the SQLite builders (store/scope.ts,
 * store/filter.ts, store/rows.ts): scopes match exact paths or exact segment
 * prefixes (never LIKE), NULLs in a filter leaf count as false, and every arm
 * puts these predicates inside the query that takes its top-k.
 */
import { CairnError } from '../../protocol/errors';
import { namespaceProblem, USER_ROOT } from '../../protocol/namespace';
import { Limits, type Filter, type FilterLeaf, type Include, type Scope } from '../../protocol/types';
import { normalizeTag } from '../../text/secrets';
import { effectiveIncludeUser } from '../scope';

/** Collects bind parameters; `p(v)` returns its `$n` placeholder. */
export class Params {
  readonly values: unknown[] = [];
  p(v: unknown): string {
    this.values.push(v);
    return `$${this.values.length}`;
  }
}

export const MEMORY_COLUMNS = `m.rowid, m.id, m.ns_id, n.path AS ns_path, m.key, m.value, m.value_hash, m.summary, m.kind, m.tags,
  m.importance, m.confidence, m.source, m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to,
  m.expires_at, m.last_accessed_at, m.access_count, m.version, m.status, m.superseded_by, m.deleted_at, m.deleted_by, m.delete_reason`;

function check(path: string, field: string): void {
  const problem = namespaceProblem(path);
  if (problem) throw new CairnError('InvalidNamespace', problem, { field });
}

function subtree(q: Params, col: string, root: string): string {
  return `(${col} = ${q.p(root)} OR left(${col}, ${q.p(root.length + 1)}) = ${q.p(root + '.')})`;
}

/** Scope predicate over `col` (a namespace path); null means the whole store. */
export function scopeSql(q: Params, scope: Scope | undefined, col = 'n.path'): string | null {
  if (!scope) return null;
  scope.namespaces?.forEach((p, i) => check(p, `scope.namespaces[${i}]`));
  if (scope.root !== undefined) check(scope.root, 'scope.root');
  if (scope.namespaces === undefined && scope.root === undefined) return null;
  const ors: string[] = [];
  if (scope.namespaces && scope.namespaces.length > 0) ors.push(`${col} = ANY(${q.p(scope.namespaces)}::text[])`);
  if (scope.root !== undefined) ors.push(subtree(q, col, scope.root));
  if (effectiveIncludeUser(scope)) ors.push(subtree(q, col, USER_ROOT));
  if (ors.length === 0) return 'false';
  return `(${ors.join(' OR ')})`;
}

/** 0 for the caller's own scope, 1 for the `user` tree (tie-break: own scope first). */
export function ownScopeRank(q: Params, scope: Scope | undefined, col = 'n.path'): string | null {
  if (!scope || (!scope.namespaces?.length && scope.root === undefined)) return null;
  const own = scopeSql(q, { ...scope, includeUser: false }, col);
  return own ? `(CASE WHEN ${own} THEN 0 ELSE 1 END)` : null;
}

/** The default visibility rules, each relaxable through `include` (as store/rows.ts). */
export function visibilitySql(q: Params, include: Include | undefined, now: number): string {
  const inc = include ?? {};
  const parts = ['n.deleted_at IS NULL'];
  if (!inc.deleted) parts.push('m.deleted_at IS NULL');
  if (!inc.expired) parts.push(`(m.expires_at IS NULL OR m.expires_at > ${q.p(now)})`);
  if (!inc.superseded) parts.push(`m.status <> 'superseded'`);
  if (!inc.proposed) parts.push(`m.status <> 'proposed'`);
  if (!inc.outOfValidity) {
    const t = q.p(now);
    parts.push(`(m.valid_from IS NULL OR m.valid_from <= ${t}) AND (m.valid_to IS NULL OR m.valid_to > ${t})`);
  }
  return parts.join(' AND ');
}

export function andSql(...parts: (string | null | undefined)[]): string {
  const live = parts.filter((x): x is string => !!x && x.length > 0);
  return live.length === 0 ? 'true' : live.map((x) => `(${x})`).join(' AND ');
}

const TIME_COLS: Record<string, string> = {
  createdAt: 'm.created_at',
  updatedAt: 'm.updated_at',
  expiresAt: 'm.expires_at',
  validFrom: 'm.valid_from',
  validTo: 'm.valid_to',
  lastAccessedAt: 'm.last_accessed_at',
};
const TEXT_COLS: Record<string, string> = { kind: 'm.kind', source: 'm.source', status: 'm.status', namespace: 'n.path', key: 'm.key' };
const OPS: Record<string, string> = { eq: '=', ne: '<>', lt: '<', lte: '<=', gt: '>', gte: '>=' };

/** Filter tree -> predicate; every leaf is COALESCE(..., false) so `not` is plain negation (as store/filter.ts). */
export function filterSql(q: Params, filter: Filter | undefined): string | null {
  if (!filter) return null;
  let nodes = 0;
  const walk = (f: Filter, at: string, depth: number): string => {
    if (++nodes > Limits.filterNodes)
      throw new CairnError('InvalidFilter', `filter has more than ${Limits.filterNodes} nodes`, { field: at });
    if (depth > Limits.filterDepth)
      throw new CairnError('InvalidFilter', `filter is nested deeper than ${Limits.filterDepth}`, { field: at });
    if ('and' in f || 'or' in f) {
      const list = 'and' in f ? f.and : (f as { or: Filter[] }).or;
      const word = 'and' in f ? 'and' : 'or';
      const parts = list.map((c, i) => walk(c, `${at}.${word}[${i}]`, depth + 1));
      return `(${parts.join(word === 'and' ? ' AND ' : ' OR ')})`;
    }
    if ('not' in f) return `(NOT ${walk(f.not, `${at}.not`, depth + 1)})`;
    return `COALESCE((${leafSql(q, f as FilterLeaf, at)}), false)`;
  };
  return walk(filter, 'filter', 0);
}

function ms(iso: string, at: string): number {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) throw new CairnError('InvalidFilter', `not a date: ${iso}`, { field: `${at}.value` });
  return t;
}

function leafSql(q: Params, f: FilterLeaf, at: string): string {
  if ('property' in f) {
    const v = `(m.properties::jsonb -> ${q.p(f.property)})`;
    if (f.op === 'exists') return `(${v} IS NOT NULL AND ${v} <> 'null'::jsonb) = ${q.p(f.value)}`;
    // Compare like SQLite's json_extract: numbers and booleans (as 0/1) numerically, strings as text, never across types.
    if (typeof f.value === 'string') return `(jsonb_typeof(${v}) = 'string' AND (${v} #>> '{}') ${OPS[f.op]} ${q.p(f.value)})`;
    const num = typeof f.value === 'boolean' ? (f.value ? 1 : 0) : f.value;
    return `(CASE jsonb_typeof(${v}) WHEN 'number' THEN (${v} #>> '{}')::double precision WHEN 'boolean' THEN (CASE WHEN (${v} #>> '{}') = 'true' THEN 1 ELSE 0 END) END) ${OPS[f.op]} ${q.p(num)}::double precision`;
  }
  const field = f.field;
  if (field in TEXT_COLS) {
    const col = TEXT_COLS[field];
    if (f.op === 'in') return `${col} = ANY(${q.p(f.value)}::text[])`;
    if (f.op === 'prefix') return `left(${col}, ${q.p((f.value as string).length)}) = ${q.p(f.value)}`;
    return `${col} ${OPS[f.op]} ${q.p(f.value)}`;
  }
  if (field === 'tags') {
    const list = (Array.isArray(f.value) ? f.value : [f.value as string]).map(normalizeTag);
    const tags = `ARRAY(SELECT jsonb_array_elements_text(m.tags::jsonb))`;
    switch (f.op) {
      case 'has':
        if (list.length !== 1)
          throw new CairnError('InvalidFilter', 'tags "has" takes one tag; use hasAny or hasAll for a list', { field: `${at}.value` });
        return `${tags} && ${q.p(list)}::text[]`;
      case 'hasAny':
        return `${tags} && ${q.p(list)}::text[]`;
      case 'hasNone':
        return `NOT (${tags} && ${q.p(list)}::text[])`;
      case 'hasAll':
        return `${tags} @> ${q.p([...new Set(list)])}::text[]`;
    }
  }
  if (field in TIME_COLS) {
    const col = TIME_COLS[field];
    if (f.op === 'exists') return `(${col} IS NOT NULL) = ${q.p(f.value)}`;
    return `${col} ${OPS[f.op]} ${q.p(ms(f.value as string, at))}`;
  }
  if (field === 'validAt') {
    const t = q.p(ms(f.value as string, at));
    return `(m.valid_from IS NULL OR m.valid_from <= ${t}) AND (m.valid_to IS NULL OR m.valid_to > ${t})`;
  }
  if (field === 'importance' || field === 'confidence') return `m.${field} ${OPS[f.op]} ${q.p(f.value)}::double precision`;
  if (field === 'anchors.path') {
    const paths = `ARRAY(SELECT a->>'path' FROM jsonb_array_elements(m.anchors::jsonb) a)`;
    if (f.op === 'exists') {
      if (typeof f.value !== 'boolean')
        throw new CairnError('InvalidFilter', 'anchors.path exists takes true or false', { field: `${at}.value` });
      return `(jsonb_array_length(m.anchors::jsonb) > 0) = ${q.p(f.value)}`;
    }
    if (typeof f.value !== 'string')
      throw new CairnError('InvalidFilter', `anchors.path ${f.op} takes a path string`, { field: `${at}.value` });
    if (f.op === 'prefix') return `EXISTS (SELECT 1 FROM unnest(${paths}) p WHERE left(p, ${q.p(f.value.length)}) = ${q.p(f.value)})`;
    return `${q.p(f.value)} = ANY(${paths})`;
  }
  throw new CairnError('InvalidFilter', `unknown filter field`, { field: at });
}
