/**
 * Identifiers in the SQLite full-text index (FTS format 2): the `idents` column holds each compound identifier's
 * parts and its joined form (identifierIndexText), and a camelCase query term matches that one token instead of a
 * phrase of the parts. A camelCase query still finds every spelling of the identifier, the parts still find it
 * word by word, and a store whose index was written in the previous format is rebuilt when it opens.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { FTS_FORMAT } from '../../daemon/src/store/schema';
import { namespaceToken, planQuery } from '../../daemon/src/store/search-fts';
import { Store } from '../../daemon/src/store/store';
import { identifierIndexText, identifierWords } from '../../daemon/src/text/identifiers';
import { tempCore } from '../helpers';
import { Core } from '../../daemon/src/server/core';

let t: ReturnType<typeof tempCore>;
beforeEach(() => (t = tempCore()));
afterEach(() => t.close());

const ftsKeys = async (query: string, core = t.core) =>
  (await core.call(R.search, { query, mode: 'fts', limit: 10 })).hits.map((h) => h.memory.key).sort();

describe('identifiers in the full-text index', () => {
  it('indexes each identifier as its parts and its joined form', () => {
    assert.equal(identifierIndexText('call getUserById, then MAX_RETRIES'), 'get user by id getuserbyid max retries maxretries');
    assert.equal(identifierIndexText('plain words only'), '');
    // The split forms alone are still what the Postgres backend indexes.
    assert.equal(identifierWords('call getUserById'), 'get user by id');
  });

  it('a camelCase query term is its one token, not a phrase of its parts', () => {
    const plan = planQuery(t.store.db, 'getUserById');
    assert.equal(plan.any, '"getuserbyid"');
    const snake = planQuery(t.store.db, 'user_id');
    assert.equal(snake.any, '"user id"', 'snake_case still matches its parts as a phrase, in prose too');
  });

  it('a camelCase query finds the identifier in every spelling, and only there', async () => {
    const w = (key: string, value: string) => t.core.call(R.upsert, { namespace: 'project.a', key, value });
    await w('camel', 'call getUserById before rendering');
    await w('snake', 'the get_user_by_id helper caches rows');
    await w('screaming', 'set GET_USER_BY_ID to the new endpoint');
    await w('kebab', 'the get-user-by-id route is public');
    await w('pascal', 'GetUserById lives in the users module');
    // The parts, spread over two identifiers: "getUser byIdCache" once matched the phrase "get user by id".
    await w('spread', 'getUser and byIdCache are separate helpers');
    await w('prose', 'get the user by id from the cache');
    assert.deepEqual(await ftsKeys('getUserById'), ['camel', 'pascal', 'screaming', 'snake']);
    // Word by word, the parts find every spelling (and the prose).
    assert.deepEqual(await ftsKeys('get user by id'), ['camel', 'kebab', 'pascal', 'prose', 'screaming', 'snake', 'spread']);
    assert.deepEqual(await ftsKeys('get_user_by_id'), ['camel', 'kebab', 'pascal', 'screaming', 'snake']);
  });

  it('an index written in the previous format is rebuilt when the store opens', async () => {
    const file = path.join(t.dir, 'cairn.db');
    const m = await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'the upload_service retries twice' });
    assert.deepEqual(await ftsKeys('UploadService'), ['k']);
    // What format 1 wrote for this memory: the parts only, and no fts_format row.
    const row = t.store.db.prepare(`SELECT rowid, ns_id FROM memories WHERE id = ?`).get(m.memory.id) as { rowid: number; ns_id: string };
    t.store.db.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(row.rowid);
    t.store.db
      .prepare('INSERT INTO memories_fts(rowid, key, value, summary, tags, idents, ns) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(
        row.rowid,
        'k k',
        'the upload_service retries twice',
        '',
        '',
        identifierWords('k the upload_service retries twice'),
        namespaceToken(row.ns_id),
      );
    t.store.db.prepare(`DELETE FROM meta WHERE key = 'fts_format'`).run();
    assert.deepEqual(await ftsKeys('UploadService'), [], 'an old-format row lacks the joined form');
    t.store.close();

    const again = new Store(file);
    try {
      const fmt = again.db.prepare(`SELECT value FROM meta WHERE key = 'fts_format'`).get() as { value: string };
      assert.equal(fmt.value, FTS_FORMAT);
      const core = new Core(again);
      assert.deepEqual(await ftsKeys('UploadService', core), ['k']);
      assert.deepEqual(await ftsKeys('upload service', core), ['k']);
    } finally {
      again.close();
    }
  });
});
