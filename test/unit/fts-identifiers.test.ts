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
import { identifierIndexText, identifierWords, splitIdentifier } from '../../daemon/src/text/identifiers';
import { tempCore } from '../helpers';
import { Core } from '../../daemon/src/server/core';

let t: ReturnType<typeof tempCore>;
beforeEach(() => (t = tempCore()));
afterEach(() => t.close());

const ftsKeys = async (query: string, core = t.core) =>
  (await core.call(R.search, { query, mode: 'fts', limit: 10 })).hits.map((h) => h.memory.key).sort();

describe('identifiers in the full-text index', () => {
  it('indexes each identifier as its parts and its joined form', () => {
    assert.equal(identifierIndexText('call getUserById, then MAX_RETRIES'), 'get user by id max retries getuserbyid maxretries');
    assert.equal(identifierIndexText('the atlas-pool-enabled flag'), 'atlaspoolenabled', 'kebab-case: the joined form only');
    assert.equal(identifierIndexText('plain words only'), '');
    // The split forms alone are still what the Postgres backend indexes.
    assert.equal(identifierWords('call getUserById'), 'get user by id');
  });

  it('a long run of word characters is indexed in linear time (no backtracking pattern)', { timeout: 60_000 }, () => {
    // A kebab-case pattern with nested repetition took hours on a 1 MB word (export-reply-limit.test.ts hung).
    assert.equal(identifierIndexText('x'.repeat(1_000_000)), '');
    assert.equal(identifierIndexText(`${'a'.repeat(500_000)}-b`), `${'a'.repeat(500_000)}b`);
  });

  it('an identifier in a query is one token, its parts joined, not a phrase of its parts', () => {
    assert.equal(planQuery(t.store.db, 'getUserById').any, '"getuserbyid"');
    assert.equal(planQuery(t.store.db, 'user_id').any, '"userid"');
    assert.equal(planQuery(t.store.db, 'MAX_RETRIES').any, '"maxretries"');
    assert.equal(planQuery(t.store.db, 'plain words ').all, '"plain" AND "words"');
  });

  it('an identifier in a query finds it in every spelling, and only there', async () => {
    const w = (key: string, value: string) => t.core.call(R.upsert, { namespace: 'project.a', key, value });
    await w('camel', 'call getUserById before rendering');
    await w('snake', 'the get_user_by_id helper caches rows');
    await w('screaming', 'set GET_USER_BY_ID to the new endpoint');
    await w('kebab', 'the get-user-by-id route is public');
    await w('pascal', 'GetUserById lives in the users module');
    // The parts, spread over two identifiers: "getUser byIdCache" once matched the phrase "get user by id".
    await w('spread', 'getUser and byIdCache are separate helpers');
    await w('prose', 'get the user by id from the cache');
    assert.deepEqual(await ftsKeys('getUserById'), ['camel', 'kebab', 'pascal', 'screaming', 'snake']);
    // Word by word, the parts find every spelling (and the prose).
    assert.deepEqual(await ftsKeys('get user by id'), ['camel', 'kebab', 'pascal', 'prose', 'screaming', 'snake', 'spread']);
    assert.deepEqual(await ftsKeys('get_user_by_id'), ['camel', 'kebab', 'pascal', 'screaming', 'snake']);
    assert.deepEqual(await ftsKeys('GET_USER_BY_ID'), ['camel', 'kebab', 'pascal', 'screaming', 'snake']);
  });

  it('an identifier in a key counts with the key weight', async () => {
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'value_side', value: 'we set build_flag_role in the pipeline' });
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'build_flag_role', value: 'decides who may trigger builds' });
    const hits = (await t.core.call(R.search, { query: 'buildFlagRole', mode: 'fts', limit: 10 })).hits.map((h) => h.memory.key);
    assert.deepEqual(hits, ['build_flag_role', 'value_side']);
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

describe('splitting identifiers', () => {
  /** The former definition of splitIdentifier, by patterns: the character scan must give exactly its parts. */
  function splitByPattern(token: string): string[] {
    if (/^[A-Za-z]?[a-z]*$/.test(token)) return [];
    const parts = token
      .replace(/\$/g, '_')
      .split(/_+/)
      .flatMap((p) => p.split(/(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[A-Za-z])(?=[0-9])|(?<=[0-9])(?=[A-Za-z])/))
      .map((p) => p.toLowerCase())
      .filter((p) => p.length > 0);
    return parts.length > 1 ? parts : [];
  }

  it('gives the parts the look-behind split gave, on random identifiers and on known ones', () => {
    const alphabet = ['a', 'b', 'z', 'A', 'B', 'Z', '0', '9', '_', '$', 'é', 'É', 'ß', 'İ', '𝄞', 'x', 'Y', '1'];
    let seed = 12345;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
    const tokens = [
      'getUserById',
      'HTTPServer',
      'max_retries',
      'MAX_RETRIES',
      'utf8Decoder',
      '$scope',
      '__init__',
      'a1B2c3',
      'ÉtéCase',
      'x',
    ];
    for (let k = 0; k < 100_000; k++) {
      let s = '';
      for (let i = 0, len = 1 + rand(10); i < len; i++) s += alphabet[rand(alphabet.length)];
      tokens.push(s);
    }
    for (const tok of tokens) assert.deepEqual(splitIdentifier(tok), splitByPattern(tok), JSON.stringify(tok));
    assert.deepEqual(splitIdentifier('HTTPServer'), ['http', 'server']);
    assert.deepEqual(splitIdentifier('utf8Decoder'), ['utf', '8', 'decoder']);
  });
});
