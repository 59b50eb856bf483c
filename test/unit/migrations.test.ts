/** A store left by schema v1 upgrades in place and heals its derived indexes. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { migrate, SCHEMA_VERSION } from '../../daemon/src/store/schema';
import { Store } from '../../daemon/src/store/store';
import { tempDir } from '../helpers';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'cairn-v1.db');

function copyFixture(): string {
  const dir = tempDir();
  const file = path.join(dir, 'cairn.db');
  fs.copyFileSync(FIXTURE, file);
  return file;
}

describe('migrations', () => {
  it('upgrades a v1 store to the current schema and rebuilds the full-text index', async () => {
    const file = copyFixture();
    const store = new Store(file);
    try {
      assert.equal(store.schemaVersion, SCHEMA_VERSION);
      assert.ok(SCHEMA_VERSION > 1);
      const core = new Core(store);
      const hits = (await core.call(R.search, { query: 'max retries', mode: 'fts' })).hits;
      assert.deepEqual(
        hits.map((h) => h.memory.key),
        ['retryPolicy'],
        'identifier split form found after healing',
      );
      assert.equal(store.ftsWatermark(), store.position());
      const m = await core.call(R.upsert, { namespace: 'project.legacy', key: 'retryPolicy', value: 'maxRetries is 5 now' });
      assert.equal(m.memory.version, 2);
      assert.ok(store.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'tasks'`).get(), 'v2 tables exist');
    } finally {
      store.close();
    }
  });

  it('re-asserts invariants at open: a dropped index and a wrong-shaped FTS table come back', async () => {
    const file = copyFixture();
    new Store(file).close();
    const Database = require('better-sqlite3');
    const raw = new Database(file);
    raw.exec('DROP INDEX anchors_path; DROP TABLE memories_fts; CREATE VIRTUAL TABLE memories_fts USING fts5(value)');
    raw.close();
    const store = new Store(file);
    try {
      assert.ok(store.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'anchors_path'`).get());
      const hits = (await new Core(store).call(R.search, { query: 'exponential backoff', mode: 'fts' })).hits;
      assert.equal(hits.length, 1);
    } finally {
      store.close();
    }
  });

  it('refuses a store from a newer schema', () => {
    const file = copyFixture();
    const Database = require('better-sqlite3');
    const raw = new Database(file);
    raw.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    raw.close();
    assert.throws(() => new Store(file), /newer than this Cairn build/);
  });
});

describe('migration to schema 3 (vectors stored once)', () => {
  it('converts a v2 store’s vec0 index and float copies into one int8 table without re-embedding, and keeps every history version', async () => {
    const file = copyFixture();
    const Database = require('better-sqlite3');
    const raw = new Database(file);
    require('sqlite-vec').load(raw);
    migrate(raw, { vec: true }, 2);
    // What a v2 daemon left: a vec0 index, a float copy with text hashes, the watermark and the active model.
    raw.exec(`CREATE VIRTUAL TABLE vec_1 USING vec0(ns integer partition key, embedding float[4] distance_metric=cosine,
      status text, deleted integer, expires integer, valid_from integer, valid_to integer, chunk_size=256)`);
    raw.exec('CREATE TABLE vecb_1 (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL, text_hash TEXT NOT NULL)');
    raw.prepare('INSERT INTO vec_models(model, dimension, table_name, created_at) VALUES (?, 4, ?, 0)').run('m4', 'vec_1');
    const mems = raw
      .prepare('SELECT m.rowid, m.id, n.rowid AS ns FROM memories m JOIN namespaces n ON n.id = m.ns_id ORDER BY m.rowid')
      .all() as { rowid: number; id: string; ns: number }[];
    assert.ok(mems.length >= 2, 'the fixture has memories');
    const vecs = mems.map((_, i) => new Float32Array([1, i, -i / 2, 0.25]));
    mems.forEach((m, i) => {
      const blob = Buffer.from(vecs[i].buffer);
      raw
        .prepare('INSERT INTO vec_1(rowid, ns, embedding, status, deleted, expires, valid_from, valid_to) VALUES (?, ?, ?, ?, 0, ?, ?, ?)')
        .run(
          BigInt(m.rowid),
          BigInt(m.ns),
          blob,
          'active',
          BigInt(Number.MAX_SAFE_INTEGER),
          BigInt(-Number.MAX_SAFE_INTEGER),
          BigInt(Number.MAX_SAFE_INTEGER),
        );
      raw.prepare('INSERT INTO vecb_1(rowid, embedding, text_hash) VALUES (?, ?, ?)').run(m.rowid, blob, 'abcdef0123456789'.repeat(4));
    });
    raw.prepare(`INSERT INTO index_state(name, watermark, model, dimension) VALUES ('vec:m4', 7, 'm4', 4)`).run();
    // A history row as schema 2 wrote it: full JSON states.
    const full = (version: number, value: string) => ({
      id: mems[0].id,
      namespace: 'project.legacy',
      key: 'k0',
      value,
      summary: null,
      kind: 'fact',
      tags: ['a'],
      importance: 0.5,
      confidence: 1,
      source: 'user',
      properties: {},
      anchors: [],
      createdAt: '2025-01-01T00:00:00.000Z',
      updatedAt: '2025-01-02T00:00:00.000Z',
      validFrom: null,
      validTo: null,
      expiresAt: null,
      lastAccessedAt: null,
      accessCount: 0,
      version,
      status: 'active',
      supersededBy: null,
      deletedAt: null,
      deletedBy: null,
    });
    raw
      .prepare('INSERT INTO history(memory_id, op, actor, reason, at, version, previous, state, detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(
        mems[0].id,
        'update',
        'user',
        null,
        Date.parse('2025-01-02'),
        2,
        JSON.stringify(full(1, 'old')),
        JSON.stringify(full(2, 'new')),
        null,
      );
    const historyBefore = raw.prepare('SELECT seq, previous, state FROM history ORDER BY seq').all() as {
      seq: number;
      previous: string | null;
      state: string | null;
    }[];
    assert.ok(
      historyBefore.some((h) => h.state),
      'the fixture has history',
    );
    raw.close();

    const store = new Store(file);
    try {
      assert.equal(store.schemaVersion, SCHEMA_VERSION);
      const gone = (name: string) => !store.db.prepare('SELECT 1 FROM sqlite_master WHERE name = ?').get(name);
      assert.ok(gone('vec_1') && gone('vecb_1') && gone('vec_1_chunks'), 'the vec0 index and the float copy are gone');
      assert.ok(gone('memories_hash'));
      const [model] = store.vectors.models();
      // Converted tables keep the signatures they were made with: plain (no centre; quantize.ts signatureInput).
      assert.deepEqual(model, { model: 'm4', dimension: 4, table: 'vq_1', centre: null });
      assert.equal(store.vectors.count(model), mems.length, 'every vector kept');
      assert.equal(store.feed.watermark('m4'), 7, 'no re-embedding: the watermark stays');
      assert.equal(store.vectors.textHash(model, mems[0].rowid), 0xabcdef012345);
      for (let i = 0; i < mems.length; i++) {
        const hits = store.vectors.knn(model, vecs[i], {
          now: Date.now(),
          limit: 1,
          include: { deleted: true, expired: true, superseded: true, proposed: true, outOfValidity: true },
        });
        assert.equal(hits[0].rowid, mems[i].rowid, `vector ${i} finds its own memory`);
        assert.ok(hits[0].score > 0.99);
      }
      // Rows written before the compact history encoding read back exactly as they were stored.
      const byId = new Map<number, { previous: unknown; state: unknown }>();
      for (const h of historyBefore)
        byId.set(h.seq, { previous: h.previous ? JSON.parse(h.previous) : null, state: h.state ? JSON.parse(h.state) : null });
      const ids = [
        ...new Set((store.db.prepare('SELECT memory_id FROM history').all() as { memory_id: string }[]).map((r) => r.memory_id)),
      ];
      for (const id of ids) {
        for (const e of (await new Core(store).call(R.history, { id })).entries) {
          const want = byId.get(e.seq)!;
          assert.deepEqual({ previous: e.previous, state: e.state }, want, `history row ${e.seq}`);
        }
      }
    } finally {
      store.close();
    }
  });
});

describe('history rows', () => {
  it('store states compactly and read back every version exactly', async () => {
    const dir = tempDir();
    const store = new Store(path.join(dir, 'cairn.db'));
    const core = new Core(store);
    try {
      const a = await core.call(R.upsert, { namespace: 'project.h', key: 'k', value: 'first value', tags: ['x'], properties: { p: 1 } });
      const b = await core.call(R.upsert, {
        namespace: 'project.h',
        key: 'k',
        value: 'second value',
        importance: 0.9,
        anchors: [{ path: 'src/a.ts', startLine: 3 }],
      });
      await core.call(R.get, { id: a.memory.id });
      const other = await core.call(R.upsert, { namespace: 'project.h', key: 'newer', value: 'replaces it', supersedes: a.memory.id });
      await core.call(R.delete, { id: other.memory.id, reason: 'gone' });
      await core.call(R.restore, { id: other.memory.id });
      const h = (await core.call(R.history, { id: a.memory.id })).entries.reverse();
      assert.deepEqual(
        h.map((e) => e.op),
        ['create', 'update', 'supersede'],
      );
      assert.deepEqual(h[0].state, a.memory);
      assert.equal(h[0].previous, null);
      assert.deepEqual(h[1].previous, a.memory);
      assert.deepEqual(h[1].state, b.memory);
      assert.equal(h[2].previous!.accessCount, 1, 'the access recorded between versions is kept');
      assert.deepEqual({ ...h[2].previous, accessCount: 0, lastAccessedAt: null }, b.memory);
      assert.equal(h[2].state!.status, 'superseded');
      assert.deepEqual(
        h[2].state,
        await core
          .call(R.get, { id: a.memory.id, includeDeleted: true })
          .then((m) => ({ ...m, accessCount: 1, lastAccessedAt: h[2].state!.lastAccessedAt })),
      );
      const o = (await core.call(R.history, { id: other.memory.id })).entries.reverse();
      assert.deepEqual(
        o.map((e) => e.op),
        ['create', 'delete', 'restore'],
      );
      assert.equal(o[1].state!.deletedBy, 'user');
      assert.equal(o[1].previous!.deletedAt, null);
      assert.equal(o[2].previous!.deletedAt, o[1].state!.deletedAt);
      assert.equal(o[2].state!.deletedAt, null);
      const raw = store.db.prepare('SELECT state FROM history WHERE memory_id = ? ORDER BY seq LIMIT 1').get(a.memory.id) as {
        state: string;
      };
      assert.ok(raw.state.length < JSON.stringify(a.memory).length / 2, `compact: ${raw.state}`);
      assert.ok(!raw.state.includes('createdAt'), `the write time is the row time: ${raw.state}`);
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
