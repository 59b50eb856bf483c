/**
 * Export and import as JSON Lines records (see ExportRecord in the protocol).
 * A round trip into an empty store is exact: ids, versions, times, deletion
 * state, history, links and rejected values all come back as they were.
 * Importing into a non-empty store skips memories whose id or (namespace, key)
 * already exists, so an import never overwrites anything.
 */
import { stmt } from './db';
import { CairnError } from '../protocol/errors';
import { ExportRecord, type ExportParams, type ImportResult, type Memory } from '../protocol/types';
import { fromIso, isoReq, iso, MEMORY_COLUMNS, toMemory, type MemoryRow } from './rows';
import { scopePredicate } from './scope';
import { historyEntry, type Store } from './store';
import { normalizedValueHash } from '../text/hash';
import { rejectionHash } from './rejected';

export function exportRecords(store: Store, p: ExportParams): ExportRecord[] {
  const db = store.db;
  const out: ExportRecord[] = [{ type: 'header', format: 'cairn-export', version: 1, exportedAt: new Date(store.now()).toISOString(), schemaVersion: store.schemaVersion }];
  const scope = scopePredicate(p.scope, 'n.path');
  const nsWhere = scope ? scope.sql : '1';
  const nsParams = scope ? scope.params : [];
  const namespaces = stmt(db, `SELECT * FROM namespaces n WHERE ${nsWhere} ORDER BY created_at, id`).all(...nsParams) as {
    id: string; path: string; created_at: number; deleted_at: number | null; deleted_by: string | null;
  }[];
  for (const n of namespaces) out.push({ type: 'namespace', id: n.id, path: n.path, createdAt: isoReq(n.created_at), deletedAt: iso(n.deleted_at), deletedBy: n.deleted_by });
  const rows = stmt(db, `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${nsWhere} ORDER BY m.rowid`).all(...nsParams) as MemoryRow[];
  const ids = new Set<string>();
  for (const r of rows) {
    ids.add(r.id);
    out.push({ type: 'memory', memory: toMemory(r), namespaceId: r.ns_id, deleteReason: r.delete_reason });
  }
  if (p.includeHistory !== false) {
    const hist = stmt(db, 'SELECT * FROM history ORDER BY seq').iterate() as IterableIterator<Parameters<typeof historyEntry>[0]>;
    for (const h of hist) if (ids.has(h.memory_id) || (!scope && h.op === 'purge')) out.push({ type: 'history', entry: historyEntry(h) });
  }
  const links = stmt(db, 'SELECT * FROM links ORDER BY created_at, src, dst, type').all() as { src: string; dst: string; type: Memory['kind']; created_at: number; actor: string }[];
  for (const l of links) if (ids.has(l.src) && ids.has(l.dst)) out.push({ type: 'link', link: { from: l.src, to: l.dst, type: l.type as never, createdAt: isoReq(l.created_at), actor: l.actor } });
  const nsIds = new Set(namespaces.map((n) => n.id));
  const rejected = stmt(db, 'SELECT * FROM rejected_values ORDER BY at').all() as { ns_id: string; value_hash: string; memory_id: string | null; actor: string; at: number }[];
  for (const r of rejected) if (nsIds.has(r.ns_id)) out.push({ type: 'rejected', namespaceId: r.ns_id, valueHash: r.value_hash, memoryId: r.memory_id, actor: r.actor, at: isoReq(r.at) });
  return out;
}

