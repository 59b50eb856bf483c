/**
 * Export and import as JSON Lines records (see ExportRecord in the protocol); export reads in portable-export.ts
 * (paged: export-sessions.ts), import writes here.
 * A round trip into an empty store is exact: ids, versions, times, deletion
 * state, history, links and rejected values all come back as they were.
 * Importing into a non-empty store skips memories whose id or (namespace, key)
 * already exists, so an import never overwrites anything.
 */
import { stmt } from './db';
import { CairnError } from '../protocol/errors';
import { ExportRecord, Limits, type Scope, type ImportResult } from '../protocol/types';
import { fromIso } from './rows';
import { pathInScope } from './scope';
import type { Store } from './store';
import { findRejection, rejectionHash } from './rejected';
import { pace, type RequestContext } from '../server/limits';
import { importEpisode, importEvent, type EpisodeCounts } from './portable-episodes';
import { catchUpEventText } from './events-search';
import { IMPORTED_MEMORY_COLUMNS, IMPORTED_MEMORY_PLACEHOLDERS, importedMemoryValues } from './imported-memory';
export { ExportWalker, exportRecords } from './portable-export';
export { closeExportSessions, exportPage } from './export-sessions';
import { importBranch, importBranchHistory, importBranchRow, type BranchCounts } from './portable-branches';

/** Work between two yields of a long request: about this many ms (and at most Limits.chunkRecords records). */
const CHUNK_MS = 20;

/**
 * Ids of memories this process imported lately, per store: a streamed import
 * arrives in many store/import calls, and a memory's history may come in a
 * later call than the memory itself. Bounded; cleared past 500k ids.
 */
const importedIds = new WeakMap<Store, Set<string>>();
function importedBy(store: Store): Set<string> {
  let set = importedIds.get(store);
  if (!set || set.size > 500_000) importedIds.set(store, (set = new Set()));
  return set;
}

/**
 * Import records in chunks of Limits.chunkRecords, each in its own transaction, yielding to the event loop
 * between chunks (server/limits.ts `pace`) so other clients are served while a large import runs. Every record
 * is validated (yielding too) before the first is written. Past the request's deadline it stops at a chunk
 * boundary with RequestTimeLimit; what was written stands, and sending the same records again skips it.
 */
/**
 * A namespace or memory record outside the caller's scope, as the InvalidParams to refuse the import with (before
 * anything is written); null when it is inside (or there is no scope). store/importPreview applies the same rule.
 */
export function outOfScope(rec: ExportRecord, i: number, scope: Scope | undefined): CairnError | null {
  if (!scope) return null;
  const path =
    rec.type === 'namespace'
      ? rec.path
      : rec.type === 'memory'
        ? rec.memory.namespace
        : rec.type === 'episode'
          ? rec.episode.namespace
          : rec.type === 'branch'
            ? rec.branch.root
            : rec.type === 'branchMemory'
              ? rec.memory.namespace
              : null;
  if (path === null || pathInScope(path, scope)) return null;
  return new CairnError('InvalidParams', `records[${i}]: namespace ${path} is outside the caller's scope`, { field: `records[${i}]` });
}

