/**
 * memory/upsert and memory/upsertBatch: the write rules (write-rules.ts) with this store's lookups in between,
 * then the memory row, its anchors, a history row and a change-log row, all in the caller's write transaction.
 * A batch runs each item in a savepoint of one transaction, so a refused item leaves the others written.
 */
import { recordGit } from './git-visibility';
import { CairnError } from '../protocol/errors';
import type { HistoryEntry, UpsertBatchResult, UpsertParams, UpsertResult } from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { writeAnchors } from './anchors';
import { stmt, writeTx } from './db';
import { appendHistory, inlineRowValue } from './history';
import { checkNamespace, ensureNamespace } from './namespaces';
import { rowBy, rowByKey } from './reads';
import { findRejection } from './rejected';
import { and, toMemory, UNSTORED_VALUE_HASH, type MemoryRow } from './rows';
import { pathInScope, scopePredicate } from './scope';
import type { Store } from './store';
import {
  contentColumns,
  mergeContent,
  refuseBadSupersede,
  refuseDeleted,
  refuseRejected,
  refuseStaleVersion,
  sameContent,
  summaryOf,
  validateContent,
  type NextContent,
} from './write-rules';

export function upsertBatch(store: Store, items: UpsertParams[], actor?: string): UpsertBatchResult {
  return store.transaction(() => {
    const results: UpsertBatchResult['results'] = items.map((it) => {
      try {
        const r = writeTx(store.db, () => upsertInTx(store, actor && !it.actor ? { ...it, actor } : it));
        return {
          ok: true as const,
          id: r.memory.id,
          created: r.created,
          position: r.position,
          version: r.memory.version,
          ...(r.warnings ? { warnings: r.warnings } : {}),
        };
      } catch (e) {
        if (e instanceof CairnError) return { ok: false as const, error: { code: e.code, message: e.message, data: e.data } };
        throw e;
      }
    });
    return { results, position: store.position() };
  });
}

/** Where a write goes: a valid namespace inside the caller's scope (a base write and a branch write check it first). */
export function checkWriteTarget(p: UpsertParams): void {
  checkNamespace(p.namespace);
  if (p.scope) {
    scopePredicate(p.scope); // validates the scope's own paths (InvalidNamespace)
    if (!pathInScope(p.namespace, p.scope))
      throw new CairnError('InvalidParams', `namespace ${p.namespace} is outside the given scope`, { field: 'namespace' });
  }
}

/** The write so far: its history op, the notes for its history entry, and the merged content. */
export interface OpenedWrite {
  op: HistoryEntry['op'];
  detail: Record<string, unknown>;
  next: NextContent;
  warn: { warnings?: NonNullable<UpsertResult['warnings']> };
}

/**
 * The rules every SQLite write opens with, in order (write-rules.ts): deletion sticks, optimistic concurrency, a
 * forgotten value is not re-learned (in the namespace `steps.namespace` gives; none: nothing was forgotten there;
 * a refusal is recorded through `steps.later`), then `steps.beforeMerge` (a base write's supersession) and the
 * merged content. The base write (upsertInTx) and a memory branch's (branch-writes.ts) both open with it.
 */
export function openWrite(
  store: Store,
  p: UpsertParams,
  existing: MemoryRow | undefined,
  steps: { namespace(): string | undefined; later(f: () => void): void; beforeMerge?(): void },
): OpenedWrite {
  const detail: Record<string, unknown> = {};
  const op = refuseDeleted(p, existing, detail);
  refuseStaleVersion(p, existing);
  const nsId = steps.namespace();
  if (nsId !== undefined) refuseRejected(p, findRejection(store.db, store.keys, nsId, p.value, steps.later), detail);
  steps.beforeMerge?.();
  return { op, detail, ...mergeContent(p, existing, op, detail) };
}