export function importRecords(store: Store, raw: unknown[], actor = 'import'): ImportResult {
  const records = raw.map((r, i) => {
    const parsed = ExportRecord.safeParse(r);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CairnError('InvalidParams', `records[${i}]: ${issue.message}`, { field: `records[${i}]${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}` });
    }
    return parsed.data;
  });
  const db = store.db;
  let memories = 0, history = 0, links = 0, skipped = 0;
  const position = store.transaction(() => {
    const nsById = stmt(db, 'SELECT id FROM namespaces WHERE id = ?');
    const nsLive = stmt(db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL');
    const localNs = (id: string, path: string, deleted: boolean): string => {
      if (nsById.get(id)) return id;
      const live = nsLive.get(path) as { id: string } | undefined;
      if (live && !deleted) return live.id;
      stmt(db, 'INSERT INTO namespaces(id, path, created_at, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)').run(id, path, store.now(), deleted ? store.now() : null, deleted ? actor : null);
      return id;
    };
    const imported = new Set<string>();
    let last = 0;
    for (const rec of records) {
      switch (rec.type) {
        case 'header':
          if (rec.format !== 'cairn-export') throw new CairnError('InvalidParams', 'not a Cairn export', { field: 'records' });
          break;
        case 'namespace': {
          if (nsById.get(rec.id)) break;
          const live = nsLive.get(rec.path);
          if (live && rec.deletedAt === null) break; // memories map onto the live namespace by path
          stmt(db, 'INSERT INTO namespaces(id, path, created_at, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)').run(rec.id, rec.path, fromIso(rec.createdAt), fromIso(rec.deletedAt), rec.deletedBy);
          break;
        }
        case 'memory': {
          const m = rec.memory;
          const nsId = localNs(rec.namespaceId, m.namespace, false);
          const clash = stmt(db, 'SELECT 1 FROM memories WHERE id = ? OR (ns_id = ? AND key = ?)').get(m.id, nsId, m.key);
          if (clash) { skipped++; break; }
          const rowid = Number(stmt(db, 
            `INSERT INTO memories(id, ns_id, key, value, value_hash, summary, kind, tags, importance, confidence, source, properties, anchors,
               created_at, updated_at, valid_from, valid_to, expires_at, last_accessed_at, access_count, version, status, superseded_by, deleted_at, deleted_by, delete_reason)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          ).run(m.id, nsId, m.key, m.value, normalizedValueHash(m.value), m.summary, m.kind, JSON.stringify(m.tags), m.importance, m.confidence, m.source,
            JSON.stringify(m.properties), JSON.stringify(m.anchors), fromIso(m.createdAt), fromIso(m.updatedAt), fromIso(m.validFrom), fromIso(m.validTo),
            fromIso(m.expiresAt), fromIso(m.lastAccessedAt), m.accessCount, m.version, m.status, m.supersededBy, fromIso(m.deletedAt), m.deletedBy, rec.deleteReason).lastInsertRowid);
          store.reindexImported(rowid);
          imported.add(m.id);
          last = store.logImport(m.id, nsId, m.namespace, m.key);
          memories++;
          break;
        }
        case 'history': {
          const h = rec.entry;
          if (!imported.has(h.memoryId) && stmt(db, 'SELECT 1 FROM memories WHERE id = ?').get(h.memoryId)) break; // history of a memory we kept as it was
          stmt(db, 'INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
            .run(h.memoryId, h.op, h.actor, h.reason, fromIso(h.at), h.version, h.previous ? JSON.stringify(h.previous) : null, h.state ? JSON.stringify(h.state) : null, h.detail ? JSON.stringify(h.detail) : null);
          history++;
          break;
        }
        case 'link': {
          const l = rec.link;
          const both = stmt(db, 'SELECT count(*) AS c FROM memories WHERE id IN (?, ?)').get(l.from, l.to) as { c: number };
          if (both.c < 2) { skipped++; break; }
          links += stmt(db, 'INSERT OR IGNORE INTO links(src, dst, type, created_at, actor) VALUES (?, ?, ?, ?, ?)').run(l.from, l.to, l.type, fromIso(l.createdAt), l.actor).changes;
          break;
        }
        case 'rejected': {
          if (!nsById.get(rec.namespaceId)) { skipped++; break; }
          // Keyed hashes are keyed with the exporting store's secret: re-key from the memory's value when it came along.
          const owner = rec.memoryId !== null && store.keys ? (stmt(db, 'SELECT value FROM memories WHERE id = ? AND ns_id = ?').get(rec.memoryId, rec.namespaceId) as { value: string } | undefined) : undefined;
          const hash = owner ? rejectionHash(store.keys!, owner.value) : rec.valueHash;
          stmt(db, 'INSERT OR IGNORE INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES (?, ?, ?, ?, ?)').run(rec.namespaceId, hash, rec.memoryId, rec.actor, fromIso(rec.at));
          break;
        }
      }
    }
    return last || store.position();
  });
  return { memories, history, links, skipped, position };
}
