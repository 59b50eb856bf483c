/**
 * The indexer sends the next batch of a bulk import to the embedding worker while the batch before it is checked for
 * duplicates and recorded, so the worker embeds meanwhile instead of waiting (Indexer.loop). Only after a full batch
 * (more is waiting in the change log) or for someone waiting for the index; a batch sent ahead and never stored (the
 * indexer stopped) leaves its changes past the watermark, and a request nobody awaits is no unhandled rejection.
 */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { BUILTIN_MODEL_ID } from '../../daemon/src/embed';
import { requestEmbeddings } from '../../daemon/src/index/embed-rows';
import type { IndexerHost } from '../../daemon/src/index/embedding-model';
import { Indexer, KICK_DELAY_MS, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { EMBED_CHUNK, INDEX_BATCH } from '../../daemon/src/index/indexer-tuning';
import { tempCore, upsertItems } from '../helpers';

/** A model whose embedding requests wait until the test releases them; closing it fails the ones still waiting. */
function gatedModel(sizes: number[], gates: { open: () => void; fail: (e: Error) => void }[]): EmbeddingModel {
  return {
    info: { model: BUILTIN_MODEL_ID, configuredModel: BUILTIN_MODEL_ID, dimension: 8, fallbackReason: null },
    async embed(texts) {
      sizes.push(texts.length);
      await new Promise<void>((open, fail) => gates.push({ open, fail }));
      return texts.map((t, i) => Float32Array.from({ length: 8 }, (_, j) => ((t.length + i + j) % 7) / 7 + 0.1));
    },
    async close() {
      gates.splice(0).forEach((g) => g.fail(new Error('model closed')));
    },
  };
}

async function until(what: () => boolean, label: string): Promise<void> {
  for (let i = 0; i < 20_000 && !what(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(what(), label);
}

const items = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => ({
    namespace: 'project.pipe',
    key: `${tag}-${i}`,
    value: `memory ${tag} number ${i} about topic ${i % 13}`,
  }));

describe('indexer: the next batch is embedded while this one is checked and recorded', () => {
  it('after a full batch, the next is sent to the worker before the full one is recorded; a partial one sends nothing ahead', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const c = tempCore();
    const sizes: number[] = [];
    const gates: { open: () => void; fail: (e: Error) => void }[] = [];
    const release = () => gates.splice(0).forEach((g) => g.open());
    const ix = new Indexer(c.store, () => {});
    // How many embedding requests the worker had been sent each time a pass recorded its batch (its watermark).
    const sentAtRecord: number[] = [];
    const setWatermark = c.store.feed.setWatermark.bind(c.store.feed);
    mock.method(c.store.feed, 'setWatermark', (...args: Parameters<typeof setWatermark>) => {
      sentAtRecord.push(sizes.length);
      return setWatermark(...args);
    });
    try {
      c.store.onChange(() => ix.kick());
      await ix.use(gatedModel(sizes, gates));
      await until(() => ix.state === 'ready', 'ready');
      sentAtRecord.length = 0; // (starting a model records its watermark too)
      await upsertItems(c.core, items(INDEX_BATCH + 3, 'bulk'));
      const end = c.store.position();
      mock.timers.tick(KICK_DELAY_MS);
      const firstRequests = Math.ceil(INDEX_BATCH / EMBED_CHUNK.builtin);
      await until(() => sizes.length === firstRequests, 'the first batch is sent, in chunks');
      release();
      await until(() => sentAtRecord.length === 1, 'the first batch is recorded');
      assert.deepEqual(sentAtRecord, [firstRequests + 1], 'the rest was sent to the worker before the first batch was recorded');
      assert.equal(sizes.at(-1), 3, 'the next batch: the three writes after the first INDEX_BATCH');
      assert.ok(ix.watermark() < end);
      await until(() => gates.length === 1, 'the batch sent ahead waits in the worker');
      release();
      await until(() => ix.watermark() === end, 'the batch sent ahead is stored, checked and recorded');
      assert.deepEqual(sentAtRecord, [firstRequests + 1, firstRequests + 1], 'nothing more was sent: the log was drained');
      assert.equal(c.store.vectors.count(ix.model!), INDEX_BATCH + 3, 'every write has its vector, once');

      // A partial batch: nothing is sent ahead (the next writes wait for their own kick).
      await upsertItems(c.core, items(4, 'few'));
      mock.timers.tick(KICK_DELAY_MS);
      await until(() => gates.length === 1, 'the four writes are sent');
      release();
      await until(() => ix.watermark() === c.store.position(), 'recorded');
      assert.equal(sentAtRecord.at(-1), sizes.length, 'no request was sent ahead of recording a partial batch');
    } finally {
      release();
      await ix.stop();
      c.close();
      mock.timers.reset();
    }
  });

  it('stopping while the batch sent ahead is in the worker leaves its changes past the watermark; the next start indexes them', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const c = tempCore();
    const sizes: number[] = [];
    const gates: { open: () => void; fail: (e: Error) => void }[] = [];
    const release = () => gates.splice(0).forEach((g) => g.open());
    const first = new Indexer(c.store, () => {});
    let second: Indexer | null = null;
    try {
      c.store.onChange(() => (second ?? first).kick());
      await first.use(gatedModel(sizes, gates));
      await until(() => first.state === 'ready', 'ready');
      await upsertItems(c.core, items(INDEX_BATCH + 5, 'stop'));
      const end = c.store.position();
      mock.timers.tick(KICK_DELAY_MS);
      await until(() => gates.length === Math.ceil(INDEX_BATCH / EMBED_CHUNK.builtin), 'the first batch is sent');
      release();
      await until(() => sizes.at(-1) === 5 && gates.length === 1, 'the rest is sent ahead and waits in the worker');
      await until(() => first.watermark() > 0, 'the first batch is recorded');
      const recorded = first.watermark();
      assert.ok(recorded < end);
      await first.stop(); // closing the model fails the request sent ahead: the pass ends, nothing failed
      assert.equal(first.watermark(), recorded, 'the batch sent ahead was not recorded');
      assert.equal(first.lastError, null, 'a stop is no indexing failure');
      assert.equal(c.store.vectors.count(first.model!), INDEX_BATCH, 'its vectors were not stored');

      second = new Indexer(c.store, () => {});
      const opened: number[] = [];
      await second.use(gatedModel(opened, gates));
      await until(() => second!.state === 'ready', 'ready again');
      const waited = second.waitFor(end);
      await until(() => gates.length === 1, 'the next start sends the batch again');
      assert.deepEqual(opened, [5]);
      release();
      assert.deepEqual(await waited, { watermark: end, reached: true });
      assert.equal(c.store.vectors.count(second.model!), INDEX_BATCH + 5);
    } finally {
      release();
      await second?.stop();
      await first.stop();
      c.close();
      mock.timers.reset();
    }
  });

  it('a request sent ahead that nobody awaits (the pass ended) is no unhandled rejection; one awaited still fails', async () => {
    const c = tempCore();
    const ix = new Indexer(c.store, () => {});
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on('unhandledRejection', onUnhandled);
    try {
      await ix.use(gatedModel([], []));
      await upsertItems(c.core, items(2, 'gone'));
      const failing: EmbeddingModel = {
        info: { model: BUILTIN_MODEL_ID, configuredModel: BUILTIN_MODEL_ID, dimension: 8, fallbackReason: null },
        embed: async () => {
          throw new Error('worker gone');
        },
        async close() {},
      };
      const host = { store: c.store, embedder: () => failing } as unknown as IndexerHost;
      const rows = c.store.feed.byIds(c.store.changesSince(0, 10).map((x) => x.memoryId!));
      assert.equal(rows.length, 2);
      const abandoned = requestEmbeddings(host, ix.model!, rows, 64);
      const awaited = requestEmbeddings(host, ix.model!, rows, 64);
      assert.ok(abandoned && awaited, 'both rows need a vector');
      await assert.rejects(awaited.done, /worker gone/);
      for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await ix.stop();
      c.close();
    }
  });
});