/** One upsert inside the caller's write transaction. */
export function upsertInTx(store: Store, p: UpsertParams): UpsertResult {
  checkWriteTarget(p);
  validateContent(p);
  const db = store.db;
  const now = store.now();
  const actor = p.actor ?? p.source ?? 'user';
  const existing = rowByKey(db, p.namespace, p.key);
  const valueHash = UNSTORED_VALUE_HASH;

  // The rules (write-rules.ts), in order, with this store's lookups in between.
  let nsId = '';
  let superseded: MemoryRow | undefined;
  const { op, detail, next, warn } = openWrite(store, p, existing, {
    namespace: () => (nsId = ensureNamespace(store, p.namespace)),
    later: (f) => store.afterWrite(f),
    beforeMerge: () => {
      if (p.supersedes !== undefined) {
        const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [p.supersedes] }, scopePredicate(p.scope));
        superseded = rowBy(db, where.sql, ...where.params);
      }
      refuseBadSupersede(p, existing, superseded);
    },
  });

  // Nothing changed: no new version, no history, no change-log row.
  if (existing && op === 'update' && !superseded && sameContent(existing, next)) {
    return { memory: toMemory(existing), created: false, position: store.position(), changed: false, ...warn };
  }
  const summary = summaryOf(p.value);

  const previous = existing ? toMemory(existing) : null;
  let rowid: number;
  let id: string;
  let version: number;
  const cols = contentColumns(next, valueHash, summary);
  if (existing) {
    id = existing.id;
    rowid = existing.rowid;
    version = existing.version + 1;
    if (existing.value !== next.value) inlineRowValue(db, id, existing.value);
    stmt(
      db,
      `UPDATE memories SET value = ?, value_hash = ?, summary = ?, kind = ?, tags = ?, importance = ?, confidence = ?, source = ?, properties = ?, anchors = ?,
           valid_from = ?, valid_to = ?, expires_at = ?, status = ?, updated_at = ?, version = ?, superseded_by = NULL,
           deleted_at = NULL, deleted_by = NULL, delete_reason = NULL WHERE rowid = ?`,
    ).run(...cols, now, version, rowid);
  } else {
    id = uuidv7(now);
    version = 1;
    rowid = Number(
      stmt(
        db,
        `INSERT INTO memories(id, ns_id, key, value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors,
             valid_from, valid_to, expires_at, status, created_at, updated_at, version)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ).run(id, nsId, p.key, ...cols, now, now, version).lastInsertRowid,
    );
  }
  const anchorsJson = cols[9] as string;
  if (existing ? existing.anchors !== anchorsJson : next.anchors.length > 0) writeAnchors(db, rowid, next.anchors);
  // The row as just written (what a re-read would return), without reading it back.
  const state = toMemory({
    rowid,
    id,
    ns_id: nsId,
    ns_path: p.namespace,
    key: p.key,
    value: next.value,
    value_hash: valueHash,
    summary,
    kind: next.kind,
    tags: cols[4] as string,
    importance: next.importance,
    confidence: next.confidence,
    source: next.source,
    properties: cols[8] as string,
    anchors: anchorsJson,
    created_at: existing ? existing.created_at : now,
    updated_at: now,
    valid_from: next.validFrom,
    valid_to: next.validTo,
    expires_at: next.expiresAt,
    last_accessed_at: existing ? existing.last_accessed_at : null,
    access_count: existing ? existing.access_count : 0,
    version,
    status: next.status,
    superseded_by: null,
    deleted_at: null,
    deleted_by: null,
    delete_reason: null,
  });
  appendHistory(store, id, op, actor, p.reason, version, previous, state, Object.keys(detail).length ? detail : undefined, now);
  if (p.git) recordGit(db, id, version, p.git, now); // git-aware memory: where this version was written
  let position = store.logChange(op, id, nsId, p.namespace, p.key);

  if (superseded) {
    const before = toMemory(superseded);
    stmt(db, `UPDATE memories SET status = 'superseded', superseded_by = ?, version = version + 1, updated_at = ? WHERE rowid = ?`).run(
      id,
      now,
      superseded.rowid,
    );
    const after = toMemory(rowBy(db, 'm.rowid = ?', superseded.rowid)!);
    appendHistory(
      store,
      superseded.id,
      'supersede',
      actor,
      p.reason ?? `superseded by ${p.namespace}/${p.key}`,
      after.version,
      before,
      after,
      {
        supersededBy: id,
      },
    );
    position = store.logChange('supersede', superseded.id, superseded.ns_id, superseded.ns_path, superseded.key);
  }
  return { memory: state, created: !existing, position, changed: true, ...warn };
}
