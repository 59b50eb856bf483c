/**
 * Filter tree -> SQL over a memory row (alias `m`). Every leaf is wrapped in
 * COALESCE(..., 0) so NULLs behave as "false" and `not` is plain negation:
 * `not {expiresAt lt X}` includes memories with no expiry.
 * The same compiled predicate is used by full-text, vector and list queries.
 */
import { CairnError } from '../protocol/errors';
import { Limits, type Filter, type FilterLeaf } from '../protocol/types';
import type { SqlFragment } from './scope';
import { normalizeTag } from '../text/secrets';

/** A stored tag in its normalized form (ASCII case folding and whitespace trimming in SQL). */
const TAG_SQL = `lower(trim(t.value, ' ' || char(9, 10, 11, 12, 13)))`;

const TIME_COLS: Record<string, string> = {
  createdAt: 'm.created_at',
  updatedAt: 'm.updated_at',
  expiresAt: 'm.expires_at',
  validFrom: 'm.valid_from',
  validTo: 'm.valid_to',
  lastAccessedAt: 'm.last_accessed_at',
};
const TEXT_COLS: Record<string, string> = { kind: 'm.kind', source: 'm.source', status: 'm.status', namespace: 'n.path', key: 'm.key' };
const OPS: Record<string, string> = { eq: '=', ne: '!=', lt: '<', lte: '<=', gt: '>', gte: '>=' };

export function compileFilter(filter: Filter | undefined): SqlFragment | null {
  if (!filter) return null;
  let nodes = 0;
  const walk = (f: Filter, at: string, depth: number): SqlFragment => {
    if (++nodes > Limits.filterNodes)
      throw new CairnError('InvalidFilter', `filter has more than ${Limits.filterNodes} nodes`, { field: at });
    if (depth > Limits.filterDepth)
      throw new CairnError('InvalidFilter', `filter is nested deeper than ${Limits.filterDepth}`, { field: at });
    if ('and' in f || 'or' in f) {
      const list = 'and' in f ? f.and : (f as { or: Filter[] }).or;
      const word = 'and' in f ? 'and' : 'or';
      const parts = list.map((c, i) => walk(c, `${at}.${word}[${i}]`, depth + 1));
      return { sql: `(${parts.map((p) => p.sql).join(word === 'and' ? ' AND ' : ' OR ')})`, params: parts.flatMap((p) => p.params) };
    }
    if ('not' in f) {
      const inner = walk(f.not, `${at}.not`, depth + 1);
      return { sql: `(NOT ${inner.sql})`, params: inner.params };
    }
    const leaf = compileLeaf(f as FilterLeaf, at);
    return { sql: `COALESCE((${leaf.sql}), 0)`, params: leaf.params };
  };
  return walk(filter, 'filter', 0);
}

function ms(iso: string, at: string): number {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) throw new CairnError('InvalidFilter', `not a date: ${iso}`, { field: `${at}.value` });
  return t;
}

function asList(v: string | string[]): string[] {
  return Array.isArray(v) ? v : [v];
}

export function propertyPath(key: string): string {
  return `$."${key.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function compileLeaf(f: FilterLeaf, at: string): SqlFragment {
  if ('property' in f) {
    const p = propertyPath(f.property);
    if (f.op === 'exists') return { sql: `(json_type(m.properties, ?) IS NOT NULL) = ?`, params: [p, f.value ? 1 : 0] };
    const v = typeof f.value === 'boolean' ? (f.value ? 1 : 0) : f.value;
    return { sql: `json_extract(m.properties, ?) ${OPS[f.op]} ?`, params: [p, v] };
  }
  const field = f.field;
  if (field in TEXT_COLS) {
    const col = TEXT_COLS[field];
    if (f.op === 'in') return { sql: `${col} IN (${(f.value as string[]).map(() => '?').join(', ')})`, params: f.value as string[] };
    if (f.op === 'prefix') return { sql: `substr(${col}, 1, ?) = ?`, params: [(f.value as string).length, f.value] };
    return { sql: `${col} ${OPS[f.op]} ?`, params: [f.value] };
  }
  if (field === 'tags') {
    // Tags are compared in their normalized form (trimmed, lowercased) on both sides, so spellings stored
    // before tags were normalized on write (`Secret`, ` secret`) still match.
    const list = asList(f.value as string | string[]).map(normalizeTag);
    const inList = `(SELECT 1 FROM json_each(m.tags) t WHERE ${TAG_SQL} IN (${list.map(() => '?').join(', ')}))`;
    switch (f.op) {
      case 'has':
        if (list.length !== 1)
          throw new CairnError('InvalidFilter', 'tags "has" takes one tag; use hasAny or hasAll for a list', { field: `${at}.value` });
        return { sql: `EXISTS ${inList}`, params: list };
      case 'hasAny':
        return { sql: `EXISTS ${inList}`, params: list };
      case 'hasNone':
        return { sql: `NOT EXISTS ${inList}`, params: list };
      case 'hasAll': {
        const uniq = [...new Set(list)];
        return {
          sql: `(SELECT count(DISTINCT ${TAG_SQL}) FROM json_each(m.tags) t WHERE ${TAG_SQL} IN (${uniq.map(() => '?').join(', ')})) = ?`,
          params: [...uniq, uniq.length],
        };
      }
    }
  }
  if (field in TIME_COLS) {
    const col = TIME_COLS[field];
    if (f.op === 'exists') return { sql: `(${col} IS NOT NULL) = ?`, params: [f.value ? 1 : 0] };
    return { sql: `${col} ${OPS[f.op]} ?`, params: [ms(f.value as string, at)] };
  }
  if (field === 'validAt') {
    const t = ms(f.value as string, at);
    return { sql: `(m.valid_from IS NULL OR m.valid_from <= ?) AND (m.valid_to IS NULL OR m.valid_to > ?)`, params: [t, t] };
  }
  if (field === 'importance' || field === 'confidence') {
    return { sql: `m.${field} ${OPS[f.op]} ?`, params: [f.value] };
  }
  if (field === 'anchors.path') {
    if (f.op === 'exists') {
      if (typeof f.value !== 'boolean')
        throw new CairnError('InvalidFilter', 'anchors.path exists takes true or false', { field: `${at}.value` });
      return { sql: `EXISTS (SELECT 1 FROM anchors a WHERE a.memory_rowid = m.rowid) = ?`, params: [f.value ? 1 : 0] };
    }
    if (typeof f.value !== 'string')
      throw new CairnError('InvalidFilter', `anchors.path ${f.op} takes a path string`, { field: `${at}.value` });
    if (f.op === 'prefix')
      return {
        sql: `EXISTS (SELECT 1 FROM anchors a WHERE a.memory_rowid = m.rowid AND substr(a.path, 1, ?) = ?)`,
        params: [f.value.length, f.value],
      };
    return { sql: `EXISTS (SELECT 1 FROM anchors a WHERE a.memory_rowid = m.rowid AND a.path = ?)`, params: [f.value] };
  }
  throw new CairnError('InvalidFilter', `unknown filter field`, { field: at });
}
