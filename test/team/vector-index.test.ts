/**
 * The team store's HNSW vector index (schema v6, rebuilt by v8; store/pg/vector-index.ts) against exact search, on a real server:
 * the index path returns the same in-scope hits as exact search, never a memory out of scope, deleted or in a root
 * the role was not granted, and a scope too narrow for the index's candidate list is answered exactly (not short).
 * Sequential scans and sorts are disabled for the member role, so the planner takes the index wherever it can.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Scope } from '../../daemon/src/protocol/types';
import { PgBackend, type PgEmbedder } from '../../daemon/src/store/pg/backend';
import { vectorArm, type ArmHit } from '../../daemon/src/store/pg/search';
import { migrate, PG_SCHEMA_VERSION } from '../../daemon/src/store/pg/schema';
import {
  EF_SEARCH,
  EXACT_SCOPE_ROWS,
  HNSW_DIMS,
  hnswIndexName,
  indexInfo,
  scopeVectorIndexName,
  scopeVectorIndexSql,
} from '../../daemon/src/store/pg/vector-index';
import { startPg, type PgServer } from './pg-server';
import { recordStatements } from './record-statements';

const DIM = 256;

/** Deterministic vectors: the text's seeded noise, pulled towards +e0 ("near"), -e0 ("far") or left alone. */
function vectorOf(text: string): Float32Array {
  let s = 2166136261;
  for (const ch of text) s = Math.imul(s ^ ch.charCodeAt(0), 16777619) >>> 0;
  const v = new Float32Array(DIM);
  for (let i = 0; i < DIM; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = s / 4294967296 - 0.5;
  }
  if (text.includes('NEAR')) v[0] += 6;
  if (text.includes('FAR')) v[0] -= 6;
  return v;
}

const embedder: PgEmbedder = {
  info: { model: 'test/seeded-256', dimension: DIM },
  embed: async (texts) => texts.map(vectorOf),
};

