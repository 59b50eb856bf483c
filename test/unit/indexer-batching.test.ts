/**
 * A stream of single writes is indexed in batches: writes that arrive while an indexing pass embeds the previous
 * ones wait for their own kick (KICK_DELAY_MS) instead of being picked up a few at a time as the pass goes on, and
 * a caller waiting for the index (index/wait) still gets every write indexed at once.
 */
import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { BUILTIN_MODEL_ID } from '../../daemon/src/embed';
import { Indexer, KICK_DELAY_MS, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
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
      for (let i = 1; i <= 5; i++) await write(i);
      release();
      await until(() => ix.watermark() >= first.position, 'the first pass indexed its write');
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
});
