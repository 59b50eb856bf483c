/**
 * The dashboard's overview (store/overview.ts) reads no memory row per call: its counts add up the rows the store
 * keeps per (namespace, status, kind, deleted), and its writes per day are found from the days asked for through the
 * history_writes_at index. Its answers are those of the straightforward queries over every memory and history row
 * (what it ran before), through writes of every kind, in every scope, and on a store counted by an older build.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { OverviewParams, OverviewResult } from '../../daemon/src/protocol/types';
import { overview } from '../../daemon/src/store/overview';
import { scopePredicate } from '../../daemon/src/store/scope';
import type { Store } from '../../daemon/src/store/store';
import { tempCore, upsertItems } from '../helpers';

const DAY_MS = 86_400_000;

/** The overview as counted from every memory and history row. */
function straightforward(store: Store, p: OverviewParams): OverviewResult {
  const db = store.db;
  const days = p?.days ?? 30;
  const scope = scopePredicate(p?.scope, 'n.path');
  const where = scope ? `AND ${scope.sql}` : '';
  const params = scope ? scope.params : [];
  const live = `FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE m.deleted_at IS NULL AND n.deleted_at IS NULL ${where}`;
  const counted = (col: string) =>
    db.prepare(`SELECT ${col} AS name, count(*) AS count ${live} GROUP BY ${col} ORDER BY count DESC, name`).all(...params) as {
      name: string;
      count: number;
    }[];
  const byStatus = counted('m.status');
  const deleted = db
    .prepare(
      `SELECT count(*) AS c FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE (m.deleted_at IS NOT NULL OR n.deleted_at IS NOT NULL) ${where}`,
    )
    .get(...params) as { c: number };
  if (deleted.c > 0) byStatus.push({ name: 'deleted', count: deleted.c });
  const since = Math.floor(store.now() / DAY_MS) * DAY_MS - (days - 1) * DAY_MS;
  const writesPerDay = db
    .prepare(
      `SELECT strftime('%Y-%m-%d', h.at / 1000, 'unixepoch') AS day, m.source AS source, count(*) AS count
         FROM history h JOIN memories m ON m.id = h.memory_id JOIN namespaces n ON n.id = m.ns_id
        WHERE h.op IN ('create', 'update', 'restore') AND h.at >= ? ${where}
        GROUP BY day, m.source ORDER BY day, m.source`,
    )
    .all(since, ...params) as { day: string; source: string; count: number }[];
  return { byNamespace: counted('n.path'), byKind: counted('m.kind'), byStatus, writesPerDay, days };
}

const SCOPES: OverviewParams[] = [
  undefined,
  {},
  { days: 1 },
  { days: 7 },
  { scope: { root: 'project.a' } },
  { scope: { root: 'project.a', includeUser: false }, days: 3 },
  { scope: { namespaces: ['project.b', 'user'] } },
  { scope: { root: 'project.gone' } },
  { scope: { root: 'project.nothing-here' } },
];

