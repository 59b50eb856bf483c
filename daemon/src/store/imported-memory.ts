/**
 * What an imported memory record writes into a memory row, in one column order for both tables that hold memories:
 * `memories` (portable.ts) and a branch's `branch_memories` (portable-branches.ts): times back to milliseconds, JSON
 * fields to their text, no value hash (UNSTORED_VALUE_HASH).
 */
import type { Memory } from '../protocol/types';
import { fromIso, UNSTORED_VALUE_HASH } from './rows';

/** The columns imported from a record's memory, after the row's id and namespace id. */
export const IMPORTED_MEMORY_COLUMNS =
  'key, value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors, created_at, updated_at, ' +
  'valid_from, valid_to, expires_at, last_accessed_at, access_count, version, status, superseded_by, deleted_at, deleted_by, delete_reason';

/** One `?` per column of IMPORTED_MEMORY_COLUMNS. */
export const IMPORTED_MEMORY_PLACEHOLDERS = IMPORTED_MEMORY_COLUMNS.split(',')
  .map(() => '?')
  .join(', ');

/** The values of IMPORTED_MEMORY_COLUMNS for a record's memory and its delete reason. */
export function importedMemoryValues(m: Memory, deleteReason: string | null): unknown[] {
  return [
    m.key,
    m.value,
    UNSTORED_VALUE_HASH,
    m.summary,
    m.kind,
    JSON.stringify(m.tags),
    m.importance,
    m.confidence,
    m.source,
    JSON.stringify(m.properties),
    JSON.stringify(m.anchors),
    fromIso(m.createdAt),
    fromIso(m.updatedAt),
    fromIso(m.validFrom),
    fromIso(m.validTo),
    fromIso(m.expiresAt),
    fromIso(m.lastAccessedAt),
    m.accessCount,
    m.version,
    m.status,
    m.supersededBy,
    fromIso(m.deletedAt),
    m.deletedBy,
    deleteReason,
  ];
}
