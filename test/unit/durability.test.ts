/** The write path's durability setting (cairn.store.synchronous) and the bounded WAL. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { synchronousSetting, WAL_CHECKPOINT_PAGES } from '../../daemon/src/store/db';
import { Store } from '../../daemon/src/store/store';
import { tempDir } from '../helpers';

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
