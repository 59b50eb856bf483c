/**
 * The full-text arm when every query word is common (store/search-fts.ts, plan step 4): in a scope, the scoped
 * conjunctive matches are listed first, without BM25 and stopped at the limit. As many as the limit: the two passes
 * run, and every-word matches are ordered by BM25 over every word. Fewer: the one statement runs, with that list as
 * its every-word set, and returns what it returned when it matched the conjunctive expression over the whole index.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Scope } from '../../daemon/src/protocol/types';
import { BM25_WEIGHTS, commonTermCap, ftsArm, namespaceToken, planQuery } from '../../daemon/src/store/search-fts';
import { keysOf, tempCore, upsertItems } from '../helpers';

const c = tempCore();
const FILLER = 3000;
// Two words each in over 1000 memories (common), the first in fewer (the one the disjunctive pass keeps).
const filler = (i: number) => `filler entry ${i}${i < 1100 ? ' plover' : ''}${i >= 500 && i < 1800 ? ' tern' : ''}`;
const scope: Scope = { root: 'project.gamma', includeUser: false };
const QUERY = 'plover tern';

before(async () => {
  const items: { namespace: string; key: string; value: string }[] = [];
  for (let i = 0; i < FILLER; i++) items.push({ namespace: 'project.filler', key: `f${i}`, value: filler(i) });
  // Both words, the second five times; both words once; the first word only.
  for (let i = 0; i < 4; i++) items.push({ namespace: 'project.gamma', key: `rich${i}`, value: 'plover tern tern tern tern tern' });
  for (let i = 0; i < 4; i++) items.push({ namespace: 'project.gamma', key: `short${i}`, value: 'plover tern' });
  for (let i = 0; i < 6; i++) items.push({ namespace: 'project.gamma', key: `only${i}`, value: `plover alone ${i}` });
  await upsertItems(c.core, items);
  c.store.catchUpFullText();
});
after(() => c.close());

const keys = (rowids: number[]) => keysOf(c.store, rowids);
const arm = (limit: number) => keys(ftsArm(c.store.db, QUERY, { scope, limit, now: c.store.now() }).map((h) => h.rowid));

/** The live gamma memories matching `expr` (scoped by its namespace token), best BM25 first, ties as the arm breaks them. */
function byBm25(expr: string): number[] {
  const ns = (c.store.db.prepare(`SELECT id FROM namespaces WHERE path = 'project.gamma'`).get() as { id: string }).id;
  return (
    c.store.db
      .prepare(
        `SELECT f.rowid AS rowid FROM memories_fts f JOIN memories m ON m.rowid = f.rowid
          WHERE memories_fts MATCH ? AND m.deleted_at IS NULL
          ORDER BY bm25(memories_fts, ${BM25_WEIGHTS.join(', ')}) ASC, m.updated_at DESC, m.id ASC`,
      )
      .all(`(${expr}) AND ns:"${namespaceToken(ns)}"`) as { rowid: number }[]
  ).map((r) => r.rowid);
}

/** Two passes: every-word matches by BM25 over every word, then the others by BM25 over the kept word. */
function twoPasses(): string[] {
  const plan = planQuery(c.store.db, QUERY);
  const all = byBm25(plan.all!);
  return keys([...all, ...byBm25(plan.any!).filter((r) => !all.includes(r))]);
}

/** One statement: the kept word's matches, every-word ones first, each group by BM25 over the kept word. */
function oneStatement(): string[] {
  const plan = planQuery(c.store.db, QUERY);
  const all = new Set(byBm25(plan.all!));
  const any = byBm25(plan.any!);
  return keys([...any.filter((r) => all.has(r)), ...any.filter((r) => !all.has(r))]);
}

describe('full-text arm: every query word common, in a scope', () => {
  it('plans the least common word alone for the disjunctive pass', () => {
    const plan = planQuery(c.store.db, QUERY);
    assert.equal(plan.allCommon, true);
    assert.equal(plan.any, '"plover"');
    assert.ok(plan.minDf >= commonTermCap(FILLER), `plover is common (${plan.minDf} memories)`);
    assert.equal(planQuery(c.store.db, 'plover rich').allCommon, false, 'a rare word: not every word is common');
  });

  it('the two orders differ (what the tests below tell apart)', () => {
    const two = twoPasses();
    const one = oneStatement();
    assert.equal(two.length, 14);
    assert.deepEqual(new Set(two), new Set(one));
    assert.notDeepEqual(two.slice(0, 5), one.slice(0, 5));
  });

  it('scoped conjunctive matches fill the limit: the two passes, every word weighed', () => {
    const got = arm(5);
    assert.deepEqual(got, twoPasses().slice(0, 5));
    assert.ok(
      got.every((k) => /^(rich|short)/.test(k)),
      'no disjunctive-only match',
    );
  });

  it('fewer than the limit: the one statement, as before', () => {
    const got = arm(10);
    assert.deepEqual(got, oneStatement().slice(0, 10));
    assert.deepEqual(
      got
        .slice(0, 8)
        .map((k) => k.replace(/[0-9]+$/, ''))
        .sort(),
      [...Array(4).fill('rich'), ...Array(4).fill('short')],
      'the every-word matches first',
    );
    assert.ok(got.slice(8).every((k) => k.startsWith('only')));
  });

  it('conjunctive matches the limit counts but visibility refuses: the disjunctive pass fills the rest', async () => {
    for (const k of ['rich0', 'rich1', 'short0', 'short1'])
      await c.core.call(R.delete, { namespace: 'project.gamma', key: k, reason: 'test' });
    c.store.catchUpFullText();
    const got = arm(5);
    assert.equal(got.length, 5);
    assert.ok(!got.some((k) => ['rich0', 'rich1', 'short0', 'short1'].includes(k)), 'no deleted memory');
    assert.deepEqual(got.slice(0, 4), twoPasses().slice(0, 4), 'the four live every-word matches, by BM25 over every word');
    assert.ok(got[4].startsWith('only'), got[4]);
  });
});
