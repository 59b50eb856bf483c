/**
 * A re-embed that fails leaves the vector index 'unavailable' with its reason, and says so at once to whoever
 * waits for the index (index/wait), instead of leaving the waiter asleep until its deadline.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { Indexer, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
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
    const ix = new Indexer(c.store, (m) => logs.push(m), undefined, undefined, (reason) => tell(reason));
    // fails in the second batch (INDEX_BATCH = 512), after part of the store was embedded
    await ix.use(failingModel(600));
    assert.equal(ix.state, 'reindexing', 'the re-embed runs in the background');
    const reason = await told;
    assert.match(reason, /the worker died \(test\)/);
    assert.equal(ix.state, 'unavailable');
    assert.match(String(ix.unavailable()), /the worker died \(test\)/, 'the index states the same reason');
    assert.ok(logs.some((l) => /re-embedding failed: .*the worker died/.test(l)), `logged: ${logs.join(' | ')}`);
  });
});
