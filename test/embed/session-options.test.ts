/**
 * onnxruntime session options for a transformer model (provider.ts sessionOptions): the measured
 * default is one intra-op thread with spinning off; 0 leaves everything to onnxruntime; anything
 * else must be a whole number >= 0.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DEFAULT_THREADS, sessionOptions } from '../../daemon/src/embed/provider';

const noSpin = { allow_spinning: '0' };

describe('sessionOptions', () => {
  it('defaults to DEFAULT_THREADS (1) intra-op thread, 1 inter-op thread, spinning off', () => {
    assert.equal(DEFAULT_THREADS, 1);
    assert.deepEqual(sessionOptions(undefined), {
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      extra: { session: { intra_op: noSpin, inter_op: noSpin } },
    });
  });
  it('takes an explicit thread count, still without spinning', () => {
    assert.deepEqual(sessionOptions(3), {
      intraOpNumThreads: 3,
      interOpNumThreads: 1,
      extra: { session: { intra_op: noSpin, inter_op: noSpin } },
    });
  });
  it('0 leaves every option to onnxruntime (its own thread pool, spinning on)', () => {
    assert.equal(sessionOptions(0), undefined);
  });
  for (const bad of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) {
    it(`refuses ${bad}`, () => {
      assert.throws(() => sessionOptions(bad), { message: new RegExp(`threads must be a whole number >= 0 \\(got ${bad}\\)`) });
    });
  }
});
