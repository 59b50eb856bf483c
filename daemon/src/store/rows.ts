/** Row shapes and their conversion to protocol types. */
import type { Anchor, HistoryEntry, Include, Memory, MemoryKind, MemoryStatus, Properties } from '../protocol/types';
import { ROW_VALUE_GLOB } from './history-codec';
import type { SqlFragment } from './scope';

export interface MemoryRow {
  rowid: number;
  id: string;
  ns_id: string;
  ns_path: string;
  key: string;
  value: string;
  value_hash: string;
  summary: string | null;
  kind: string;
  tags: string;
  importance: number;
  confidence: number;
  source: string;
  properties: string;
  anchors: string;
  created_at: number;
  updated_at: number;
  valid_from: number | null;
  valid_to: number | null;
  expires_at: number | null;
  last_accessed_at: number | null;
  access_count: number;
  version: number;
  status: string;
  superseded_by: string | null;
  deleted_at: number | null;
  deleted_by: string | null;
  delete_reason: string | null;
}

/**
 * What new rows hold in `memories.value_hash`: nothing. No query has read it since schema 3 (forgotten values are
 * found by keyed hashes in `rejected_values`), and the hex hash took 6.4 MiB at 100k memories. Rows written before
 * keep theirs, unread; the column stays so the write statements keep one shape with the team store's.
 */
export const UNSTORED_VALUE_HASH = '';

/** SELECT list for a memory joined with its namespace (aliases m, n). */
export const MEMORY_COLUMNS = `m.rowid AS rowid, m.id, m.ns_id, n.path AS ns_path, m.key, m.value, m.value_hash, m.summary, m.kind, m.tags,
  m.importance, m.confidence, m.source, m.properties, m.anchors, m.created_at, m.updated_at, m.valid_from, m.valid_to,
  m.expires_at, m.last_accessed_at, m.access_count, m.version, m.status, m.superseded_by, m.deleted_at, m.deleted_by, m.delete_reason`;

/**
 * SELECT list for a history row (alias h): its columns plus `row_value`, the memory row's current value, read only
 * for a state that takes its value from the row (see history-codec.ts).
 */
export const HISTORY_COLUMNS = `h.*, CASE WHEN h.state GLOB '${ROW_VALUE_GLOB}' THEN (SELECT mv.value FROM memories mv WHERE mv.id = h.memory_id) END AS row_value`;

export const iso = (ms: number | null): string | null => (ms === null || ms === undefined ? null : new Date(ms).toISOString());
export const isoReq = (ms: number): string => new Date(ms).toISOString();
export const fromIso = (s: string | null | undefined): number | null => (s === null || s === undefined ? null : Date.parse(s));

/** A history row as stored, on the team store (PostgreSQL) and locally (history.ts adds the row's value): states and detail are JSON text. */
export interface PgHistoryRow {
  seq: number;
  memory_id: string;
  op: HistoryEntry['op'];
  actor: string;
  reason: string | null;
  at: number;
  version: number;
  previous: string | null;
  state: string | null;
  detail: string | null;
}

/** The protocol's HistoryEntry of a team-store history row (its history, audit and export read it the same way). */
export function pgHistoryEntry(r: PgHistoryRow): HistoryEntry {
  return {
    seq: r.seq,
    memoryId: r.memory_id,
    op: r.op,
    actor: r.actor,
    reason: r.reason,
    at: isoReq(r.at),
    version: r.version,
    previous: r.previous ? JSON.parse(r.previous) : null,
    state: r.state ? JSON.parse(r.state) : null,
    detail: r.detail ? JSON.parse(r.detail) : null,
  };
}

export function toMemory(r: MemoryRow): Memory {
  return {
    id: r.id,
    namespace: r.ns_path,
    key: r.key,
    value: r.value,
    summary: r.summary,
    kind: r.kind as MemoryKind,
    tags: JSON.parse(r.tags) as string[],
    importance: r.importance,
    confidence: r.confidence,
    source: r.source,
    properties: JSON.parse(r.properties) as Properties,
    anchors: JSON.parse(r.anchors) as Anchor[],
    createdAt: isoReq(r.created_at),
    updatedAt: isoReq(r.updated_at),
    validFrom: iso(r.valid_from),
    validTo: iso(r.valid_to),
    expiresAt: iso(r.expires_at),
    lastAccessedAt: iso(r.last_accessed_at),
    accessCount: r.access_count,
    version: r.version,
    status: r.status as MemoryStatus,
    supersededBy: r.superseded_by,
    deletedAt: iso(r.deleted_at),
    deletedBy: r.deleted_by,
  };
}

/**
 * The default visibility rules as SQL over aliases m and n: live namespace,
 * not deleted, not expired, not superseded, inside its validity window, not
 * proposed — each relaxable through `include`.
 */
export function visibility(include: Include | undefined, now: number): SqlFragment {
  const inc = include ?? {};
  const parts = ['n.deleted_at IS NULL'];
  const params: unknown[] = [];
  if (!inc.deleted) parts.push('m.deleted_at IS NULL');
  if (!inc.expired) {
    parts.push('(m.expires_at IS NULL OR m.expires_at > ?)');
    params.push(now);
  }
  if (!inc.superseded) parts.push(`m.status != 'superseded'`);
  if (!inc.proposed) parts.push(`m.status != 'proposed'`);
  if (!inc.outOfValidity) {
    parts.push('(m.valid_from IS NULL OR m.valid_from <= ?) AND (m.valid_to IS NULL OR m.valid_to > ?)');
    params.push(now, now);
  }
  return { sql: parts.join(' AND '), params };
}

/** AND together fragments, skipping nulls. */
export function and(...frags: (SqlFragment | null | undefined)[]): SqlFragment {
  const live = frags.filter((f): f is SqlFragment => !!f && f.sql.length > 0);
  if (live.length === 0) return { sql: '1', params: [] };
  return { sql: live.map((f) => `(${f.sql})`).join(' AND '), params: live.flatMap((f) => f.params) };
}
