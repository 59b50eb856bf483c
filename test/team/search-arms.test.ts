/**
 * The team store's search arms on a real server, row-level security on: the full-text arm puts memories with every
 * term before those with any term (whatever their rank), asking for the any-term ones only when fewer than the limit
 * have every term, and each arm's statement reads its
 * hits' memories itself (no second read), only rows of the scope the role may read; hybrid search runs the full-text
 * arm beside the query embedding and the vector arm and fuses the two.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FUSION } from '../../daemon/src/retrieval/fusion';
import { PgBackend, type PgEmbedder } from '../../daemon/src/store/pg/backend';
import { ftsArm, pgSearch, vectorArm } from '../../daemon/src/store/pg/search';
import type { MemoryRow } from '../../daemon/src/store/rows';
import { startPg, type PgServer } from './pg-server';
import { recordStatements } from './record-statements';

const DIM = 256;

/** Deterministic vectors: the text's seeded noise, pulled towards +e0 where the text says "gateway". */
function vectorOf(text: string): Float32Array {
  let s = 2166136261;
  for (const ch of text) s = Math.imul(s ^ ch.charCodeAt(0), 16777619) >>> 0;
  const v = new Float32Array(DIM);
  for (let i = 0; i < DIM; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    v[i] = s / 4294967296 - 0.5;
  }
  if (text.includes('gateway')) v[0] += 6;
  return v;
}

const embedder: PgEmbedder = { info: { model: 'test/seeded-256', dimension: DIM }, embed: async (texts) => texts.map(vectorOf) };

