/**
 * memory/erase: remove a memory, or a namespace subtree, so that its text is
 * gone from the disk, and return a signed receipt.
 *
 * In one write transaction: the memories' full-text rows (with FTS5's own
 * secure-delete, then an FTS merge that drops every older segment still
 * holding their terms), vectors, links (either end), anchors, every history
 * row (including purge rows naming their keys), and the memories themselves;
 * for a subtree also the namespace rows and the episodes in them (their events, index rows and vectors; the receipt
 * lists them and hashes their content in `eventsContentHash`); and the rows memory branches hold
 * of those memories, their keys or the subtree (store/branch-rows.ts), which
 * the receipt lists and hashes too. Rejected-value rows stay (they hold
 * only keyed hashes, see store/rejected.ts) with their memory id cleared.
 * One contentless `erase` history row per memory records who, when, why and
 * the receipt id. SQLite's secure_delete (on for every store) zeroes the freed
 * cells and pages; then the WAL is checkpointed and truncated, so no old frame
 * keeps a copy.
 */
import { CairnError } from '../protocol/errors';
import { namespaceProblem } from '../protocol/namespace';
import type { EraseParams, EraseResult, ErasureReceipt } from '../protocol/types';
import { uuidv7 } from '../text/hash';
import { branchHistoryPaths, eraseBranchHistory, hasBranchHistory } from './branch-history';
import { branchTargets, eraseBranchRows, type BranchTarget } from './branch-rows';
import { stmt } from './db';
import { eraseEpisodeRows, type ErasedEpisodes } from './episode-erase';
import { logRemoval } from './episode-log';
import { contentHash, eventContentHash, newSalt, signReceipt, type ErasedContent } from './receipt';
import { pathInScope, scopePredicate } from './scope';
import { dropIdempotencyRecords } from './idempotency';
import { ftsCompact, ftsSecureDelete, type Store } from './store';

interface Row {
  rowid: number;
  id: string;
  ns_id: string;
  ns_path: string;
  key: string;
  value: string;
  version: number;
}

const ROW_SQL =
  'SELECT m.rowid, m.id, m.ns_id, n.path AS ns_path, m.key, m.value, m.version FROM memories m JOIN namespaces n ON n.id = m.ns_id';

/**
 * What to erase, inside the caller's scope: a memory (by id or key) outside it is NotFound, as on every by-id path;
 * a subtree is erased only when the root and every namespace under it lie inside the scope (else NotFound too, so
 * nothing about out-of-scope namespaces is revealed).
 */
interface Targets {
  rows: Row[];
  namespaces: { id: string; path: string }[];
  /** Branch rows of the memories, of their keys, or under the root (store/branch-rows.ts). */
  branchRows: BranchTarget[];
  target: ErasureReceipt['target'];
}

function targets(store: Store, p: EraseParams): Targets {
  if (p.root !== undefined && p.scope && !pathInScope(p.root, p.scope))
    throw new CairnError('NotFound', `no namespace ${p.root}`, { field: 'root' });
  const t = unscopedTargets(store, p);
  const outside = (path: string) => !pathInScope(path, p.scope);
  if (
    p.scope &&
    (t.rows.some((r) => outside(r.ns_path)) ||
      t.namespaces.some((n) => outside(n.path)) ||
      t.branchRows.some((r) => outside(r.ns_path)) ||
      branchHistoryPaths(
        store.db,
        p.id !== undefined ? [p.id] : [],
        p.key !== undefined && p.namespace !== undefined ? [{ namespace: p.namespace, key: p.key }] : [],
        p.root,
      ).some(outside))
  ) {
    if (p.root !== undefined) throw new CairnError('NotFound', `no namespace ${p.root}`, { field: 'root' });
    throw p.id !== undefined
      ? new CairnError('NotFound', `no memory ${p.id}`, { field: 'id' })
      : new CairnError('NotFound', `no memory ${p.namespace}/${p.key}`, { field: 'key' });
  }
  return t;
}

