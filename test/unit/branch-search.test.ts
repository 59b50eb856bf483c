/**
 * Full-text search on a memory branch (docs/branches.md): a branch's rows live in the memories' full-text index under
 * their negated rowids (store/branch-text.ts, schema 12), matched and ranked in the base's own queries
 * (search-fts.ts BranchText) and checked against scope, visibility and filter of their own kind before the limit. A
 * search of the base never admits them, nor does a search on another branch; a delete on the branch hides the base
 * memory; ranking is the base's (the branch searched ranks as the base does after the merge); the one query joining
 * every match (past FTS_INNER_MAX) admits the same rows; the index keeps branch rows through a rebuild and the
 * migration to schema 12, and loses them with the branch.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Filter, Include, Scope, SearchResult } from '../../daemon/src/protocol/types';
import { Core } from '../../daemon/src/server/core';
import { ftsArm } from '../../daemon/src/store/search-fts';
import { SCHEMA_VERSION } from '../../daemon/src/store/schema';
import { Store } from '../../daemon/src/store/store';
import { tempCore, upsertItems } from '../helpers';

type C = ReturnType<typeof tempCore>;
const found = (r: SearchResult) => r.hits.map((h) => `${h.memory.namespace}/${h.memory.key}`);
const text = (c: C) => (c.store.db.prepare('SELECT count(*) AS n FROM memories_fts WHERE rowid < 0').get() as { n: number }).n;
/** More live namespaces than the full-text arm names inside its MATCH (FTS_MAX_NS_TOKENS): the scope is left to SQL. */
const WIDE = 300;

