/**
 * Conformance: retrieval on both stores with the real built-in embedding model.
 * Scope attacks on every arm, filters on every arm, identifier splitting, and
 * the crowding test: hundreds of out-of-scope near-duplicates cannot push
 * in-scope memories out of the vector arm's top-k.
 */
import assert from 'node:assert/strict';
import { before, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Core } from '../../daemon/src/server/core';
import { rejectsWith } from '../helpers';
import { forEachBackend } from './harness';

const MODES = ['fts', 'vector', 'hybrid'] as const;

forEachBackend('conformance: search', { embeddings: true }, (get) => {
  const call: Core['call'] = (def, p) => get().core.call(def, p);

  before(async () => {
    let last = 0;
    for (const [ns, key, value, kind] of [
      ['team.foo', 'plan', 'The secret rollout plan ships the payment gateway on Monday', 'decision'],
      ['team.foobar', 'plan', 'The secret rollout plan ships the payment gateway on Monday', 'decision'],
      ['team.f_o', 'plan', 'Rollout of the payment gateway happens in waves', 'fact'],
      ['team.fxo', 'plan', 'Rollout of the payment gateway happens in waves', 'fact'],
      ['team.foo.sub', 'notes', 'The payment gateway retries declined charges', 'fact'],
      ['team.code', 'ident', 'Call getUserById before renderProfilePage; the user_id column is indexed', 'procedure'],
    ] as const) {
      last = (await call(R.upsert, { namespace: ns, key, value, kind })).position;
    }
    await get().settle(last);
  });

  it('a scope never widens to prefix siblings, wildcards or unknown roots, on any arm', async () => {
    for (const mode of MODES) {
      const r = await call(R.search, {
        query: 'secret rollout plan payment gateway',
        mode,
        scope: { root: 'team.foo', includeUser: false },
        limit: 20,
      });
      assert.ok(r.hits.length >= 1, `${mode}: finds in scope`);
      assert.ok(
        r.hits.every((h) => h.memory.namespace === 'team.foo' || h.memory.namespace === 'team.foo.sub'),
        `${mode}: ${r.hits.map((h) => h.memory.namespace)}`,
      );
      const exact = await call(R.search, {
        query: 'rollout payment gateway waves',
        mode,
        scope: { namespaces: ['team.f_o'], includeUser: false },
        limit: 20,
      });
      assert.deepEqual([...new Set(exact.hits.map((h) => h.memory.namespace))], ['team.f_o'], `${mode}: _ is not a wildcard`);
      const none = await call(R.search, { query: 'rollout payment gateway', mode, scope: { root: 'team.nothing', includeUser: false } });
      assert.equal(none.hits.length, 0, `${mode}: unknown root is empty, not everything`);
      await rejectsWith(call(R.search, { query: 'gateway', mode, scope: { root: 'team.%' } }), 'InvalidNamespace', 'scope.root');
      await rejectsWith(
        call(R.search, { query: 'gateway', mode, scope: { namespaces: ['team.f_o', 'team._'] } }),
        'InvalidNamespace',
        'scope.namespaces[1]',
      );
    }
    const l = await call(R.list, { scope: { root: 'team.fo', includeUser: false } });
    assert.equal(l.items.length, 0, 'team.fo is not a prefix of team.foo');
    const id = (await call(R.get, { namespace: 'team.foobar', key: 'plan' })).id;
    await rejectsWith(call(R.get, { id, scope: { root: 'team.foo', includeUser: false } }), 'NotFound', 'id');
  });

  it('applies the same filter on every arm', async () => {
    for (const mode of MODES) {
      const r = await call(R.search, {
        query: 'payment gateway rollout',
        mode,
        scope: { root: 'team', includeUser: false },
        filter: { field: 'kind', op: 'eq', value: 'fact' },
        limit: 20,
      });
      assert.ok(r.hits.length >= 1, mode);
      assert.ok(
        r.hits.every((h) => h.memory.kind === 'fact'),
        `${mode}: ${r.hits.map((h) => h.memory.kind)}`,
      );
      const n = await call(R.search, {
        query: 'payment gateway rollout',
        mode,
        scope: { root: 'team', includeUser: false },
        filter: { not: { field: 'namespace', op: 'in', value: ['team.foo', 'team.foobar'] } },
        limit: 20,
      });
      assert.ok(n.hits.length >= 1 && n.hits.every((h) => !['team.foo', 'team.foobar'].includes(h.memory.namespace)), mode);
    }
    await rejectsWith(
      call(R.search, { query: 'x', filter: { field: 'tags', op: 'has', value: ['a', 'b'] } }),
      'InvalidFilter',
      'filter.value',
    );
  });

  it('splits code identifiers in full text', async () => {
    for (const q of ['get user by id', 'getUserById', 'render profile page', 'user_id']) {
      const r = await call(R.search, { query: q, mode: 'fts', scope: { root: 'team', includeUser: false } });
      assert.equal(r.hits[0]?.memory.key, 'ident', q);
    }
    const typing = await call(R.search, { query: 'rollo', mode: 'fts', scope: { root: 'team.fxo', includeUser: false } });
    assert.equal(typing.hits[0]?.memory.key, 'plan', 'a word still being typed matches as a prefix');
  });

  it('deleted, superseded and proposed memories leave every arm at once', async () => {
    const a = await call(R.upsert, { namespace: 'team.vis', key: 'a', value: 'Kubernetes pods restart on memory pressure' });
    await get().settle(a.position);
    const q = { query: 'kubernetes pods restart memory', scope: { root: 'team.vis', includeUser: false } };
    for (const mode of MODES) assert.equal((await call(R.search, { ...q, mode })).hits.length, 1, mode);
    await call(R.delete, { id: a.memory.id });
    for (const mode of MODES) assert.equal((await call(R.search, { ...q, mode })).hits.length, 0, `${mode} after delete`);
    assert.equal((await call(R.search, { ...q, mode: 'vector', include: { deleted: true } })).hits.length, 1);
    await call(R.restore, { id: a.memory.id });
    const b = await call(R.upsert, {
      namespace: 'team.vis',
      key: 'b',
      value: 'Pods restart when nodes run out of memory',
      supersedes: a.memory.id,
      status: 'proposed',
    });
    await get().settle(b.position);
    for (const mode of MODES) assert.equal((await call(R.search, { ...q, mode })).hits.length, 0, `${mode}: a superseded, b proposed`);
    assert.equal((await call(R.search, { ...q, mode: 'vector', include: { proposed: true } })).hits.length, 1);
  });

  it('takes the vector top-k inside the scope: hundreds of out-of-scope near-duplicates cannot crowd it out', async () => {
    const items = Array.from({ length: 400 }, (_, i) => ({
      namespace: 'team.crowd',
      key: `dup-${i}`,
      value: `The payment service retries failed credit card charges three times (copy ${i})`,
    }));
    await call(R.upsertBatch, { items });
    const own = [
      await call(R.upsert, { namespace: 'team.mine', key: 'billing', value: 'Billing retries declined card payments with backoff' }),
      await call(R.upsert, { namespace: 'team.mine', key: 'invoices', value: 'Invoices are emailed after a successful charge' }),
      await call(R.upsert, { namespace: 'team.mine', key: 'unrelated', value: 'The logo uses a teal colour' }),
    ];
    await get().settle(own[2].position);
    for (const filter of [undefined, { field: 'kind', op: 'eq', value: 'note' } as const]) {
      const r = await call(R.search, {
        query: 'payment service retries failed credit card charges',
        mode: 'vector',
        limit: 3,
        scope: { root: 'team.mine', includeUser: false },
        ...(filter ? { filter } : {}),
      });
      assert.deepEqual(
        r.hits.map((x) => x.memory.namespace),
        ['team.mine', 'team.mine', 'team.mine'],
        `filter: ${JSON.stringify(filter)}`,
      );
      assert.equal(r.hits[0].memory.key, 'billing');
    }
    const hyb = await call(R.search, { query: 'payment retries credit card', limit: 2, scope: { root: 'team.mine', includeUser: false } });
    assert.deepEqual(
      hyb.hits.map((x) => x.memory.key),
      ['billing', 'invoices'].slice(0, hyb.hits.length),
    );
    assert.ok(hyb.hits.length >= 1 && hyb.hits.every((x) => x.memory.namespace === 'team.mine'));
    const whole = await call(R.search, {
      query: 'payment service retries failed credit card charges',
      mode: 'vector',
      limit: 3,
      scope: { root: 'team', includeUser: false },
    });
    assert.deepEqual(
      whole.hits.map((x) => x.memory.namespace),
      ['team.crowd', 'team.crowd', 'team.crowd'],
      'without the scope the duplicates do win',
    );
  });
});
