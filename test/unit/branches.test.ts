/**
 * Memory branches (issue 26, docs/branches.md): a branch is made without copying a row; reads on it see its own
 * writes over the base (shadowing, deletes hiding, the base's later changes showing through); scope holds for branch
 * rows in get, list and both search arms; deletion sticks on a branch; diff, merge (with and without conflicts),
 * discard, and the history a merge leaves.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { FUSION } from '../../daemon/src/retrieval/fusion';
import { contentHash, verifyReceipt } from '../../daemon/src/store/receipt';
import type { VecModel } from '../../daemon/src/store/vectors';
import { rejectsWith, tempCore } from '../helpers';

type C = ReturnType<typeof tempCore>;
const count = (c: C, table: string) => (c.store.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
/** Branch rows' entries in the full-text index (memories_fts, under negated rowids: store/branch-text.ts). */
const branchText = (c: C, match?: string) =>
  (
    c.store.db
      .prepare(`SELECT count(*) AS n FROM memories_fts WHERE rowid < 0${match ? ' AND memories_fts MATCH ?' : ''}`)
      .get(...(match ? [match] : [])) as {
      n: number;
    }
  ).n;

describe('memory branches', () => {
  let c: C;
  beforeEach(async () => {
    c = tempCore();
    await c.core.call(R.upsertBatch, {
      items: [
        { namespace: 'project.app', key: 'db', value: 'the database is postgres' },
        { namespace: 'project.app', key: 'style', value: 'tabs for indentation' },
        { namespace: 'project.app.api', key: 'auth', value: 'auth uses bearer tokens' },
        { namespace: 'project.other', key: 'note', value: 'other project database notes' },
      ],
    });
  });
  afterEach(() => c.close());

  it('creates a branch without copying a row, and refuses a second open branch of the same name', async () => {
    const before = { memories: count(c, 'memories'), branch: count(c, 'branch_memories'), history: count(c, 'history') };
    const b = await c.core.call(R.branchCreate, { name: 'feature/x', root: 'project.app' });
    assert.equal(b.status, 'open');
    assert.equal(b.writes, 0);
    assert.equal(b.forkPosition, c.store.position());
    assert.deepEqual({ memories: count(c, 'memories'), branch: count(c, 'branch_memories'), history: count(c, 'history') }, before);
    assert.equal(count(c, 'branches'), 1);
    await rejectsWith(c.core.call(R.branchCreate, { name: 'feature/x', root: 'project.app' }), 'InvalidState', 'name');
    await rejectsWith(c.core.call(R.branchCreate, { name: 'y', root: 'Bad..ns' }), 'InvalidNamespace', 'root');
    await rejectsWith(c.core.call(R.branchCreate, { name: '-bad', root: 'project.app' }), 'InvalidParams', 'name');
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'db', branch: 'nope' }), 'NotFound', 'branch');
  });

  it('a branch write shadows the base, a branch delete hides it, and the base shows through elsewhere', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    const w = await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite', branch: 'b1' });
    assert.equal(w.memory.version, 2);
    // The base is untouched.
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'the database is postgres');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db', branch: 'b1' })).value, 'the database is sqlite');
    // Same id: by id on the branch finds the branch's version.
    assert.equal((await c.core.call(R.get, { id: w.memory.id, branch: 'b1' })).value, 'the database is sqlite');

    await c.core.call(R.delete, { namespace: 'project.app', key: 'style', branch: 'b1', actor: 'agent' });
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'style', branch: 'b1' }), 'NotFound', 'key');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'style' })).value, 'tabs for indentation');

    // The base changes later where the branch has not written: the branch sees it.
    await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'auth', value: 'auth uses oauth' });
    assert.equal((await c.core.call(R.get, { namespace: 'project.app.api', key: 'auth', branch: 'b1' })).value, 'auth uses oauth');

    const onBranch = await c.core.call(R.list, { scope: { root: 'project.app' }, branch: 'b1' });
    assert.deepEqual(onBranch.items.map((m) => `${m.key}=${m.value}`).sort(), ['auth=auth uses oauth', 'db=the database is sqlite']);
    const onBase = await c.core.call(R.list, { scope: { root: 'project.app' } });
    assert.deepEqual(onBase.items.map((m) => m.value).sort(), ['auth uses oauth', 'tabs for indentation', 'the database is postgres']);

    // Pages of a branch list cover every row once.
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await c.core.call(R.list, { branch: 'b1', limit: 1, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((m) => `${m.namespace}/${m.key}`));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    assert.deepEqual(seen.sort(), ['project.app.api/auth', 'project.app/db', 'project.other/note']);
  });

  it('refuses branch writes outside its root and keeps deletion sticky on the branch', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await rejectsWith(
      c.core.call(R.upsert, { namespace: 'project.other', key: 'x', value: 'v', branch: 'b1' }),
      'InvalidParams',
      'namespace',
    );
    // A batch has no branch: an item naming one is refused rather than written to the base.
    await rejectsWith(
      c.core.request(R.upsertBatch.method, { items: [{ namespace: 'project.app', key: 'k', value: 'v', branch: 'b1' }] }),
      'InvalidParams',
    );
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'k' }), 'NotFound', 'key');
    await c.core.call(R.delete, { namespace: 'project.app', key: 'db', branch: 'b1' });
    await rejectsWith(c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'again', branch: 'b1' }), 'Deleted', 'key');
    await rejectsWith(c.core.call(R.delete, { namespace: 'project.app', key: 'db', branch: 'b1' }), 'InvalidState', 'key');
    const back = await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'again', restore: true, branch: 'b1' });
    assert.equal(back.memory.value, 'again');
    // A base memory deleted before the branch wrote it stays deleted on the branch too.
    await c.core.call(R.delete, { namespace: 'project.app', key: 'style' });
    await rejectsWith(c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'spaces', branch: 'b1' }), 'Deleted', 'key');
    // Secrets: a credential written on a branch is tagged like on the base.
    const s = await c.core.call(R.upsert, {
      namespace: 'project.app',
      key: 'token',
      value: 'token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB',
      branch: 'b1',
    });
    assert.ok(s.memory.tags.includes('secret'));
  });

  it('scope holds for branch rows in get, list and the full-text arm; shadowed base rows leave the arm', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'cache', value: 'redis database cache layer', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite', branch: 'b1' });
    const scoped = { scope: { namespaces: ['project.app'], includeUser: false }, branch: 'b1' };
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app.api', key: 'cache', ...scoped }), 'NotFound', 'key');
    const listed = await c.core.call(R.list, scoped);
    assert.deepEqual(listed.items.map((m) => `${m.key}=${m.value}`).sort(), ['db=the database is sqlite', 'style=tabs for indentation']);

    const s = await c.core.call(R.search, { query: 'database', mode: 'fts', ...scoped });
    assert.deepEqual(
      s.hits.map((h) => `${h.memory.namespace}/${h.memory.key}=${h.memory.value}`),
      ['project.app/db=the database is sqlite'],
    );
    const wide = await c.core.call(R.search, { query: 'database', mode: 'fts', branch: 'b1' });
    assert.deepEqual(wide.hits.map((h) => h.memory.value).sort(), [
      'other project database notes',
      'redis database cache layer',
      'the database is sqlite',
    ]);
    // The base search sees the base only.
    const base = await c.core.call(R.search, { query: 'database', mode: 'fts' });
    assert.deepEqual(base.hits.map((h) => h.memory.value).sort(), ['other project database notes', 'the database is postgres']);
    // A deleted branch row is not found.
    await c.core.call(R.delete, { namespace: 'project.app.api', key: 'cache', branch: 'b1' });
    const after = await c.core.call(R.search, { query: 'redis', mode: 'fts', branch: 'b1' });
    assert.equal(after.hits.length, 0);
  });

  it('the vector arm never admits a base row the branch shadows, and keeps branch rows in scope', async () => {
    const DIM = 8;
    const model: VecModel = c.store.transaction(() => c.store.vectors.ensure('branch-test', DIM));
    c.store.vectors.load(model);
    const rows = c.store.db.prepare('SELECT rowid FROM memories').all() as { rowid: number }[];
    const v = new Float32Array(DIM).fill(1);
    c.store.transaction(() => rows.forEach((r, i) => c.store.vectors.put(model, r.rowid, v, i)));
    c.core.hooks.vectors = {
      unavailable: () => null,
      fusion: () => FUSION.builtin,
      search: async (_query, q) => c.store.vectors.knn(model, v, q),
    };
    const all = await c.core.call(R.search, { query: 'anything', mode: 'vector', limit: 10 });
    assert.equal(all.hits.length, 4);
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'style', branch: 'b1' });
    const vec = await c.core.call(R.search, { query: 'anything', mode: 'vector', limit: 10, branch: 'b1' });
    assert.deepEqual(vec.hits.map((h) => h.memory.key).sort(), ['auth', 'note']);
    // Hybrid: the branch's version comes from the full-text arm; the base version from neither arm.
    const hy = await c.core.call(R.search, {
      query: 'database',
      limit: 10,
      branch: 'b1',
      scope: { root: 'project.app', includeUser: false },
    });
    const values = hy.hits.map((h) => h.memory.value);
    assert.ok(values.includes('the database is sqlite'));
    assert.ok(!values.includes('the database is postgres'));
    assert.ok(hy.hits.every((h) => h.memory.namespace.startsWith('project.app')));
  });

  it('diff lists added, changed and deleted with their base versions; merge applies them with history', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'new', value: 'a new fact', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'style', branch: 'b1' });
    const d = await c.core.call(R.branchDiff, { name: 'b1' });
    assert.deepEqual(
      d.changes.map((x) => [x.key, x.change, x.baseVersion, x.conflict]),
      [
        ['db', 'changed', 1, false],
        ['new', 'added', null, false],
        ['style', 'deleted', 1, false],
      ],
    );
    assert.equal(d.branch.writes, 3);
    const m = await c.core.call(R.branchMerge, { name: 'b1', actor: 'alice' });
    assert.deepEqual([m.merged, m.applied, m.conflicts.length], [true, 3, 0]);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'the database is sqlite');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'new' })).value, 'a new fact');
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'style' }), 'NotFound', 'key');
    const h = await c.core.call(R.history, { namespace: 'project.app', key: 'db' });
    assert.equal(h.entries[0].actor, 'alice');
    assert.equal(h.entries[0].reason, 'merge of branch b1');
    const hs = await c.core.call(R.history, { namespace: 'project.app', key: 'style' });
    assert.deepEqual([hs.entries[0].op, hs.entries[0].actor, hs.entries[0].reason], ['delete', 'alice', 'merge of branch b1']);
    // Merged: closed, its rows dropped, its name free again.
    assert.equal(count(c, 'branch_memories'), 0);
    assert.equal(branchText(c), 0);
    assert.deepEqual((await c.core.call(R.branchList, {})).branches, []);
    assert.equal((await c.core.call(R.branchList, { all: true })).branches[0].status, 'merged');
    await rejectsWith(c.core.call(R.branchMerge, { name: 'b1' }), 'NotFound', 'name');
  });

  it('a memory changed on both sides is a conflict: nothing merges until every conflict has a decision', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'branch says sqlite', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'branch says spaces', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'base says mysql' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'base says two tabs' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'added', value: 'clean add', branch: 'b1' });
    const refused = await c.core.call(R.branchMerge, { name: 'b1' });
    assert.equal(refused.merged, false);
    assert.equal(refused.applied, 0);
    assert.deepEqual(
      refused.conflicts.map((x) => [x.key, x.baseVersion, x.base?.version, x.base?.value, x.branch.value]),
      [
        ['db', 1, 2, 'base says mysql', 'branch says sqlite'],
        ['style', 1, 2, 'base says two tabs', 'branch says spaces'],
      ],
    );
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'added' }), 'NotFound', 'key'); // nothing merged
    // One decision is not enough.
    const half = await c.core.call(R.branchMerge, { name: 'b1', resolutions: [{ namespace: 'project.app', key: 'db', take: 'branch' }] });
    assert.deepEqual([half.merged, half.conflicts.map((x) => x.key)], [false, ['style']]);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'base says mysql');
    await rejectsWith(
      c.core.call(R.branchMerge, { name: 'b1', resolutions: [{ namespace: 'project.app', key: 'nothing', take: 'base' }] }),
      'InvalidParams',
      'resolutions[0]',
    );
    const ok = await c.core.call(R.branchMerge, {
      name: 'b1',
      actor: 'bob',
      resolutions: [
        { namespace: 'project.app', key: 'db', take: 'branch' },
        { namespace: 'project.app', key: 'style', take: { value: 'tabs, width two' } },
      ],
    });
    assert.deepEqual([ok.merged, ok.applied], [true, 3]);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'branch says sqlite');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'style' })).value, 'tabs, width two');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'added' })).value, 'clean add');
  });

  it('take: base keeps the base, and discard drops a branch and its rows', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'branch says sqlite', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'base says mysql' });
    const m = await c.core.call(R.branchMerge, { name: 'b1', resolutions: [{ namespace: 'project.app', key: 'db', take: 'base' }] });
    assert.deepEqual([m.merged, m.applied], [true, 0]);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'base says mysql');

    await c.core.call(R.branchCreate, { name: 'b2', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'x', value: 'only on b2', branch: 'b2' });
    const positionBefore = c.store.position();
    const d = await c.core.call(R.branchDiscard, { name: 'b2', actor: 'carol' });
    assert.deepEqual(d, { name: 'b2', dropped: 1 });
    assert.equal(c.store.position(), positionBefore);
    assert.equal(count(c, 'branch_memories'), 0);
    assert.equal(branchText(c), 0);
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'x', branch: 'b2' }), 'NotFound', 'branch');
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'x' }), 'NotFound', 'key');
    const all = (await c.core.call(R.branchList, { all: true })).branches;
    assert.deepEqual(
      all.map((b) => [b.name, b.status, b.closedBy]),
      [
        ['b2', 'discarded', 'carol'],
        ['b1', 'merged', 'user'],
      ],
    );
    await rejectsWith(c.core.call(R.branchDiscard, { name: 'b2' }), 'NotFound', 'name');
  });

  it('a branch made from another starts with its writes under the new root', async () => {
    await c.core.call(R.branchCreate, { name: 'parent', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'auth', value: 'parent auth', branch: 'parent' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'parent db', branch: 'parent' });
    const child = await c.core.call(R.branchCreate, { name: 'child', root: 'project.app.api', from: 'parent' });
    assert.deepEqual([child.from, child.writes], ['parent', 1]);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app.api', key: 'auth', branch: 'child' })).value, 'parent auth');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db', branch: 'child' })).value, 'the database is postgres');
    await rejectsWith(c.core.call(R.branchCreate, { name: 'c2', root: 'project.other', from: 'parent' }), 'InvalidParams', 'root');
  });

  it('erase reaches branch rows: of the erased memory, and every one under an erased root', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'branch secret db text', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'fresh', value: 'branch only text', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'branch style', branch: 'b1' });
    await c.core.call(R.erase, { namespace: 'project.app', key: 'db' });
    const left = () => (c.store.db.prepare('SELECT key FROM branch_memories ORDER BY key').all() as { key: string }[]).map((r) => r.key);
    assert.deepEqual(left(), ['fresh', 'style']);
    assert.equal(branchText(c), 2);
    const s = await c.core.call(R.search, { query: 'secret', mode: 'fts', branch: 'b1' });
    assert.equal(s.hits.length, 0);
    await c.core.call(R.erase, { root: 'project.app.api' });
    assert.deepEqual(left(), ['style']);
    assert.equal(branchText(c), 1);
  });

  it('erase reaches a branch row of the same key with its own id, and a branch-only memory, and the receipt covers them', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.branchCreate, { name: 'b2', root: 'project.app' });
    // The branch adds `cache` before the base writes it: the branch row has its own id.
    const own = await c.core.call(R.upsert, { namespace: 'project.app', key: 'cache', value: 'branch cache secret', branch: 'b1' });
    const base = await c.core.call(R.upsert, { namespace: 'project.app', key: 'cache', value: 'base cache secret' });
    assert.notEqual(own.memory.id, base.memory.id);
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'b2 db secret', branch: 'b2' });
    const r = await c.core.call(R.erase, { id: base.memory.id, reason: 'leaked' });
    const left = () => (c.store.db.prepare('SELECT key FROM branch_memories ORDER BY key').all() as { key: string }[]).map((x) => x.key);
    assert.deepEqual(left(), ['db'], 'the branch row of the erased key is gone with the base memory');
    assert.equal(branchText(c), 1);
    assert.equal(r.erased, 2);
    assert.deepEqual(r.receipt.memories.map((m) => m.id).sort(), [base.memory.id, own.memory.id].sort());
    assert.ok('walTruncated' in r.receipt);
    assert.equal((r.receipt as { removed: { branchRows?: number } }).removed.branchRows, 1);
    const items = [
      { id: base.memory.id, namespace: 'project.app', key: 'cache', value: 'base cache secret' },
      { id: own.memory.id, namespace: 'project.app', key: 'cache', value: 'branch cache secret' },
    ];
    assert.equal(r.receipt.contentHash, contentHash(r.receipt.salt, items), 'the hash covers the branch row');
    assert.notEqual(r.receipt.contentHash, contentHash(r.receipt.salt, items.slice(0, 1)));
    assert.equal(verifyReceipt(r.receipt).ok, true);
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'cache', branch: 'b1' }), 'NotFound', 'key');
    // The erase is versioned for the branch-only memory too.
    const h = (await c.core.call(R.history, { id: own.memory.id })).entries;
    assert.deepEqual(
      h.map((e) => [e.op, e.actor, e.reason]),
      [['erase', 'user', 'leaked']],
    );

    // A memory only on a branch: by id, and by key.
    const only = await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'tmp', value: 'branch only secret', branch: 'b2' });
    const e1 = await c.core.call(R.erase, { id: only.memory.id });
    assert.equal(e1.erased, 1);
    assert.deepEqual(e1.receipt.memories, [{ id: only.memory.id, namespace: 'project.app.api' }]);
    await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'tmp2', value: 'another branch secret', branch: 'b2' });
    const e2 = await c.core.call(R.erase, { namespace: 'project.app.api', key: 'tmp2' });
    assert.equal(e2.erased, 1);
    assert.deepEqual(left(), ['db']);
    // A root with only branch rows under it.
    await c.core.call(R.upsert, { namespace: 'project.app.fresh', key: 'x', value: 'new namespace on a branch', branch: 'b1' });
    const e3 = await c.core.call(R.erase, { root: 'project.app.fresh' });
    assert.equal(e3.erased, 1);
    assert.deepEqual(left(), ['db']);
    // Scope holds for branch rows: outside it, NotFound and nothing erased.
    await rejectsWith(c.core.call(R.erase, { namespace: 'project.app', key: 'db', scope: { root: 'project.other' } }), 'NotFound', 'key');
    assert.deepEqual(left(), ['db']);
    await rejectsWith(c.core.call(R.erase, { id: 'no-such-id' }), 'NotFound', 'id');
    await rejectsWith(c.core.call(R.erase, { root: 'project.nothing' }), 'NotFound', 'root');
  });

  it('retention caps the lifetime of branch rows and purges long-deleted ones, keeping a delete that hides the base', async () => {
    const DAY = 86_400_000;
    const T0 = c.store.now() + DAY; // after the base writes of beforeEach
    let now = T0;
    c.store.now = () => now;
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app.api', key: 'auth', value: 'branch auth uses cookies', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'tmp', value: 'branch scratch secret', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'tmp', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'style', value: 'branch style secret', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'style', branch: 'b1' });
    const row = (key: string) =>
      c.store.db.prepare('SELECT value, version, expires_at, deleted_at FROM branch_memories WHERE key = ?').get(key) as
        { value: string; version: number; expires_at: number | null; deleted_at: number | null } | undefined;

    // maxTtlDays: the live branch row gets the expiry a base memory gets, as a new version; deleted rows are left.
    await c.core.call(R.retention, { set: { root: 'project.app.api', maxTtlDays: 10 } });
    now = T0 + DAY;
    const r1 = await c.core.call(R.sweep, {});
    assert.equal(r1.retention!.ttlCapped, 2, 'the base memory and the branch row');
    assert.equal(row('auth')!.expires_at, T0 + 10 * DAY);
    assert.equal(row('auth')!.version, 3);
    assert.equal(
      (await c.core.call(R.get, { namespace: 'project.app.api', key: 'auth', branch: 'b1' })).expiresAt,
      new Date(T0 + 10 * DAY).toISOString(),
    );
    assert.equal(row('tmp')!.expires_at, null);
    await c.core.call(R.retention, { clear: 'project.app.api' });

    // maxAgeDays: a branch row deleted long ago goes; one whose delete hides a live base memory keeps it, text blanked.
    now = T0 + 40 * DAY;
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'recent', value: 'recent branch text', branch: 'b1' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'recent', branch: 'b1' });
    await c.core.call(R.retention, { set: { root: 'project.app', maxAgeDays: 30 } });
    now = T0 + 45 * DAY;
    const r2 = await c.core.call(R.sweep, {});
    assert.ok(r2.retention!.purged >= 2);
    assert.equal(row('tmp'), undefined);
    assert.equal(row('style')!.value, '');
    assert.notEqual(row('style')!.deleted_at, null);
    await rejectsWith(c.core.call(R.get, { namespace: 'project.app', key: 'style', branch: 'b1' }), 'NotFound', 'key');
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'style' })).value, 'tabs for indentation');
    assert.equal((await c.core.call(R.search, { query: 'secret', mode: 'fts', branch: 'b1' })).hits.length, 0);
    assert.equal(branchText(c, 'secret'), 0);
    assert.equal(row('recent')!.value, 'recent branch text', 'deleted 5 days ago: kept');
    // The kept delete still merges as a delete; a second sweep finds nothing more.
    const again = await c.core.call(R.sweep, {});
    assert.equal(again.retention!.purged, 0);
    const d = (await c.core.call(R.branchDiff, { name: 'b1' })).changes.find((x) => x.key === 'style')!;
    assert.equal(d.change, 'deleted');
  });

  it('tasks/create with branch: true gives the task a burner branch that its injection reads', async () => {
    await rejectsWith(c.core.call(R.tasksCreate, { title: 't', branch: true }), 'InvalidParams', 'scope.root');
    const t = await c.core.call(R.tasksCreate, { title: 'agent work', scope: { root: 'project.app' }, branch: true });
    assert.equal(t.branch, `task/${t.id}`);
    const listed = (await c.core.call(R.branchList, {})).branches;
    assert.deepEqual(
      listed.map((b) => [b.name, b.root, b.taskId]),
      [[`task/${t.id}`, 'project.app', t.id]],
    );
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is duckdb now', branch: t.branch! });
    const block = await c.core.call(R.injectBlock, { taskId: t.id, prompt: 'which database do we use' });
    assert.match(block.block, /duckdb/);
    assert.doesNotMatch(block.block, /postgres/);
    const plain = await c.core.call(R.injectBlock, { prompt: 'which database do we use', scope: { root: 'project.app' } });
    assert.match(plain.block, /postgres/);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'the database is postgres');
    const m = await c.core.call(R.branchMerge, { name: t.branch! });
    assert.equal(m.merged, true);
    assert.equal((await c.core.call(R.tasksGet, { id: t.id })).branch, undefined);
    assert.equal((await c.core.call(R.get, { namespace: 'project.app', key: 'db' })).value, 'the database is duckdb now');
    // A task without branch: true has none.
    assert.equal((await c.core.call(R.tasksCreate, { title: 'plain' })).branch, undefined);
  });

  it('a search on a branch follows later branch writes and base writes of the keys it shadows', async () => {
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
    const values = async () =>
      (
        await c.core.call(R.search, { query: 'database', mode: 'fts', branch: 'b1', scope: { root: 'project.app', includeUser: false } })
      ).hits
        .map((h) => h.memory.value)
        .sort();
    assert.deepEqual(await values(), ['the database is postgres']);
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is sqlite', branch: 'b1' });
    assert.deepEqual(await values(), ['the database is sqlite']);
    // The branch adds a key; the base then creates the same key: the branch's version still wins.
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'cache', value: 'database cache on the branch', branch: 'b1' });
    assert.deepEqual(await values(), ['database cache on the branch', 'the database is sqlite']);
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'cache', value: 'database cache on the base' });
    assert.deepEqual(await values(), ['database cache on the branch', 'the database is sqlite']);
    const d = await c.core.call(R.branchDiff, { name: 'b1' });
    assert.deepEqual(
      d.changes.map((x) => [x.key, x.change, x.conflict]),
      [
        ['cache', 'added', true],
        ['db', 'changed', false],
      ],
    );
  });
});
