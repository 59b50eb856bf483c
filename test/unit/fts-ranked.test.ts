/**
 * The full-text arm ranks with FTS5 alone and joins only its best matches (store/search-fts.ts, `ranked`).
 * Its result must equal the plain query that joins every match to its memory row, filters and sorts:
 * same rows, same order (ties: own scope over `user`, newer, id), with refused rows (deleted, superseded,
 * out of scope, filtered out) crowding the top BM25 places so the candidate set has to grow.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Filter, Include, MemoryKind, Scope } from '../../daemon/src/protocol/types';
import { and, visibility } from '../../daemon/src/store/rows';
import { ownScopeRank, scopePredicate } from '../../daemon/src/store/scope';
import { compileFilter } from '../../daemon/src/store/filter';
import { BM25_WEIGHTS, ftsArm, planQuery } from '../../daemon/src/store/search-fts';
import { keysOf, tempCore, upsertItems } from '../helpers';

const c = tempCore();

/** The reference: one query over every match (what the arm ran before), conjunctive pass then disjunctive fill. */
function reference(query: string, q: { scope?: Scope; filter?: Filter; include?: Include; limit: number; now: number }): number[] {
  const plan = planQuery(c.store.db, query);
  const scopeSql = scopePredicate(q.scope, 'path');
  if (scopeSql) {
    const ids = c.store.db.prepare(`SELECT id FROM namespaces WHERE deleted_at IS NULL AND ${scopeSql.sql}`).all(...scopeSql.params);
    if (ids.length === 0) return [];
  }
  const where = and(visibility(q.include, q.now), scopePredicate(q.scope), compileFilter(q.filter));
  const own = ownScopeRank(q.scope);
  const run = (expr: string, limit: number) =>
    (
      c.store.db
        .prepare(
          `SELECT f.rowid AS rowid FROM memories_fts f JOIN memories m ON m.rowid = f.rowid JOIN namespaces n ON n.id = m.ns_id
            WHERE memories_fts MATCH ? AND ${where.sql}
            ORDER BY bm25(memories_fts, ${BM25_WEIGHTS.join(', ')}) ASC, ${own ? `${own.sql} ASC, ` : ''}m.updated_at DESC, m.id ASC LIMIT ?`,
        )
        .all(expr, ...where.params, ...(own?.params ?? []), limit) as { rowid: number }[]
    ).map((r) => r.rowid);
  const out: number[] = [];
  if (plan.all) out.push(...run(plan.all, q.limit));
  if (out.length < q.limit && plan.any)
    for (const r of run(plan.any, q.limit + out.length)) if (!out.includes(r) && out.length < q.limit) out.push(r);
  return out;
}

before(async () => {
  const items: { namespace: string; key: string; value: string; kind?: MemoryKind; tags?: string[] }[] = [];
  // The best BM25 matches for "kestrel": 400 short values, all deleted below (they crowd the top places).
  for (let i = 0; i < 400; i++) items.push({ namespace: 'project.alpha', key: `gone${i}`, value: 'kestrel kestrel kestrel' });
  // Ties: identical values in two projects and the user tree (same BM25), some of kind "decision".
  for (let i = 0; i < 120; i++)
    items.push({
      namespace: i % 3 === 0 ? 'project.alpha' : i % 3 === 1 ? 'project.beta' : 'user.notes',
      key: `tie${i}`,
      value: 'kestrel falcon nest',
      kind: i % 4 === 0 ? 'decision' : 'fact',
    });
  // Weaker matches with more words.
  for (let i = 0; i < 300; i++)
    items.push({
      namespace: i % 2 ? 'project.alpha.sub' : 'project.beta',
      key: `long${i}`,
      value: `kestrel seen near the river on day ${i} with falcon ${i % 7} and other birds`,
      tags: i % 5 === 0 ? ['birds'] : [],
    });
  // For the one-statement plan (both passes at once): short values with a rare word only, which outrank on BM25
  // the longer values holding every word of "osprey heron" or "osprey quillRender"; the latter must still come first.
  for (let i = 0; i < 30; i++)
    items.push({ namespace: i % 2 ? 'project.alpha' : 'project.beta', key: `osp${i}`, value: i % 3 ? 'osprey osprey' : 'osprey' });
  for (let i = 0; i < 12; i++)
    items.push({
      namespace: i % 2 ? 'project.alpha' : 'user.notes',
      key: `both${i}`,
      value: `a long note about an osprey that was seen ${i} times near a heron colony while quillRender ran in the build`,
    });
  for (let i = 0; i < 20; i++)
    items.push({ namespace: 'project.beta', key: `her${i}`, value: `heron ${i % 4 ? 'heron' : ''} and some other words` });
  for (let i = 0; i < 6; i++)
    items.push({ namespace: 'project.alpha', key: `qr${i}`, value: `the quill_render helper and QuillRender ${i}` });
  await upsertItems(c.core, items, 200);
  for (let i = 0; i < 400; i++) await c.core.call(R.delete, { namespace: 'project.alpha', key: `gone${i}` });
  // A superseded memory among the ties.
  const sup = await c.core.call(R.get, { namespace: 'project.beta', key: 'tie1' });
  await c.core.call(R.upsert, { namespace: 'project.beta', key: 'tie1-new', value: 'replacement text', supersedes: sup.id });
  // The arm is called directly here (not through store.fullTextArm): index the writes' text first.
  c.store.catchUpFullText();
});
after(() => c.close());

