/**
 * Two things cairn_bm25 (daemon/native/cairn_bm25.c) does beyond bm25() with counts handed in, and the full-text arm's
 * use of them (store/search-fts.ts):
 * - it remembers each row's length between statements (the per-row docsize lookup was most of scoring a row at 1M
 *   memories), forgetting a row when this connection writes it and every row when another connection changes the
 *   index's contents, but none for a merge of its segments: its scores must stay bm25()'s after this connection or
 *   another one rewrites a row to a different length, and inside a transaction that rolls back, and the lengths of
 *   the rows nobody wrote must outlive the writes (until stop 43 every write and merge emptied them, and at 1M the
 *   searches after a write read every length again: bench/README.md);
 * - a phrase handed a negative count is matched but not weighed, which lets the arm rank a scope's every-term
 *   matches first, alone, exactly as its one statement ranks them (by the terms of the disjunctive pass).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { Scope } from '../../daemon/src/protocol/types';
import { Core } from '../../daemon/src/server/core';
import { hasRankingExtension, settleRanking, stmt } from '../../daemon/src/store/db';
import { BM25_WEIGHTS, ftsArm, phraseCounts, planQuery } from '../../daemon/src/store/search-fts';
import { Store } from '../../daemon/src/store/store';
import { keysOf, tempCore, tempDir, upsertItems } from '../helpers';

const c = tempCore();
let plain: Store;

// 1,300 memories hold "filler" (a common word: over 1,000 memories, left out of the disjunctive pass); 320 of them in
// project.hawk hold "kestrel" too, with "filler" repeated 0-5 more times, so ranking them with and without the
// common word's weight gives different orders. project.wren holds 30 with both words, 12 of them deleted later, and
// 10 with "kestrel" alone.
const hawk = (i: number) =>
  `kestrel ${'filler '.repeat(i % 6)}filler hawk note ${i}${i % 4 === 0 ? ' with a longer tail of words here' : ''}`;
const WREN_DELETED = 12;

before(async () => {
  const items: { namespace: string; key: string; value: string }[] = [];
  for (let i = 0; i < 950; i++) items.push({ namespace: 'project.fill', key: `f${i}`, value: `filler entry ${i}` });
  for (let i = 0; i < 320; i++) items.push({ namespace: 'project.hawk', key: `h${i}`, value: hawk(i) });
  for (let i = 0; i < 30; i++) items.push({ namespace: 'project.wren', key: `w${i}`, value: `kestrel filler wren ${i}` });
  for (let i = 0; i < 10; i++) items.push({ namespace: 'project.wren', key: `solo${i}`, value: `kestrel wren solo ${i}` });
  await upsertItems(c.core, items);
  for (let i = 0; i < WREN_DELETED; i++) await c.core.call(R.delete, { namespace: 'project.wren', key: `w${i}` });
  c.store.catchUpFullText();
  plain = new Store(path.join(c.dir, 'cairn.db'), { readonly: true, loadRanking: false });
});
after(() => {
  plain.close();
  c.close();
});

const WEIGHTS = BM25_WEIGHTS.join(', ');

/** Every match of "kestrel" or "hawk" scored both ways on one connection; each row's two scores must be the same double. */
function scoredBothWays(db = c.store.db): Map<number, number> {
  const counts = phraseCounts(db, ['"kestrel"', '"hawk"']);
  const rows = db
    .prepare(
      `SELECT rowid, cairn_bm25(memories_fts, ?, ${WEIGHTS}) AS ours, bm25(memories_fts, ${WEIGHTS}) AS theirs
         FROM memories_fts WHERE memories_fts MATCH ?`,
    )
    .all(counts, '"kestrel" OR "hawk"') as { rowid: number; ours: number; theirs: number }[];
  for (const r of rows) assert.equal(r.ours, r.theirs, `row ${r.rowid}`);
  return new Map(rows.map((r) => [r.rowid, r.ours]));
}

/** How many times the store's connection has emptied every remembered length (brought up to date first). */
const resets = () => settleRanking(c.store.db)!;
const contentKey = (s: Store) => (stmt(s.db, 'SELECT cairn_fts_content_key() AS k').get() as { k: Buffer }).k;
/** The index's segments (FTS5's structure record: a cookie, a version marker in v2, then the level and segment counts). */
const segmentCount = (s: Store) => {
  const b = structure(s);
  return b[(b.readUInt32BE(4) === 0xff000001 ? 8 : 4) + 1];
};
const structure = (s: Store) => (stmt(s.db, 'SELECT block FROM memories_fts_data WHERE id = 10').get() as { block: Buffer }).block;

