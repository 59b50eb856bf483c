/**
 * store/audit: the history (every create, update, delete, restore, supersede,
 * expire, forget, purge, erase and retention action, with actor, reason and
 * time) for a time range, in pages by sequence number. `content: false` leaves
 * out the memory states (who did what, when, why, to which id). Scoped reads
 * match a row through its memory's namespace, or, for memories no longer
 * stored (purge and erase rows), through the namespace the row names.
 */
import { CairnError } from '../protocol/errors';
import type { AuditParams, AuditResult } from '../protocol/types';
import { stmt } from './db';
import { fromIso, HISTORY_COLUMNS } from './rows';
import { scopePredicate } from './scope';
import { historyEntry, type Store } from './store';

export function auditPage(store: Store, p: AuditParams): AuditResult {
  const limit = p.limit ?? 1000;
  let after = 0;
  if (p.cursor !== undefined) {
    const m = /^a(\d+)$/.exec(Buffer.from(p.cursor, 'base64url').toString('utf8'));
    if (!m) throw new CairnError('InvalidParams', 'cursor is not one this daemon issued', { field: 'cursor' });
    after = Number(m[1]);
  }
  const from = fromIso(p.from) ?? -Number.MAX_SAFE_INTEGER;
  const to = fromIso(p.to) ?? Number.MAX_SAFE_INTEGER;
  if (to <= from) throw new CairnError('InvalidParams', 'to must be after from', { field: 'to' });
  const live = scopePredicate(p.scope, 'n.path');
  const gone = scopePredicate(p.scope, `json_extract(h.detail, '$.namespace')`);
  const scopeSql =
    live && gone
      ? ` AND (EXISTS (SELECT 1 FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = h.memory_id AND ${live.sql})
            OR (NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = h.memory_id) AND ${gone.sql}))`
      : '';
  const params = live && gone ? [...live.params, ...gone.params] : [];
  const rows = stmt(
    store.db,
    `SELECT ${HISTORY_COLUMNS} FROM history h WHERE h.seq > ? AND h.at >= ? AND h.at < ?${scopeSql} ORDER BY h.seq LIMIT ?`,
  ).all(after, from, to, ...params, limit + 1) as Parameters<typeof historyEntry>[0][];
  const more = rows.length > limit;
  const page = rows.slice(0, limit).map(historyEntry);
  const entries = p.content === false ? page.map((e) => ({ ...e, previous: null, state: null })) : page;
  return { entries, nextCursor: more ? Buffer.from(`a${rows[limit - 1].seq}`).toString('base64url') : null };
}
