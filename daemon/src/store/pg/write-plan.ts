/**
 * What an upsert does, decided in TypeScript from rows read beforehand (write-rules.ts, in the same order as the
 * SQLite store), and the column values and resulting row of that decision.
 */
import { CairnError } from '../../protocol/errors';
import type { HistoryEntry, UpsertParams, UpsertResult } from '../../protocol/types';
import { normalizedValueHash } from '../../text/hash';
import { identifierWords } from '../../text/identifiers';
import type { MemoryRow } from '../rows';
import { pathInScope } from '../scope';
import {
  contentColumns,
  mergeContent,
  refuseBadSupersede,
  refuseDeleted,
  refuseRejected,
  refuseStaleVersion,
  sameContent,
  summaryOf,
  validateContent as validateFields,
  type NextContent,
} from '../write-rules';
import { checkNamespace } from './lookup';
import { Params, scopeSql } from './sql';

export interface WritePlan {
  op: HistoryEntry['op'];
  detail: Record<string, unknown>;
  next: NextContent;
  warn: { warnings?: NonNullable<UpsertResult['warnings']> };
  /** The stored row already holds exactly this: nothing is written. */
  unchanged: boolean;
  summary: string | null;
}

/** The document a memory's full-text vector is built from: key (A), tags (B), value + split identifiers (C), summary (D). */
export function ftsDocument(key: string, value: string, summary: string | null, tags: string[]): [string, string, string, string] {
  return [key.replace(/[._/:-]+/g, ' ') + ' ' + key, tags.join(' '), `${value}\n${identifierWords(`${key} ${value}`)}`, summary ?? ''];
}

/** The row a planned write leaves (what a re-read would return), built without reading it back. */
export function stateRow(
  p: UpsertParams,
  w: WritePlan,
  existing: MemoryRow | undefined,
  nsId: string,
  id: string,
  version: number,
  now: number,
): MemoryRow {
  const n = w.next;
  return {
    rowid: existing?.rowid ?? 0,
    id,
    ns_id: nsId,
    ns_path: p.namespace,
    key: p.key,
    value: n.value,
    value_hash: normalizedValueHash(p.value),
    summary: w.summary,
    kind: n.kind,
    tags: JSON.stringify(n.tags),
    importance: n.importance,
    confidence: n.confidence,
    source: n.source,
    properties: JSON.stringify(n.properties),
    anchors: JSON.stringify(n.anchors),
    created_at: existing?.created_at ?? now,
    updated_at: now,
    valid_from: n.validFrom,
    valid_to: n.validTo,
    expires_at: n.expiresAt,
    last_accessed_at: existing?.last_accessed_at ?? null,
    access_count: existing?.access_count ?? 0,
    version,
    status: n.status,
    superseded_by: null,
    deleted_at: null,
    deleted_by: null,
    delete_reason: null,
  };
}

export function validateContent(p: UpsertParams): void {
  checkNamespace(p.namespace);
  if (p.scope) {
    scopeSql(new Params(), p.scope); // validates the scope's own paths (InvalidNamespace)
    if (!pathInScope(p.namespace, p.scope))
      throw new CairnError('InvalidParams', `namespace ${p.namespace} is outside the given scope`, { field: 'namespace' });
  }
  validateFields(p);
}

/**
 * What a write does, decided from the stored row (or its absence), the rejected-value
 * record and the memory it supersedes. Throws the typed refusals (Deleted,
 * VersionConflict, RejectedValue, supersession errors) before anything is written.
 */
export function plan(
  p: UpsertParams,
  existing: MemoryRow | undefined,
  rejected: { actor: string; at: number } | undefined,
  superseded: MemoryRow | undefined,
): WritePlan {
  // The rules (write-rules.ts) in the same order as the SQLite store, on rows fetched beforehand.
  const detail: Record<string, unknown> = {};
  const op = refuseDeleted(p, existing, detail);
  refuseStaleVersion(p, existing);
  refuseRejected(p, rejected, detail);
  refuseBadSupersede(p, existing, superseded);
  const { next, warn } = mergeContent(p, existing, op, detail);
  const unchanged = !!existing && op === 'update' && !superseded && sameContent(existing, next);
  return { op, detail, next, warn, unchanged, summary: unchanged ? null : summaryOf(p.value) };
}

/** The column values of a planned write ($1..$18 of the write statements: 14 columns, then the four full-text parts). */
export function writeValues(p: UpsertParams, w: WritePlan): unknown[] {
  return [...contentColumns(w.next, normalizedValueHash(p.value), w.summary), ...ftsDocument(p.key, w.next.value, w.summary, w.next.tags)];
}