const rowidOf = (key: string) => (c.store.db.prepare('SELECT rowid FROM memories WHERE key = ?').get(key) as { rowid: number }).rowid;

describe('cairn_bm25 row lengths', () => {
  it('is loaded (every test below compares it with bm25() on one connection)', () => {
    assert.equal(hasRankingExtension(c.store.db), true);
  });

  it('scores every match as bm25() does, again from the lengths it remembered', () => {
    const first = scoredBothWays();
    const second = scoredBothWays();
    assert.ok(first.size > 300, `${first.size} matches`);
    assert.deepEqual(second, first);
  });

  it("reads a row's new length after this connection rewrites it, and keeps the others'", async () => {
    const before = scoredBothWays();
    const r0 = resets();
    await c.core.call(R.upsert, { namespace: 'project.hawk', key: 'h1', value: `kestrel ${'padding '.repeat(40)}` });
    await c.core.call(R.upsert, { namespace: 'project.hawk', key: 'h4', value: 'kestrel' });
    c.store.catchUpFullText();
    const after = scoredBothWays();
    // The same rows, now longer / shorter: a remembered length would have kept their old scores.
    for (const key of ['h1', 'h4']) {
      const rowid = rowidOf(key);
      assert.ok(before.has(rowid) && after.has(rowid));
      assert.notEqual(after.get(rowid), before.get(rowid), key);
    }
    assert.equal(resets(), r0, 'forgotten row by row: the other lengths are kept');
  });

  it("keeps every length through another connection's merge of the index's segments", async () => {
    // At least two segments, so the merge has something to do: this connection's writes, each a commit (a segment).
    for (let i = 0; i < 10 && segmentCount(c.store) < 2; i++) {
      await c.core.call(R.upsert, { namespace: 'project.hawk', key: `seg${i}`, value: 'kestrel hawk segment' });
      c.store.catchUpFullText();
    }
    assert.ok(segmentCount(c.store) >= 2, `${segmentCount(c.store)} segments`);
    scoredBothWays();
    const r0 = resets();
    const other = new Store(path.join(c.dir, 'cairn.db'));
    try {
      const key = contentKey(other);
      const segments = structure(other);
      other.db.prepare("INSERT INTO memories_fts(memories_fts) VALUES ('optimize')").run();
      assert.notDeepEqual(structure(other), segments, 'the merge rewrote the segments');
      assert.equal(segmentCount(other), 1);
      assert.deepEqual(contentKey(other), key, "and left the index's contents as they were");
    } finally {
      other.close();
    }
    assert.ok(scoredBothWays().size > 300);
    assert.equal(resets(), r0);
  });

  it('forgets a row this connection writes outside the store (no settle after it: the update hook)', () => {
    const db = c.store.db;
    const rowid = rowidOf('h5');
    const before = scoredBothWays();
    const r0 = resets();
    db.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
    db.prepare('INSERT INTO memories_fts(rowid, value) VALUES (?, ?)').run(rowid, `kestrel hawk ${'raw '.repeat(25)}`);
    const after = scoredBothWays();
    assert.notEqual(after.get(rowid), before.get(rowid));
    assert.equal(resets(), r0);
  });

  it("reads a row's new length after another connection rewrites it (every length forgotten)", async () => {
    const before = scoredBothWays();
    const r0 = resets();
    const other = new Store(path.join(c.dir, 'cairn.db'));
    try {
      await new Core(other).call(R.upsert, { namespace: 'project.hawk', key: 'h2', value: `kestrel ${'longer '.repeat(30)}` });
      other.catchUpFullText();
    } finally {
      other.close();
    }
    const after = scoredBothWays();
    const rowid = rowidOf('h2');
    assert.notEqual(after.get(rowid), before.get(rowid));
    assert.equal(resets(), r0 + 1);
  });

  it('neither uses nor keeps lengths inside a transaction that rolls back', () => {
    const db = c.store.db;
    const rowid = rowidOf('h3');
    const before = scoredBothWays();
    const r0 = resets();
    db.exec('BEGIN');
    let inside: Map<number, number>;
    try {
      db.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(rowid);
      db.prepare('INSERT INTO memories_fts(rowid, value) VALUES (?, ?)').run(rowid, `kestrel ${'uncommitted '.repeat(50)}`);
      inside = scoredBothWays();
    } finally {
      db.exec('ROLLBACK');
    }
    assert.notEqual(inside.get(rowid), before.get(rowid));
    assert.deepEqual(scoredBothWays(), before);
    assert.equal(resets(), r0);
  });

  it('leaves no statement open: the connection closes after searches (its WAL file is removed)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'cairn.db');
    const store = new Store(file);
    try {
      await new Core(store).call(R.upsert, { namespace: 'project.x', key: 'k', value: 'kestrel at dusk' });
      store.catchUpFullText();
      assert.equal(ftsArm(store.db, 'kestrel', { limit: 5, now: store.now() }).length, 1);
      assert.equal(ftsArm(store.db, 'kestrel', { limit: 5, now: store.now() }).length, 1); // lengths remembered
    } finally {
      store.close();
    }
    assert.equal(fs.existsSync(`${file}-wal`), false);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('the every-term matches ranked first, alone', () => {
  const arm = (s: Store, q: string, scope: Scope, limit: number) => ftsArm(s.db, q, { scope, limit, now: c.store.now() });

  it('leaves an unweighed phrase out of the score exactly', () => {
    const db = c.store.db;
    const plan = planQuery(db, 'kestrel filler');
    assert.equal(plan.any, '"kestrel"'); // "filler" is common: the disjunctive pass leaves it out
    const both = db
      .prepare(`SELECT rowid, cairn_bm25(memories_fts, ?, ${WEIGHTS}) AS s FROM memories_fts WHERE memories_fts MATCH ?`)
      .all(phraseCounts(db, plan.allPhrases, new Set(['"filler"'])), plan.all) as { rowid: number; s: number }[];
    const alone = new Map(
      (
        db.prepare(`SELECT rowid, bm25(memories_fts, ${WEIGHTS}) AS s FROM memories_fts WHERE memories_fts MATCH ?`).all(plan.any) as {
          rowid: number;
          s: number;
        }[]
      ).map((r) => [r.rowid, r.s]),
    );
    assert.ok(both.length > 300);
    for (const r of both) assert.equal(r.s, alone.get(r.rowid), `row ${r.rowid}`);
  });

  it("returns what the one statement returns when a scope's every-term matches fill the limit", () => {
    const scope: Scope = { root: 'project.hawk', includeUser: false };
    for (const limit of [10, 100, 300]) {
      const got = arm(c.store, 'kestrel filler', scope, limit);
      assert.equal(got.length, limit);
      assert.deepEqual(got, arm(plain, 'kestrel filler', scope, limit), `limit ${limit}`);
    }
    // Not vacuous: weighing the common word too orders them differently.
    const plan = planQuery(c.store.db, 'kestrel filler');
    const weighed = c.store.db
      .prepare(`SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY bm25(memories_fts, ${WEIGHTS}) LIMIT 10`)
      .all(`(${plan.all}) AND "hawk"`)
      .map((r) => (r as { rowid: number }).rowid);
    assert.notDeepEqual(
      weighed,
      arm(c.store, 'kestrel filler', scope, 10).map((h) => h.rowid),
    );
  });

  it('falls back to the one statement when refused rows leave fewer every-term matches than the limit', () => {
    const scope: Scope = { root: 'project.wren', includeUser: false };
    const got = arm(c.store, 'kestrel filler', scope, 25);
    assert.deepEqual(got, arm(plain, 'kestrel filler', scope, 25));
    // The live every-term matches first (18: none deleted), then "kestrel" alone fills the rest.
    const keys = keysOf(
      c.store,
      got.map((h) => h.rowid),
    );
    assert.equal(keys.length, 25);
    assert.ok(keys.slice(0, 30 - WREN_DELETED).every((k) => /^w\d+$/.test(k) && Number(k.slice(1)) >= WREN_DELETED));
    assert.ok(keys.slice(30 - WREN_DELETED).every((k) => k.startsWith('solo')));
  });
});
