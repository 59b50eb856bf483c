/**
 * Where a query word starts to count as common (store/search-fts.ts): in over 3% of the memories and over 1000 of
 * them, it is left out of the full-text arm's disjunctive pass. bench/README.md ("The common-term cut-off") gives
 * the cost and retrieval figures behind the share.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE, commonTermCap } from '../../daemon/src/store/search-fts';

describe('full-text arm: the common-term cut-off', () => {
  it('is 3% of the store, never under 1000 memories', () => {
    assert.equal(COMMON_TERM_SHARE, 0.03);
    assert.equal(COMMON_TERM_MIN_DOCS, 1000);
    // A term counts as common from this document frequency on.
    assert.equal(commonTermCap(1), 1001);
    assert.equal(commonTermCap(10_000), 1001);
    assert.equal(commonTermCap(33_333), 1001);
    assert.equal(commonTermCap(33_334), 1002);
    assert.equal(commonTermCap(40_000), 1201);
    // At 100k a word in 3,000 memories still counts; one in 3,001 (a 10% cut-off kept it up to 10,000) does not.
    assert.equal(commonTermCap(100_000), 3001);
  });
});