describe('full-text search on a branch', () => {
  let c: C;
  const search = (query: string, more: { scope?: Scope; filter?: Filter; include?: Include; limit?: number; branch?: string } = {}) =>
    c.core.call(R.search, { query, mode: 'fts', ...more });
  beforeEach(async () => {
    c = tempCore();
    await c.core.call(R.upsertBatch, {
      items: [
        { namespace: 'project.app', key: 'db', value: 'the database is postgres' },
        { namespace: 'project.app', key: 'style', value: 'tabs for indentation' },
        { namespace: 'project.app.api', key: 'auth', value: 'auth uses bearer tokens' },
        { namespace: 'project.other', key: 'note', value: 'other project database notes' },
        { namespace: 'user.prefs', key: 'console', value: 'database console: psql' },
      ],
    });
  });
  afterEach(() => c.close());

  it('a search of the base never admits a branch row: scoped, unscoped, or over more namespaces than its MATCH names', async () => {
    await upsertItems(
      c.core,
      Array.from({ length: WIDE }, (_, i) => ({ namespace: `project.wide.n${i}`, key: 'k', value: `filler ${i}` })),
    );
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite walrus', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app.new', key: 'fresh', value: 'walrus only on the branch', branch: 'b1' });
    for (const scope of [undefined, { root: 'project' }, { root: 'project.app' }])
      assert.deepEqual(found(await search('walrus', { scope })), [], `base, scope ${JSON.stringify(scope)}`);
    const db = (await search('database', { scope: { root: 'project.app', includeUser: false } })).hits;
    assert.deepEqual(
      db.map((h) => h.memory.value),
      ['the database is postgres'],
    );
    // On the branch: both rows, in every scope that holds them (the namespace made on the branch included).
    for (const scope of [undefined, { root: 'project' }, { root: 'project.app' }, { namespaces: ['project.app', 'project.app.new'] }])
      assert.deepEqual(
        found(await search('walrus', { scope, branch: 'b1' })).sort(),
        ['project.app.new/fresh', 'project.app/db'],
        JSON.stringify(scope),
      );
    assert.deepEqual(found(await search('walrus', { scope: { root: 'project.other' }, branch: 'b1' })), []);
    // A scope holding no base namespace, only one the branch made: its rows alone.
    assert.deepEqual(found(await search('walrus', { scope: { root: 'project.app.new', includeUser: false }, branch: 'b1' })), [
      'project.app.new/fresh',
    ]);
    assert.deepEqual(found(await search('walrus', { scope: { root: 'project.app.new', includeUser: false } })), []);
    assert.deepEqual(found(await search('walrus', { scope: { namespaces: ['project.app'], includeUser: false }, branch: 'b1' })), [
      'project.app/db',
    ]);
  });

  it("another branch's rows never show, in any scope", async () => {
    await upsertItems(
      c.core,
      Array.from({ length: WIDE }, (_, i) => ({ namespace: `project.app.n${i}`, key: 'k', value: `filler ${i}` })),
    );
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.branchCreate, { name: 'b2', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite walrus', branch: 'b2' });
    await c.core.call(R.upsert, { namespace: 'project.app.n7', key: 'extra', value: 'walrus walrus', branch: 'b2' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'spaces, not tabs', branch: 'b1' });
    for (const scope of [undefined, { root: 'project.app' }, { namespaces: ['project.app'] }]) {
      assert.deepEqual(found(await search('walrus', { scope, branch: 'b1' })), [], `b1, scope ${JSON.stringify(scope)}`);
      assert.equal(
        found(await search('walrus', { scope, branch: 'b2' })).length,
        scope?.namespaces ? 1 : 2,
        `b2, ${JSON.stringify(scope)}`,
      );
    }
    // b1 sees the base's db (b2's write shadows nothing on b1) and its own style.
    const hits = (await search('database tabs spaces', { scope: { root: 'project.app', includeUser: false }, branch: 'b1' })).hits;
    assert.deepEqual(hits.map((h) => h.memory.value).sort(), ['spaces, not tabs', 'the database is postgres']);
  });

  it('a delete on the branch hides the base memory in the full-text arm; the base still finds it', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'db', branch: 'b1', reason: 'not on this branch' });
    for (const scope of [undefined, { root: 'project.app' }, { root: 'project' }]) {
      const keys = found(await search('database', { scope, branch: 'b1' }));
      assert.ok(!keys.includes('project.app/db'), `hidden on the branch, scope ${JSON.stringify(scope)}`);
      assert.ok(found(await search('database', { scope })).includes('project.app/db'), 'the base is untouched');
    }
    assert.deepEqual(found(await search('database', { branch: 'b1' })).sort(), ['project.other/note', 'user.prefs/console']);
    // With deleted memories included, the branch's delete is what shows (once), not the base memory.
    const all = (await search('postgres', { include: { deleted: true }, branch: 'b1' })).hits;
    assert.equal(all.length, 1);
    assert.notEqual(all[0].memory.deletedAt, null);
    assert.equal(all[0].memory.deletedBy, 'user');
  });

  it('scope, visibility and filter bind branch rows before the limit, also when the scope is left to SQL', async () => {
    await upsertItems(
      c.core,
      Array.from({ length: WIDE }, (_, i) => ({ namespace: `project.app.n${i}`, key: 'k', value: `filler ${i}` })),
    );
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project' });
    // Short rows that outrank the one wanted, each refused: out of scope, proposed, of another kind.
    for (let i = 0; i < 40; i++)
      await c.core.call(R.upsert, { namespace: 'project.other', key: `o${i}`, value: 'walrus walrus', branch: 'b1' });
    for (let i = 0; i < 40; i++)
      await c.core.call(R.upsert, { namespace: 'project.app', key: `p${i}`, value: 'walrus walrus', status: 'proposed', branch: 'b1' });
    for (let i = 0; i < 40; i++)
      await c.core.call(R.upsert, { namespace: 'project.app.n3', key: `f${i}`, value: 'walrus walrus', kind: 'fact', branch: 'b1' });
    await c.core.call(R.upsert, {
      namespace: 'project.app.n5',
      key: 'wanted',
      value: 'a long note that mentions the walrus once among many other words',
      kind: 'decision',
      branch: 'b1',
    });
    const filter: Filter = { field: 'kind', op: 'eq', value: 'decision' };
    for (const scope of [{ root: 'project.app' }, { namespaces: ['project.app', 'project.app.n3', 'project.app.n5'] }])
      assert.deepEqual(
        found(await search('walrus', { scope, filter, limit: 1, branch: 'b1' })),
        ['project.app.n5/wanted'],
        JSON.stringify(scope),
      );
    // Without the filter the facts come first; proposed rows and other projects never.
    const keys = found(await search('walrus', { scope: { root: 'project.app' }, limit: 100, branch: 'b1' }));
    assert.equal(keys.length, 41);
    assert.ok(keys.every((k) => k.startsWith('project.app.n3/') || k === 'project.app.n5/wanted'));
    assert.equal(keys[40], 'project.app.n5/wanted');
  });

  it("ranks a branch's rows with the base's as the base ranks them once the branch is merged", async () => {
    await upsertItems(c.core, [
      { namespace: 'project.app', key: 'k1', value: 'kestrel' },
      { namespace: 'project.app', key: 'k2', value: 'kestrel kestrel nest' },
      { namespace: 'project.app', key: 'k3', value: 'a falcon and a kestrel were seen near the river bank today' },
      { namespace: 'project.app', key: 'k4', value: 'falcon' },
      { namespace: 'project.app.sub', key: 'k5', value: 'falcon over the kestrel nest at dawn' },
      { namespace: 'user.birds', key: 'k6', value: 'kestrel falcon' },
    ]);
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    // A row matching every word of "kestrel falcon" that BM25 alone would put below the short one-word rows.
    await c.core.call(R.upsert, {
      namespace: 'project.app',
      key: 'k1',
      value: 'a long note: the kestrel and then a falcon, seen from the old stone tower by the lake',
      branch: 'b1',
    });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'k2', value: 'falcon nest', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app.sub', key: 'k7', value: 'kestrel kestrel kestrel', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'k4', branch: 'b1' });
    const queries: [string, Scope | undefined][] = [
      ['kestrel falcon', undefined],
      ['kestrel falcon', { root: 'project.app' }],
      ['kestrel', { root: 'project.app', includeUser: false }],
      ['falcon nest', { namespaces: ['project.app', 'project.app.sub'] }],
    ];
    const onBranch = [];
    for (const [q, scope] of queries) onBranch.push(found(await search(q, { scope, branch: 'b1' })));
    const every = onBranch[0];
    assert.ok(every.indexOf('project.app/k1') < every.indexOf('project.app.sub/k7'), 'every word first: the branch row too');
    assert.ok(!every.includes('project.app/k4'));
    await c.core.call(R.branchMerge, { name: 'b1' });
    const merged = [];
    for (const [q, scope] of queries) merged.push(found(await search(q, { scope })));
    assert.deepEqual(onBranch, merged);
  });

  it('the one query joining every match (past FTS_INNER_MAX) admits the same rows as the ranked passes', async () => {
    await upsertItems(
      c.core,
      Array.from({ length: 60 }, (_, i) => ({
        namespace: i % 3 ? 'project.app' : 'project.other',
        key: `m${i}`,
        value: `osprey ${i % 2 ? 'heron' : ''} number ${i}`,
        kind: i % 4 ? 'fact' : 'decision',
      })),
    );
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project' });
    await c.core.call(R.branchCreate, { name: 'b2', root: 'project' });
    for (let i = 0; i < 30; i++) {
      await c.core.call(R.upsert, { namespace: 'project.app', key: `m${i}`, value: `osprey heron revised ${i}`, branch: 'b1' });
      await c.core.call(R.upsert, { namespace: 'project.app', key: `m${i}`, value: `osprey heron other ${i}`, branch: 'b2' });
    }
    await c.core.call(R.upsert, { namespace: 'project.app.new', key: 'n', value: 'osprey osprey', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'm31', branch: 'b1' });
    c.store.catchUpFullText(); // the arm is called directly here
    const o = c.core.branches.overlay('b1');
    const cases: { query: string; scope?: Scope; filter?: Filter; limit: number }[] = [
      { query: 'osprey heron', limit: 20 },
      { query: 'osprey', scope: { root: 'project.app' }, limit: 15 },
      { query: 'heron osprey', scope: { root: 'project' }, filter: { field: 'kind', op: 'eq', value: 'decision' }, limit: 10 },
      { query: 'osprey', limit: 200 },
    ];
    const kinds: number[] = [];
    for (const { query, ...q } of cases) {
      const arm = { ...q, now: c.store.now(), excludeSql: o.excludeSql };
      const ranked = ftsArm(c.store.db, query, arm, { branch: o.text });
      const joined = ftsArm(c.store.db, query, arm, { branch: o.text, innerMax: 1 });
      assert.ok(ranked.length > 0, query);
      assert.deepEqual(joined, ranked, `${query} ${JSON.stringify(q)}`);
      kinds.push(...ranked.map((h) => Math.sign(h.rowid)));
      // Branch hits are b1's rows only, base hits never a row b1 shadows.
      const own = new Set(
        (
          c.store.db.prepare('SELECT m.rowid FROM branch_memories m JOIN branches b ON b.id = m.branch_id WHERE b.name = ?').all('b1') as {
            rowid: number;
          }[]
        ).map((r) => -r.rowid),
      );
      assert.ok(ranked.filter((h) => h.rowid < 0).every((h) => own.has(h.rowid)));
      const shadowed = o.exclude();
      assert.ok(ranked.every((h) => !shadowed.has(h.rowid)));
    }
    assert.ok(kinds.includes(-1) && kinds.includes(1), 'branch rows and base rows among the hits');
  });

  it('the index keeps branch rows through a rebuild, and loses them when the branch is discarded or merged', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite walrus', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'new', value: 'walrus notes', branch: 'b1' });
    assert.equal(text(c), 2);
    c.store.rebuildFullText();
    assert.equal(text(c), 2);
    assert.deepEqual(found(await search('walrus', { branch: 'b1' })).sort(), ['project.app/db', 'project.app/new']);
    assert.deepEqual(found(await search('walrus')), []);
    await c.core.call(R.branchDiscard, { name: 'b1' });
    assert.equal(text(c), 0);
    await c.core.call(R.branchCreate, { name: 'b2', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite walrus', branch: 'b2' });
    await c.core.call(R.branchMerge, { name: 'b2' });
    assert.equal(text(c), 0);
    assert.deepEqual(found(await search('walrus')), ['project.app/db']);
  });
});

