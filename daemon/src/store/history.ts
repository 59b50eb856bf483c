/**
 * A memory's history: one row per version (who, when, why, before and after), appended by every write in its
 * transaction and capped per memory when the store has a history cap. Rows store states compactly
 * (history-codec.ts); historyEntry shows one as the protocol does.
 */
import { CairnError } from '../protocol/errors';
import type { HistoryEntry, HistoryParams, HistoryResult, Memory } from '../protocol/types';
import { stmt, type DB } from './db';
import { decodePrevious, decodeState, encodePrevious, encodeState, inlineValue, ROW_VALUE_GLOB } from './history-codec';
import { checkNamespace } from './namespaces';
import { rowBy } from './reads';
import { and, HISTORY_COLUMNS, isoReq, type PgHistoryRow } from './rows';
import { scopePredicate } from './scope';
import type { Store } from './store';

interface HistoryRow extends PgHistoryRow {
  /** The memory row's value, for a state that reads it from the row (selected by HISTORY_COLUMNS). */
  row_value?: string | null;
}

/** A history row as the protocol shows it (rows store states compactly: see history-codec.ts). */
export function historyEntry(r: HistoryRow): HistoryEntry {
  const facts = { memoryId: r.memory_id, version: r.version, at: r.at };
  const state = r.state ? decodeState(r.state, facts, r.row_value) : null;
  return {
    seq: r.seq,
    memoryId: r.memory_id,
    op: r.op,
    actor: r.actor,
    reason: r.reason,
    at: isoReq(r.at),
    version: r.version,
    previous: r.previous ? decodePrevious(r.previous, state, facts) : null,
    state,
    detail: r.detail ? JSON.parse(r.detail) : null,
  };
}

/** Append a history row (inside the caller's write), applying the history cap. */
export function appendHistory(
  store: Store,
  memoryId: string,
  op: HistoryEntry['op'],
  actor: string,
  reason: string | null | undefined,
  version: number,
  previous: Memory | null,
  state: Memory | null,
  detail?: Record<string, unknown>,
  /** The write's time when the caller already took it (then the state's timestamps equal it and are not stored). */
  when?: number,
): void {
  const db = store.db;
  const at = when ?? store.now();
  const facts = { memoryId, version, at };
  stmt(
    db,
    'INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
  ).run(
    memoryId,
    op,
    actor,
    reason ?? null,
    at,
    version,
    previous ? encodePrevious(previous, state, facts) : null,
    // A state is the memory row as just written, so it reads its value from the row (history-codec.ts).
    state ? encodeState(state, facts, true) : null,
    detail ? JSON.stringify(detail) : null,
  );
  const cap = historyCap(db);
  if (cap !== null) {
    stmt(
      db,
      'DELETE FROM history WHERE memory_id = ? AND seq NOT IN (SELECT seq FROM history WHERE memory_id = ? ORDER BY seq DESC LIMIT ?)',
    ).run(memoryId, memoryId, cap);
  }
}

/**
 * Before a memory row's value changes, write its current value into the history states that read it from the
 * row, so every version stays readable exactly.
 */
export function inlineRowValue(db: DB, memoryId: string, value: string): void {
  const rows = stmt(db, `SELECT seq, state FROM history WHERE memory_id = ? AND state GLOB '${ROW_VALUE_GLOB}'`).all(memoryId) as {
    seq: number;
    state: string;
  }[];
  const put = stmt(db, 'UPDATE history SET state = ? WHERE seq = ?');
  for (const r of rows) put.run(inlineValue(r.state, value), r.seq);
}

export function historyCap(db: DB): number | null {
  const r = stmt(db, `SELECT value FROM meta WHERE key = 'history_cap'`).get() as { value: string } | undefined;
  return r ? Number(r.value) : null;
}

export function setHistoryCap(store: Store, cap: number | null): void {
  store.transaction(() => {
    if (cap === null) stmt(store.db, `DELETE FROM meta WHERE key = 'history_cap'`).run();
    else
      stmt(store.db, `INSERT INTO meta(key, value) VALUES ('history_cap', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(
        String(cap),
      );
  });
}

export function readHistory(db: DB, p: HistoryParams): HistoryResult {
  let memoryId: string;
  if (p.id !== undefined && p.scope === undefined) memoryId = p.id;
  else if (p.id !== undefined) {
    // A scoped history by id: the memory must (still) live in a namespace of the scope. A purged memory has
    // no row left to check, so it has no history in any scope.
    const where = and({ sql: 'm.id = ? AND n.deleted_at IS NULL', params: [p.id] }, scopePredicate(p.scope));
    const row = rowBy(db, where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no memory ${p.id} in scope`, { field: 'id' });
    memoryId = row.id;
  } else {
    if (p.namespace === undefined || p.key === undefined)
      throw new CairnError('InvalidParams', 'id or namespace+key is required', { field: 'id' });
    checkNamespace(p.namespace);
    const where = and({ sql: 'n.path = ? AND n.deleted_at IS NULL AND m.key = ?', params: [p.namespace, p.key] }, scopePredicate(p.scope));
    const row = rowBy(db, where.sql, ...where.params);
    if (!row) throw new CairnError('NotFound', `no memory ${p.namespace}/${p.key}${p.scope ? ' in scope' : ''}`, { field: 'key' });
    memoryId = row.id;
  }
  const rows = stmt(db, `SELECT ${HISTORY_COLUMNS} FROM history h WHERE h.memory_id = ? ORDER BY h.seq DESC LIMIT ?`).all(
    memoryId,
    p.limit ?? 100,
  ) as HistoryRow[];
  if (rows.length === 0) throw new CairnError('NotFound', `no history for ${memoryId}`, { field: 'id' });
  const cap = historyCap(db);
  return { entries: rows.map(historyEntry), capped: cap !== null };
}
