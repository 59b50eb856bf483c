/**
 * A stream of single writes is indexed in batches: writes that arrive while an indexing pass embeds the previous
 * ones wait for their own kick (KICK_DELAY_MS) instead of being picked up a few at a time as the pass goes on, and
 * a caller waiting for the index (index/wait) still gets every write indexed at once. Each pass's commit also
 * indexes the full text of the writes so far; the store's own full-text timer only backs it up.
 */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { BUILTIN_MODEL_ID } from '../../daemon/src/embed';
import { Indexer, KICK_DELAY_MS, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { FTS_BACKUP_DELAY_MS } from '../../daemon/src/store/store';
import { tempCore } from '../helpers';

/** A model whose every embedding request waits until the test releases it. */
function gatedModel(sizes: number[], gates: (() => void)[]): EmbeddingModel {
  return {
    info: { model: BUILTIN_MODEL_ID, configuredModel: BUILTIN_MODEL_ID, dimension: 8, fallbackReason: null },
    async embed(texts) {
      sizes.push(texts.length);
      await new Promise<void>((r) => gates.push(r));
      return texts.map((_, i) => Float32Array.from({ length: 8 }, (_, j) => ((i + j) % 7) / 7 + 0.1));
    },
    async close() {},
  };
}

async function until(what: () => boolean, label: string): Promise<void> {
  for (let i = 0; i < 10_000 && !what(); i++) await new Promise((r) => setImmediate(r));
  assert.ok(what(), label);
}

describe('indexer: single writes are indexed in batches', () => {
  it('writes arriving during a pass wait for their kick; index waiters are served at once', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const c = tempCore();
    const sizes: number[] = [];
    const gates: (() => void)[] = [];
    const release = () => gates.splice(0).forEach((g) => g());
    const ix = new Indexer(c.store, () => {});
    try {
      c.store.onChange(() => ix.kick());
      await ix.use(gatedModel(sizes, gates));
      await until(() => ix.state === 'ready', 'ready');
      const write = async (i: number) =>
        (await c.core.call(R.upsert, { namespace: 'project.a', key: `k${i}`, value: `memory number ${i}` })) as { position: number };
      const first = await write(0);
      mock.timers.tick(KICK_DELAY_MS);
      await until(() => sizes.length === 1, 'the first pass embeds the first write');
      assert.ok(c.store.ftsWatermark() < first.position, 'the full text waits for the pass, not for its own timer');
      for (let i = 1; i <= 5; i++) await write(i);
      release();
      await until(() => ix.watermark() >= first.position, 'the first pass indexed its write');
      assert.equal(c.store.ftsWatermark(), c.store.position(), "the pass's commit indexed the full text of every write so far");
      for (let i = 0; i < 50; i++) await new Promise((r) => setImmediate(r));
      assert.deepEqual(sizes, [1], 'the five writes made during the pass wait for their kick');
      mock.timers.tick(KICK_DELAY_MS);
      await until(() => sizes.length === 2, 'their kick starts the next pass');
      assert.deepEqual(sizes, [1, 5], 'in one batch');
      release();
      const last = await write(6);
      const waited = ix.waitFor(last.position);
      await until(() => sizes.length === 3, 'index/wait starts a pass without waiting for the kick');
      release();
      assert.deepEqual(await waited, { watermark: last.position, reached: true });
      assert.deepEqual(sizes, [1, 5, 1]);
    } finally {
      release();
      await ix.stop();
      c.close();
      mock.timers.reset();
    }
  });

  it("the store's own full-text timer backs the indexer up", async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    const c = tempCore();
    const sizes: number[] = [];
    const gates: (() => void)[] = [];
    const ix = new Indexer(c.store, () => {});
    try {
      await ix.use(gatedModel(sizes, gates));
      await until(() => ix.state === 'ready', 'ready');
      // No write kicks this indexer, and the pass its start kicked waits at the model: only the store's timer can
      // index the write's text.
      const w = (await c.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'osprey' })) as { position: number };
      mock.timers.tick(FTS_BACKUP_DELAY_MS - 1);
      assert.ok(c.store.ftsWatermark() < w.position);
      mock.timers.tick(1);
      assert.equal(c.store.ftsWatermark(), w.position);
    } finally {
      gates.splice(0).forEach((g) => g());
      await ix.stop();
      c.close();
      mock.timers.reset();
    }
  });
});
