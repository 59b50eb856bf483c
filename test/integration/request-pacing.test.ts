/**
 * One request cannot hold the daemon: a large store/import (or store/export) runs in chunks that yield to the
 * event loop, so a small request on another connection is answered while it runs; and past the per-request time
 * limit the work stops at a chunk boundary with RequestTimeLimit, saying what was done (docs/protocol.md#limits).
 * Ordering and state only: no timed assertions.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Notifications, Requests } from '../../daemon/src/protocol/methods';
import { ErrorCodes, deprecatedErrorCodes } from '../../daemon/src/protocol/errors';
import type { ExportRecord, ProgressParams } from '../../daemon/src/protocol/types';
import { rejectsWith, spawnDaemon, tempCore, type SpawnedDaemon } from '../helpers';

const MEMORIES = 8000;

/** Export records of a store holding MEMORIES memories (built once, in-process). */
async function bigExport(): Promise<ExportRecord[]> {
  const t = tempCore();
  try {
    for (let b = 0; b < MEMORIES / 2000; b++) {
      const items = Array.from({ length: 2000 }, (_, i) => ({
        namespace: 'project.big',
        key: `k${b}-${i}`,
        value: `bulk memory number ${b}-${i} about pacing and chunks`,
      }));
      await t.core.call(Requests.upsertBatch, { items });
    }
    return (await t.core.call(Requests.exportRecords, { includeHistory: true })).records;
  } finally {
    t.close();
  }
}

describe('long requests share the daemon', () => {
  let records: ExportRecord[];
  let d: SpawnedDaemon;
  before(async () => {
    records = await bigExport();
    d = await spawnDaemon();
  });
  after(async () => d?.stop());

  it('a small request on another connection is answered while a large import runs', async () => {
    const small = await d.client();
    const big = await d.client();
    await small.call(Requests.upsert, { namespace: 'project.small', key: 'probe', value: 'answer me during the import' });
    const order: string[] = [];
    const progress: ProgressParams[] = [];
    let probe: Promise<void> | null = null;
    let progressAfterProbe = 0;
    small.onNotification(Notifications.progress, (p: ProgressParams) => {
      if (p.operation !== 'import') return;
      progress.push(p);
      if (order.includes('get')) progressAfterProbe++;
      // Once the import has started (its first chunk is written), ask something small on the other connection.
      probe ??= small.call(Requests.get, { namespace: 'project.small', key: 'probe' }).then((m) => {
        assert.equal(m.value, 'answer me during the import');
        order.push('get');
      });
    });
    const imported = await big.call(Requests.importRecords, { records, actor: 'pacing-test' }).then((r) => {
      order.push('import');
      return r;
    });
    assert.ok(probe, 'the import reported progress');
    await probe;
    assert.equal(imported.memories, MEMORIES);
    assert.deepEqual(order, ['get', 'import'], 'the small request was answered before the import finished');
    assert.ok(progressAfterProbe > 0, 'the import was still running (reporting chunks) after the small reply');
    assert.equal(progress.at(-1)?.done, records.length);
    assert.equal((await small.call(Requests.status, {})).counts.memories, MEMORIES + 1);
  });

  it('a small request is answered while a whole-store export runs', async () => {
    const small = await d.client();
    const big = await d.client();
    const order: string[] = [];
    let probe: Promise<void> | null = null;
    small.onNotification(Notifications.progress, (p: ProgressParams) => {
      if (p.operation !== 'export') return;
      probe ??= small.call(Requests.status, {}).then(() => void order.push('status'));
    });
    const exported = await big.call(Requests.exportRecords, { includeHistory: true }).then((r) => (order.push('export'), r));
    await probe;
    assert.deepEqual(order, ['status', 'export']);
    assert.equal(exported.records.filter((r) => r.type === 'memory').length, MEMORIES + 1);
  });
});

describe('the per-request time limit', () => {
  it('stops a long import at a chunk boundary with RequestTimeLimit; what it wrote stands and a retry completes it', async () => {
    const records = await bigExport();
    const t = tempCore();
    try {
      t.core.requestTimeMs = 0; // every chunk boundary is past the deadline
      const data = await rejectsWith(t.core.call(Requests.importRecords, { records }), 'RequestTimeLimit');
      assert.equal(data.limit, 0);
      const progress = data.progress as { records: number; memories: number; total: number };
      assert.equal(progress.total, records.length);
      assert.ok(progress.records > 0 && progress.records < records.length, JSON.stringify(progress));
      const stored = t.core.status().counts.memories;
      assert.equal(stored, progress.memories, 'exactly the chunks reported as done were written');
      assert.ok(stored > 0 && stored < MEMORIES);
      t.core.requestTimeMs = 60_000;
      const again = await t.core.call(Requests.importRecords, { records });
      assert.equal(again.memories, MEMORIES - stored, 'the retry skips what the first attempt wrote');
      assert.equal(t.core.status().counts.memories, MEMORIES);
    } finally {
      t.close();
    }
  });

  it('RequestTimeLimit is its own code; the retired Timeout stays reserved and deprecated', () => {
    assert.equal(ErrorCodes.RequestTimeLimit, 1016);
    assert.equal(ErrorCodes.Timeout, 1011);
    assert.ok(deprecatedErrorCodes.has('Timeout'));
    assert.ok(!deprecatedErrorCodes.has('RequestTimeLimit'));
  });
});
