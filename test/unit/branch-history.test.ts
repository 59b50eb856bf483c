/**
 * The history of memory branch writes (issue 26: "every change is versioned with who made it and why";
 * docs/branches.md): upsert, delete and restore on a branch are recorded with the branch, actor, reason and states,
 * read by memory/history with `branch`, never mixed into the base memory's history; a merge still writes the base's
 * history; the branch's history outlives its merge or discard; erase and retention reach it.
 */
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { rejectsWith, tempCore } from '../helpers';

type C = ReturnType<typeof tempCore>;
const DAY = 86_400_000;

describe('memory branches: history of branch writes', () => {
  let c: C;
  const hist = (p: Record<string, unknown>) => c.core.call(R.history, p as never);
  beforeEach(async () => {
    c = tempCore();
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'the database is postgres', actor: 'ann' });
    await c.core.call(R.branchCreate, { name: 'b1', root: 'project.app' });
  });
  afterEach(() => c.close());

  it('records each branch write with actor, reason and states, apart from the base history', async () => {
    const base = (await hist({ namespace: 'project.app', key: 'db' })).entries;
    await c.core.call(R.upsert, {
      namespace: 'project.app',
      key: 'db',
      value: 'the database is sqlite',
      branch: 'b1',
      actor: 'agent',
      reason: 'try sqlite',
    });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'new', value: 'a note only on the branch', branch: 'b1', actor: 'agent' });
    await c.core.call(R.delete, { namespace: 'project.app', key: 'new', branch: 'b1', actor: 'bob', reason: 'not needed' });
    await c.core.call(R.upsert, {
      namespace: 'project.app',
      key: 'new',
      value: 'a note, back again',
      restore: true,
      branch: 'b1',
      actor: 'bob',
    });

    const db = (await hist({ namespace: 'project.app', key: 'db', branch: 'b1' })).entries;
    assert.equal(db.length, 1);
    assert.deepEqual([db[0].op, db[0].actor, db[0].reason, db[0].branch, db[0].version], ['update', 'agent', 'try sqlite', 'b1', 2]);
    assert.equal(db[0].previous?.value, 'the database is postgres', 'the base state the branch started from');
    assert.equal(db[0].state?.value, 'the database is sqlite');

    const n = await hist({ namespace: 'project.app', key: 'new', branch: 'b1' });
    assert.deepEqual(
      n.entries.map((e) => [e.op, e.actor, e.version]),
      [
        ['restore', 'bob', 3],
        ['delete', 'bob', 2],
        ['create', 'agent', 1],
      ],
    );
    assert.equal(n.entries[1].reason, 'not needed');
    assert.equal(n.entries[1].state?.deletedBy, 'bob');
    assert.equal(n.capped, false);
    // By id too, and with a limit.
    const id = n.entries[0].memoryId;
    assert.equal((await hist({ id, branch: 'b1', limit: 1 })).entries[0].op, 'restore');

    // The base memory's history is as it was: no branch entry, no interleaved versions.
    assert.deepEqual((await hist({ namespace: 'project.app', key: 'db' })).entries, base);
    assert.ok(base.every((e) => e.branch === undefined));
    await rejectsWith(hist({ namespace: 'project.app', key: 'new' }), 'NotFound', 'key');
  });

  it('refuses unknown branches, memories it never wrote and memories outside the scope', async () => {
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'sqlite', branch: 'b1' });
    await rejectsWith(hist({ namespace: 'project.app', key: 'db', branch: 'nope' }), 'NotFound', 'branch');
    await rejectsWith(hist({ namespace: 'project.app', key: 'other', branch: 'b1' }), 'NotFound', 'key');
    await rejectsWith(hist({ namespace: 'project.app', key: 'db', branch: 'b1', scope: { root: 'project.web' } }), 'NotFound', 'key');
    await rejectsWith(hist({ namespace: 'Bad..ns', key: 'db', branch: 'b1' }), 'InvalidNamespace', 'namespace');
    await rejectsWith(hist({ branch: 'b1' }), 'InvalidParams', 'id');
    assert.equal((await hist({ namespace: 'project.app', key: 'db', branch: 'b1', scope: { root: 'project' } })).entries.length, 1);
  });

  it('a merge writes the base history; the branch history outlives merge and discard', async () => {
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'sqlite now', branch: 'b1', actor: 'agent' });
    const m = await c.core.call(R.branchMerge, { name: 'b1', actor: 'lead' });
    assert.ok(m.merged);
    const base = (await hist({ namespace: 'project.app', key: 'db' })).entries;
    assert.deepEqual([base[0].actor, base[0].reason, base[0].branch], ['lead', 'merge of branch b1', undefined]);
    const after = (await hist({ namespace: 'project.app', key: 'db', branch: 'b1' })).entries;
    assert.deepEqual([after[0].actor, after[0].state?.value], ['agent', 'sqlite now'], 'still readable by the closed branch name');

    await c.core.call(R.branchCreate, { name: 'b2', root: 'project.app' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'tmp', value: 'scratch text', branch: 'b2' });
    await c.core.call(R.branchDiscard, { name: 'b2' });
    assert.equal((await hist({ namespace: 'project.app', key: 'tmp', branch: 'b2' })).entries[0].state?.value, 'scratch text');
  });

  it('erase removes branch history, even of a discarded branch, and counts it in the receipt', async () => {
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'tmp', value: 'secret-ish scratch', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'sqlite', branch: 'b1' });
    await c.core.call(R.branchDiscard, { name: 'b1' });
    const count = () => (c.store.db.prepare('SELECT count(*) AS n FROM branch_history').get() as { n: number }).n;
    assert.equal(count(), 2);
    // Only its history is left of `tmp`: erase still reaches it, inside the caller's scope only.
    const tmpId = (await hist({ namespace: 'project.app', key: 'tmp', branch: 'b1' })).entries[0].memoryId;
    await rejectsWith(c.core.call(R.erase, { id: tmpId, reason: 'test', scope: { root: 'project.web' } }), 'NotFound', 'id');
    assert.equal(count(), 2, 'nothing erased outside the scope');
    const r = await c.core.call(R.erase, { namespace: 'project.app', key: 'tmp', reason: 'test' });
    assert.equal(r.receipt.removed.history, 1);
    await rejectsWith(hist({ namespace: 'project.app', key: 'tmp', branch: 'b1' }), 'NotFound', 'key');
    // The base memory's erase takes its branch history along.
    await c.core.call(R.erase, { namespace: 'project.app', key: 'db', reason: 'test' });
    assert.equal(count(), 0);
    await rejectsWith(c.core.call(R.erase, { namespace: 'project.app', key: 'tmp', reason: 'again' }), 'NotFound', 'key');
  });

  it("retention's maxAgeDays trims old branch history under its root, keeping a live row's newest entry", async () => {
    let now = c.store.now() + DAY; // after beforeEach's writes
    c.store.now = () => now;
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'v1 on branch', branch: 'b1' });
    await c.core.call(R.upsert, { namespace: 'project.app', key: 'db', value: 'v2 on branch', branch: 'b1' });
    now += 40 * DAY;
    await c.core.call(R.retention, { set: { root: 'project', maxAgeDays: 30 } });
    await c.core.call(R.sweep, {});
    const left = (await hist({ namespace: 'project.app', key: 'db', branch: 'b1' })).entries;
    assert.deepEqual(
      left.map((e) => e.state?.value),
      ['v2 on branch'],
    );
  });
});
