/**
 * Free pages given back to the file system (store/wal.ts, store/checkpointer.ts): a store created with incremental
 * auto-vacuum has the daemon's sweep move its last pages into the free ones and cut the file, a slice at a time,
 * once they pass RECLAIM_MIN_*; an older store keeps them for SQLite to reuse, and says so.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { printStatus } from '../../daemon/src/cli/format';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { RECLAIM_SLICE_PAGES } from '../../daemon/src/store/checkpointer';
import { Store } from '../../daemon/src/store/store';
import { RECLAIM_MIN_PAGES } from '../../daemon/src/store/wal';
import { tempDir, until } from '../helpers';

const PAGE = 4096;

/** A table of `pages` pages' worth of rows written after the memories, then more memories after it, then dropped. */
async function freeInTheMiddle(store: Store, core: Core, pages: number, tag: string): Promise<void> {
  store.db.exec(`CREATE TABLE filler_${tag}(b BLOB)`);
  const add = store.db.prepare(`INSERT INTO filler_${tag}(b) VALUES (?)`);
  store.db.transaction(() => {
    for (let i = 0; i < pages; i++) add.run(Buffer.alloc(PAGE - 200, i % 251));
  })();
  // Pages of live tables after the freed ones: giving them back means moving these, not just cutting the end.
  await core.call(R.upsertBatch, {
    items: Array.from({ length: 200 }, (_, i) => ({
      namespace: 'project.reclaim',
      key: `after-${tag}-${i}`,
      value: `kept ${tag} ${i} ${'x'.repeat(600)}`,
    })),
  });
  store.fullText.catchUp();
  store.db.exec(`DROP TABLE filler_${tag}`);
}

const freePages = (store: Store): number => store.db.pragma('freelist_count', { simple: true }) as number;

/** Ask as the daemon's sweep does until a reclaim run has reported (the worker may be merging or checkpointing first). */
async function sweepUntilReclaims(store: Store, n: number): Promise<void> {
  await until(`reclaim run ${n}`, () => {
    if ((store.backgroundCheckpoints()?.reclaims ?? 0) >= n) return true;
    store.checkpoint();
    return false;
  });
}

/** `fn` while the store's write lock is held, as a client's write in progress holds it; committed after. */
async function underWriteLock(store: Store, fn: () => Promise<void>): Promise<void> {
  store.db.exec('BEGIN IMMEDIATE');
  try {
    await fn();
  } finally {
    store.db.exec('COMMIT');
  }
}

