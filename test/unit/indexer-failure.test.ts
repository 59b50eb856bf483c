/**
 * The indexer when things go wrong: a re-embed that fails leaves the vector index 'unavailable' with its reason,
 * and says so at once to whoever waits for the index (index/wait) instead of leaving the waiter asleep until its
 * deadline; and stopping while an embedding is in flight never lets the pass touch the store afterwards.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Indexer, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import * as fs from 'node:fs';
import { tempCore } from '../helpers';

function failingModel(afterTexts: number): EmbeddingModel {
  let seen = 0;
  return {
    info: { model: 'test-failing', configuredModel: 'test-failing', dimension: 8, fallbackReason: null },
    async embed(texts) {
      seen += texts.length;
      if (seen > afterTexts) throw new Error('the worker died (test)');
      return texts.map((_, i) => Float32Array.from({ length: 8 }, (_, j) => (i + j + 1) / 10));
    },
    async close() {},
  };
}

describe('indexer: a failed re-embed', () => {
  const c = tempCore();
  after(() => c.close());

  it('is reported to the waiter with its reason, and the index says why it is unavailable', async () => {
    const items = Array.from({ length: 700 }, (_, i) => ({ namespace: 'project.a', key: `k${i}`, value: `memory number ${i}` }));
    const res = await c.core.call(R.upsertBatch, { items });
    assert.equal(res.results.filter((x) => x.ok).length, 700);
    const logs: string[] = [];
    let tell: (reason: string) => void = () => {};
    const told = new Promise<string>((resolve) => (tell = resolve));
    const ix = new Indexer(
      c.store,
      (m) => logs.push(m),
      undefined,
      undefined,
      (reason) => tell(reason),
    );
    // fails in the second batch (INDEX_BATCH = 512), after part of the store was embedded
    await ix.use(failingModel(600));
    assert.equal(ix.state, 'reindexing', 'the re-embed runs in the background');
    const reason = await told;
    assert.match(reason, /the worker died \(test\)/);
    assert.equal(ix.state, 'unavailable');
    assert.match(String(ix.unavailable()), /the worker died \(test\)/, 'the index states the same reason');
    assert.ok(
      logs.some((l) => /re-embedding failed: .*the worker died/.test(l)),
      `logged: ${logs.join(' | ')}`,
    );
  });
});

/** A model whose embeddings wait until released; close() ends the ones in flight, as the worker's exit does. */
function heldModel() {
  const pending: { resolve: (v: Float32Array[]) => void; reject: (e: Error) => void; n: number }[] = [];
  let hold = false;
  const vec = (i: number) => Float32Array.from({ length: 8 }, (_, j) => (i + j + 1) / 10);
  const model: EmbeddingModel = {
    info: { model: 'test-held', configuredModel: 'test-held', dimension: 8, fallbackReason: null },
    embed(texts) {
      if (!hold) return Promise.resolve(texts.map((_, i) => vec(i)));
      return new Promise((resolve, reject) => pending.push({ resolve, reject, n: texts.length }));
    },
    async close() {
      for (const p of pending.splice(0)) p.reject(new Error('the embedding worker was closed'));
    },
  };
  return { model, pending, holdFromNow: () => (hold = true) };
}

describe('indexer: stopped while an embedding is in flight', () => {
  it('stop() returns after the pass has let go of the store; closing the store then is safe', async () => {
    const c = tempCore();
    const logs: string[] = [];
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      await c.core.call(R.upsert, { namespace: 'project.a', key: 'first', value: 'embedded by the backfill' });
      let ready!: () => void;
      const isReady = new Promise<void>((r) => (ready = r));
      const ix = new Indexer(
        c.store,
        (m) => logs.push(m),
        (p) => p.state === 'ready' && ready(),
      );
      const held = heldModel();
      await ix.use(held.model);
      await isReady;
      assert.equal(ix.state, 'ready');
      // the next pass's embedding is held in flight
      held.holdFromNow();
      const w = await c.core.call(R.upsert, { namespace: 'project.a', key: 'second', value: 'waits in the embedding worker' });
      const waited = ix.waitFor(w.position, 60_000);
      ix.kick(true);
      while (held.pending.length === 0) await new Promise((r) => setImmediate(r)); // the pass reached the model
      await ix.stop();
      c.store.close(); // what Daemon.stop does next
      const r = await waited;
      assert.equal(r.reached, false, 'the held write was never indexed');
      // give any pass that would resume a chance to run into the closed store
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, [], 'nothing ran against the closed store');
      assert.ok(!logs.some((l) => /not open|indexer:/.test(l)), `logged: ${logs.join(' | ')}`);
      assert.equal(ix.lastError, null, 'stopping is not a failure');
    } finally {
      process.off('unhandledRejection', onUnhandled);
      fs.rmSync(c.dir, { recursive: true, force: true }); // the store itself was closed above
    }
  });
});
