/**
 * Long index builds do not block writes (store/pg/index-builds.ts): a team database upgraded to the schema that
 * rebuilds its HNSW indexes (v8) builds them with CREATE INDEX CONCURRENTLY after the migration commits, and a member's
 * write succeeds while the build runs, both before the build and while the new index takes writes before validation.
 * The build's phase is read from pg_stat_progress_create_index and held there by a transaction that holds a writer's
 * lock on the table (CREATE INDEX CONCURRENTLY waits for those); a write that waited for the build instead would show
 * as a backend waiting for a lock. An interrupted build (cancelled: it leaves an INVALID index and its marker) is
 * detected and redone by the next migrate.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type pg from 'pg';
import { PgBackend, type PgEmbedder } from '../../daemon/src/store/pg/backend';
import { pendingIndexBuilds } from '../../daemon/src/store/pg/index-builds';
import { migrate, PG_SCHEMA_VERSION } from '../../daemon/src/store/pg/schema';
import { HNSW_DIMS, hnswIndexName, indexInfo, SCOPE_VECTOR_DIMS, scopeVectorIndexName } from '../../daemon/src/store/pg/vector-index';
import { startPg, type PgServer } from './pg-server';
import { teamDaemon } from './team-daemon';

const DIM = 256;
const embedder: PgEmbedder = {
  info: { model: 'test/seeded-256', dimension: DIM },
  embed: async (texts) =>
    texts.map((t) => {
      const v = new Float32Array(DIM);
      for (let i = 0; i < DIM; i++) v[i] = Math.sin(t.length * (i + 1) + t.charCodeAt(i % t.length));
      return v;
    }),
};

/** Poll until `f` returns a value (state, not time: each try is one query). */
async function until<T>(f: () => Promise<T | null | undefined>, what: string): Promise<T> {
  for (let i = 0; i < 6000; i++) {
    const v = await f();
    if (v !== null && v !== undefined) return v;
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`never happened: ${what}`);
}

