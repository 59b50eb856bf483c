/**
 * The full-text arm's window (store/search-fts.ts COMMON_RANK_WINDOW): a whole-store query whose every term is a
 * frequent word ranks the matches among the newest memories, the window growing fourfold until its admitted matches
 * fill the limit (or it holds the store: then every match is ranked, as before). Scoped queries, filtered ones and
 * queries with a rare term rank every match. The window is lowered here (ftsArm's `window`) to reach it in a small store.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Filter, Scope } from '../../daemon/src/protocol/types';
import { commonTermCap, ftsArm, planQuery } from '../../daemon/src/store/search-fts';
import { keysOf, tempCore, upsertItems } from '../helpers';

const c = tempCore();
const N = 3000;
/** Small enough to be reached: 300 newest memories, then 1,200, then the whole store. */
const WINDOW = { size: 300, minDf: commonTermCap(N) };
const WHOLE = { size: 1e9, minDf: commonTermCap(N) };
// Every memory holds "heron" and "egret" (both common); the oldest ones "bittern" too (common, but only old);
// "plover" is rare. The oldest memory is the best BM25 match of "heron egret" by far (both words in its key).
const value = (i: number) =>
  i === 0 ? 'heron egret heron egret' : `heron egret entry ${i}${i < 1100 ? ' bittern' : ''}${i % 500 === 7 ? ' plover' : ''}`;

before(async () => {
  const items: { namespace: string; key: string; value: string }[] = [];
  for (let i = 0; i < N; i++)
    items.push({ namespace: i % 2 ? 'project.odd' : 'project.even', key: i === 0 ? 'heron egret' : `k${i}`, value: value(i) });
  await upsertItems(c.core, items);
  c.store.catchUpFullText();
});
after(() => c.close());

const maxRowid = () => (c.store.db.prepare('SELECT max(rowid) AS r FROM memories').get() as { r: number }).r;
const arm = (query: string, limit: number, window: { size: number; minDf: number }, scope?: Scope, filter?: Filter) =>
  ftsArm(c.store.db, query, { limit, now: c.store.now(), ...(scope ? { scope } : {}), ...(filter ? { filter } : {}) }, { window }).map(
    (h) => h.rowid,
  );

describe('full-text arm: the newest memories first when every term is frequent (whole store)', () => {
  it('plans "heron egret" as frequent words only', () => {
    const plan = planQuery(c.store.db, 'heron egret');
    assert.ok(plan.leastDf >= WINDOW.minDf, `leastDf ${plan.leastDf}`);
    assert.equal(planQuery(c.store.db, 'heron plover').leastDf < WINDOW.minDf, true, 'a rare word');
    assert.equal(planQuery(c.store.db, 'heron egretEntry').leastDf, 0, 'an identifier counts as rare');
  });

  it('ranks the newest window when its matches fill the limit', () => {
    const all = arm('heron egret', 10, WHOLE);
    assert.equal(keysOf(c.store, all.slice(0, 1))[0], 'heron egret', 'ranking every match: the oldest memory first');
    const got = arm('heron egret', 10, WINDOW);
    assert.equal(got.length, 10);
    const floor = maxRowid() - WINDOW.size;
    assert.ok(
      got.every((r) => r > floor),
      'only memories of the window',
    );
    // In the window, the order every match would be given.
    const inWindow = arm('heron egret', 3000, WHOLE).filter((r) => r > floor);
    assert.deepEqual(got, inWindow.slice(0, 10));
  });

  it('grows the window until its matches fill the limit: then as every match ranked', () => {
    // "bittern" is only in the oldest 1,100 memories: neither window (the newest 300, then 1,200) holds one.
    assert.ok(planQuery(c.store.db, 'heron bittern').leastDf >= WINDOW.minDf);
    const got = arm('heron bittern', 5, WINDOW);
    assert.equal(got.length, 5);
    assert.deepEqual(got, arm('heron bittern', 5, WHOLE));
  });

  it('a deleted memory of the window does not count toward the limit', async () => {
    const floor = maxRowid() - WINDOW.size;
    const newest = c.store.db.prepare('SELECT key, rowid FROM memories WHERE rowid > ? ORDER BY rowid').all(floor) as {
      key: string;
      rowid: number;
    }[];
    // All but 3 of the window's memories deleted: the window grows, and no deleted memory is returned.
    const gone = newest.slice(3);
    for (const m of gone)
      await c.core.call(R.delete, { namespace: Number(m.key.slice(1)) % 2 ? 'project.odd' : 'project.even', key: m.key, reason: 'test' });
    c.store.catchUpFullText();
    const got = arm('heron egret', 10, WINDOW);
    assert.equal(got.length, 10);
    const deleted = new Set(gone.map((m) => m.rowid));
    assert.ok(!got.some((r) => deleted.has(r)), 'no deleted memory');
    assert.deepEqual(got, arm('heron egret', 10, { size: 1200, minDf: WINDOW.minDf }), 'the second window (1,200 newest)');
  });

  it('a scope, a filter or a rare term: every match ranked', () => {
    const scope: Scope = { root: 'project.even', includeUser: false };
    const scoped = arm('heron egret', 10, WINDOW, scope);
    assert.deepEqual(scoped, arm('heron egret', 10, WHOLE, scope));
    assert.equal(keysOf(c.store, scoped.slice(0, 1))[0], 'heron egret', 'the oldest memory, in scope, first');
    assert.ok(
      keysOf(c.store, scoped).every((k) => k === 'heron egret' || Number(k.slice(1)) % 2 === 0),
      'only the scope',
    );
    const filter: Filter = { field: 'namespace', op: 'in', value: ['project.odd', 'project.even'] };
    assert.deepEqual(arm('heron egret', 10, WINDOW, undefined, filter), arm('heron egret', 10, WHOLE, undefined, filter));
    assert.deepEqual(arm('heron plover', 10, WINDOW), arm('heron plover', 10, WHOLE));
  });
});
