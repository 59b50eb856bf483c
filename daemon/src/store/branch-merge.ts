/**
 * Diff and merge of a memory branch (store/branches.ts): what the branch added, changed and deleted against the base,
 * and its merge through the Store's own write path (history, change log, deletion sticks, forgotten values) in one
 * transaction, refused while a key changed on both sides has no resolution.
 */
import { CairnError } from '../protocol/errors';
import type { BranchChange, BranchDiffResult, BranchMergeParams, BranchMergeResult } from '../protocol/types';
import { baseRow, OWN_FROM, type BranchRow, type OwnRow } from './branch-common';
import type { Branches } from './branches';
import { stmt } from './db';
import { MEMORY_COLUMNS, toMemory } from './rows';

export function diffBranch(br: Branches, name: string): BranchDiffResult {
  const b = br.open(name, 'name');
  return { branch: br.toBranch(b), changes: branchChanges(br, b) };
}

function branchChanges(br: Branches, b: BranchRow): BranchChange[] {
  const rows = stmt(br.db, `SELECT ${MEMORY_COLUMNS}, m.base_version FROM ${OWN_FROM} WHERE m.branch_id = ? ORDER BY m.ns_path, m.key`).all(
    b.id,
  ) as OwnRow[];
  const out: BranchChange[] = [];
  for (const r of rows) {
    const base = baseRow(br.db, r.ns_path, r.key);
    const baseLive = base && base.deleted_at === null;
    if (r.deleted_at !== null && r.base_version === null && !base) continue; // added and deleted on the branch: no change
    const change: BranchChange['change'] = r.deleted_at !== null ? 'deleted' : r.base_version === null ? 'added' : 'changed';
    const conflict = (base?.version ?? null) !== r.base_version && !(r.deleted_at !== null && base !== undefined && !baseLive);
    out.push({
      namespace: r.ns_path,
      key: r.key,
      change,
      baseVersion: r.base_version,
      base: base ? toMemory(base) : null,
      branch: toMemory(r),
      conflict,
    });
  }
  return out;
}

export function mergeBranch(br: Branches, p: BranchMergeParams): BranchMergeResult {
  const actor = p.actor ?? 'user';
  const reason = p.reason ? `merge of branch ${p.name}: ${p.reason}` : `merge of branch ${p.name}`;
  return br.store.transaction(() => {
    const b = br.open(p.name, 'name');
    const changes = branchChanges(br, b);
    const k = (ns: string, key: string) => `${ns}\u0000${key}`;
    const decided = new Map((p.resolutions ?? []).map((r) => [k(r.namespace, r.key), r.take]));
    (p.resolutions ?? []).forEach((r, i) => {
      if (!changes.some((c) => c.namespace === r.namespace && c.key === r.key))
        throw new CairnError('InvalidParams', `branch ${p.name} has no change of ${r.namespace}/${r.key}`, {
          field: `resolutions[${i}]`,
        });
    });
    const open = changes.filter((c) => c.conflict && !decided.has(k(c.namespace, c.key)));
    if (open.length > 0) return { merged: false, applied: 0, conflicts: open, position: br.store.position() };
    let applied = 0;
    for (const c of changes) {
      const take = decided.get(k(c.namespace, c.key)) ?? 'branch';
      if (take === 'base') continue;
      const target = { namespace: c.namespace, key: c.key, actor, reason };
      if (take !== 'branch') {
        br.store.upsert({ ...target, ...take, restore: true });
      } else if (c.change === 'deleted') {
        if (!c.base || c.base.deletedAt !== null) continue;
        br.store.delete(target);
      } else {
        const m = c.branch;
        br.store.upsert({
          ...target,
          value: m.value,
          kind: m.kind,
          tags: m.tags,
          importance: m.importance,
          confidence: m.confidence,
          source: m.source,
          properties: m.properties,
          anchors: m.anchors,
          validFrom: m.validFrom,
          validTo: m.validTo,
          expiresAt: m.expiresAt,
          status: m.status === 'proposed' ? 'proposed' : 'active',
          restore: true,
        });
      }
      applied++;
    }
    br.drop(b.id);
    br.close(b.id, 'merged', actor);
    return { merged: true, applied, conflicts: [], position: br.store.position() };
  });
}
