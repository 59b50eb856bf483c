/**
 * Retention per namespace root, enforced by the sweep, every action recorded.
 *
 * A rule (meta key `retention`) names a root and any of:
 * - `maxVersions` N: each memory under the root keeps at most its N newest
 *   history entries that carry content; older ones are removed.
 * - `maxAgeDays` D: history entries older than D days are removed, except each
 *   memory's newest one; memories deleted (or expired) more than D days ago are
 *   purged (a contentless `purge` history row by actor `retention` remains).
 * - `maxTtlDays` T: a live memory with no expiry, or one further away than T
 *   days after its last update (or after the rule was set, whichever is later),
 *   gets that expiry: a new version by actor `retention`; when it passes, the
 *   memory expires (a restorable soft delete), and only then can maxAgeDays purge it.
 *
 * Branch rows (store/branch-rows.ts) under the root get the same TTL cap and
 * purge (a purged branch delete that still hides a live base memory keeps the
 * delete, its text blanked); they have no history to trim.
 *
 * Never touched: the current version of a live memory (the memories row
 * itself). Retention removes past versions and long-deleted memories only, and
 * ends a live memory only through a visible expiry. Each memory whose history
 * was trimmed gets one `retention` history row (actor `retention`, which
 * versions were removed) per rule: a rule's maxVersions and maxAgeDays trim
 * in one step. Rules on nested roots all apply.
 *
 * A rule's `events` limits remove old events of the episodes under its root (event-retention.ts), logged per episode
 * in the log of removals (episode-log.ts).
 */
import { CairnError } from '../protocol/errors';
import { namespaceProblem } from '../protocol/namespace';
import type { RetentionParams, RetentionReport, RetentionResult, RetentionRule } from '../protocol/types';
import { trimBranchHistory } from './branch-history';
import { capBranchTtl, purgeBranchRows } from './branch-rows';
import { stmt } from './db';
import { MEMORY_COLUMNS, toMemory, type MemoryRow } from './rows';
import { scopePredicate } from './scope';
import { ftsCompact, type Store } from './store';
import { compactEventText, enforceEventRetention } from './event-retention';
import { pace, type RequestContext } from '../server/limits';

export const RETENTION_ACTOR = 'retention';
const DAY = 86_400_000;
/** History ops that carry no content and are never trimmed (the audit trail of removals). */
const KEEP_OPS = `('retention', 'erase', 'purge')`;

interface StoredRule extends RetentionRule {
  setAt: string;
}

export function retentionRules(store: Store): StoredRule[] {
  const r = stmt(store.db, `SELECT value FROM meta WHERE key = 'retention'`).get() as { value: string } | undefined;
  return r ? (JSON.parse(r.value) as StoredRule[]) : [];
}

export function configureRetention(store: Store, p: RetentionParams): RetentionResult {
  if (p.set && p.clear !== undefined) throw new CairnError('InvalidParams', 'give set or clear, not both', { field: 'clear' });
  const root = p.set?.root ?? p.clear;
  if (root !== undefined) {
    const problem = namespaceProblem(root);
    if (problem) throw new CairnError('InvalidNamespace', problem, { field: p.set ? 'set.root' : 'clear' });
  }
  if (
    p.set &&
    p.set.maxVersions === undefined &&
    p.set.maxAgeDays === undefined &&
    p.set.maxTtlDays === undefined &&
    p.set.events === undefined
  ) {
    throw new CairnError('InvalidParams', 'a rule needs maxVersions, maxAgeDays, maxTtlDays or events', { field: 'set' });
  }
  const ev = p.set?.events;
  if (ev && ev.maxAgeDays === undefined && !Object.keys(ev.bySource ?? {}).length && !Object.keys(ev.byKind ?? {}).length)
    throw new CairnError('InvalidParams', 'events needs maxAgeDays, bySource or byKind', { field: 'set.events' });
  store.transaction(() => {
    let rules = retentionRules(store);
    if (p.clear !== undefined) {
      if (!rules.some((r) => r.root === p.clear)) throw new CairnError('NotFound', `no retention rule for ${p.clear}`, { field: 'clear' });
      rules = rules.filter((r) => r.root !== p.clear);
    }
    if (p.set)
      rules = [...rules.filter((r) => r.root !== p.set!.root), { ...p.set, setAt: new Date(store.now()).toISOString() }].sort((a, b) =>
        a.root < b.root ? -1 : 1,
      );
    if (p.set || p.clear !== undefined) {
      stmt(store.db, `INSERT INTO meta(key, value) VALUES ('retention', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`).run(
        JSON.stringify(rules),
      );
    }
  });
  return { rules: retentionRules(store) };
}