export async function importRecords(
  store: Store,
  raw: unknown[],
  actor = 'import',
  ctx?: RequestContext,
  progress?: (done: number, total: number) => void,
  scope?: Scope,
  /** Told when branch rows were written (their vectors follow: Branches.onWrite). */
  onBranchRows?: () => void,
): Promise<ImportResult> {
  const chunk = Limits.chunkRecords;
  const records: ExportRecord[] = [];
  let until = performance.now() + CHUNK_MS;
  for (let i = 0; i < raw.length; i++) {
    const parsed = ExportRecord.safeParse(raw[i]);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new CairnError('InvalidParams', `records[${i}]: ${issue.message}`, {
        field: `records[${i}]${issue.path.map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`,
      });
    }
    const refused = outOfScope(parsed.data, i, scope);
    if (refused) throw refused;
    records.push(parsed.data);
    // Validation yields too, but is bounded by the message size: the deadline is checked between written chunks.
    if (performance.now() > until && i + 1 < raw.length) {
      await pace(undefined, {});
      until = performance.now() + CHUNK_MS;
    }
  }
  const counts = { memories: 0, history: 0, links: 0, skipped: 0 };
  const episodeCounts: EpisodeCounts = { episodes: 0, events: 0, skipped: 0 };
  const branchCounts: BranchCounts = { branches: 0, branchRows: 0, history: 0, skipped: 0 };
  let position = 0;
  for (let at = 0; at < records.length;) {
    if (at > 0) await pace(ctx, { records: at, total: records.length, ...counts });
    const applied = applyRecords(
      store,
      records,
      at,
      Math.min(at + chunk, records.length),
      performance.now() + CHUNK_MS,
      actor,
      counts,
      scope,
      episodeCounts,
      branchCounts,
    );
    position = applied.position || position;
    at = applied.next;
    progress?.(at, records.length);
  }
  if (episodeCounts.events > 0) catchUpEventText(store.db); // the events' vectors follow (index/wait covers them)
  if (branchCounts.branchRows > 0) onBranchRows?.(); // their vectors follow (index/wait covers them)
  return {
    ...counts,
    history: counts.history + branchCounts.history,
    skipped: counts.skipped + episodeCounts.skipped + branchCounts.skipped,
    branches: branchCounts.branches,
    branchRows: branchCounts.branchRows,
    position: position || store.position(),
    episodes: episodeCounts.episodes,
    events: episodeCounts.events,
  };
}

/**
 * Apply records[from, to) in one transaction, stopping early (after at least one) once `until` (performance.now())
 * has passed; adds to `counts`. Returns the index of the next record and the position of the last change (0: none).
 */