/** A new store in a temp folder with the background worker a daemon starts, closed and removed after `fn`. */
async function withWorkerStore(name: string, fn: (s: { store: Store; core: Core; file: string }) => Promise<void>): Promise<void> {
  const dir = tempDir();
  const file = path.join(dir, name);
  const store = new Store(file);
  try {
    const core = new Core(store);
    assert.equal(store.checkpointInBackground(), true);
    await fn({ store, core, file });
  } finally {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('free pages given back', () => {
  it('a new store gives the pages a dropped table freed back, moving live pages into them, and keeps every memory', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'r.db');
    const store = new Store(file);
    try {
      assert.equal(store.db.pragma('auto_vacuum', { simple: true }), 2, 'a new store is created with incremental auto-vacuum');
      const core = new Core(store);
      await core.call(R.upsertBatch, {
        items: Array.from({ length: 100 }, (_, i) => ({ namespace: 'project.reclaim', key: `before-${i}`, value: `first ${i}` })),
      });
      assert.equal(store.checkpointInBackground(), true);
      const freed = 3 * RECLAIM_MIN_PAGES;
      await freeInTheMiddle(store, core, freed, 'a');
      assert.ok(freePages(store) >= freed, `the drop freed ${freePages(store)} pages`);
      const status = core.status();
      assert.equal(status.free?.reclaims, true);
      assert.ok((status.free?.bytes ?? 0) >= freed * PAGE, `status reports ${status.free?.bytes} free bytes`);
      const sizeBefore = store.fileSize();

      await sweepUntilReclaims(store, 1);
      const run = store.backgroundCheckpoints()?.lastReclaim;
      assert.equal(run?.complete, true, JSON.stringify(run));
      assert.ok((run?.pages ?? 0) >= freed, `gave back ${run?.pages} pages`);
      assert.ok((run?.slices ?? 0) >= Math.ceil(freed / RECLAIM_SLICE_PAGES), `in ${run?.slices} slices`);
      assert.ok(freePages(store) < RECLAIM_MIN_PAGES, `${freePages(store)} free pages after (a full-text merge may free a few)`);
      // The run ends with a checkpoint, which cuts the database file to its new end.
      await until('the file cut', () => fs.statSync(file).size <= sizeBefore - freed * PAGE);
      assert.equal(store.db.pragma('integrity_check', { simple: true }), 'ok');
      assert.ok(core.status().free!.bytes < RECLAIM_MIN_PAGES * PAGE);

      const moved = (await core.call(R.get, { namespace: 'project.reclaim', key: 'after-a-199' })) as { value: string };
      assert.match(moved.value, /^kept a 199 /);
      const found = (await core.call(R.search, { query: 'first', mode: 'fts', limit: 200, scope: { root: 'project.reclaim' } })) as {
        hits: unknown[];
      };
      assert.equal(found.hits.length, 100, 'every memory written before the freed pages is still found by full text');
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a large drop is given back at once when asked (a model switch), without waiting for the sweep', async () => {
    await withWorkerStore('n.db', async ({ store, core, file }) => {
      await freeInTheMiddle(store, core, 2 * RECLAIM_MIN_PAGES, 'n');
      assert.ok(freePages(store) >= 2 * RECLAIM_MIN_PAGES);
      const sizeBefore = store.fileSize();
      // Its first run finds the write lock held (a client's write) and stops with nothing moved; asked once, it asks
      // again by itself (as after a run a search's commit stopped), with no sweep.
      await underWriteLock(store, async () => {
        store.reclaimSoon();
        await until('a run stopped by the held lock', () => (store.backgroundCheckpoints()?.reclaims ?? 0) >= 1);
      });
      assert.deepEqual(store.backgroundCheckpoints()?.lastReclaim, { slices: 0, pages: 0, complete: false });
      // (the main connection sees the pages go as each slice commits, before the run reports)
      await until(
        'a second run, reported',
        () => (store.backgroundCheckpoints()?.reclaims ?? 0) >= 2 && freePages(store) < RECLAIM_MIN_PAGES,
      );
      assert.equal(store.backgroundCheckpoints()?.lastReclaim?.complete, true);
      await until('the file cut', () => fs.statSync(file).size <= sizeBefore - 2 * RECLAIM_MIN_PAGES * PAGE);
      assert.equal(store.db.pragma('integrity_check', { simple: true }), 'ok');
    });
  });

  it('never waits for the write lock: a run that finds it held stops, and the next sweep gives the pages back', async () => {
    await withWorkerStore('l.db', async ({ store, core }) => {
      await freeInTheMiddle(store, core, 2 * RECLAIM_MIN_PAGES, 'b');
      const freed = freePages(store);
      await underWriteLock(store, () => sweepUntilReclaims(store, 1));
      assert.deepEqual(store.backgroundCheckpoints()?.lastReclaim, { slices: 0, pages: 0, complete: false });
      assert.ok(freePages(store) >= freed, 'nothing given back while the lock was held');
      await sweepUntilReclaims(store, 2);
      assert.equal(store.backgroundCheckpoints()?.lastReclaim?.complete, true);
      assert.ok(freePages(store) < RECLAIM_MIN_PAGES, `${freePages(store)} free pages after (a full-text merge may free a few)`);
    });
  });

  it('finishes a run that stopped part way, even once the pages left are under the threshold', async () => {
    await withWorkerStore('p.db', async ({ store, core }) => {
      await freeInTheMiddle(store, core, 2 * RECLAIM_MIN_PAGES, 'p');
      // The run stops before its first slice, as one a search's commit stops.
      await underWriteLock(store, () => sweepUntilReclaims(store, 1));
      assert.equal(store.backgroundCheckpoints()?.lastReclaim?.complete, false);
      // Later writes reuse most of the free pages: what is left is under RECLAIM_MIN_PAGES, which alone starts no run.
      const left = 300;
      const reuse = freePages(store) - left;
      store.db.exec('CREATE TABLE reuse_p(b BLOB)');
      const add = store.db.prepare('INSERT INTO reuse_p(b) VALUES (?)');
      store.db.transaction(() => {
        for (let i = 0; i < reuse; i++) add.run(Buffer.alloc(PAGE - 200, 7));
      })();
      const under = freePages(store);
      assert.ok(under > 0 && under < RECLAIM_MIN_PAGES, `${under} pages free`);
      await sweepUntilReclaims(store, 2);
      assert.equal(store.backgroundCheckpoints()?.lastReclaim?.complete, true);
      assert.ok(
        (store.backgroundCheckpoints()?.lastReclaim?.pages ?? 0) >= under - 10,
        JSON.stringify(store.backgroundCheckpoints()?.lastReclaim),
      );
      assert.equal(store.db.pragma('integrity_check', { simple: true }), 'ok');
    });
  });

  it('leaves fewer free pages than RECLAIM_MIN_PAGES to SQLite, which reuses them for the next writes', async () => {
    await withWorkerStore('s.db', async ({ store, core }) => {
      await freeInTheMiddle(store, core, RECLAIM_MIN_PAGES / 4, 'c');
      const freed = freePages(store);
      assert.ok(freed > 0 && freed < RECLAIM_MIN_PAGES, `${freed} pages free`);
      const done = store.backgroundCheckpoints()?.completed ?? 0;
      store.checkpoint();
      await until('the sweep checkpoint', () => (store.backgroundCheckpoints()?.completed ?? 0) > done);
      assert.equal(store.backgroundCheckpoints()?.reclaims, 0);
      assert.ok(freePages(store) >= freed, 'kept (a full-text merge may have freed more)');
    });
  });

  it('a store created before incremental auto-vacuum keeps its free pages for reuse and says so', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'old.db');
    const old = new Database(file);
    old.exec('CREATE TABLE made_before(x)'); // a table first: auto-vacuum can no longer be chosen for this file
    old.close();
    const store = new Store(file);
    try {
      assert.equal(store.db.pragma('auto_vacuum', { simple: true }), 0);
      const core = new Core(store);
      assert.equal(store.checkpointInBackground(), true);
      await freeInTheMiddle(store, core, 2 * RECLAIM_MIN_PAGES, 'd');
      const freed = freePages(store);
      const done = store.backgroundCheckpoints()?.completed ?? 0;
      store.checkpoint();
      await until('the sweep checkpoint', () => (store.backgroundCheckpoints()?.completed ?? 0) > done);
      assert.equal(store.backgroundCheckpoints()?.reclaims, 0);
      assert.ok(freePages(store) >= freed, 'kept (a full-text merge may have freed more)');
      const status = core.status();
      assert.equal(status.free?.reclaims, false);
      assert.ok((status.free?.bytes ?? 0) >= freed * PAGE);
      const lines: string[] = [];
      printStatus((l) => lines.push(l), status, 'direct');
      assert.match(
        lines[0]!,
        new RegExp(`${status.free!.bytes / 1024} KiB free \\(reused by later writes; not given back in a store this old\\)`),
      );
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
