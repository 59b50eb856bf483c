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
import type { DidChangeParams, ExportRecord, ProgressParams } from '../../daemon/src/protocol/types';
import { CHUNK_FIRST_ITEMS } from '../../daemon/src/store/batch-chunks';
import { rejectsWith, spawnDaemon, tempCore, until, type SpawnedDaemon } from '../helpers';

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
    // The last report goes to every client; on this other connection it may come after the import's reply did.
    await until('the import’s last progress report on the other connection', () => progress.at(-1)?.done === records.length);
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

describe('a large memory/upsertBatch shares the daemon (transactions of bounded work)', () => {
  const items = (n: number, tag = '') =>
    Array.from({ length: n }, (_, i) => ({ namespace: 'project.batch', key: `b${i}`, value: `batch item ${i} ${tag} `.repeat(40) }));

  it('a request on another connection, sent once the batch has committed its first items, is answered before the batch', async () => {
    // It was not: the batch ran in one transaction, and its first change notification came with its answer.
    const d = await spawnDaemon();
    try {
      const small = await d.client();
      const big = await d.client();
      await small.call(Requests.upsert, { namespace: 'project.small', key: 'probe', value: 'answer me during the batch' });
      const order: string[] = [];
      let probe: Promise<void> | null = null;
      let changesAfterProbe = 0;
      small.onNotification(Notifications.didChange, (c: DidChangeParams) => {
        if (c.namespace !== 'project.batch') return;
        if (order.includes('get')) changesAfterProbe++;
        probe ??= small.call(Requests.get, { namespace: 'project.small', key: 'probe' }).then((m) => {
          assert.equal(m.value, 'answer me during the batch');
          order.push('get');
        });
      });
      const r = await big.call(Requests.upsertBatch, { items: items(4000) }).then((x) => (order.push('batch'), x));
      assert.ok(probe, 'the batch notified its changes');
      await probe;
      assert.deepEqual(order, ['get', 'batch'], 'the small request was answered before the batch');
      assert.ok(changesAfterProbe > 0, 'the batch was still writing after the small reply');
      assert.equal(r.results.length, 4000);
      assert.ok(r.results.every((x) => x.ok && x.created));
      assert.equal(r.position, (await small.call(Requests.status, {})).position);
    } finally {
      await d.stop();
    }
  });

  it('with an idempotencyKey, a batch cut off between transactions is finished by its retry and answered once', async () => {
    const t = tempCore();
    try {
      const batch = { items: items(3 * CHUNK_FIRST_ITEMS), idempotencyKey: 'batch-key-0001' };
      let seenBetween = -1;
      t.core.hooks.batchChunks = {
        afterChunk: (done) => {
          // What a reader sees between the transactions: the items committed so far, no more.
          seenBetween = t.core.status().counts.memories;
          assert.equal(seenBetween, done);
          throw new Error('daemon stopped here'); // as if it died after the first transaction
        },
      };
      await assert.rejects(t.core.call(Requests.upsertBatch, batch), /daemon stopped here/);
      assert.ok(seenBetween > 0 && seenBetween < batch.items.length, `first transaction: ${seenBetween} items`);
      t.core.hooks.batchChunks = {};
      // A different request with the same key is still refused while the batch is unfinished.
      await rejectsWith(t.core.call(Requests.upsertBatch, { ...batch, items: items(5, 'other') }), 'InvalidState');
      const done = await t.core.call(Requests.upsertBatch, batch);
      assert.equal(done.replayed, undefined, 'the retry applied the rest');
      assert.equal(done.results.length, batch.items.length);
      assert.ok(
        done.results.every((x) => x.ok && x.created && x.version === 1),
        'every item was written once, as new',
      );
      assert.equal(t.core.status().counts.memories, batch.items.length);
      assert.equal(t.core.status().counts.history, batch.items.length, 'one history row per item: nothing written twice');
      const again = await t.core.call(Requests.upsertBatch, batch);
      assert.equal(again.replayed, true);
      assert.deepEqual(again.results, done.results);
      assert.equal(again.position, done.position);
    } finally {
      t.close();
    }
  });

  it('with an idempotencyKey, each transaction records its own items and a count, not every result so far', async () => {
    const t = tempCore();
    try {
      const batch = { items: items(6 * CHUNK_FIRST_ITEMS, 'progress'), idempotencyKey: 'batch-key-progress' };
      const db = t.store.db;
      const seen: { done: number; record: string; rows: { first: number; n: number }[] }[] = [];
      t.core.hooks.batchChunks = {
        afterChunk: (done) => {
          const rec = db.prepare('SELECT result FROM idempotency_keys WHERE key = ?').get(batch.idempotencyKey) as { result: string };
          const rows = (
            db.prepare('SELECT first, results FROM idempotency_progress WHERE key = ? ORDER BY first').all(batch.idempotencyKey) as {
              first: number;
              results: string;
            }[]
          ).map((r) => ({ first: r.first, n: (JSON.parse(r.results) as unknown[]).length }));
          seen.push({ done, record: rec.result, rows });
        },
      };
      const done = await t.core.call(Requests.upsertBatch, batch);
      assert.ok(seen.length >= 2, `${seen.length} transactions before the last`);
      for (const s of seen) {
        // The key's record is a count, whatever the batch's size; each row holds one transaction's items, in order.
        assert.deepEqual(JSON.parse(s.record), { unfinished: true, done: s.done }, `record after ${s.done} items`);
        let next = 0;
        for (const r of s.rows) {
          assert.equal(r.first, next, 'rows follow each other');
          next += r.n;
        }
        assert.equal(next, s.done, 'the rows hold exactly the items done');
      }
      const rows = db.prepare('SELECT count(*) FROM idempotency_progress').pluck().get();
      assert.equal(rows, 0, 'the finished record holds every result; the rows are gone');
      const again = await t.core.call(Requests.upsertBatch, batch);
      assert.deepEqual(again, { ...done, replayed: true });
    } finally {
      t.close();
    }
  });

  it('an unfinished record written by an older build (every result inline) is carried on from', async () => {
    const t = tempCore();
    try {
      const batch = { items: items(3 * CHUNK_FIRST_ITEMS, 'legacy'), idempotencyKey: 'batch-key-legacy' };
      t.core.hooks.batchChunks = {
        afterChunk: () => {
          throw new Error('daemon stopped here');
        },
      };
      await assert.rejects(t.core.call(Requests.upsertBatch, batch), /daemon stopped here/);
      t.core.hooks.batchChunks = {};
      // Rewrite the record as the older build kept it: the count and every result so far, no progress rows.
      const db = t.store.db;
      const done = (
        JSON.parse(db.prepare('SELECT result FROM idempotency_keys WHERE key = ?').pluck().get(batch.idempotencyKey) as string) as {
          done: number;
        }
      ).done;
      const results = db
        .prepare('SELECT results FROM idempotency_progress WHERE key = ? ORDER BY first')
        .pluck()
        .all(batch.idempotencyKey) as string[];
      db.prepare('UPDATE idempotency_keys SET result = ? WHERE key = ?').run(
        JSON.stringify({ unfinished: true, done, results: results.flatMap((r) => JSON.parse(r) as unknown[]) }),
        batch.idempotencyKey,
      );
      db.prepare('DELETE FROM idempotency_progress').run();
      const r = await t.core.call(Requests.upsertBatch, batch);
      assert.equal(r.results.length, batch.items.length);
      assert.ok(r.results.every((x) => x.ok && x.created && x.version === 1));
      assert.deepEqual(await t.core.call(Requests.upsertBatch, batch), { ...r, replayed: true });
    } finally {
      t.close();
    }
  });

  it('each item still succeeds or fails on its own, in order, across transactions', async () => {
    const t = tempCore();
    try {
      const batch = items(2 * CHUNK_FIRST_ITEMS + 10);
      batch[CHUNK_FIRST_ITEMS + 3] = { ...batch[CHUNK_FIRST_ITEMS + 3], namespace: 'Not A Namespace' };
      batch[2 * CHUNK_FIRST_ITEMS + 5] = { ...batch[5], value: 'the same key again, later in the batch' };
      let chunks = 0;
      t.core.hooks.batchChunks = { afterChunk: () => void chunks++ };
      const r = await t.core.call(Requests.upsertBatch, { items: batch });
      assert.ok(chunks >= 1, 'more than one transaction');
      assert.equal(r.results.length, batch.length);
      assert.equal(r.results.filter((x) => !x.ok).length, 1);
      assert.equal(r.results[CHUNK_FIRST_ITEMS + 3].ok, false);
      const later = r.results[2 * CHUNK_FIRST_ITEMS + 5];
      assert.ok(later.ok && !later.created && later.version === 2, JSON.stringify(later));
      assert.equal(
        (await t.core.call(Requests.get, { namespace: 'project.batch', key: 'b5' })).value,
        'the same key again, later in the batch',
      );
    } finally {
      t.close();
    }
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