describe('dashboard overview', () => {
  const t = tempCore();
  const start = t.store.now();
  let day = 0;
  const nextDay = () => {
    day += 1;
    t.store.now = () => start + day * DAY_MS;
  };
  const same = (what: string) => {
    for (const p of SCOPES) assert.deepEqual(overview(t.store, p), straightforward(t.store, p), `${what}: ${JSON.stringify(p)}`);
  };

  before(async () => {
    const kinds = ['fact', 'note', 'decision', 'procedure'] as const;
    const sources = ['user', 'agent:a', 'dashboard'];
    await upsertItems(
      t.core,
      Array.from({ length: 90 }, (_, i) => ({
        namespace: ['project.a', 'project.a.sub', 'project.b', 'user', 'project.gone'][i % 5],
        key: `k${i}`,
        value: `value ${i}`,
        kind: kinds[i % 4],
        source: sources[i % 3],
        ...(i % 7 === 0 ? { status: 'proposed' as const } : {}),
      })),
    );
    nextDay();
    for (let i = 0; i < 10; i++)
      await t.core.call(R.upsert, { namespace: 'project.a', key: `k${i * 5}`, value: `changed ${i}`, kind: 'decision' });
    const old = await t.core.call(R.get, { namespace: 'project.b', key: 'k2' });
    await t.core.call(R.upsert, {
      namespace: 'project.b',
      key: 'replacement',
      value: 'replaces k2',
      supersedes: old.id,
      source: 'agent:b',
    });
    nextDay();
    await t.core.call(R.delete, { namespace: 'project.a.sub', key: 'k1' });
    await t.core.call(R.delete, { namespace: 'user', key: 'k3' });
    await t.core.call(R.restore, { namespace: 'user', key: 'k3' });
    await t.core.call(R.erase, { namespace: 'project.b', key: 'k7' });
    await t.core.call(R.namespacesDelete, { path: 'project.gone' });
  });
  after(() => t.close());

  it('runs no statement that scans the memories or the history', () => {
    const seen: string[] = [];
    const prepare = t.store.db.prepare.bind(t.store.db);
    t.store.db.prepare = ((sql: string) => (seen.push(sql), prepare(sql))) as typeof t.store.db.prepare;
    try {
      for (const p of SCOPES) overview(t.store, p);
    } finally {
      t.store.db.prepare = prepare;
    }
    const statements = [...new Set(seen)].filter((sql) => /\b(memory_counts|history)\b/.test(sql));
    assert.ok(statements.length >= 4, 'the overview prepared its statements here (its first calls: an empty statement cache)');
    for (const sql of statements) {
      const plan = (t.store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...placeholders(sql)) as { detail: string }[]).map((r) => r.detail);
      const text = `${sql}\n${plan.join('\n')}`;
      assert.deepEqual(
        plan.filter((d) => /^SCAN (m|memories|h|history)\b/.test(d)),
        [],
        text,
      );
      if (/\bhistory h\b/.test(sql)) {
        assert.ok(
          plan.some((d) => /^SEARCH h USING INDEX history_writes_at \(at>\?\)/.test(d)),
          text,
        );
        assert.ok(
          plan.some((d) => /^SEARCH m USING INDEX sqlite_autoindex_memories_\d+ \(id=\?\)/.test(d)),
          text,
        );
      }
    }
  });

  it('answers as the queries over every memory and history row do, in every scope', () => {
    same('after the writes');
    const all = overview(t.store, {});
    assert.ok(all.byKind.length === 4 && all.byNamespace.length === 4, JSON.stringify(all));
    assert.ok(all.byStatus.some((s) => s.name === 'deleted') && all.writesPerDay.length >= 6, JSON.stringify(all));
  });

  it('is the same on a store first counted by an older build (its counts had no kind)', async () => {
    const { Store } = await import('../../daemon/src/store/store');
    const db = t.store.db;
    db.exec(`DROP TRIGGER memory_counts_insert; DROP TRIGGER memory_counts_delete; DROP TRIGGER memory_counts_update;
      DROP TABLE memory_counts;
      CREATE TABLE memory_counts (ns_id TEXT NOT NULL, status TEXT NOT NULL, deleted INTEGER NOT NULL, n INTEGER NOT NULL,
        PRIMARY KEY (ns_id, status, deleted)) WITHOUT ROWID;
      INSERT INTO memory_counts SELECT ns_id, status, deleted_at IS NOT NULL, count(*) FROM memories GROUP BY 1, 2, 3;`);
    same('counted without kind, before the open');
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'late', value: 'written before the counts are made again', kind: 'note' });
    const now = t.store.now;
    t.store.close();
    const s = new Store(t.store.path);
    try {
      s.now = now;
      for (const p of SCOPES) assert.deepEqual(overview(s, p), straightforward(s, p), JSON.stringify(p));
      assert.ok(s.db.prepare(`SELECT 1 FROM pragma_table_info('memory_counts') WHERE name = 'kind'`).get(), 'counted again, with kind');
    } finally {
      s.close();
    }
  });
});

/** Values for a statement's placeholders (the plan does not depend on them). */
function placeholders(sql: string): unknown[] {
  return Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 'x');
}