describe('full-text arm: ranking with FTS5 first equals the joined query', () => {
  const now = () => c.store.now();
  const cases: [string, string, { scope?: Scope; filter?: Filter; include?: Include; limit: number }][] = [
    ['whole store, deleted rows crowd the top', 'kestrel', { limit: 25 }],
    ['whole store, small limit inside a tie', 'kestrel', { limit: 7 }],
    ['include deleted', 'kestrel', { include: { deleted: true }, limit: 30 }],
    ['include superseded', 'kestrel falcon', { include: { superseded: true }, limit: 50 }],
    ['scoped with the user tree (own scope wins ties)', 'kestrel falcon', { scope: { root: 'project.alpha' }, limit: 40 }],
    ['scoped without the user tree', 'kestrel', { scope: { root: 'project.beta', includeUser: false }, limit: 100 }],
    ['explicit namespaces', 'falcon', { scope: { namespaces: ['project.alpha.sub', 'user.notes'], includeUser: false }, limit: 20 }],
    ['filter refuses most of the top', 'kestrel', { filter: { field: 'kind', op: 'eq', value: 'decision' }, limit: 10 }],
    ['filter on tags', 'kestrel river', { filter: { field: 'tags', op: 'has', value: 'birds' }, limit: 15 }],
    ['disjunctive fill', 'kestrel zebra', { limit: 60 }],
    ['more wanted than exist', 'falcon nest', { limit: 500 }],
    ['nothing in scope', 'kestrel', { scope: { root: 'project.none', includeUser: false }, limit: 10 }],
    ['one statement, whole store (a word rarer than the limit)', 'osprey heron', { limit: 50 }],
    ['one statement, scoped with the user tree', 'osprey heron', { scope: { root: 'project.alpha' }, limit: 30 }],
    ['one statement, scoped, small limit inside the conjunctive part', 'osprey heron', { scope: { root: 'project.alpha' }, limit: 3 }],
    ['one statement, identifier term', 'osprey quillRender', { limit: 40 }],
    ['one statement, filter', 'heron osprey', { filter: { field: 'namespace', op: 'eq', value: 'project.beta' }, limit: 20 }],
    [
      'one statement, scoped, deleted and superseded included',
      'kestrel falcon nest',
      { scope: { root: 'project.beta' }, include: { deleted: true, superseded: true }, limit: 500 },
    ],
    ['two passes (a scope-less query whose words are all common enough to fill it)', 'kestrel falcon nest', { limit: 30 }],
  ];
  for (const [name, query, q] of cases) {
    it(name, () => {
      const want = reference(query, { ...q, now: now() });
      const got = ftsArm(c.store.db, query, { ...q, now: now() }).map((h) => h.rowid);
      assert.deepEqual(got, want);
      if (name !== 'nothing in scope') assert.ok(want.length > 0, 'the case has results');
    });
  }

  it('the one-statement plan is the one these cases take, and it ranks every-term matches first', () => {
    for (const query of ['osprey heron', 'osprey quillRender', 'heron osprey', 'kestrel falcon nest']) {
      const plan = planQuery(c.store.db, query);
      // every term is informative: the disjunctive expression is the conjunctive one with OR for AND (same phrases)
      assert.ok(plan.all && plan.any === plan.all.split(' AND ').join(' OR '), `${query}: every term is informative`);
      // scope-less cases above take one statement only with a word rarer than their limit
      assert.equal(plan.minDf < 50, query !== 'kestrel falcon nest', query);
    }
    const hits = ftsArm(c.store.db, 'osprey heron', { limit: 50, now: now() });
    const keys = keysOf(
      c.store,
      hits.map((h) => h.rowid),
    );
    assert.deepEqual(
      keys.slice(0, 12).map((k) => k.replace(/[0-9]+$/, '')),
      Array(12).fill('both'),
      'the 12 memories holding both words come first',
    );
    assert.ok(keys.slice(12).every((k) => !k.startsWith('both')) && keys.length === 50);
    // ...although a memory holding one word only has a better BM25 than each of them: the order is not BM25 alone.
    assert.ok(Math.max(...hits.slice(12).map((h) => h.score)) > Math.min(...hits.slice(0, 12).map((h) => h.score)));
  });

  it('a deleted memory never takes a place (the top 400 BM25 matches are deleted)', () => {
    const hits = ftsArm(c.store.db, 'kestrel', { limit: 25, now: now() });
    assert.equal(hits.length, 25);
    const keys = c.store.db.prepare(`SELECT key FROM memories WHERE rowid IN (${hits.map((h) => h.rowid).join(',')})`).all() as {
      key: string;
    }[];
    assert.ok(keys.every((k) => !k.key.startsWith('gone')));
  });
});
