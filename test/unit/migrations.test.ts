/** A store left by schema v1 upgrades in place and heals its derived indexes. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { SCHEMA_VERSION } from '../../daemon/src/store/schema';
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
      assert.deepEqual(hits.map((h) => h.memory.key), ['retryPolicy'], 'identifier split form found after healing');
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
