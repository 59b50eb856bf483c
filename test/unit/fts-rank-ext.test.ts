/**
 * The full-text ranking extension (daemon/native/cairn_bm25.c): FTS5's bm25() with each phrase's document count
 * handed in (store/search-fts.ts phraseCounts), so FTS5 no longer counts every phrase's rows in every statement.
 * The full-text arm must return exactly what it returns with bm25() itself, the same rows and the same scores, for
 * every kind of query and scope, and stay exact after writes by this connection or another one.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Scope } from '../../daemon/src/protocol/types';
import { Core } from '../../daemon/src/server/core';
import { hasRankingExtension, stmt } from '../../daemon/src/store/db';
import { ftsArm, phraseCounts, type ArmHit } from '../../daemon/src/store/search-fts';
import { Store } from '../../daemon/src/store/store';
import { spawnDaemon, tempCore, until, upsertItems } from '../helpers';

const c = tempCore();
let plain: Store;

// Words from very common (in most memories) to rare, so queries mix common terms (left out of the disjunctive
// pass, all-common plans) with rare ones; identifiers in every spelling; several namespaces and a user root.
const WORDS = ['filler', 'plover', 'tern', 'harrier', 'lapwing', 'osprey', 'curlew', 'dunlin', 'gannet', 'shrike'];
const NAMESPACES = ['project.alpha', 'project.alpha.bugs', 'project.beta', 'team.core', 'user.notes'];
const IDENTS = ['getUserById', 'get_user_by_id', 'MAX_RETRIES', 'retryPolicy', 'größe_wert'];

function value(i: number): string {
  const words = [WORDS[0]];
  for (let w = 1; w < WORDS.length; w++) if ((i * (w + 3)) % (w * 2 + 1) === 0 || i % (w + 7) === 0) words.push(WORDS[w]);
  if (i % 5 === 0) words.push(IDENTS[i % IDENTS.length]);
  if (i % 9 === 0) words.push(WORDS[(i % 4) + 1], WORDS[(i % 4) + 1]); // repeated: term frequency above 1
  return `${words.join(' ')} entry ${i}`;
}

before(async () => {
  const items = [];
  for (let i = 0; i < 1500; i++)
    items.push({
      namespace: NAMESPACES[i % NAMESPACES.length],
      key: i % 7 === 0 ? `${WORDS[(i % 9) + 1]}-${i}` : `k${i}`,
      value: value(i),
      tags: i % 11 === 0 ? [WORDS[(i % 5) + 2]] : [],
    });
  await upsertItems(c.core, items);
  // Deleted and rewritten memories: FTS5 tombstones and replaced rows the counts must not include.
  for (let i = 0; i < 1500; i += 13)
    await c.core.call(R.delete, {
      namespace: NAMESPACES[i % NAMESPACES.length],
      key: i % 7 === 0 ? `${WORDS[(i % 9) + 1]}-${i}` : `k${i}`,
    });
  for (let i = 1; i < 1500; i += 17)
    if (i % 13 !== 0 && i % 7 !== 0)
      await c.core.call(R.upsert, { namespace: NAMESPACES[i % NAMESPACES.length], key: `k${i}`, value: `rewritten osprey ${i}` });
  c.store.catchUpFullText();
  plain = new Store(path.join(c.dir, 'cairn.db'), { readonly: true, loadRanking: false });
});
after(() => {
  plain.close();
  c.close();
});

const QUERIES = [
  'plover',
  'filler',
  'filler entry',
  'plover tern',
  'harrier lapwing osprey',
  'curlew dunlin gannet shrike',
  'getUserById',
  'user_id retries',
  'MAX_RETRIES policy',
  'retryPolicy plover',
  'the osprey and the tern',
  'rewritten osprey',
  'entry 42',
  'plo',
  'harrier lap',
  'nothing matches xyzzy',
  'gannet gannet',
  'größe_wert plover',
];
const SCOPES: (Scope | undefined)[] = [
  undefined,
  { root: 'project.alpha', includeUser: false },
  { root: 'project.alpha' },
  { namespaces: ['project.beta', 'team.core'], includeUser: false },
];

const arm = (s: Store, q: string, scope: Scope | undefined, limit: number): ArmHit[] =>
  ftsArm(s.db, q, { scope, limit, now: c.store.now() });

describe('cairn_bm25', () => {
  it('is loaded where the build put it, and not when a store asks for bm25()', () => {
    assert.equal(c.store.rankingError, null);
    assert.equal(hasRankingExtension(c.store.db), true);
    assert.equal(hasRankingExtension(plain.db), false);
    assert.match(plain.rankingError ?? '', /not asked for/);
  });

  it('ranks every query, scope and limit exactly as bm25() does: the same rows, the same scores', () => {
    let hits = 0;
    let ranked = 0;
    for (const q of QUERIES)
      for (const scope of SCOPES)
        for (const limit of [5, 25, 100]) {
          const got = arm(c.store, q, scope, limit);
          assert.deepEqual(got, arm(plain, q, scope, limit), `${q} ${JSON.stringify(scope)} limit ${limit}`);
          hits += got.length;
          if (new Set(got.map((h) => h.score)).size > 2) ranked++;
        }
    // Not vacuous: most queries find memories, and many with scores that tell them apart.
    assert.ok(hits > 3000, `${hits} hits`);
    assert.ok(ranked > 60, `${ranked} queries with several scores`);
  });

  it('counts each phrase as FTS5 does: every memory the index holds (deleted ones too), by its current text', () => {
    const held = (word: string) =>
      (
        c.store.db
          .prepare(`SELECT count(*) AS n FROM memories WHERE value LIKE ? OR key LIKE ? OR tags LIKE ?`)
          .get(`%${word}%`, `%${word}%`, `%${word}%`) as { n: number }
      ).n;
    const counts = new Float64Array(phraseCounts(c.store.db, ['"osprey"', null, '"gannet"']).buffer.slice(0));
    assert.deepEqual([...counts], [held('osprey'), -1, held('gannet')]); // a namespace token: never weighed
    assert.ok(counts[0] > 100 && counts[2] > 10);
  });

  it('stays exact after this connection writes (the counts are taken again)', async () => {
    const q = 'harrier lapwing';
    const before = arm(c.store, q, undefined, 100);
    const items = [];
    for (let i = 0; i < 200; i++) items.push({ namespace: 'project.gamma', key: `h${i}`, value: `harrier nest ${i}` });
    await upsertItems(c.core, items);
    c.store.catchUpFullText();
    const got = arm(c.store, q, undefined, 100);
    assert.deepEqual(got, arm(plain, q, undefined, 100));
    // The new memories changed the counts, so a memory found both times scores differently: stale counts would not.
    const old = new Map(before.map((h) => [h.rowid, h.score]));
    assert.ok(got.some((h) => old.has(h.rowid) && old.get(h.rowid) !== h.score));
  });

  it('stays exact after another connection writes', async () => {
    const q = 'lapwing curlew';
    const before = arm(c.store, q, undefined, 100);
    const other = new Store(path.join(c.dir, 'cairn.db'));
    try {
      const items = [];
      for (let i = 0; i < 200; i++) items.push({ namespace: 'project.delta', key: `l${i}`, value: `lapwing call ${i}` });
      await upsertItems(new Core(other), items);
      other.catchUpFullText();
    } finally {
      other.close();
    }
    const got = arm(c.store, q, undefined, 100);
    assert.deepEqual(got, arm(plain, q, undefined, 100));
    const old = new Map(before.map((h) => [h.rowid, h.score]));
    assert.ok(got.some((h) => old.has(h.rowid) && old.get(h.rowid) !== h.score));
  });

  it('counts again after a write that reaches the index, and only then (not after writes to other tables or a merge)', () => {
    const db = c.store.db;
    // The count statement phraseCounts prepares (stmt caches it per connection): its runs are the recounts.
    const counting = stmt(db, 'SELECT count(*) AS c FROM memories_fts WHERE memories_fts MATCH ?');
    const get = counting.get.bind(counting);
    let recounts = 0;
    counting.get = ((...a: unknown[]) => {
      recounts++;
      return get(...a);
    }) as typeof counting.get;
    try {
      const count = () => new Float64Array(phraseCounts(db, ['"dunlin"']).buffer.slice(0))[0];
      const n = count();
      recounts = 0;
      assert.equal(count(), n);
      assert.equal(recounts, 0, 'remembered');
      // Writes that leave the full-text index as it was: access statistics, a row of the index watermarks' table.
      c.store.touch([1, 2, 3]);
      db.prepare("INSERT OR REPLACE INTO index_state(name, watermark) VALUES ('test:unrelated', 1)").run();
      assert.equal(count(), n);
      assert.equal(recounts, 0, 'writes to other tables keep the counts');
      // Another connection merging the index's segments (the checkpoint worker's job) rewrites its structure only.
      const other = new Store(path.join(c.dir, 'cairn.db'));
      try {
        other.db.prepare("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')").run();
      } finally {
        other.close();
      }
      assert.equal(count(), n);
      assert.equal(recounts, 0, 'a merge keeps the counts');
      db.prepare('INSERT INTO memories_fts(rowid, value) VALUES (?, ?)').run(8_000_000, 'dunlin');
      assert.equal(count(), n + 1, 'a row added to the index is counted');
      assert.equal(recounts, 1);
      db.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(8_000_000);
      assert.equal(count(), n);
      assert.equal(recounts, 2);
    } finally {
      counting.get = get;
    }
  });

  it('does not keep counts taken inside a transaction that rolls back', () => {
    const db = c.store.db;
    const count = () => new Float64Array(phraseCounts(db, ['"shrike"']).buffer.slice(0))[0];
    const n = count();
    db.exec('BEGIN');
    try {
      db.prepare('INSERT INTO memories_fts(rowid, value) VALUES (?, ?)').run(9_000_000, 'shrike');
      assert.equal(count(), n + 1);
    } finally {
      db.exec('ROLLBACK');
    }
    assert.equal(count(), n);
  });

  it('refuses counts that do not match the phrases', () => {
    const sql = 'SELECT cairn_bm25(memories_fts, ?, 1.0) AS s FROM memories_fts WHERE memories_fts MATCH ?';
    assert.throws(() => c.store.db.prepare(sql).all(Buffer.alloc(16), '"shrike"'), /one document count per phrase/);
    assert.throws(() => c.store.db.prepare(sql).all('3', '"shrike"'), /must be a blob of document counts/);
    assert.ok(c.store.db.prepare(sql).all(Buffer.alloc(8), '"shrike"').length > 0);
  });

  it('is what the built daemon ranks with (no fallback line at start)', async () => {
    const d = await spawnDaemon();
    try {
      await until('the daemon says it is serving', () => d.stderr().includes('serving'));
      assert.doesNotMatch(d.stderr(), /full-text ranking uses FTS5's bm25\(\)/);
    } finally {
      await d.stop();
    }
  });
});
