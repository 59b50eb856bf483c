/**
 * The retention sweep the daemon runs (timer and store/sweep) works in small steps, each its own transaction, and
 * yields to the event loop between them, so a sweep with much to do never holds other requests; it ends with the
 * same result as the one-piece sweep, and stops at a request's deadline with RequestTimeLimit.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests } from '../../daemon/src/protocol/methods';
import { requestContext } from '../../daemon/src/server/limits';
import { enforceRetention, enforceRetentionPaced } from '../../daemon/src/store/retention';
import { rejectsWith, tempCore } from '../helpers';

const N = 300;

async function storeWithVersions() {
  const t = tempCore();
  for (let v = 1; v <= 3; v++) {
    await t.core.call(Requests.upsertBatch, {
      items: Array.from({ length: N }, (_, i) => ({ namespace: 'project.r', key: `k${i}`, value: `version ${v} of ${i}` })),
    });
  }
  await t.core.call(Requests.retention, { set: { root: 'project.r', maxVersions: 1 } });
  const trimmed = () => (t.store.db.prepare(`SELECT count(*) AS c FROM history WHERE op = 'retention'`).get() as { c: number }).c;
  return { t, trimmed };
}

describe('paced retention sweep', () => {
  it('yields between steps: other work runs while it is part-way through', async () => {
    const { t, trimmed } = await storeWithVersions();
    try {
      const running = enforceRetentionPaced(t.store, 500, undefined, 50);
      let midway = -1;
      setImmediate(() => (midway = trimmed()));
      const report = await running;
      assert.ok(midway > 0 && midway < N, `part-way through when another callback ran (${midway} of ${N} memories trimmed)`);
      assert.equal(report.removedVersions, N * 2);
      assert.equal(trimmed(), N);
    } finally {
      t.close();
    }
  });

  it('ends with the same result as the one-piece sweep', async () => {
    const a = await storeWithVersions();
    const b = await storeWithVersions();
    try {
      const paced = await enforceRetentionPaced(a.t.store, 500, undefined, 7);
      const whole = enforceRetention(b.t.store, 500);
      assert.equal(paced.removedVersions, whole.removedVersions);
      assert.equal(a.trimmed(), b.trimmed());
    } finally {
      a.t.close();
      b.t.close();
    }
  });

  it('stops at the deadline with RequestTimeLimit and its progress', async () => {
    const { t, trimmed } = await storeWithVersions();
    try {
      const data = await rejectsWith(enforceRetentionPaced(t.store, 500, requestContext(0), 50), 'RequestTimeLimit');
      const progress = data.progress as { removedVersions: number };
      assert.equal(progress.removedVersions, 100, 'one step of 50 memories (2 versions each) was done');
      assert.equal(trimmed(), 50);
    } finally {
      t.close();
    }
  });
});
