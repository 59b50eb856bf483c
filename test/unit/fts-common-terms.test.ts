/**
 * The full-text arm's one-statement plan when a query word is common (in over 3% and over 1000 memories, so the
 * disjunctive pass leaves it out, store/search-fts.ts): memories matching every word still rank first, but among
 * themselves by BM25 over the words the disjunctive pass keeps. The two-pass plan ordered them by BM25 over every
 * word, the common one included; bench/README.md ("One statement for both full-text passes") gives the cost and
 * the retrieval figures of the change.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Scope } from '../../daemon/src/protocol/types';
import { BM25_WEIGHTS, COMMON_TERM_MIN_DOCS, ftsArm, namespaceToken, planQuery } from '../../daemon/src/store/search-fts';
import { keysOf, tempCore, upsertItems } from '../helpers';

const c = tempCore();
const FILLER = 6000;
const COMMON = 1010; // over COMMON_TERM_MIN_DOCS and over 3% of the store
const filler = (i: number) =>
  `filler note ${i}${i < COMMON ? ' data' : ''}${i >= 2000 && i < 2790 ? ' osprey' : ''}${i >= 3000 && i < 3790 ? ' heron' : ''}`;

before(async () => {
  const items: { namespace: string; key: string; value: string }[] = [];
  for (let i = 0; i < FILLER; i++) items.push({ namespace: 'project.filler', key: `f${i}`, value: filler(i) });
  // Every word, the common one twenty times (22 words), and every word once with other words (13 words).
  for (let i = 0; i < 4; i++) items.push({ namespace: 'project.alpha', key: `many${i}`, value: 'osprey heron' + ' data'.repeat(20) });
  for (let i = 0; i < 4; i++)
    items.push({
      namespace: 'project.alpha',
      key: `once${i}`,
      value: 'osprey heron data lorem ipsum dolor sit amet consectetur adipiscing elit sed eiusmod',
    });
  // One word only.
  for (let i = 0; i < 6; i++) items.push({ namespace: 'project.alpha', key: `one${i}`, value: i % 2 ? 'osprey osprey' : 'heron' });
  await upsertItems(c.core, items);
  c.store.catchUpFullText();
});
after(() => c.close());

const keys = (rowids: number[]) => keysOf(c.store, rowids);

/** The two-pass plan: every-word matches by BM25 over every word, then the rest by BM25 over the kept words. */
function twoPass(query: string, scope?: Scope): string[] {
  const plan = planQuery(c.store.db, query);
  const ns = scope ? (c.store.db.prepare(`SELECT id FROM namespaces WHERE path = 'project.alpha'`).get() as { id: string }).id : null;
  const expr = (e: string) => (ns ? `(${e}) AND ns:"${namespaceToken(ns)}"` : e);
  const run = (e: string) =>
    (
      c.store.db
        .prepare(
          `SELECT f.rowid AS rowid FROM memories_fts f JOIN memories m ON m.rowid = f.rowid WHERE memories_fts MATCH ?
            ORDER BY bm25(memories_fts, ${BM25_WEIGHTS.join(', ')}) ASC, m.updated_at DESC, m.id ASC`,
        )
        .all(expr(e)) as { rowid: number }[]
    ).map((r) => r.rowid);
  const all = run(plan.all!);
  return keys([...all, ...run(plan.any!).filter((r) => !all.includes(r))]);
}

describe('full-text arm: a common word in a query', () => {
  const scope: Scope = { root: 'project.alpha', includeUser: false };

  it('is left out of the disjunctive pass', () => {
    const plan = planQuery(c.store.db, 'osprey heron data');
    assert.ok(COMMON > COMMON_TERM_MIN_DOCS);
    assert.equal(plan.all, '"osprey" AND "heron" AND "data"');
    assert.equal(plan.any, '"osprey" OR "heron"');
    assert.ok(plan.minDf > 20, 'each word is in more memories than the limit');
  });

  it('scoped: every-word matches first, ordered by BM25 over the kept words, then the rest', () => {
    const s = scope;
    const got = keys(ftsArm(c.store.db, 'osprey heron data', { scope: s, limit: 20, now: c.store.now() }).map((h) => h.rowid));
    assert.equal(got.length, 14);
    // The shorter every-word values first: the common word's twenty repeats no longer lift the longer ones.
    assert.deepEqual(
      got.slice(0, 8).map((k) => k.replace(/[0-9]+$/, '')),
      [...Array(4).fill('once'), ...Array(4).fill('many')],
    );
    assert.ok(got.slice(8).every((k) => k.startsWith('one')));
    // The two-pass plan put the common word's repeats first: this is the one change in what the arm returns.
    const old = twoPass('osprey heron data', s);
    assert.deepEqual(
      old.slice(0, 8).map((k) => k.replace(/[0-9]+$/, '')),
      [...Array(4).fill('many'), ...Array(4).fill('once')],
    );
    assert.deepEqual(new Set(old), new Set(got), 'the same memories');
    assert.deepEqual(old.slice(8), got.slice(8), 'the rest in the same order');
  });

  it('whole store, where the conjunctive pass may fill the limit alone: the two passes as before', () => {
    const got = keys(ftsArm(c.store.db, 'osprey heron data', { limit: 20, now: c.store.now() }).map((h) => h.rowid));
    assert.deepEqual(got, twoPass('osprey heron data').slice(0, 20));
    assert.deepEqual(
      got.slice(0, 8).map((k) => k.replace(/[0-9]+$/, '')),
      [...Array(4).fill('many'), ...Array(4).fill('once')],
    );
  });
});
