/**
 * Writes on a memory branch (store/branches.ts): memory/upsert and memory/delete under the Store's write rules, the row
 * written on the branch (a key's first write copies nothing but the base version it started from).
 */
import { CairnError } from '../protocol/errors';
import { isUnder } from '../protocol/namespace';
import type { DeleteParams, UpsertParams, UpsertResult, WriteResult } from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { baseRow, CONTENT, OWN_FROM, ownRow, type BranchRow } from './branch-common';
import { appendBranchHistory } from './branch-history';
import { resolveTarget } from './branch-reads';
import type { Branches } from './branches';
import { stmt } from './db';
import { iso, MEMORY_COLUMNS, toMemory, UNSTORED_VALUE_HASH, type MemoryRow } from './rows';
import { contentColumns, sameContent, summaryOf, validateContent } from './write-rules';
import { checkWriteTarget, openWrite } from './writes';

function checkWrite(b: BranchRow, namespace: string): void {
  if (!isUnder(namespace, b.root))
    throw new CairnError('InvalidParams', `namespace ${namespace} is outside branch ${b.name}'s root ${b.root}`, { field: 'namespace' });
}

/** memory/upsert on a branch: the Store's write rules, the row written on the branch. */
export function upsertOnBranch(br: Branches, p: UpsertParams & { branch: string }): UpsertResult {
  checkWriteTarget(p);
  if (p.supersedes !== undefined)
    throw new CairnError('InvalidParams', 'supersedes is not supported on a branch yet', { field: 'supersedes' });
  validateContent(p);
  return br.wrote(
    br.store.transaction(() => {
      const b = br.open(p.branch);
      checkWrite(b, p.namespace);
      const own = ownRow(br.db, b.id, p.namespace, p.key);
      const base = own ? undefined : baseRow(br.db, p.namespace, p.key);
      const existing: MemoryRow | undefined = own ?? base;
      // The base's rules; the namespace is not made on a branch (a forgotten value can only be in a live one).
      let ns: { id: string } | undefined;
      const { op, next, warn } = openWrite(br.store, p, existing, {
        namespace: () =>
          (ns = stmt(br.db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL').get(p.namespace) as
            { id: string } | undefined)?.id,
        later: () => {},
      });
      if (existing && op === 'update' && sameContent(existing, next))
        return { memory: toMemory(existing), created: false, position: br.store.position(), changed: false, ...warn };
      const now = br.store.now();
      const cols = contentColumns(next, UNSTORED_VALUE_HASH, summaryOf(p.value));
      let rowid: number;
      if (own) {
        rowid = own.rowid;
        stmt(
          br.db,
          `UPDATE branch_memories SET value = ?, value_hash = ?, summary = ?, kind = ?, tags = ?, importance = ?, confidence = ?, source = ?,
           properties = ?, anchors = ?, valid_from = ?, valid_to = ?, expires_at = ?, status = ?, updated_at = ?, version = version + 1,
           deleted_at = NULL, deleted_by = NULL, delete_reason = NULL WHERE rowid = ?`,
        ).run(...cols, now, rowid);
      } else {
        rowid = Number(
          stmt(
            br.db,
            `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at, version)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(
            b.id,
            base?.version ?? null,
            p.namespace,
            base?.id ?? uuidv7(now),
            base?.ns_id ?? ns?.id ?? '',
            p.key,
            ...cols,
            base?.created_at ?? now,
            now,
            (base?.version ?? 0) + 1,
          ).lastInsertRowid,
        );
      }
      br.indexRow(rowid);
      br.touched(b.id);
      const row = stmt(br.db, `SELECT ${MEMORY_COLUMNS} FROM ${OWN_FROM} WHERE m.rowid = ?`).get(rowid) as MemoryRow;
      const memory = toMemory(row);
      appendBranchHistory(br.db, {
        branchId: b.id,
        op: op === 'restore' ? 'restore' : existing ? 'update' : 'create',
        actor: p.actor ?? 'user',
        reason: p.reason,
        at: now,
        previous: existing ? toMemory(existing) : null,
        state: memory,
      });
      return { memory, created: !existing, position: br.store.position(), changed: true, ...warn };
    }),
  );
}

/** memory/delete on a branch: the branch's row of the memory is marked deleted (a base memory gets a deleted copy). */
export function deleteOnBranch(br: Branches, p: DeleteParams & { branch: string }): WriteResult {
  return br.wrote(
    br.store.transaction(() => {
      const b = br.open(p.branch);
      const { own, base, field } = resolveTarget(br, b, p);
      const row = own ?? base;
      if (!row) throw new CairnError('NotFound', `no memory ${p.id ?? `${p.namespace}/${p.key}`}${p.scope ? ' in scope' : ''}`, { field });
      checkWrite(b, row.ns_path);
      if (row.deleted_at !== null)
        throw new CairnError('InvalidState', `${row.ns_path}/${row.key} is already deleted`, {
          field,
          deletedAt: iso(row.deleted_at),
          deletedBy: row.deleted_by,
        });
      const now = br.store.now();
      const actor = p.actor ?? 'user';
      let rowid: number;
      if (own) {
        rowid = own.rowid;
        stmt(
          br.db,
          'UPDATE branch_memories SET deleted_at = ?, deleted_by = ?, delete_reason = ?, version = version + 1, updated_at = ? WHERE rowid = ?',
        ).run(now, actor, p.reason ?? null, now, rowid);
      } else {
        const r = base!;
        rowid = Number(
          stmt(
            br.db,
            `INSERT INTO branch_memories(branch_id, base_version, ns_path, id, ns_id, key, ${CONTENT}, created_at, updated_at, version,
             deleted_at, deleted_by, delete_reason)
           SELECT ?, m.version, ?, m.id, m.ns_id, m.key, ${CONTENT.split(', ')
             .map((c) => `m.${c}`)
             .join(', ')}, m.created_at, ?, m.version + 1, ?, ?, ? FROM memories m WHERE m.rowid = ?`,
          ).run(b.id, r.ns_path, now, now, actor, p.reason ?? null, r.rowid).lastInsertRowid,
        );
      }
      br.indexRow(rowid);
      br.touched(b.id);
      const after = toMemory(stmt(br.db, `SELECT ${MEMORY_COLUMNS} FROM ${OWN_FROM} WHERE m.rowid = ?`).get(rowid) as MemoryRow);
      appendBranchHistory(br.db, {
        branchId: b.id,
        op: 'delete',
        actor,
        reason: p.reason,
        at: now,
        previous: toMemory(row),
        state: after,
      });
      return { memory: after, position: br.store.position() };
    }),
  );
}