function applyRecords(
  store: Store,
  all: ExportRecord[],
  from: number,
  to: number,
  until: number,
  actor: string,
  counts: { memories: number; history: number; links: number; skipped: number },
  scope?: Scope,
  episodeCounts: EpisodeCounts = { episodes: 0, events: 0, skipped: 0 },
  branchCounts: BranchCounts = { branches: 0, branchRows: 0, history: 0, skipped: 0 },
): { next: number; position: number } {
  const db = store.db;
  let next = from;
  // With a scope, records that name stored memories or namespaces (history, links, rejected values) apply only to
  // those inside it; the others are skipped.
  const memoryInScope = (id: string) => {
    if (!scope) return true;
    const row = stmt(db, 'SELECT n.path FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = ?').get(id) as
      { path: string } | undefined;
    return !!row && pathInScope(row.path, scope);
  };
  const namespaceInScope = (id: string) => {
    if (!scope) return true;
    const row = stmt(db, 'SELECT path FROM namespaces WHERE id = ?').get(id) as { path: string } | undefined;
    return !!row && pathInScope(row.path, scope);
  };
  let memories = 0,
    history = 0,
    links = 0,
    skipped = 0;
  const position = store.transaction(() => {
    const nsById = stmt(db, 'SELECT id FROM namespaces WHERE id = ?');
    const nsLive = stmt(db, 'SELECT id FROM namespaces WHERE path = ? AND deleted_at IS NULL');
    const localNs = (id: string, path: string, deleted: boolean): string => {
      if (nsById.get(id)) return id;
      const live = nsLive.get(path) as { id: string } | undefined;
      if (live && !deleted) return live.id;
      stmt(db, 'INSERT INTO namespaces(id, path, created_at, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)').run(
        id,
        path,
        store.now(),
        deleted ? store.now() : null,
        deleted ? actor : null,
      );
      return id;
    };
    const imported = importedBy(store);
    let last = 0;
    for (; next < to && (next === from || performance.now() < until); next++) {
      const rec = all[next];
      switch (rec.type) {
        case 'header':
          if (rec.format !== 'cairn-export') throw new CairnError('InvalidParams', 'not a Cairn export', { field: 'records' });
          break;
        case 'namespace': {
          if (nsById.get(rec.id)) break;
          const live = nsLive.get(rec.path);
          if (live && rec.deletedAt === null) break; // memories map onto the live namespace by path
          stmt(db, 'INSERT INTO namespaces(id, path, created_at, deleted_at, deleted_by) VALUES (?, ?, ?, ?, ?)').run(
            rec.id,
            rec.path,
            fromIso(rec.createdAt),
            fromIso(rec.deletedAt),
            rec.deletedBy,
          );
          break;
        }
        case 'memory': {
          const m = rec.memory;
          const nsId = localNs(rec.namespaceId, m.namespace, false);
          const clash = stmt(db, 'SELECT 1 FROM memories WHERE id = ? OR (ns_id = ? AND key = ?)').get(m.id, nsId, m.key);
          if (clash) {
            skipped++;
            break;
          }
          // A value forgotten in this namespace is not re-learned by an import either.
          if (m.deletedAt === null && findRejection(db, store.keys, nsId, m.value, () => undefined)) {
            skipped++;
            break;
          }
          const rowid = Number(
            stmt(db, `INSERT INTO memories(id, ns_id, ${IMPORTED_MEMORY_COLUMNS}) VALUES (?, ?, ${IMPORTED_MEMORY_PLACEHOLDERS})`).run(
              m.id,
              nsId,
              ...importedMemoryValues(m, rec.deleteReason),
            ).lastInsertRowid,
          );
          store.reindexImported(rowid);
          imported.add(m.id);
          last = store.logImport(m.id, nsId, m.namespace, m.key);
          memories++;
          break;
        }
        case 'history': {
          const h = rec.entry;
          if (!memoryInScope(h.memoryId)) {
            skipped++;
            break;
          }
          if (!imported.has(h.memoryId) && stmt(db, 'SELECT 1 FROM memories WHERE id = ?').get(h.memoryId)) break; // history of a memory we kept as it was
          // the same entry again (an import repeated, or resumed): keep one
          if (
            stmt(db, 'SELECT 1 FROM history WHERE memory_id = ? AND op = ? AND version = ? AND at = ?').get(
              h.memoryId,
              h.op,
              h.version,
              fromIso(h.at),
            )
          )
            break;
          stmt(
            db,
            'INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
          ).run(
            h.memoryId,
            h.op,
            h.actor,
            h.reason,
            fromIso(h.at),
            h.version,
            h.previous ? JSON.stringify(h.previous) : null,
            h.state ? JSON.stringify(h.state) : null,
            h.detail ? JSON.stringify(h.detail) : null,
          );
          history++;
          break;
        }
        case 'link': {
          const l = rec.link;
          if (!memoryInScope(l.from) || !memoryInScope(l.to)) {
            skipped++;
            break;
          }
          const both = stmt(db, 'SELECT count(*) AS c FROM memories WHERE id IN (?, ?)').get(l.from, l.to) as { c: number };
          if (both.c < 2) {
            skipped++;
            break;
          }
          links += stmt(db, 'INSERT OR IGNORE INTO links(src, dst, type, created_at, actor) VALUES (?, ?, ?, ?, ?)').run(
            l.from,
            l.to,
            l.type,
            fromIso(l.createdAt),
            l.actor,
          ).changes;
          break;
        }
        case 'rejected': {
          if (!nsById.get(rec.namespaceId) || !namespaceInScope(rec.namespaceId)) {
            skipped++;
            break;
          }
          // Keyed hashes are keyed with the exporting store's secret: re-key from the memory's value when it came along.
          const owner =
            rec.memoryId !== null && store.keys
              ? (stmt(db, 'SELECT value FROM memories WHERE id = ? AND ns_id = ?').get(rec.memoryId, rec.namespaceId) as
                  { value: string } | undefined)
              : undefined;
          const hash = owner ? rejectionHash(store.keys!, owner.value) : rec.valueHash;
          stmt(db, 'INSERT OR IGNORE INTO rejected_values(ns_id, value_hash, memory_id, actor, at) VALUES (?, ?, ?, ?, ?)').run(
            rec.namespaceId,
            hash,
            rec.memoryId,
            rec.actor,
            fromIso(rec.at),
          );
          break;
        }
        case 'episode':
          importEpisode(db, rec, localNs(rec.namespaceId, rec.episode.namespace, false), episodeCounts);
          break;
        case 'event':
          importEvent(db, rec, episodeCounts, (path) => !scope || pathInScope(path, scope), store.now());
          break;
        case 'branch':
          importBranch(db, rec, store.position(), branchCounts);
          break;
        case 'branchMemory':
          importBranchRow(db, rec, branchCounts, (path) => !scope || pathInScope(path, scope));
          break;
        case 'branchHistory':
          importBranchHistory(db, rec, branchCounts, (path) => !scope || pathInScope(path, scope));
          break;
      }
    }
    return last;
  });
  counts.memories += memories;
  counts.history += history;
  counts.links += links;
  counts.skipped += skipped;
  return { next, position };
}