describe('team memory: index builds that do not block writes', () => {
  let pg: PgServer;
  let db: string;
  let owner: pg.Pool;
  let alice: PgBackend;

  const index = async (name: string) =>
    (
      await owner.query(
        `SELECT i.indisvalid AS valid, c.reloptions AS options FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`,
        [name],
      )
    ).rows[0] as { valid: boolean; options: string[] } | undefined;
  /** The CREATE INDEX CONCURRENTLY under way in this database, once it is in `phase`. */
  const buildIn = (phase: string) =>
    until(async () => {
      const r = (
        await owner.query(
          `SELECT p.pid, p.phase, c.relname AS index FROM pg_stat_progress_create_index p LEFT JOIN pg_class c ON c.oid = p.index_relid
           WHERE p.datname = current_database() AND p.command = 'CREATE INDEX CONCURRENTLY'`,
        )
      ).rows[0] as { pid: number; phase: string; index: string } | undefined;
      // The index's name too: the phase can show before its catalog row is visible to this session.
      return r && r.phase === phase && r.index ? r : null;
    }, `a concurrent build ${phase}`);
  /** A transaction that holds a writer's lock on cairn.memories (what CREATE INDEX CONCURRENTLY waits for). */
  const holdWriterLock = async () => {
    const c = await owner.connect();
    await c.query('BEGIN');
    await c.query('LOCK TABLE cairn.memories IN ROW EXCLUSIVE MODE');
    return async () => {
      await c.query('COMMIT');
      c.release();
    };
  };
  /**
   * Hold the builds back: take the lock finishIndexBuilds takes, then, once `migrate` has committed and waits for it,
   * take a writer's lock on the table and let the builds go, so the build waits in its first phase for that writer.
   */
  const startHeldBuild = async () => {
    const gate = await owner.connect();
    await gate.query(`SELECT pg_advisory_lock(hashtext('cairn.index_build'))`);
    const run = migrate(owner);
    run.catch(() => undefined);
    await until(async () => {
      const n = (await owner.query(`SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`)).rows[0].n;
      return n > 0 ? true : null;
    }, 'the migrate to wait for the builds lock');
    const release = await holdWriterLock();
    await gate.query(`SELECT pg_advisory_unlock(hashtext('cairn.index_build'))`);
    gate.release();
    return { run, release, build: await buildIn('waiting for writers before build') };
  };
  /** A write by alice that must finish while the build waits; fails if it waits for a lock instead. */
  const writeDuringBuild = async (key: string) => {
    let done = false;
    const write = alice.upsert({ namespace: 'team.a', key, value: `written while the index builds: ${key}` }).finally(() => (done = true));
    const blocked = until(async () => {
      if (done) return false;
      const n = (
        await owner.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = 'alice' AND datname = current_database() AND wait_event_type = 'Lock'`,
        )
      ).rows[0].n as number;
      return n > 0 ? true : null;
    }, 'the write to finish or wait');
    assert.equal(await blocked, false, `the write of ${key} waited for a lock while the index was building`);
    const r = await write;
    assert.equal(r.created, true);
  };

  before(async () => {
    pg = await startPg();
    await pg.createRole('alice');
    // A team database at schema v7 (its indexes built with ef_construction 128), with 300 memories and their vectors
    // (written by the owner: members open only a database at the current schema).
    db = `builds_${process.pid}`;
    await pg.admin('postgres').query(`CREATE DATABASE ${db}`);
    owner = pg.admin(db);
    assert.deepEqual(await migrate(owner, { to: 7 }), { from: 0, to: 7 });
    await owner.query(`INSERT INTO cairn.namespaces(id, path, created_at) VALUES ('ns-a', 'team.a', 0)`);
    await owner.query(`INSERT INTO cairn.memories(id, ns_id, key, value, value_hash, kind, tags, importance, confidence, source, properties,
        anchors, created_at, updated_at, version, status, fts, embedding, embed_model)
      SELECT 'm' || g, 'ns-a', 'k' || g, 'memory ' || g, md5(g::text), 'note', '[]', 0.5, 1, 'test', '{}', '[]', 0, 0, 1, 'active',
        to_tsvector('english', 'memory'), ('[' || array_to_string(ARRAY(SELECT sin(g * i) FROM generate_series(1, ${DIM}) i), ',') || ']')::vector,
        'test/seeded-256'
      FROM generate_series(1, 300) g`);
  });
  after(async () => {
    await alice?.close();
    await pg?.stop();
  });

  it('a new team database gets its indexes in the migration itself (no rows: nothing waits), with none left to build', async () => {
    const fresh = await pg.createDatabase();
    assert.deepEqual(await pendingIndexBuilds(pg.admin(fresh)), []);
    for (const dim of HNSW_DIMS) {
      const r = (
        await pg
          .admin(fresh)
          .query(
            `SELECT i.indisvalid AS valid, c.reloptions AS options FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`,
            [hnswIndexName(dim)],
          )
      ).rows[0];
      assert.deepEqual(r, { valid: true, options: ['m=32', 'ef_construction=256'] });
    }
    // Schema v11: the scope-vector index of each dimension a btree entry holds, and the dimension's statistics.
    for (const dim of SCOPE_VECTOR_DIMS) {
      const r = (
        await pg
          .admin(fresh)
          .query(
            `SELECT i.indisvalid AS valid, i.indisunique AS "unique" FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`,
            [scopeVectorIndexName(dim)],
          )
      ).rows[0];
      assert.deepEqual(r, { valid: true, unique: false }, scopeVectorIndexName(dim));
    }
    const stats = await pg.admin(fresh).query(`SELECT stxname FROM pg_statistic_ext WHERE stxrelid = 'cairn.memories'::regclass`);
    assert.deepEqual(
      stats.rows.map((x) => x.stxname),
      ['memories_dims'],
    );
  });

  it('an interrupted concurrent build leaves an INVALID index and its marker; the next migrate drops it and builds again', async () => {
    assert.deepEqual((await index(hnswIndexName(DIM)))?.options, ['m=32', 'ef_construction=128']);
    const { run, release, build: b } = await startHeldBuild();
    const upgrade = run.then(
      () => null,
      (e: Error) => e,
    );
    const name = b.index.replace(/_next$/, '');
    assert.equal(b.index, `${name}_next`, 'built beside the index it replaces');
    await owner.query('SELECT pg_cancel_backend($1)', [b.pid]);
    assert.ok(await upgrade, 'the cancelled build fails the migrate');
    await release();
    assert.equal((await index(b.index))?.valid, false, 'the interrupted build is an INVALID index');
    assert.ok((await pendingIndexBuilds(owner)).includes(name), 'its marker is still there');
    const asOwner = await new PgBackend({ url: pg.adminUrl(db), poolSize: 1 }).open();
    try {
      assert.ok((await asOwner.status()).indexBuildsPending.includes(name), '`cairn team status` names it');
    } finally {
      await asOwner.close();
    }
    // A daemon opening the database says so in its log, once, naming the index and what finishes it.
    const td = await teamDaemon(pg.adminUrl(db));
    try {
      const pending = () => td.logs.filter((l) => l.includes('index builds pending'));
      for (let i = 0; i < 500 && pending().length === 0; i++) await new Promise((r) => setTimeout(r, 20));
      assert.equal(pending().length, 1, td.logs.join('\n'));
      assert.ok(pending()[0].includes(name) && pending()[0].includes('cairn team init'), pending()[0]);
    } finally {
      await td.stop();
    }
    // The schema itself is migrated (its version was committed before the builds), and the old index still answers.
    assert.equal((await owner.query(`SELECT value FROM cairn.meta WHERE key = 'schema_version'`)).rows[0].value, String(PG_SCHEMA_VERSION));
    assert.deepEqual(await index(name), { valid: true, options: ['m=32', 'ef_construction=128'] });
    // Redone by the next migrate: the INVALID index dropped, the index built again and swapped in.
    await migrateOnly(name);
    assert.deepEqual(await index(name), { valid: true, options: ['m=32', 'ef_construction=256'] });
    assert.equal(await index(b.index), undefined);
    assert.ok(!(await pendingIndexBuilds(owner)).includes(name));
  });

  it('a write succeeds while the index is built, before the build and while the new index takes writes; then it is swapped in', async () => {
    await pg.grant(db, 'alice', 'team', 'write');
    alice = await new PgBackend({ url: pg.url('alice', db), poolSize: 2 }).open();
    alice.embedder = embedder;
    // Only the 256-d index left to build, to hold its build in each phase in turn.
    for (const name of await pendingIndexBuilds(owner)) if (name !== hnswIndexName(DIM)) await migrateOnly(name);
    assert.deepEqual(await pendingIndexBuilds(owner), [hnswIndexName(DIM)]);
    const { run: resumed, release: first, build: b } = await startHeldBuild();
    assert.equal(b.index, `${hnswIndexName(DIM)}_next`);
    await writeDuringBuild('during-1');
    // Held again once the build is done: a writer's lock taken now is one the validation phase waits for.
    const second = await holdWriterLock();
    await first();
    await buildIn('waiting for writers before validation');
    await writeDuringBuild('during-2');
    await second();
    assert.deepEqual(await resumed, { from: PG_SCHEMA_VERSION, to: PG_SCHEMA_VERSION });
    assert.deepEqual(await index(hnswIndexName(DIM)), { valid: true, options: ['m=32', 'ef_construction=256'] });
    assert.equal(await index(`${hnswIndexName(DIM)}_next`), undefined);
    assert.deepEqual(await pendingIndexBuilds(owner), []);
    assert.ok((await indexInfo(alice.pool)).dims.has(DIM));
    // Both writes are in the new index: the index scan finds the writes made meanwhile.
    const c = await owner.connect();
    try {
      await c.query('SET enable_seqscan = off; SET enable_bitmapscan = off; SET hnsw.ef_search = 1000');
      const q = `[${Array.from({ length: DIM }, (_, i) => (i === 0 ? 1 : 0)).join(',')}]`;
      const plan = (
        await c.query(
          `EXPLAIN SELECT key FROM cairn.memories WHERE vector_dims(embedding) = ${DIM} ORDER BY embedding::vector(${DIM}) <=> $1::vector(${DIM}) LIMIT 400`,
          [q],
        )
      ).rows
        .map((r: Record<string, string>) => r['QUERY PLAN'])
        .join('\n');
      assert.match(plan, new RegExp(`Index Scan using ${hnswIndexName(DIM)}`));
      const keys = (
        await c.query(
          `SELECT key FROM cairn.memories WHERE vector_dims(embedding) = ${DIM} ORDER BY embedding::vector(${DIM}) <=> $1::vector(${DIM}) LIMIT 400`,
          [q],
        )
      ).rows.map((r: { key: string }) => r.key);
      assert.ok(keys.includes('during-1') && keys.includes('during-2'), 'the writes made during the build are in the index');
    } finally {
      c.release();
    }
  });

  /** Finish one index's pending build by itself (the others' markers set aside meanwhile). */
  async function migrateOnly(name: string): Promise<void> {
    const others = (
      await owner.query(`DELETE FROM cairn.meta WHERE key LIKE 'index\\_build:%' AND key <> $1 RETURNING key, value`, [
        `index_build:${name}`,
      ])
    ).rows as { key: string; value: string }[];
    await migrate(owner);
    for (const o of others) await owner.query(`INSERT INTO cairn.meta(key, value) VALUES ($1, $2)`, [o.key, o.value]);
  }
});
