/**
 * Where a query word starts to count as common (store/search-fts.ts): in over 3% of the memories and over 1000 of
 * them, it is left out of the full-text arm's disjunctive pass. bench/README.md ("The common-term cut-off") gives
 * the cost and retrieval figures behind the share. A word's frequency is remembered per connection (planQuery), and
 * must still be measured against the cut-off of the moment as the store grows.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { COMMON_TERM_MIN_DOCS, COMMON_TERM_SHARE, commonTermCap, planQuery } from '../../daemon/src/store/search-fts';
import { tempCore, upsertItems } from '../helpers';

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

describe('full-text arm: a word remembered as common', () => {
  it('stays common as the store grows and the cut-off moves past the count remembered', async () => {
    const c = tempCore();
    try {
      const items = [];
      for (let i = 0; i < 1400; i++)
        items.push({ namespace: 'project.x', key: `f${i}`, value: `filler note ${i}${i < 10 ? ' osprey' : ''}` });
      await upsertItems(c.core, items);
      c.store.catchUpFullText();
      // The store now looks 40,000 memories big to planQuery (it takes max(rowid)): the cut-off is 1201 memories, and
      // "filler" is in 1400 of them ("fillers" too, through the stemmer: counted by a MATCH stopped a tenth past the
      // cut-off, not read from the vocabulary).
      c.store.db.prepare('UPDATE memories SET rowid = 40000 WHERE rowid = (SELECT max(rowid) FROM memories)').run();
      const common = (q: string) => assert.equal(planQuery(c.store.db, q).any, '"osprey"', q);
      common('osprey filler');
      common('osprey fillers');
      // 60 more memories: the cut-off moves to 1203, past the 1201 a capped count remembered.
      const more = [];
      for (let i = 0; i < 60; i++) more.push({ namespace: 'project.y', key: `g${i}`, value: `unrelated words ${i}` });
      await upsertItems(c.core, more);
      assert.equal(commonTermCap((c.store.db.prepare('SELECT max(rowid) AS m FROM memories').get() as { m: number }).m), 1203);
      common('osprey filler');
      common('osprey fillers');
    } finally {
      c.close();
    }
  });
});