function unscopedTargets(store: Store, p: EraseParams): Targets {
  const db = store.db;
  const byId = p.id !== undefined;
  const byKey = p.namespace !== undefined || p.key !== undefined;
  const byRoot = p.root !== undefined;
  if (Number(byId) + Number(byKey) + Number(byRoot) !== 1)
    throw new CairnError('InvalidParams', 'give exactly one of id, namespace+key, or root', { field: byRoot ? 'root' : 'id' });
  if (byId) {
    const rows = stmt(db, `${ROW_SQL} WHERE m.id = ?`).all(p.id) as Row[];
    const branchRows = branchTargets(db, [p.id!], keysOf(rows));
    if (rows.length === 0 && branchRows.length === 0 && !hasBranchHistory(db, [p.id!], []))
      throw new CairnError('NotFound', `no memory ${p.id}`, { field: 'id' });
    return { rows, namespaces: [], branchRows, target: { id: p.id } };
  }
  if (byKey) {
    if (p.namespace === undefined || p.key === undefined)
      throw new CairnError('InvalidParams', 'namespace and key go together', { field: p.namespace === undefined ? 'namespace' : 'key' });
    const problem = namespaceProblem(p.namespace);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'namespace' });
    // Every memory ever stored at this (namespace path, key): the live one and any left in deleted namespaces of that path.
    const rows = stmt(db, `${ROW_SQL} WHERE n.path = ? AND m.key = ?`).all(p.namespace, p.key) as Row[];
    const branchRows = branchTargets(db, [], [{ namespace: p.namespace, key: p.key }]);
    if (rows.length === 0 && branchRows.length === 0 && !hasBranchHistory(db, [], [{ namespace: p.namespace, key: p.key }]))
      throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}`, { field: 'key' });
    return { rows, namespaces: [], branchRows, target: { namespace: p.namespace, key: p.key } };
  }
  const root = p.root!;
  const problem = namespaceProblem(root);
  if (problem) throw new CairnError('InvalidNamespace', problem, { field: 'root' });
  const sub = scopePredicate({ root, includeUser: false }, 'n.path')!;
  const namespaces = stmt(db, `SELECT n.id, n.path FROM namespaces n WHERE ${sub.sql}`).all(...sub.params) as {
    id: string;
    path: string;
  }[];
  const rows = stmt(db, `${ROW_SQL} WHERE ${sub.sql} ORDER BY m.rowid`).all(...sub.params) as Row[];
  const branchRows = branchTargets(db, [], [], root);
  if (namespaces.length === 0 && branchRows.length === 0 && !hasBranchHistory(db, [], [], root))
    throw new CairnError('NotFound', `no namespace ${root}`, { field: 'root' });
  return { rows, namespaces, branchRows, target: { root } };
}

const keysOf = (rows: Row[]) => rows.map((r) => ({ namespace: r.ns_path, key: r.key }));

/** The branch-only memories among branch rows (ids no base row has), each with its newest version and namespace. */
function branchOnly(rows: Row[], branchRows: BranchTarget[]): { id: string; namespace: string; version: number }[] {
  const base = new Set(rows.map((r) => r.id));
  const out = new Map<string, { id: string; namespace: string; version: number }>();
  for (const b of branchRows) {
    if (base.has(b.id)) continue;
    const seen = out.get(b.id);
    if (!seen || seen.version < b.version) out.set(b.id, { id: b.id, namespace: b.ns_path, version: b.version });
  }
  return [...out.values()];
}

export function erase(store: Store, p: EraseParams): EraseResult {
  const db = store.db;
  const keys = store.keys;
  if (!keys) throw new CairnError('InvalidState', 'this store was opened read-only; it cannot erase');
  const actor = p.actor ?? 'user';
  const receiptId = uuidv7(store.now());
  const salt = newSalt();
  let content: ErasedContent[] = [];
  let target: ErasureReceipt['target'] = {};
  let memories: ErasureReceipt['memories'] = [];
  const removed = { history: 0, links: 0, vectors: 0, namespaces: 0, branchRows: 0 };
  let erasedEpisodes = null as ErasedEpisodes | null; // set inside the transaction
  const at = store.now();
  const position = store.transaction(() => {
    const t = targets(store, p);
    target = t.target;
    const only = branchOnly(t.rows, t.branchRows);
    content = [...t.rows, ...t.branchRows].map((r) => ({ id: r.id, namespace: r.ns_path, key: r.key, value: r.value }));
    memories = [...t.rows.map((r) => ({ id: r.id, namespace: r.ns_path })), ...only.map((m) => ({ id: m.id, namespace: m.namespace }))];
    for (const m of only) removed.history += stmt(db, 'DELETE FROM history WHERE memory_id = ?').run(m.id).changes;
    for (const r of t.rows) {
      ftsSecureDelete(db, r.rowid);
      removed.vectors += store.vectors.rowCount(r.rowid);
      store.deleteVectors(r.rowid);
      removed.links += stmt(db, 'DELETE FROM links WHERE src = ? OR dst = ?').run(r.id, r.id).changes;
      stmt(db, 'DELETE FROM anchors WHERE memory_rowid = ?').run(r.rowid);
      removed.history += stmt(db, 'DELETE FROM history WHERE memory_id = ?').run(r.id).changes;
      stmt(db, 'UPDATE rejected_values SET memory_id = NULL WHERE memory_id = ?').run(r.id);
      stmt(db, 'DELETE FROM injection_members WHERE memory_id = ?').run(r.id);
      stmt(db, 'DELETE FROM memories WHERE rowid = ?').run(r.rowid);
    }
    store.forgetDuplicatesOf(
      t.rows.map((r) => r.rowid),
      true,
    );
    removed.branchRows = eraseBranchRows(db, t.branchRows);
    // The history of branch writes (store/branch-history.ts), kept after a merge or discard, holds their text too.
    removed.history += eraseBranchHistory(
      db,
      [...t.rows.map((r) => r.id), ...t.branchRows.map((r) => r.id), ...(p.id !== undefined ? [p.id] : [])],
      [
        ...keysOf(t.rows),
        ...t.branchRows.map((r) => ({ namespace: r.ns_path, key: r.key })),
        ...(p.namespace !== undefined && p.key !== undefined ? [{ namespace: p.namespace, key: p.key }] : []),
      ],
      p.root,
    );
    // Purge rows of memories purged earlier name their namespace and key: remove those of the erased keys or subtree.
    const purged = stmt(
      db,
      `SELECT seq, json_extract(detail, '$.namespace') AS ns, json_extract(detail, '$.key') AS key FROM history WHERE op = 'purge'`,
    ).all() as { seq: number; ns: string | null; key: string | null }[];
    for (const h of purged) {
      const hit =
        p.root !== undefined
          ? h.ns !== null && (h.ns === p.root || h.ns.startsWith(p.root + '.'))
          : t.rows.some((r) => r.ns_path === h.ns && r.key === h.key);
      if (hit) removed.history += stmt(db, 'DELETE FROM history WHERE seq = ?').run(h.seq).changes;
    }
    if (t.namespaces.length > 0) {
      const ids = t.namespaces.map((n) => n.id);
      // The subtree's episodes go too (their events, index rows and vectors), each logged as episodes/erase logs it.
      const eps = eraseEpisodeRows(db, { sql: 'ep.ns_id IN (SELECT value FROM json_each(?))', params: [JSON.stringify(ids)] });
      for (const e of eps.episodes)
        logRemoval(db, {
          op: 'erase',
          episodeId: e.id,
          namespace: e.namespace,
          events: e.events,
          actor,
          reason: p.reason ?? null,
          at,
          detail: { receipt: receiptId },
        });
      if (eps.episodes.length) erasedEpisodes = eps;
      stmt(db, `DELETE FROM namespaces WHERE id IN (SELECT value FROM json_each(?))`).run(JSON.stringify(ids));
      removed.namespaces = ids.length;
    }
    // Recorded results of idempotent writes hold the memories' text.
    dropIdempotencyRecords(db, [...t.rows.map((r) => r.id), ...only.map((m) => m.id)]);
    // Older segments may still hold terms of earlier versions (each update replaced the row): merge them away.
    ftsCompact(db);
    let last = store.position();
    for (const r of t.rows) {
      store.appendHistory(r.id, 'erase', actor, p.reason, r.version + 1, null, null, { receipt: receiptId, namespace: r.ns_path });
      last = store.logChange('erase', r.id, r.ns_id, r.ns_path, null);
    }
    for (const m of only)
      store.appendHistory(m.id, 'erase', actor, p.reason, m.version + 1, null, null, { receipt: receiptId, namespace: m.namespace });
    if (t.rows.length === 0) last = store.logChange('erase', null, t.namespaces[0]?.id ?? null, p.root ?? null, null);
    return last;
  });
  const walTruncated = truncateWal(store);
  const receipt = signReceipt(
    {
      format: 'cairn-erasure-receipt',
      version: 1,
      id: receiptId,
      erasedAt: new Date(at).toISOString(),
      actor,
      reason: p.reason ?? null,
      target,
      memories,
      ...(erasedEpisodes ? { episodes: erasedEpisodes.episodes } : {}),
      removed: erasedEpisodes ? { ...removed, vectors: removed.vectors + erasedEpisodes.vectors, events: erasedEpisodes.events } : removed,
      contentHash: contentHash(salt, content),
      ...(erasedEpisodes ? { eventsContentHash: eventContentHash(salt, erasedEpisodes.content) } : {}),
      salt,
      walTruncated,
      publicKey: keys.publicKeyB64,
    },
    keys.privateKey,
  );
  return { erased: memories.length, position, receipt };
}

/** Copy the WAL into the database and truncate it to zero bytes. False when a reader kept it from completing. */
export function truncateWal(store: Store, attempts = 3): boolean {
  if (store.path === ':memory:') return true;
  // A reader holding an old snapshot (an export in progress, a direct CLI) blocks TRUNCATE: wait briefly, not the full busy timeout.
  // The daemon's background checkpoint (store/checkpointer.ts) is held off meanwhile: SQLite refuses two at once.
  return store.withoutBackgroundCheckpoint(() => truncateWalNow(store, attempts));
}

function truncateWalNow(store: Store, attempts: number): boolean {
  const busy = store.db.pragma('busy_timeout', { simple: true }) as number;
  store.db.pragma('busy_timeout = 100');
  try {
    for (let i = 0; i < attempts; i++) {
      try {
        const r = store.db.pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
        if (r[0] && r[0].busy === 0) return true;
      } catch {
        /* SQLITE_BUSY: try again */
      }
    }
    return false;
  } finally {
    store.db.pragma(`busy_timeout = ${busy}`);
  }
}