/** Apply every rule once, at most `batch` memories per action per rule. */
export function enforceRetention(store: Store, batch = 500): RetentionReport {
  const report: RetentionReport = { removedVersions: 0, purged: 0, ttlCapped: 0, actions: [] };
  for (const rule of retentionRules(store)) {
    enforceRule(store, rule, batch, report, true);
    enforceEventRetention(store, rule, batch * 10, report, true);
  }
  return report;
}

/**
 * The same sweep, in steps of at most `step` memories per action (one transaction each), yielding to other
 * requests between steps (server/limits.ts `pace`) and stopping at the request's deadline; each rule does at most
 * about `batch` actions per sweep. The daemon's timer sweep and store/sweep run this one.
 */
export async function enforceRetentionPaced(store: Store, batch = 500, ctx?: RequestContext, step = 50): Promise<RetentionReport> {
  const report: RetentionReport = { removedVersions: 0, purged: 0, ttlCapped: 0, actions: [] };
  const progress = () => ({ removedVersions: report.removedVersions, purged: report.purged, ttlCapped: report.ttlCapped });
  let first = true;
  for (const rule of retentionRules(store)) {
    const purgedBefore = report.purged;
    for (let done = 0; done < batch;) {
      if (!first) await pace(ctx, progress());
      first = false;
      const n = enforceRule(store, rule, Math.min(step, batch - done), report, false);
      if (n === 0) break;
      done += n;
    }
    // Purged text may sit in older full-text segments: merge them once per rule, not once per step.
    if (report.purged > purgedBefore) store.transaction(() => ftsCompact(store.db));
    // The rule's events limits (event-retention.ts), in steps too.
    const eventsBefore = report.removedEvents ?? 0;
    // Events are many and small: ten times the batch per sweep, ten times the step per transaction.
    for (let done = 0; rule.events && done < batch * 10;) {
      if (!first) await pace(ctx, progress());
      first = false;
      const n = enforceEventRetention(store, rule, Math.min(step * 10, batch * 10 - done), report, false);
      if (n === 0) break;
      done += n;
    }
    if ((report.removedEvents ?? 0) > eventsBefore) store.transaction(() => compactEventText(store.db));
  }
  return report;
}