describe('team memory: search arms', () => {
  let pg: PgServer;
  let alice: PgBackend;
  let bob: PgBackend;
  const scope = { root: 'team.s', includeUser: false };

  before(async () => {
    pg = await startPg();
    const db = await pg.createDatabase();
    await pg.createRole('alice');
    await pg.createRole('bob');
    await pg.grant(db, 'alice', 'team', 'write');
    await pg.grant(db, 'bob', 'secret', 'write');
    alice = await new PgBackend({ url: pg.url('alice', db), poolSize: 4 }).open();
    bob = await new PgBackend({ url: pg.url('bob', db), poolSize: 2 }).open();
    alice.embedder = embedder;
    bob.embedder = embedder;
    // One memory with both terms, in its value (low weight); several with one term, in the key (high weight).
    await alice.upsert({ namespace: 'team.s', key: 'notes', value: 'the alpha service talks to the beta gateway' });
    await alice.upsertBatch(
      Array.from({ length: 5 }, (_, i) => ({ namespace: 'team.s', key: `alpha-${i}`, value: `alpha alpha alpha release ${i}` })),
    );
    await alice.upsert({ namespace: 'team.other', key: 'both', value: 'alpha and beta gateway outside the scope' });
    await bob.upsert({ namespace: 'secret.x', key: 'both', value: 'alpha beta gateway alpha beta gateway' });
    await alice.upsert({ namespace: 'team.s', key: 'gone', value: 'alpha beta gateway, deleted' });
    await alice.delete({ namespace: 'team.s', key: 'gone' });
  });
  after(async () => {
    await alice?.close();
    await bob?.close();
    await pg?.stop();
  });

  it('the full-text arm puts memories with every term first, then fills with any term', async () => {
    const anyRank = await ftsArm(alice, 'alpha', { scope, limit: 10, now: Date.now() });
    const keysOf = async (rowids: number[]) => {
      const rows = await alice.byRowids(rowids);
      return rowids.map((r) => rows.get(r)?.key);
    };
    // Ranked on "alpha" alone, the key matches beat the value match.
    assert.notEqual((await keysOf(anyRank.map((h) => h.rowid)))[0], 'notes');
    const top = await ftsArm(alice, 'alpha beta', { scope, limit: 1, now: Date.now() });
    assert.deepEqual(await keysOf(top.map((h) => h.rowid)), ['notes']);
    const all = await ftsArm(alice, 'alpha beta', { scope, limit: 10, now: Date.now() });
    const keys = await keysOf(all.map((h) => h.rowid));
    assert.equal(keys[0], 'notes');
    assert.deepEqual(keys.slice(1).sort(), ['alpha-0', 'alpha-1', 'alpha-2', 'alpha-3', 'alpha-4']);
    // Within the any-term part, best rank first.
    const scores = all.slice(1).map((h) => h.score);
    assert.deepEqual(
      scores,
      [...scores].sort((a, b) => b - a),
    );
  });

  it('the any-term pass runs only when fewer memories than the limit have every term, and the answer is the same', async () => {
    // 8 memories with both terms (the terms in key, tags or value: different ranks), 5 with one of them in the key.
    await alice.upsertBatch([
      ...Array.from({ length: 8 }, (_, i) => ({
        namespace: 'team.t',
        key: i % 2 ? `gamma-${i}` : `note-${i}`,
        value: `gamma ${i % 3 ? 'and delta' : 'with delta delta'} record ${i}`,
        tags: i % 4 === 0 ? ['delta'] : [],
      })),
      ...Array.from({ length: 5 }, (_, i) => ({ namespace: 'team.t', key: `gamma-only-${i}`, value: `gamma gamma ${i}` })),
    ]);
    // A backend for which no scope is small (EXACT_SCOPE_ROWS): the every-term statement first, as in a large scope.
    const big = await new PgBackend({ url: alice.opts.url, poolSize: 1, exactScopeRows: 0 }).open();
    const sql: string[] = [];
    const record = (be: PgBackend) => recordStatements(be.pool, sql, (x) => x.includes('cairn.text_matches'));
    record(big);
    const small = await new PgBackend({ url: alice.opts.url, poolSize: 1 }).open();
    record(small);
    try {
      const t = { root: 'team.t', includeUser: false };
      const five = await ftsArm(big, 'gamma delta', { scope: t, limit: 5, now: Date.now() });
      assert.equal(sql.length, 1, 'eight memories have both terms: the every-term statement answers alone');
      assert.ok(!sql[0].includes(' AS every'), 'it asks for every term only');
      assert.ok(sql[0].includes(' && '), sql[0]);
      const twenty = await ftsArm(big, 'gamma delta', { scope: t, limit: 20, now: Date.now() });
      assert.equal(sql.length, 3, 'eight of twenty: the statement with any term follows');
      assert.ok(sql[2].includes(' AS every'), sql[2]);
      assert.equal(twenty.length, 13);
      assert.deepEqual(five, twenty.slice(0, 5), 'the first five are the same, scores included');
      // A scope of 13 memories (under EXACT_SCOPE_ROWS) gets the one statement at once, with the same answer.
      const direct = await ftsArm(small, 'gamma delta', { scope: t, limit: 5, now: Date.now() });
      assert.equal(sql.length, 4);
      assert.ok(sql[3].includes(' AS every'), sql[3]);
      assert.deepEqual(direct, five);
    } finally {
      await big.close();
      await small.close();
    }
  });

  it('each arm reads its hits’ memories in its own statement: only those hits, in scope, readable, not deleted', async () => {
    for (const run of [
      (rows: Map<number, MemoryRow>) => ftsArm(alice, 'alpha beta gateway', { scope, limit: 10, now: Date.now(), rows }),
      (rows: Map<number, MemoryRow>) => vectorArm(alice, vectorOf('gateway'), { scope, limit: 10, now: Date.now(), rows }),
    ]) {
      const rows = new Map<number, MemoryRow>();
      const hits = await run(rows);
      assert.equal(hits.length, 6);
      assert.deepEqual([...rows.keys()].sort(), hits.map((h) => h.rowid).sort());
      for (const r of rows.values()) {
        assert.equal(r.ns_path, 'team.s');
        assert.equal(r.deleted_at, null);
        assert.ok(r.value.includes('alpha'));
      }
    }
  });

  it('hybrid search fuses both arms with the memories they read, in scope only', async () => {
    const r = await pgSearch(alice, { query: 'alpha beta gateway', scope, limit: 10, mode: 'hybrid', explain: true }, FUSION.builtin);
    assert.equal(r.mode, 'hybrid');
    assert.equal(r.hits[0].memory.key, 'notes');
    assert.equal(r.hits[0].memory.value, 'the alpha service talks to the beta gateway');
    assert.ok(r.hits[0].explain?.fts !== null && r.hits[0].explain?.vector !== null);
    assert.deepEqual(
      r.hits.map((h) => h.memory.namespace),
      r.hits.map(() => 'team.s'),
    );
    assert.equal(r.hits.length, 6);
    const fts = await pgSearch(alice, { query: 'alpha beta', scope, limit: 2, mode: 'fts' }, FUSION.builtin);
    assert.deepEqual(
      fts.hits.map((h) => h.memory.key),
      ['notes', fts.hits[1].memory.key],
    );
    assert.match(fts.hits[1].memory.key, /^alpha-/);
    const vec = await pgSearch(bob, { query: 'gateway', limit: 5, mode: 'vector' }, FUSION.builtin);
    assert.deepEqual(
      vec.hits.map((h) => `${h.memory.namespace}/${h.memory.key}`),
      ['secret.x/both'],
    );
  });
});
