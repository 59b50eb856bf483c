/**
 * Possible duplicates without the index by the other memory (schema 5): a row naming a removed memory is dropped at
 * read, and a rowid SQLite gives to a new memory never inherits the removed memory's possible duplicates.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { Store } from '../../daemon/src/store/store';
import { tempDir } from '../helpers';

async function open() {
  const dir = tempDir();
  const store = new Store(path.join(dir, 'cairn.db'));
  const core = new Core(store);
  const add = async (key: string) => {
    const r = await core.call(R.upsert, { namespace: 'project.dup', key, value: `value of ${key}` });
    return {
      id: r.memory.id,
      rowid: (store.db.prepare('SELECT rowid FROM memories WHERE id = ?').get(r.memory.id) as { rowid: number }).rowid,
    };
  };
  const purge = async (id: string) => {
    await core.call(R.delete, { id });
    await core.call(R.purge, { id });
  };
  const dups = (rowid: number) => store.feed.duplicates(rowid).map((d) => d.other_rowid);
  const rows = () => (store.db.prepare('SELECT count(*) AS c FROM duplicate_candidates').get() as { c: number }).c;
  const close = () => {
    store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  return { store, core, add, purge, dups, rows, close };
}

describe('possible duplicates: removed memories and reused rowids', () => {
  it('has no index by the other memory', async () => {
    const t = await open();
    try {
      assert.equal(t.store.db.prepare(`SELECT 1 FROM sqlite_master WHERE name = 'duplicate_candidates_other'`).get(), undefined);
    } finally {
      t.close();
    }
  });

  it('a purged memory drops out at once; a new memory given its rowid inherits nothing', async () => {
    const t = await open();
    try {
      const a = await t.add('a');
      const b = await t.add('b');
      const c = await t.add('c');
      t.store.transaction(() => {
        t.store.feed.setDuplicates(a.rowid, 1, [
          { rowid: b.rowid, similarity: 0.9 },
          { rowid: c.rowid, similarity: 0.8 },
        ]);
        t.store.feed.setDuplicates(c.rowid, 1, [{ rowid: a.rowid, similarity: 0.8 }]);
      });
      assert.deepEqual(t.dups(a.rowid), [b.rowid, c.rowid]);
      // b is not the largest rowid: its row stays on disk but no read returns it.
      await t.purge(b.id);
      assert.deepEqual(t.dups(a.rowid), [c.rowid]);
      assert.equal(t.rows(), 3);
      // c is the largest: rows naming anything above a (b's stale row too) go, and c's own rows with it.
      await t.purge(c.id);
      assert.deepEqual(t.dups(a.rowid), []);
      assert.equal(t.rows(), 0);
      // New memories get b's and c's rowids: none of them is anyone's possible duplicate.
      const d = await t.add('d');
      const e = await t.add('e');
      assert.deepEqual([d.rowid, e.rowid], [b.rowid, c.rowid], 'SQLite reused the rowids');
      assert.deepEqual(t.dups(a.rowid), []);
    } finally {
      t.close();
    }
  });

  it('erase removes every row naming the erased memories, wherever their rowids are', async () => {
    const t = await open();
    try {
      const a = await t.add('a');
      const b = await t.add('b');
      const c = await t.add('c');
      t.store.transaction(() => {
        t.store.feed.setDuplicates(a.rowid, 1, [{ rowid: b.rowid, similarity: 0.9 }]);
        t.store.feed.setDuplicates(c.rowid, 1, [{ rowid: b.rowid, similarity: 0.7 }]);
      });
      await t.core.call(R.erase, { id: b.id });
      assert.equal(t.rows(), 0, 'no row names the erased memory');
      assert.deepEqual(t.dups(a.rowid), []);
    } finally {
      t.close();
    }
  });
});
