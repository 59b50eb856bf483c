/**
 * A dry run of store/import: what each memory record of an export would do to this store, without writing.
 * It follows importRecords' own rules (portable.ts): a memory is written only when neither its id nor its
 * (namespace, key) exists and its value is not rejected there; everything else is skipped and reported here.
 */
import { stmt } from './db';
import { CairnError } from '../protocol/errors';
import { ExportRecord, type ImportOutcome, type ImportPreviewParams, type ImportPreviewResult } from '../protocol/types';
import { findRejection } from './rejected';
import { outOfScope } from './portable';
import { previewEpisodes } from './portable-episodes';
import type { Store } from './store';

/** Parse export records, naming the first bad one as importRecords does. */
export function parseExportRecords(raw: unknown[]): ExportRecord[] {
  return raw.map((r, i) => {
    const parsed = ExportRecord.safeParse(r);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CairnError('InvalidParams', `records[${i}]: ${issue.message}`, {
        field: `records[${i}]${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`,
      });
    }
    return parsed.data;
  });
}

interface Existing {
  id: string;
  version: number;
  value: string;
  deleted: number;
}

export function importPreview(store: Store, p: ImportPreviewParams): ImportPreviewResult {
  const records = parseExportRecords(p.records);
  // A scoped caller previews only what it may import: the same refusal as store/import, before any lookup.
  records.forEach((r, i) => {
    const refused = outOfScope(r, i, p.scope);
    if (refused) throw refused;
  });
  const db = store.db;
  const sample = p.sample ?? 200;
  const nsById = stmt(db, 'SELECT id FROM namespaces WHERE id = ?');
  const nsLive = stmt(db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL');
  const cols = `m.id, m.version, m.value, (m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL) AS deleted FROM memories m JOIN namespaces n ON n.id = m.ns_id`;
  const byId = stmt(db, `SELECT ${cols} WHERE m.id = ?`);
  const byKey = stmt(db, `SELECT ${cols} WHERE m.ns_id = ? AND m.key = ?`);
  const counts: ImportPreviewResult['counts'] = {
    new: 0,
    unchanged: 0,
    changed: 0,
    conflicting: 0,
    refusedDeleted: 0,
    refusedForgotten: 0,
  };
  const other = { namespaces: 0, history: 0, links: 0, rejected: 0, episodes: 0, events: 0, branches: 0, branchRows: 0, branchHistory: 0 };
  const items: ImportPreviewResult['items'] = [];
  let memories = 0;
  for (const rec of records) {
    switch (rec.type) {
      case 'namespace':
        other.namespaces++;
        continue;
      case 'history':
        other.history++;
        continue;
      case 'link':
        other.links++;
        continue;
      case 'rejected':
        other.rejected++;
        continue;
      case 'episode':
        other.episodes++;
        continue;
      case 'event':
        other.events++;
        continue;
      case 'branch':
        other.branches++;
        continue;
      case 'branchMemory':
        other.branchRows++;
        continue;
      case 'branchHistory':
        other.branchHistory++;
        continue;
      case 'header':
        continue;
    }
    const m = rec.memory;
    const nsId = nsById.get(rec.namespaceId) ? rec.namespaceId : ((nsLive.get(m.namespace) as { id: string } | undefined)?.id ?? null);
    const existing = (byId.get(m.id) ?? (nsId ? byKey.get(nsId, m.key) : undefined)) as Existing | undefined;
    let outcome: ImportOutcome;
    if (!existing) {
      // keyed or legacy hash; a preview never re-keys (it writes nothing)
      outcome = nsId && m.deletedAt === null && findRejection(db, store.keys, nsId, m.value, () => undefined) ? 'refusedForgotten' : 'new';
    } else if (existing.deleted && m.deletedAt === null) {
      outcome = 'refusedDeleted';
    } else if (existing.id === m.id && existing.version === m.version && existing.value === m.value) {
      outcome = 'unchanged';
    } else if (existing.id === m.id && m.version > existing.version) {
      outcome = 'changed';
    } else {
      outcome = 'conflicting';
    }
    counts[outcome]++;
    memories++;
    if (items.length < sample)
      items.push({
        id: m.id,
        namespace: m.namespace,
        key: m.key,
        outcome,
        fileVersion: m.version,
        storeVersion: existing ? existing.version : null,
      });
  }
  return { counts, records: other, items, truncated: memories > items.length, ...previewEpisodes(db, records) };
}
