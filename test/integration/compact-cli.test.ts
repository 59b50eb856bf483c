/**
 * `cairn compact`: a store created before incremental auto-vacuum is rewritten while no daemon serves it; its free
 * pages go back and it gives them back from then on (store/compact.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { compact } from '../../daemon/src/store/compact';
import { holdExclusiveLock } from '../../daemon/src/store/lock';
import { Store } from '../../daemon/src/store/store';
import { CAIRN_BIN, spawnDaemon, tempDir } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const FREED_PAGES = 3000;

/** A store as an earlier version created it (auto_vacuum NONE), holding memories and ~12 MB of free pages. */
async function oldStoreWithFreePages(db: string): Promise<void> {
  const raw = new Database(db);
  raw.exec('CREATE TABLE made_before(x)'); // a table first: auto-vacuum can no longer be chosen at open
  raw.close();
  const store = new Store(db);
  try {
    await new Core(store).call(R.upsertBatch, {
      items: Array.from({ length: 300 }, (_, i) => ({ namespace: 'project.compact', key: `k${i}`, value: `kept value ${i}` })),
    });
    store.db.exec('CREATE TABLE filler(b BLOB)');
    const add = store.db.prepare('INSERT INTO filler(b) VALUES (?)');
    store.db.transaction(() => {
      for (let i = 0; i < FREED_PAGES; i++) add.run(Buffer.alloc(3900, i % 251));
    })();
    await new Core(store).call(R.upsert, { namespace: 'project.compact', key: 'last', value: 'written after the filler' });
    store.db.exec('DROP TABLE filler');
    assert.equal(store.db.pragma('auto_vacuum', { simple: true }), 0);
  } finally {
    store.close();
  }
}

const inspect = (db: string) => {
  const raw = new Database(db, { readonly: true });
  try {
    return {
      autoVacuum: raw.pragma('auto_vacuum', { simple: true }),
      free: raw.pragma('freelist_count', { simple: true }) as number,
      integrity: raw.pragma('integrity_check', { simple: true }),
    };
  } finally {
    raw.close();
  }
};

describe('cairn compact', () => {
  it('refuses while a daemon serves the store, then gives the free pages back and turns on incremental auto-vacuum', async () => {
    const dir = tempDir();
    const db = path.join(dir, 'cairn.db');
    await oldStoreWithFreePages(db);
    const env = { CAIRN_DB: db, XDG_RUNTIME_DIR: dir };
    const d = await spawnDaemon({ dir });
    try {
      const refused = cli(['compact'], env);
      assert.equal(refused.code, 1, refused.err);
      assert.match(refused.err, /serves[\s\S]*before compacting/);
    } finally {
      await d.stop();
    }
    const before = inspect(db);
    assert.equal(before.autoVacuum, 0, 'nothing changed while the daemon served');
    assert.ok(before.free >= FREED_PAGES, `${before.free} free pages`);
    const sizeBefore = fs.statSync(db).size;

    assert.match(cli(['compact', 'extra'], env).err, /usage: cairn compact/);
    const ok = cli(['compact'], env);
    assert.equal(ok.code, 0, ok.err);
    assert.match(ok.err, /compacting .*cairn\.db \(\d+ MiB/, 'says what it does before the rewrite');
    assert.match(ok.out, /compacted .* MiB -> .* MiB \(\d+\.\d MiB was free\)/);
    assert.match(ok.out, /now gives free pages back/);
    const after = inspect(db);
    assert.deepEqual(after, { autoVacuum: 2, free: 0, integrity: 'ok' });
    assert.ok(fs.statSync(db).size <= sizeBefore - FREED_PAGES * 4096, `${sizeBefore} -> ${fs.statSync(db).size}`);
    const got = cli(['get', 'project.compact', 'last', '--direct', '--json'], env);
    assert.equal(got.code, 0, got.err);
    assert.equal(JSON.parse(got.out).value, 'written after the filler');

    const again = cli(['compact', '--json'], env);
    assert.equal(again.code, 0, again.err);
    const r = JSON.parse(again.out) as { reclaimedBefore: boolean; freeBytesBefore: number; bytesAfter: number };
    assert.equal(r.reclaimedBefore, true);
    assert.equal(r.freeBytesBefore, 0);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers a missing store with NotFound and a held lock with InvalidState, changing nothing', async () => {
    const dir = tempDir();
    const db = path.join(dir, 'cairn.db');
    assert.throws(
      () => compact(db),
      (e: Error & { data?: { name: string } }) => e.data?.name === 'NotFound',
    );
    await oldStoreWithFreePages(db);
    const lock = holdExclusiveLock(db + '.lock');
    assert.ok(lock);
    try {
      assert.throws(
        () => compact(db),
        (e: Error & { data?: { name: string } }) => e.data?.name === 'InvalidState' && /daemon serves/.test(e.message),
      );
    } finally {
      lock.release();
    }
    assert.equal(inspect(db).autoVacuum, 0);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
