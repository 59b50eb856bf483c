/**
 * Scope attacks: every read path (search, list, get by id, neighbors, link,
 * namespaces, export) must keep out-of-scope memories out, and nothing in a
 * namespace name (wildcards, prefixes shared with siblings) may widen a scope.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Scope } from '../../daemon/src/protocol/types';
import { rejectsWith, tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
const ids: Record<string, string> = {};

before(async () => {
  t = tempCore();
  const put = async (namespace: string, key: string, value: string) => {
    ids[`${namespace}/${key}`] = (await t.core.call(R.upsert, { namespace, key, value })).memory.id;
  };
  await put('project.foo', 'db', 'zebra database choice for foo');
  await put('project.foobar', 'db', 'zebra database choice for foobar');
  await put('project.foo.branch.x', 'db', 'zebra database choice on branch x');
  await put('project.fo_', 'db', 'zebra database for fo underscore');
  await put('project.fox', 'db', 'zebra database for fox');
  await put('project.my_app', 'db', 'zebra database for my_app');
  await put('project.myxapp', 'db', 'zebra database for myxapp');
  await put('user', 'name', 'zebra user name is Ada');
  await put('user.preferences', 'editor', 'zebra prefers vim');
  await put('userland', 'x', 'zebra userland is not user');
  await put('team.shared', 'y', 'zebra team memory');
});
after(() => t.close());

async function searchKeys(scope: Scope | undefined): Promise<string[]> {
  const r = await t.core.call(R.search, { query: 'zebra', mode: 'fts', limit: 50, ...(scope ? { scope } : {}) });
  return r.hits.map((h) => `${h.memory.namespace}/${h.memory.key}`).sort();
}
async function listKeys(scope: Scope | undefined): Promise<string[]> {
  const r = await t.core.call(R.list, { limit: 100, ...(scope ? { scope } : {}) });
  return r.items.map((m) => `${m.namespace}/${m.key}`).sort();
}

const cases: [string, Scope, string[]][] = [
  [
    'root covers itself and nested, not prefix siblings',
    { root: 'project.foo', includeUser: false },
    ['project.foo.branch.x/db', 'project.foo/db'],
  ],
  ['exact namespaces do not nest', { namespaces: ['project.foo'], includeUser: false }, ['project.foo/db']],
  ['a literal underscore matches only itself', { namespaces: ['project.my_app'], includeUser: false }, ['project.my_app/db']],
  ['an underscore root is not a LIKE wildcard', { root: 'project.fo_', includeUser: false }, ['project.fo_/db']],
  [
    'user is included by default (user and user.*, not userland)',
    { root: 'project.foo' },
    ['project.foo.branch.x/db', 'project.foo/db', 'user.preferences/editor', 'user/name'],
  ],
  ['a user scope is not widened back to all of user', { root: 'user.preferences' }, ['user.preferences/editor']],
  ['exact user namespace stays exact', { namespaces: ['user'] }, ['user/name']],
  ['an unknown scope yields nothing of its own', { root: 'project.nope', includeUser: false }, []],
  ['an unknown scope still reaches user by default', { root: 'project.nope' }, ['user.preferences/editor', 'user/name']],
  ['nested root', { root: 'project.foo.branch', includeUser: false }, ['project.foo.branch.x/db']],
  ['empty allow-list with includeUser false is empty', { namespaces: [], includeUser: false }, []],
];

describe('scope on the full-text path and list', () => {
  for (const [name, scope, expected] of cases) {
    it(`search: ${name}`, async () => assert.deepEqual(await searchKeys(scope), expected));
    it(`list: ${name}`, async () => assert.deepEqual(await listKeys(scope), expected));
  }

  it('no scope means the whole store', async () => {
    assert.equal((await searchKeys(undefined)).length, 11);
  });

  it('wildcards and malformed scope names are rejected, not interpreted', async () => {
    await rejectsWith(t.core.call(R.search, { query: 'zebra', scope: { root: 'project.%' } }), 'InvalidNamespace', 'scope.root');
    await rejectsWith(
      t.core.call(R.search, { query: 'zebra', scope: { namespaces: ['project.foo', 'project.*'] } }),
      'InvalidNamespace',
      'scope.namespaces[1]',
    );
    await rejectsWith(t.core.call(R.list, { scope: { root: 'project.foo.' } }), 'InvalidNamespace', 'scope.root');
    await rejectsWith(t.core.call(R.list, { scope: { root: '' } }), 'InvalidParams', 'scope.root');
  });

  it('the limit is applied after the scope, so in-scope hits are never crowded out', async () => {
    for (let i = 0; i < 60; i++)
      await t.core.call(R.upsert, { namespace: 'project.crowd', key: `n${i}`, value: 'zebra zebra zebra crowd' });
    const r = await t.core.call(R.search, {
      query: 'zebra',
      mode: 'fts',
      limit: 2,
      scope: { namespaces: ['project.fox'], includeUser: false },
    });
    assert.deepEqual(
      r.hits.map((h) => h.memory.namespace),
      ['project.fox'],
    );
  });

  it('ties go to the caller’s own scope over the user root', async () => {
    const c = tempCore();
    try {
      await c.core.call(R.upsert, { namespace: 'user', key: 'same', value: 'identical tie text' });
      await c.core.call(R.upsert, { namespace: 'project.a', key: 'same', value: 'identical tie text' });
      const r = await c.core.call(R.search, { query: 'identical tie', mode: 'fts', scope: { root: 'project.a' } });
      assert.equal(r.hits.length, 2);
      assert.equal(r.hits[0].score, r.hits[1].score);
      assert.equal(r.hits[0].memory.namespace, 'project.a');
    } finally {
      c.close();
    }
  });
});

describe('scope on the other read paths', () => {
  it('get by id honours a scope', async () => {
    const id = ids['project.foobar/db'];
    await rejectsWith(t.core.call(R.get, { id, scope: { root: 'project.foo', includeUser: false } }), 'NotFound', 'id');
    assert.equal((await t.core.call(R.get, { id, scope: { root: 'project.foobar' } })).namespace, 'project.foobar');
  });

  it('neighbors only returns in-scope memories', async () => {
    const a = ids['project.foo/db'];
    await t.core.call(R.link, { from: a, to: ids['project.foobar/db'], type: 'relates_to' });
    await t.core.call(R.link, { from: a, to: ids['project.foo.branch.x/db'], type: 'relates_to' });
    const n = await t.core.call(R.neighbors, { id: a, scope: { root: 'project.foo', includeUser: false } });
    assert.deepEqual(
      n.neighbors.map((x) => x.memory.namespace),
      ['project.foo.branch.x'],
    );
    await rejectsWith(t.core.call(R.neighbors, { id: ids['project.fox/db'], scope: { root: 'project.foo' } }), 'NotFound', 'id');
  });

  it('namespaces/list with a root does not include prefix siblings', async () => {
    const r = await t.core.call(R.namespacesList, { root: 'project.foo' });
    assert.deepEqual(
      r.namespaces.map((n) => n.path),
      ['project.foo', 'project.foo.branch.x'],
    );
  });

  it('export with a scope exports only that scope', async () => {
    const r = await t.core.call(R.exportRecords, { scope: { root: 'project.foo', includeUser: false } });
    const mems = r.records
      .filter((x) => x.type === 'memory')
      .map((x) => (x as { memory: { namespace: string } }).memory.namespace)
      .sort();
    assert.deepEqual(mems, ['project.foo', 'project.foo.branch.x']);
  });
});
