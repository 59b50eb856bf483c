/**
 * The indexer sends background embedding work in requests sized for the model kind (EMBED_CHUNK): a search's query
 * waits for at most the request being computed, so a transformer model gets small requests and the cheap built-in
 * static model larger ones.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BUILTIN_MODEL_ID } from '../../daemon/src/embed';
import { EMBED_CHUNK, Indexer, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { tempCore } from '../helpers';

function countingModel(model: string, sizes: number[]): EmbeddingModel {
  return {
    info: { model, configuredModel: model, dimension: 8, fallbackReason: null },
    async embed(texts) {
      sizes.push(texts.length);
      return texts.map((_, i) => Float32Array.from({ length: 8 }, (_, j) => ((i + j) % 7) / 7 + 0.1));
    },
    async close() {},
  };
}

describe('indexer: background embedding requests per model kind', () => {
  for (const [kind, model] of [
    ['transformer', 'Xenova/all-MiniLM-L6-v2'],
    ['builtin', BUILTIN_MODEL_ID],
  ] as const) {
    it(`${kind}: requests of at most ${EMBED_CHUNK[kind]} texts, every memory embedded`, async () => {
      const c = tempCore();
      try {
        const items = Array.from({ length: 300 }, (_, i) => ({ namespace: 'project.a', key: `k${i}`, value: `memory number ${i}` }));
        const res = await c.core.call(R.upsertBatch, { items });
        assert.equal(res.results.filter((x) => x.ok).length, 300);
        const sizes: number[] = [];
        const ix = new Indexer(c.store, () => {});
        await ix.use(countingModel(model, sizes));
        assert.equal(ix.embedChunk(), EMBED_CHUNK[kind]);
        for (const deadline = Date.now() + 60_000; ix.state !== 'ready' && Date.now() < deadline;)
          await new Promise((r) => setTimeout(r, 20));
        assert.equal(ix.state, 'ready', String(ix.unavailable()));
        assert.equal(
          sizes.reduce((a, b) => a + b, 0),
          300,
          'each memory embedded once',
        );
        assert.equal(Math.max(...sizes), EMBED_CHUNK[kind], `request sizes ${sizes.join(',')}`);
        await ix.stop();
      } finally {
        c.close();
      }
    });
  }
});