describe('team memory: HNSW vector index', () => {
  let pg: PgServer;
  let db: string;
  let alice: PgBackend;
  let bob: PgBackend;
  const query = vectorOf('probe NEAR');

  before(async () => {
    pg = await startPg();
    db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.createRole('bob');
    await pg.grant(db, 'alice', 'team', 'write');
    await pg.grant(db, 'bob', 'secret', 'write');
    // Every session of alice: no sequential scans, so the index is the plan wherever the query admits it.
    // Nor sorts: on a table this small an exact sort is cheaper than the index by the planner's estimates (with the
    // dimension's statistics of schema v11), and the index's ordered scan is the plan under test.
    await pg.admin(db).query(`ALTER ROLE alice IN DATABASE ${db} SET enable_seqscan = off`);
    await pg.admin(db).query(`ALTER ROLE alice IN DATABASE ${db} SET enable_sort = off`);
    // No scope is small enough for exact search by size alone (EXACT_SCOPE_ROWS): the HNSW pass is tested on a small table.
    alice = await new PgBackend({ url: pg.url('alice', db), poolSize: 2, exactScopeRows: 0 }).open();
    bob = await new PgBackend({ url: pg.url('bob', db), poolSize: 2 }).open();
    alice.embedder = embedder;
    bob.embedder = embedder;
    const items = (ns: string, n: number, tag = '') =>
      Array.from({ length: n }, (_, i) => ({ namespace: ns, key: `k${i}`, value: `${ns} memory ${i} ${i % 5 === 0 ? tag : ''}` }));
    // More rows than hnsw.ef_search (200): a narrow scope's rows can fall outside the index's candidate list.
    await alice.upsertBatch(items('team.a', 150, 'NEAR'));
    await alice.upsertBatch(items('team.b', 300, 'NEAR'));
    await alice.upsertBatch(items('team.tiny', 3, 'FAR'));
    // The nearest vectors of all, in a root alice was not granted.
    await bob.upsertBatch(items('secret.x', 20, 'NEAR NEAR'));
    // A deleted near one in scope.
    await alice.upsert({ namespace: 'team.a', key: 'gone', value: 'deleted NEAR memory' });
    await alice.delete({ namespace: 'team.a', key: 'gone' });
    // The HNSW pass is what most of this file tests: without the scope-vector index (schema v11) the planner has no
    // exact plan as cheap as it on a table this small. That index gets its own test below, which builds it again.
    await pg.admin(db).query(`DROP INDEX cairn.${scopeVectorIndexName(DIM)}`);
    await pg.admin(db).query('ANALYZE cairn.memories');
  });
  after(async () => {
    await alice?.close();
    await bob?.close();
    await pg?.stop();
  });

  const arm = (scope: Scope | undefined, exact: boolean, limit = 10) => vectorArm(alice, query, { scope, limit, now: Date.now(), exact });
  const paths = async (hits: ArmHit[]) =>
    [...(await alice.byRowids(hits.map((h) => h.rowid))).values()].map((r) => `${r.ns_path}/${r.key}`);
  const indexScans = async (name = hnswIndexName(DIM)) =>
    Number(
      (
        await pg
          .admin(db)
          .query(`SELECT pg_stat_force_next_flush(), (SELECT idx_scan FROM pg_stat_user_indexes WHERE indexrelname = $1) AS n`, [name])
      ).rows[0].n,
    );
  /** Waits until the statistics show more scans of `name` than `before` (alice's sessions flush them on their own time). */
  const scannedSince = async (name: string, before: number) => {
    let now = await indexScans(name);
    for (let i = 0; i < 200 && now <= before; i++) {
      await new Promise((r) => setTimeout(r, 50));
      now = await indexScans(name);
    }
    return now > before;
  };

  it('schema v6 has the index for the dimension', async () => {
    assert.ok((await indexInfo(alice.pool)).dims.has(DIM));
  });

  it('schema v8 rebuilds the index with ef_construction 256 (from v6, rows kept), and each connection searches 1,000 candidates', async () => {
    const options = async (pool: import('pg').Pool) =>
      (await pool.query(`SELECT reloptions FROM pg_class WHERE relname = $1`, [hnswIndexName(DIM)])).rows[0]?.reloptions as string[];
    assert.deepEqual(await options(pg.admin(db)), ['m=32', 'ef_construction=256']);
    assert.equal((await alice.pool.query(`SELECT current_setting('hnsw.ef_search') AS ef`)).rows[0].ef, String(EF_SEARCH));
    assert.equal(EF_SEARCH, 1000);
    // An older team database: built at v6 (ef_construction 128), upgraded.
    const old = `v6_upgrade_${process.pid}`;
    await pg.admin('postgres').query(`CREATE DATABASE ${old}`);
    const owner = pg.admin(old);
    assert.deepEqual(await migrate(owner, { to: 6 }), { from: 0, to: 6 });
    assert.deepEqual(await options(owner), ['m=32', 'ef_construction=128']);
    assert.deepEqual(await migrate(owner), { from: 6, to: PG_SCHEMA_VERSION });
    assert.deepEqual(await options(owner), ['m=32', 'ef_construction=256']);
    const dims = (await owner.query(`SELECT count(*)::int AS n FROM pg_class WHERE relname LIKE 'memories\\_hnsw\\_%'`)).rows[0].n;
    assert.equal(dims, HNSW_DIMS.length);
  });

  it('a broad scope: the index path returns the same hits as exact search, all in scope, and did use the index', async () => {
    const before = await indexScans();
    for (const scope of [{ root: 'team.a', includeUser: false }, { root: 'team', includeUser: false }, undefined] as (
      Scope | undefined
    )[]) {
      const ann = await arm(scope, false);
      const exact = await arm(scope, true);
      assert.equal(ann.length, 10);
      assert.deepEqual(
        ann.map((h) => h.rowid),
        exact.map((h) => h.rowid),
        `same top 10 for scope ${JSON.stringify(scope)}`,
      );
      for (const p of await paths(ann)) {
        assert.ok(!p.startsWith('secret.'), `${p}: a root alice was not granted`);
        assert.notEqual(p, 'team.a/gone', 'a deleted memory');
        if (scope?.root === 'team.a') assert.ok(p.startsWith('team.a/'), `${p} is out of scope`);
      }
    }
    // The statistics collector reports the index's scans (flushed by alice's sessions, so wait for them).
    assert.ok(await scannedSince(hnswIndexName(DIM), before), 'the index path was taken');
  });

  it('a narrow scope is searched exactly through the scope-vector index (schema v11): the same hits as reading the table', async () => {
    // The index holds what the exact pass reads; the planner takes it (an index-only scan) where the visibility map
    // says the pages are all visible, as on a settled table.
    await pg.admin(db).query(scopeVectorIndexSql(DIM));
    await pg.admin(db).query('VACUUM ANALYZE cairn.memories');
    const name = scopeVectorIndexName(DIM);
    const scope = { root: 'team.a', includeUser: false };
    const before = await indexScans(name);
    const viaIndex = await arm(scope, true, 20);
    assert.ok(await scannedSince(name, before), 'the exact pass read the scope-vector index');
    assert.equal(viaIndex.length, 20);
    for (const p of await paths(viaIndex)) assert.ok(p.startsWith('team.a/') && p !== 'team.a/gone', p);
    // The same search, asking for superseded memories too (which the index does not hold, so the table is read),
    // gives the same hits in the same order here, where none is superseded.
    const fromTable = await vectorArm(alice, query, { scope, limit: 20, now: Date.now(), exact: true, include: { superseded: true } });
    assert.deepEqual(
      viaIndex.map((h) => [h.rowid, h.score.toFixed(6)]),
      fromTable.map((h) => [h.rowid, h.score.toFixed(6)]),
      'the table gives the same answer',
    );
  });

  it('a scope narrower than the candidate list is answered in full (exactly), never short and never out of scope', async () => {
    const scope = { namespaces: ['team.tiny'], includeUser: false };
    for (let round = 0; round < 2; round++) {
      const ann = await arm(scope, false);
      assert.deepEqual(
        ann.map((h) => h.rowid),
        (await arm(scope, true)).map((h) => h.rowid),
      );
      assert.deepEqual((await paths(ann)).sort(), ['team.tiny/k0', 'team.tiny/k1', 'team.tiny/k2']);
    }
  });

  it('a scope too small for the candidate list goes straight to exact search (no index pass); a broad one asks the index', async () => {
    // A fresh daemon (nothing remembered about any scope), its statements recorded.
    const fresh = await new PgBackend({ url: pg.url('alice', db), poolSize: 1, exactScopeRows: 0 }).open();
    fresh.embedder = embedder;
    const sql: string[] = [];
    recordStatements(fresh.pool, sql);
    const indexPasses = () => sql.filter((s) => s.includes('(m.embedding::vector(')).length;
    try {
      const tiny = await vectorArm(fresh, query, { scope: { root: 'team.tiny', includeUser: false }, limit: 10, now: Date.now() });
      assert.equal(tiny.length, 3);
      assert.equal(indexPasses(), 0, '3 rows of 474 cannot fill 10 of 1,000 candidates');
      const wide = await vectorArm(fresh, query, { scope: { root: 'team', includeUser: false }, limit: 10, now: Date.now() });
      assert.equal(wide.length, 10);
      assert.equal(indexPasses(), 1);
      const checks = sql.length;
      await vectorArm(fresh, query, { scope: { root: 'team', includeUser: false }, limit: 10, now: Date.now() });
      assert.equal(sql.length, checks + 1, 'the size check is remembered: one statement the second time');
    } finally {
      await fresh.close();
    }
    // With the default size floor (EXACT_SCOPE_ROWS) and the scope-vector index there, a scope of 474 memories is
    // searched exactly at once: cheaper than an index pass, and exact.
    const dflt = await new PgBackend({ url: pg.url('alice', db), poolSize: 1 }).open();
    dflt.embedder = embedder;
    const seen: string[] = [];
    recordStatements(dflt.pool, seen);
    try {
      assert.ok(EXACT_SCOPE_ROWS > 474);
      const hits = await vectorArm(dflt, query, { scope: { root: 'team', includeUser: false }, limit: 10, now: Date.now() });
      assert.deepEqual(
        hits.map((h) => h.rowid),
        (await arm({ root: 'team', includeUser: false }, true)).map((h) => h.rowid),
      );
      assert.equal(seen.filter((s) => s.includes('(m.embedding::vector(')).length, 0, 'no index pass');
    } finally {
      await dflt.close();
    }
  });

  it('filters and visibility are inside the index query', async () => {
    const ann = await vectorArm(alice, query, {
      scope: { root: 'team', includeUser: false },
      filter: { field: 'namespace', op: 'eq', value: 'team.b' },
      limit: 10,
      now: Date.now(),
    });
    assert.equal(ann.length, 10);
    for (const p of await paths(ann)) assert.ok(p.startsWith('team.b/'), p);
    const withDeleted = await vectorArm(alice, query, {
      scope: { root: 'team.a', includeUser: false },
      include: { deleted: true },
      limit: 200,
      now: Date.now(),
    });
    assert.ok((await paths(withDeleted)).includes('team.a/gone'), 'include.deleted brings the deleted memory back');
  });
});
