/**
 * An idempotent replay returns the recorded answer exactly: memory/upsert completes its answer after the commit
 * (the duplicate check: `duplicateCheck`, `possibleDuplicates`, `duplicatesSkipped`), and a retry with the same key
 * gets all of it back, plus `replayed: true`. A write erased while its duplicate check ran stays erased for a retry.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { CoreHooks } from '../../daemon/src/server/core';
import { rejectsWith, tempCore } from '../helpers';

describe('an idempotent replay returns the first answer exactly', () => {
  it('with the duplicate check the first answer had (done, with duplicates; skipped; pending)', async () => {
    const t = tempCore();
    try {
      const other = (await t.core.call(R.upsert, { namespace: 'project.a', key: 'other', value: 'the deploy runs on fridays' })).memory;
      let answer: Awaited<ReturnType<NonNullable<CoreHooks['duplicates']>>> = {
        duplicateCheck: 'done',
        possibleDuplicates: [{ id: other.id, key: other.key, namespace: other.namespace, similarity: 0.91 }],
      };
      t.core.hooks.duplicates = async () => answer;
      const cases: [string, typeof answer][] = [
        ['done', answer],
        ['skipped', { duplicateCheck: 'unavailable', possibleDuplicates: [], skipped: 'the model is still loading' }],
        ['pending', { duplicateCheck: 'pending', possibleDuplicates: [] }],
      ];
      for (const [name, a] of cases) {
        answer = a;
        const w = {
          namespace: 'project.a',
          key: `k-${name}`,
          value: `deploys run on fridays (${name})`,
          waitForDuplicates: true,
          idempotencyKey: `key-${name}-00001`,
        };
        const first = await t.core.call(R.upsert, w);
        assert.equal(first.duplicateCheck, a.duplicateCheck, name);
        answer = { duplicateCheck: 'unavailable', possibleDuplicates: [], skipped: 'a later answer that no replay may show' };
        const retry = await t.core.call(R.upsert, w);
        assert.deepEqual(retry, { ...first, replayed: true }, name);
      }
    } finally {
      t.close();
    }
  });

  it('without a duplicate check (no vector index): duplicateCheck unavailable, also on the replay', async () => {
    const t = tempCore();
    try {
      const w = { namespace: 'project.a', key: 'k', value: 'v', idempotencyKey: 'key-no-check-0001' };
      const first = await t.core.call(R.upsert, w);
      assert.equal(first.duplicateCheck, 'unavailable');
      assert.deepEqual(await t.core.call(R.upsert, w), { ...first, replayed: true });
    } finally {
      t.close();
    }
  });

  it('a write erased while its duplicate check ran is not recorded again: the retry is refused', async () => {
    const t = tempCore();
    try {
      t.core.hooks.duplicates = async (m) => {
        await t.core.call(R.erase, { id: m.id });
        return { duplicateCheck: 'done', possibleDuplicates: [] };
      };
      const w = {
        namespace: 'project.a',
        key: 'gone',
        value: 'erased at once',
        waitForDuplicates: true,
        idempotencyKey: 'key-erased-0001',
      };
      await t.core.call(R.upsert, w);
      const data = await rejectsWith(t.core.call(R.upsert, w), 'InvalidState', 'idempotencyKey');
      assert.equal(data.erased, true);
      await rejectsWith(t.core.call(R.get, { namespace: 'project.a', key: 'gone' }), 'NotFound');
    } finally {
      t.close();
    }
  });
});
