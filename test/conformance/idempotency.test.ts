/**
 * Conformance: idempotency keys (docs/protocol.md#idempotency) behave the same on the SQLite store and on the
 * PostgreSQL team store (before, the team store ignored the key, so a retried team write applied twice): a keyed
 * write sent again answers the recorded result and writes nothing, the same key with another request is
 * InvalidState, two retries racing each other apply once, and a retry after the memory was purged is InvalidState
 * instead of writing it again.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Core } from '../../daemon/src/server/core';
import { rejectsWith } from '../helpers';
import { forEachBackend } from './harness';

forEachBackend('conformance: idempotency keys', {}, (get) => {
  const call: Core['call'] = (def, p) => get().core.call(def, p);
  /** One key per test and backend run (both backends share nothing, but keys stay readable). */
  const key = (name: string) => `${get().name}-${name}-0001`;

  it('a retried upsert answers the recorded result and writes nothing, even after a later write', async () => {
    const w = { namespace: 'team.idem', key: 'u', value: 'first value', idempotencyKey: key('upsert') };
    const first = await call(R.upsert, w);
    assert.equal(first.memory.version, 1);
    assert.equal(first.replayed, undefined);
    await call(R.upsert, { namespace: 'team.idem', key: 'u', value: 'second value' });
    const retry = await call(R.upsert, w);
    assert.equal(retry.replayed, true);
    assert.equal(retry.memory.version, 1);
    assert.equal(retry.memory.value, 'first value');
    assert.equal(retry.position, first.position);
    const now = await call(R.get, { namespace: 'team.idem', key: 'u' });
    assert.equal(now.version, 2, 'the retry did not write over the later value');
    assert.equal(now.value, 'second value');
    assert.equal((await call(R.history, { namespace: 'team.idem', key: 'u' })).entries.length, 2);
  });

  it('the same key with another request is InvalidState and writes nothing', async () => {
    await call(R.upsert, { namespace: 'team.idem', key: 'x', value: 'one', idempotencyKey: key('other') });
    await rejectsWith(
      call(R.upsert, { namespace: 'team.idem', key: 'x', value: 'two', idempotencyKey: key('other') }),
      'InvalidState',
      'idempotencyKey',
    );
    await rejectsWith(call(R.delete, { namespace: 'team.idem', key: 'x', idempotencyKey: key('other') }), 'InvalidState', 'idempotencyKey');
    const m = await call(R.get, { namespace: 'team.idem', key: 'x' });
    assert.equal(m.value, 'one');
    assert.equal(m.deletedAt ?? null, null);
  });

  it('delete, forget, restore and upsertBatch with a key: a retry gets the first result, not an error or a second write', async () => {
    await call(R.upsert, { namespace: 'team.idem', key: 'd', value: 'to delete' });
    const del = await call(R.delete, { namespace: 'team.idem', key: 'd', idempotencyKey: key('delete') });
    const delAgain = await call(R.delete, { namespace: 'team.idem', key: 'd', idempotencyKey: key('delete') });
    assert.equal(delAgain.replayed, true);
    assert.equal(delAgain.position, del.position);
    await rejectsWith(call(R.delete, { namespace: 'team.idem', key: 'd' }), 'InvalidState'); // without the key: already deleted

    const res = await call(R.restore, { namespace: 'team.idem', key: 'd', idempotencyKey: key('restore') });
    const resAgain = await call(R.restore, { namespace: 'team.idem', key: 'd', idempotencyKey: key('restore') });
    assert.equal(resAgain.replayed, true);
    assert.equal(resAgain.memory.version, res.memory.version);

    await call(R.upsert, { namespace: 'team.idem', key: 'f', value: 'a wrong fact' });
    const f = await call(R.forget, { namespace: 'team.idem', key: 'f', idempotencyKey: key('forget') });
    const fAgain = await call(R.forget, { namespace: 'team.idem', key: 'f', idempotencyKey: key('forget') });
    assert.equal(fAgain.replayed, true);
    assert.equal(fAgain.position, f.position);
    const fHistory = (await call(R.history, { namespace: 'team.idem', key: 'f' })).entries.map((e) => e.op);
    assert.deepEqual(fHistory, ['forget', 'create']);

    const items = [
      { namespace: 'team.idem.batch', key: 'a', value: 'batch a' },
      { namespace: 'team.idem.batch', key: 'b', value: 'batch b' },
    ];
    const b = await call(R.upsertBatch, { items, idempotencyKey: key('batch') });
    assert.deepEqual(
      b.results.map((r) => r.ok && r.created),
      [true, true],
    );
    await call(R.upsert, { namespace: 'team.idem.batch', key: 'a', value: 'batch a, changed' });
    const bAgain = await call(R.upsertBatch, { items, idempotencyKey: key('batch') });
    assert.equal(bAgain.replayed, true);
    assert.deepEqual(bAgain.results, b.results);
    assert.equal((await call(R.get, { namespace: 'team.idem.batch', key: 'a' })).value, 'batch a, changed');
  });

  it('two retries of one key at once apply it once', async () => {
    const w = { namespace: 'team.idem', key: 'race', value: 'raced value', idempotencyKey: key('race') };
    const [a, b] = await Promise.all([call(R.upsert, w), call(R.upsert, w)]);
    assert.deepEqual([a.replayed, b.replayed].sort(), [true, undefined].sort());
    assert.equal(a.memory.id, b.memory.id);
    assert.equal((await call(R.history, { namespace: 'team.idem', key: 'race' })).entries.length, 1);
  });

  it('a retry after the memory was purged is InvalidState (data.erased) and does not write it again', async () => {
    const w = { namespace: 'team.idem', key: 'p', value: 'purged value', idempotencyKey: key('purge-write') };
    const m = await call(R.upsert, w);
    await call(R.delete, { id: m.memory.id });
    await call(R.purge, { id: m.memory.id });
    const data = await rejectsWith(call(R.upsert, w), 'InvalidState', 'idempotencyKey');
    assert.equal(data.erased, true);
    await rejectsWith(call(R.get, { namespace: 'team.idem', key: 'p', includeDeleted: true }), 'NotFound');
    // A new key is a new write.
    const again = await call(R.upsert, { ...w, idempotencyKey: key('purge-new') });
    assert.equal(again.created, true);
  });
});
