/**
 * The full-text index is merged in the background once writes stop (store/checkpointer.ts): fewer FTS5 segments
 * for every term lookup after a burst of writes, the same answers, and the writer never waits for it.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { MERGE_QUIET_MS } from '../../daemon/src/store/checkpointer';
import type { DB } from '../../daemon/src/store/db';
import { ftsArm } from '../../daemon/src/store/search-fts';
import { Store } from '../../daemon/src/store/store';
import { tempDir, until } from '../helpers';

/** FTS5's segment count, from its structure record (`%_data` rowid 10: a 4-byte cookie, an optional v2 marker, then varints nLevel, nSegment). */
function segments(db: DB): number {
  const row = db.prepare('SELECT block FROM memories_fts_data WHERE id = 10').get() as { block: Buffer } | undefined;
  assert.ok(row, 'the index has a structure record');
  const b = row.block;
  let i = 4;
  if (b[i] === 0xff && b[i + 1] === 0x00 && b[i + 2] === 0x00 && b[i + 3] === 0x01) i += 4;
  const varint = (): number => {
    let v = 0;
    for (;;) {
      const byte = b[i++];
      v = v * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) return v;
    }
  };
  varint(); // levels
  return varint();
}

const QUERIES = ['pool scheduler', 'retry budget', 'value number 7', 'maxRetries'];

/** Many small indexing commits, as single writes make them: one FTS5 segment each, merged four at a time by FTS5 itself. */
function writeInSmallCommits(store: Store, n: number, from = 0): void {
  for (let i = from; i < from + n; i++) {
    store.upsert({
      namespace: i % 2 ? 'project.a' : 'project.b',
      key: `k${i}`,
      value: `value number ${i}: the pool scheduler keeps a retry budget of ${i % 7} (maxRetries) `.repeat(1 + (i % 3)),
    });
    store.catchUpFullText();
  }
}

/** A store in a temporary directory with the daemon's background worker, closed and removed after `fn`. */
async function withStore(fn: (store: Store) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const store = new Store(path.join(dir, 'cairn.db'));
  try {
    store.checkpointInBackground();
    await fn(store);
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const answers = (store: Store) =>
  QUERIES.flatMap((q) =>
    [undefined, { root: 'project.a', includeUser: false }].map((scope) => ftsArm(store.db, q, { scope, limit: 50, now: Date.now() })),
  );

describe('full-text index merged in the background', () => {
  it('merges the segments once writes stop, with the same answers', () =>
    withStore(async (store) => {
      writeInSmallCommits(store, 150);
      const before = segments(store.db);
      const found = answers(store);
      assert.ok(before >= 4, `several segments after small commits (${before})`);
      assert.ok(found.every((hits) => hits.length > 0));
      await until('a complete merge', () => store.backgroundCheckpoints()?.lastMerge?.complete === true, 30_000);
      const after = segments(store.db);
      assert.ok(after < before, `segments ${before} → ${after}`);
      assert.ok(after <= 3, `one segment per level at most after the merge (${after})`);
      assert.ok(store.backgroundCheckpoints()!.mergeSlices >= 2, 'it merged something, then found nothing left');
      assert.deepEqual(answers(store), found);
      const um = store.db.prepare("SELECT v FROM memories_fts_config WHERE k = 'usermerge'").get() as { v: number } | undefined;
      assert.equal(um?.v, 2);
    }));

  it('never waits for the write lock: a merge that finds it taken stops, and goes on after the next quiet period', () =>
    withStore(async (store) => {
      writeInSmallCommits(store, 150);
      const before = segments(store.db);
      // The main connection holds the write lock from before the merge is due until after the worker tried it.
      store.db.exec('BEGIN IMMEDIATE');
      let committed = false;
      try {
        await until('a merge run', () => (store.backgroundCheckpoints()?.merges ?? 0) >= 1, 30_000);
        assert.deepEqual(store.backgroundCheckpoints()!.lastMerge, { slices: 0, complete: false });
        assert.equal(segments(store.db), before);
        store.db.exec('COMMIT');
        committed = true;
      } finally {
        if (!committed) store.db.exec('ROLLBACK');
      }
      await until('the merge taken up again', () => store.backgroundCheckpoints()?.lastMerge?.complete === true, 30_000);
      assert.ok(segments(store.db) < before);
    }));

  it('runs while the vector indexer keeps committing (derived commits without full text)', () =>
    withStore(async (store) => {
      writeInSmallCommits(store, 150);
      const before = segments(store.db);
      assert.ok(before >= 4, `several segments after small commits (${before})`);
      const found = answers(store);
      // A vector catch-up after an import: a derived commit every 50 ms, far more often than MERGE_QUIET_MS.
      let derivedCommits = 0;
      const indexer = setInterval(() => {
        store.derivedTransaction(() => store.db.prepare('SELECT 1').get());
        derivedCommits++;
      }, 50);
      try {
        await until('a complete merge under derived commits', () => store.backgroundCheckpoints()?.lastMerge?.complete === true, 30_000);
      } finally {
        clearInterval(indexer);
      }
      // Commits 50 ms apart went on until the merge completed (counted like client writes, they kept it from ever
      // starting: the wait above timed out).
      assert.ok(derivedCommits >= MERGE_QUIET_MS / 100, `the indexer committed meanwhile (${derivedCommits})`);
      assert.ok(segments(store.db) < before, `segments ${before} → ${segments(store.db)}`);
      assert.deepEqual(answers(store), found);
    }));

  it('is asked for by commits that wrote full text only', () =>
    withStore(async (store) => {
      writeInSmallCommits(store, 40);
      await until('a complete merge', () => store.backgroundCheckpoints()?.lastMerge?.complete === true, 30_000);
      const merges = store.backgroundCheckpoints()!.merges;
      // Commits that change no full-text row (an empty one, and a namespace rename: the rows keep the namespace's id).
      store.transaction(() => undefined);
      store.renameNamespace('project.a', 'project.c');
      await new Promise((r) => setTimeout(r, 3 * MERGE_QUIET_MS));
      assert.equal(store.backgroundCheckpoints()!.merges, merges, 'no merge without new full text');
      writeInSmallCommits(store, 1, 40);
      await until('a merge after new full text', () => store.backgroundCheckpoints()!.merges > merges, 30_000);
    }));
});
