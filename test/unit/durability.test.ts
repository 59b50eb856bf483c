/** The write path's durability setting (cairn.store.synchronous) and the bounded WAL. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { synchronousSetting, WAL_CHECKPOINT_PAGES } from '../../daemon/src/store/db';
import { BackgroundCheckpointer, CHECKPOINT_EVERY_COMMITS, FALLBACK_AUTOCHECKPOINT_PAGES } from '../../daemon/src/store/checkpointer';
import { truncateWal } from '../../daemon/src/store/erase';
import { Store } from '../../daemon/src/store/store';
import { ROOT, tempDir, until } from '../helpers';

describe('write durability', () => {
  it('defaults to synchronous=NORMAL in WAL mode and offers FULL', () => {
    const dir = tempDir();
    const normal = new Store(path.join(dir, 'a.db'));
    const full = new Store(path.join(dir, 'b.db'), { synchronous: 'full' });
    try {
      assert.equal(normal.db.pragma('journal_mode', { simple: true }), 'wal');
      assert.equal(normal.db.pragma('synchronous', { simple: true }), 1, 'NORMAL');
      assert.equal(full.db.pragma('synchronous', { simple: true }), 2, 'FULL');
      assert.equal(normal.db.pragma('journal_size_limit', { simple: true }), WAL_CHECKPOINT_PAGES * 4096);
      // store/status reports what the connection does (read back from SQLite), for figures labelled by durability.
      assert.equal(new Core(normal).status().synchronous, 'normal');
      assert.equal(new Core(full).status().synchronous, 'full');
      full.db.pragma('synchronous = NORMAL');
      assert.equal(new Core(full).status().synchronous, 'normal', 'read back, not the option it opened with');
    } finally {
      normal.close();
      full.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads CAIRN_STORE_SYNCHRONOUS and rejects other values with a typed error', () => {
    const saved = process.env.CAIRN_STORE_SYNCHRONOUS;
    try {
      process.env.CAIRN_STORE_SYNCHRONOUS = 'FULL';
      assert.equal(synchronousSetting(), 'full');
      delete process.env.CAIRN_STORE_SYNCHRONOUS;
      assert.equal(synchronousSetting(), 'normal');
      assert.throws(
        () => synchronousSetting('off'),
        (e: Error & { data?: { name: string } }) => e.data?.name === 'InvalidParams' && /normal.*full/.test(e.message),
      );
    } finally {
      if (saved === undefined) delete process.env.CAIRN_STORE_SYNCHRONOUS;
      else process.env.CAIRN_STORE_SYNCHRONOUS = saved;
    }
  });

  it('cuts the WAL file to nothing when an idle checkpoint copied everything', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'c.db');
    const store = new Store(file);
    try {
      const core = new Core(store);
      await core.call(R.upsertBatch, {
        items: Array.from({ length: 300 }, (_, i) => ({ namespace: 'project.w', key: `k${i}`, value: `value number ${i} `.repeat(20) })),
      });
      assert.ok(fs.statSync(file + '-wal').size > 0, 'the writes went to the WAL');
      store.checkpoint();
      assert.equal(fs.statSync(file + '-wal').size, 0);
      assert.equal((await core.call(R.get, { namespace: 'project.w', key: 'k299' })).key, 'k299');
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('WAL checkpoints in a worker thread (the daemon)', () => {
  it('checkpoints from its own connection every so many commits; the main connection keeps only a fallback', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'w.db');
    const store = new Store(file);
    try {
      assert.equal(store.backgroundCheckpoints(), null, 'off until asked for');
      assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), WAL_CHECKPOINT_PAGES);
      assert.equal(store.checkpointInBackground(), true);
      assert.equal(store.db.pragma('wal_autocheckpoint', { simple: true }), FALLBACK_AUTOCHECKPOINT_PAGES);
      const core = new Core(store);
      for (let i = 0; i < CHECKPOINT_EVERY_COMMITS + 5; i++)
        await core.call(R.upsert, { namespace: 'project.w', key: `k${i}`, value: `value number ${i} `.repeat(10) });
      await until('a background checkpoint', () => (store.backgroundCheckpoints()?.completed ?? 0) >= 1);
      // Idle: the sweep's checkpoint goes to the worker too, and cuts the WAL to nothing once everything is copied.
      store.checkpoint();
      await until('the WAL cut to zero bytes', () => fs.statSync(file + '-wal').size === 0);
      const m = await core.call(R.upsert, { namespace: 'project.w', key: 'after', value: 'written after the checkpoints' });
      assert.equal(m.memory.version, 1);
      assert.equal((await core.call(R.get, { namespace: 'project.w', key: 'k0' })).version, 1);
    } finally {
      store.close();
    }
    // The worker's connection closed first, so the main one closed last and folded the WAL in.
    assert.equal(fs.existsSync(file + '-wal'), false);
    const again = new Store(file);
    try {
      assert.equal(again.counts().memories, CHECKPOINT_EVERY_COMMITS + 6);
    } finally {
      again.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a running checkpoint worker does not keep its process alive', () => {
    const dir = tempDir();
    const file = path.join(dir, 'r.db');
    new Store(file).close();
    // The child starts a worker that would stay an hour idle, waits for its checkpoint, and returns: it must exit by
    // itself. (It hung with the worker ref'd: a stdio daemon whose client had left never exited.)
    const script = `
      const { BackgroundCheckpointer } = require(${JSON.stringify(path.join(ROOT, 'daemon', 'src', 'store', 'checkpointer.ts'))});
      const c = new BackgroundCheckpointer(${JSON.stringify(file)}, require.resolve('better-sqlite3'), 'NORMAL', (r) => { console.log('failed', r); }, 3_600_000);
      c.request(false);
      (async () => {
        while (c.completed === 0) await new Promise((r) => setTimeout(r, 20));
        console.log('checkpointed', c.running);
      })();`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
    assert.equal(r.signal, null, 'the process had to be killed: the worker kept it alive');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'checkpointed true');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('an idle store is checkpointed on the spot, without starting a worker (an idle daemon has no extra thread)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'q.db');
    const first = new Store(file);
    await new Core(first).call(R.upsert, { namespace: 'project.q', key: 'a', value: 'written before the daemon opens the store' });
    first.db.pragma('wal_autocheckpoint = 0');
    const wal = fs.readFileSync(file + '-wal'); // the WAL as left by a writer that did not close cleanly
    first.close();
    fs.writeFileSync(file + '-wal', wal);
    const store = new Store(file);
    try {
      store.checkpointInBackground();
      // Nothing run in the background: no worker, no checkpoint, merge or reclaim.
      const NO_WORKER_RUN = {
        completed: 0,
        running: false,
        merges: 0,
        mergeSlices: 0,
        lastMerge: null,
        reclaims: 0,
        reclaimedPages: 0,
        lastReclaim: null,
      };
      // The daemon's sweep: its own write transaction (nothing to expire here), then the checkpoint.
      assert.equal(store.sweep().expired, 0);
      store.checkpoint();
      assert.deepEqual(store.backgroundCheckpoints(), NO_WORKER_RUN);
      assert.equal(fs.statSync(file + '-wal').size, 0);
      // The next sweep with nothing written in between: still no worker.
      store.sweep();
      store.checkpoint();
      assert.deepEqual(store.backgroundCheckpoints(), NO_WORKER_RUN);
      // A write since the last checkpoint: the next sweep's checkpoint goes to the worker.
      await new Core(store).call(R.upsert, { namespace: 'project.q', key: 'b', value: 'written while the daemon serves' });
      store.sweep();
      store.checkpoint();
      assert.equal(store.backgroundCheckpoints()?.running, true);
      await until('the background checkpoint', () => (store.backgroundCheckpoints()?.completed ?? 0) >= 1);
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("memory/erase's TRUNCATE checkpoint waits for a background checkpoint instead of reporting busy", async () => {
    const dir = tempDir();
    const file = path.join(dir, 'e.db');
    const store = new Store(file);
    try {
      store.checkpointInBackground();
      const core = new Core(store);
      for (let round = 0; round < 20; round++) {
        await core.call(R.upsertBatch, {
          items: Array.from({ length: 50 }, (_, i) => ({
            namespace: 'project.e',
            key: `r${round}k${i}`,
            value: `round ${round} value ${i} `.repeat(30),
          })),
        });
        store.checkpoint(); // the worker starts copying...
        assert.equal(truncateWal(store), true, `round ${round}`); // ...and the main connection's TRUNCATE still succeeds
        assert.equal(fs.statSync(file + '-wal').size, 0);
      }
    } finally {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('starts its worker on the first request and ends it when idle; the next request starts another', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'i.db');
    const store = new Store(file);
    const c = new BackgroundCheckpointer(file, require.resolve('better-sqlite3'), 'NORMAL', (r) => assert.fail(r), 20);
    try {
      const core = new Core(store);
      await core.call(R.upsert, { namespace: 'project.i', key: 'a', value: 'one' });
      assert.equal(c.running, false);
      c.request(false);
      assert.equal(c.running, true);
      await until('the first checkpoint', () => c.completed === 1);
      await until('the idle worker ended', () => !c.running);
      await core.call(R.upsert, { namespace: 'project.i', key: 'b', value: 'two' });
      // the write's full text is indexed in a commit of its own 25 ms later (FullText.schedule): made now, so no commit
      // lands after the TRUNCATE and grows the WAL again (a race the worker's start-up time used to hide)
      store.fullText.catchUp();
      c.request(true);
      await until('a checkpoint by a new worker', () => c.completed === 2);
      assert.equal(c.lastResult?.busy, 0);
      await until('the WAL cut to zero bytes', () => fs.statSync(file + '-wal').size === 0);
    } finally {
      c.close();
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reports a worker that cannot open the store (the store then checkpoints in the write path again)', async () => {
    const dir = tempDir();
    let reason = '';
    const c = new BackgroundCheckpointer(
      path.join(dir, 'no', 'such', 'folder', 'x.db'),
      require.resolve('better-sqlite3'),
      'NORMAL',
      (r) => {
        reason = r;
      },
    );
    try {
      assert.equal(c.running, false, 'no worker before the first request');
      c.request(false);
      await until('the failure', () => reason !== '');
      assert.match(reason, /could not open the store/);
      assert.equal(c.alive, false);
      c.request(true); // ignored, not thrown
    } finally {
      c.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