/** One rule, at most `batch` memories per action, in one transaction. Returns how many actions it took. */
function enforceRule(store: Store, rule: StoredRule, batch: number, report: RetentionReport, compact: boolean): number {
  const note = (a: RetentionReport['actions'][number]) => {
    if (report.actions.length < 200) report.actions.push(a);
  };
  const db = store.db;
  const now = store.now();
  const purgedStart = report.purged;
  const ttlStart = report.ttlCapped;
  let trimmedMemories = 0;
  {
    const sub = scopePredicate({ root: rule.root, includeUser: false }, 'n.path')!;
    const purgedBefore = report.purged;
    store.transaction(() => {
      // 1. TTL cap on live memories.
      if (rule.maxTtlDays !== undefined) {
        const ttl = rule.maxTtlDays * DAY;
        const since = Date.parse(rule.setAt);
        const rows = stmt(
          db,
          `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id
            WHERE ${sub.sql} AND n.deleted_at IS NULL AND m.deleted_at IS NULL AND (m.expires_at IS NULL OR m.expires_at > max(m.updated_at, ?) + ?) LIMIT ?`,
        ).all(...sub.params, since, ttl, batch) as MemoryRow[];
        for (const r of rows) {
          const expires = Math.max(r.updated_at, since) + ttl;
          const before = toMemory(r);
          // updated_at never moves back: a memory last updated ahead of this clock keeps that time, so the condition above
          // no longer holds for it and the next step leaves it alone (setting the slower clock's time re-capped it every step).
          stmt(db, 'UPDATE memories SET expires_at = ?, version = version + 1, updated_at = max(updated_at, ?) WHERE rowid = ?').run(
            expires,
            now,
            r.rowid,
          );
          const after = toMemory(
            stmt(db, `SELECT ${MEMORY_COLUMNS} FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.rowid = ?`).get(
              r.rowid,
            ) as MemoryRow,
          );
          store.appendHistory(
            r.id,
            'update',
            RETENTION_ACTOR,
            `retention: ${rule.root} caps lifetime at ${rule.maxTtlDays} days`,
            after.version,
            before,
            after,
            { retention: rule.root, expiresAt: after.expiresAt },
          );
          store.logChange('update', r.id, r.ns_id, r.ns_path, r.key);
          report.ttlCapped++;
          note({ root: rule.root, action: 'ttl', memoryId: r.id, count: 1 });
        }
        // Branch rows under the root get the same cap (store/branch-rows.ts).
        for (const id of capBranchTtl(db, rule.root, since, ttl, now, batch)) {
          report.ttlCapped++;
          note({ root: rule.root, action: 'ttl', memoryId: id, count: 1 });
        }
      }
      // 2. Purge memories deleted (or expired) longer ago than maxAgeDays.
      if (rule.maxAgeDays !== undefined) {
        const cutoff = now - rule.maxAgeDays * DAY;
        const dead = stmt(
          db,
          `SELECT m.rowid, m.id, m.ns_id, m.key, m.version, n.path AS ns_path FROM memories m JOIN namespaces n ON n.id = m.ns_id
            WHERE ${sub.sql} AND m.deleted_at IS NOT NULL AND m.deleted_at < ? LIMIT ?`,
        ).all(...sub.params, cutoff, batch) as Parameters<Store['purgeRow']>[0][];
        for (const d of dead) {
          store.purgeRow(d, RETENTION_ACTOR, `retention: ${rule.root} purges memories deleted more than ${rule.maxAgeDays} days ago`);
          report.purged++;
          note({ root: rule.root, action: 'purge', memoryId: d.id, count: 1 });
        }
        for (const id of purgeBranchRows(db, rule.root, cutoff, batch)) {
          report.purged++;
          note({ root: rule.root, action: 'purge', memoryId: id, count: 1 });
        }
        trimBranchHistory(db, rule.root, cutoff); // branch writes' history, as the base's history below
      }
      // 3. Trim past versions (history), never the newest entry of a memory. maxVersions and maxAgeDays are one pass:
      // a memory both trim loses the versions either removes in one step, recorded in one `retention` row.
      const limits: { condition: string; params: (id: string) => unknown[]; candidates: () => { id: string }[]; why: string }[] = [];
      if (rule.maxVersions !== undefined) {
        const n = rule.maxVersions;
        limits.push({
          condition: `seq NOT IN (SELECT seq FROM history WHERE memory_id = ? AND op NOT IN ${KEEP_OPS} ORDER BY seq DESC LIMIT ?)`,
          params: (id) => [id, n],
          candidates: () =>
            stmt(
              db,
              `SELECT h.memory_id AS id FROM history h JOIN memories m ON m.id = h.memory_id JOIN namespaces n ON n.id = m.ns_id
                WHERE ${sub.sql} AND h.op NOT IN ${KEEP_OPS} GROUP BY h.memory_id HAVING count(*) > ? LIMIT ?`,
            ).all(...sub.params, n, batch) as { id: string }[],
          why: `${n} versions`,
        });
      }
      if (rule.maxAgeDays !== undefined) {
        const cutoff = now - rule.maxAgeDays * DAY;
        limits.push({
          condition: `(at < ? AND seq <> (SELECT max(seq) FROM history WHERE memory_id = ? AND op NOT IN ${KEEP_OPS}))`,
          params: (id) => [cutoff, id],
          candidates: () =>
            stmt(
              db,
              `SELECT h.memory_id AS id FROM history h JOIN memories m ON m.id = h.memory_id JOIN namespaces n ON n.id = m.ns_id
                WHERE ${sub.sql} AND h.op NOT IN ${KEEP_OPS} AND h.at < ?
                  AND h.seq <> (SELECT max(h2.seq) FROM history h2 WHERE h2.memory_id = h.memory_id AND h2.op NOT IN ${KEEP_OPS})
                GROUP BY h.memory_id LIMIT ?`,
            ).all(...sub.params, cutoff, batch) as { id: string }[],
          why: `${rule.maxAgeDays} days of history`,
        });
      }
      if (limits.length > 0) {
        const ids = [...new Set(limits.flatMap((l) => l.candidates().map((c) => c.id)))].slice(0, batch);
        const condition = limits.map((l) => l.condition).join(' OR ');
        const why = `retention: ${rule.root} keeps ${limits.map((l) => l.why).join(' and ')}`;
        for (const id of ids) {
          const removed = stmt(
            db,
            `DELETE FROM history WHERE memory_id = ? AND op NOT IN ${KEEP_OPS} AND (${condition}) RETURNING version`,
          ).all(id, ...limits.flatMap((l) => l.params(id))) as { version: number }[];
          if (removed.length === 0) continue;
          const m = stmt(
            db,
            'SELECT m.ns_id, m.key, m.version, n.path AS ns_path FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.id = ?',
          ).get(id) as { ns_id: string; key: string; version: number; ns_path: string };
          store.appendHistory(id, 'retention', RETENTION_ACTOR, why, m.version, null, null, {
            retention: rule.root,
            removedVersions: removed.map((r) => r.version).sort((a, b) => a - b),
          });
          store.logChange('retention', id, m.ns_id, m.ns_path, m.key);
          report.removedVersions += removed.length;
          trimmedMemories++;
          note({ root: rule.root, action: 'versions', memoryId: id, count: removed.length });
        }
      }
      if (compact && report.purged > purgedBefore) ftsCompact(db);
    });
  }
  // Memories acted on (a trimmed memory counts once, however many versions went).
  return report.purged - purgedStart + (report.ttlCapped - ttlStart) + trimmedMemories;
}