describe('migration to schema 12 (branch rows in the memories full-text index)', () => {
  it('drops branch_fts and indexes the branch rows a schema 11 store held', async () => {
    const c = tempCore();
    const file = path.join(c.dir, 'cairn.db');
    try {
      await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is postgres' });
      await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
      await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite walrus', branch: 'b1' });
      await c.core.call(R.upsert, { namespace: 'project.app.new', key: 'fresh', value: 'walrus only here', branch: 'b1' });
      c.store.close();
      // What schema 11 held: branch rows indexed in branch_fts, none in memories_fts.
      const Database = require('better-sqlite3');
      const raw = new Database(file);
      raw.exec(`DELETE FROM memories_fts WHERE rowid < 0;
        CREATE VIRTUAL TABLE branch_fts USING fts5(key, value, summary, tags, ns, tokenize='porter unicode61 remove_diacritics 2');
        INSERT INTO branch_fts(rowid, key, value, summary, tags, ns) SELECT rowid, key, value, coalesce(summary, ''), tags, ns_path FROM branch_memories;
        ALTER TABLE vec_models DROP COLUMN centre;`);
      raw.pragma('user_version = 11');
      raw.close();
      const logs: string[] = [];
      const store = new Store(file, { log: (m: string) => logs.push(m) });
      try {
        assert.equal(store.schemaVersion, SCHEMA_VERSION);
        // only the branch rows were indexed: the memories' own rows are not re-indexed at open
        assert.deepEqual(
          logs.filter((m) => /rebuilding the full-text index/.test(m)),
          [],
        );
        assert.equal(store.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'branch_fts'`).get(), undefined);
        const core = new Core(store);
        const hits = await core.call(R.search, { query: 'walrus', mode: 'fts', branch: 'b1' });
        assert.deepEqual(hits.hits.map((h) => h.memory.key).sort(), ['db', 'fresh']);
        assert.deepEqual((await core.call(R.search, { query: 'walrus', mode: 'fts' })).hits, []);
        const base = await core.call(R.search, { query: 'database', mode: 'fts' });
        assert.deepEqual(
          base.hits.map((h) => h.memory.value),
          ['the database is postgres'],
        );
      } finally {
        store.close();
      }
    } finally {
      fs.rmSync(c.dir, { recursive: true, force: true });
    }
  });
});
