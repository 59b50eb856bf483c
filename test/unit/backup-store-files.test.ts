/**
 * No backup can destroy the store: `store/backup` refuses every file of the store (database, -wal, -shm, -journal,
 * .keys, .lock, .daemon.json, temporary files, identity lock files) under every spelling — a folder that is a
 * symbolic link to the store's folder, a symbolic link to the file, a hard link, a target that does not exist yet in
 * the store's folder — and restore refuses to read from them. A restored store's full-text index holds every memory,
 * even when the backup's index lagged or missed one while its watermark said it was current.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { identityLockDir } from '../../daemon/src/paths';
import { Core } from '../../daemon/src/server/core';
import { acquireDaemonLock } from '../../daemon/src/server/lock';
import { restore } from '../../daemon/src/store/backup';
import { keysPath } from '../../daemon/src/store/keys';
import { storeFileAt } from '../../daemon/src/store/store-files';
import { Store } from '../../daemon/src/store/store';
import { normalizedValueHash } from '../../daemon/src/text/hash';
import { rejectsWith, tempCore, tempDir } from '../helpers';

const SIDE = ['', '-wal', '-shm', '-journal', '.keys', '.lock', '.daemon.json'];

describe('backup refuses every file of the store, by identity', () => {
  it('through a folder symlink, a file symlink, a hard link, a dangling link and a name not yet created', async () => {
    const t = tempCore();
    const other = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      for (let i = 0; i < 50; i++) await t.core.call(R.upsert, { namespace: 'project.a', key: `k${i}`, value: `kept value ${i}` });
      const keysBefore = fs.readFileSync(keysPath(db), 'utf8');
      const release = acquireDaemonLock(db, { socket: null, version: 'test', startedAt: new Date().toISOString(), db });
      try {
        const dirLink = path.join(other, 'store-folder');
        fs.symlinkSync(t.dir, dirLink);
        const targets: string[] = [];
        // The folder is a symbolic link to the store's folder: every file beside the store, existing or not.
        for (const s of SIDE) targets.push(path.join(dirLink, `cairn.db${s}`));
        for (const s of ['.partial-123', '.restoring-9', '.pre-restore-2026', '.keys.1.tmp'])
          targets.push(path.join(dirLink, `cairn.db${s}`));
        // A symbolic link to the file, a hard link to it, a dangling link to a file the store makes later.
        fs.symlinkSync(db, path.join(other, 'file-link.db'));
        fs.symlinkSync(keysPath(db), path.join(other, 'keys-link.db'));
        fs.linkSync(db, path.join(other, 'hard.db'));
        fs.linkSync(keysPath(db), path.join(other, 'hard-keys.db'));
        fs.symlinkSync(db + '-journal', path.join(other, 'dangling.db'));
        fs.symlinkSync(path.join(dirLink, 'cairn.db-journal'), path.join(other, 'dangling-via-folder.db'));
        targets.push(
          ...['file-link.db', 'keys-link.db', 'hard.db', 'hard-keys.db', 'dangling.db', 'dangling-via-folder.db'].map((f) =>
            path.join(other, f),
          ),
        );
        // The same folder spelled with `..`, and the identity lock and info files of the store file.
        targets.push(path.join(t.dir, '..', path.basename(t.dir), 'cairn.db.keys'));
        const st = fs.statSync(db);
        targets.push(path.join(identityLockDir(), `${st.dev}-${st.ino}.lock`), path.join(identityLockDir(), `${st.dev}-${st.ino}.json`));
        for (const target of targets) {
          const data = await rejectsWith(t.core.call(R.backup, { path: target, overwrite: true }), 'InvalidParams', 'path');
          assert.equal(typeof data.storeFile, 'string', target);
        }
        assert.equal(fs.readFileSync(keysPath(db), 'utf8'), keysBefore, 'the key file is untouched');
        assert.equal(fs.lstatSync(path.join(other, 'dangling.db')).isSymbolicLink(), true);
        assert.equal(fs.existsSync(db + '-journal'), false, 'nothing was created through the dangling link');
        // The store still serves every write it acknowledged, and a backup elsewhere in its folder still works.
        assert.equal((await t.core.call(R.list, { limit: 100 })).items.length, 50);
        assert.equal(t.store.db.pragma('integrity_check', { simple: true }), 'ok');
        const ok = await t.core.call(R.backup, { path: path.join(dirLink, 'copy.db') });
        assert.ok(ok.pages > 0);
        assert.equal(storeFileAt(db, path.join(dirLink, 'copy.db')), null);
        assert.equal(storeFileAt(db, path.join(dirLink, 'copy.db.keys')), null);
      } finally {
        release();
      }
    } finally {
      t.close();
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it('restore refuses to read from a file of the store or from its keys under another name', async () => {
    const t = tempCore();
    const other = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'v' });
      t.store.close();
      fs.symlinkSync(t.dir, path.join(other, 'folder'));
      fs.linkSync(db, path.join(other, 'hard.db'));
      for (const from of [path.join(other, 'folder', 'cairn.db'), path.join(other, 'hard.db')])
        await rejectsWith(
          Promise.resolve().then(() => restore(db, from)),
          'InvalidParams',
          'from',
        );
      // A backup whose .keys is a link to the store's own key file: restoring would move the key away under it.
      const copy = path.join(other, 'copy.db');
      fs.copyFileSync(db, copy);
      fs.symlinkSync(keysPath(db), keysPath(copy));
      await rejectsWith(
        Promise.resolve().then(() => restore(db, copy)),
        'InvalidParams',
        'from',
      );
      assert.ok(fs.existsSync(keysPath(db)));
      // The copy an earlier restore kept is not a live file of the store: restoring it goes back.
      fs.rmSync(keysPath(copy));
      const first = restore(db, copy, Date.parse('2026-01-01T00:00:00Z'));
      const keyBefore = fs.readFileSync(keysPath(first.previous!), 'utf8');
      const back = restore(db, first.previous!, Date.parse('2026-01-02T00:00:00Z'));
      assert.equal(back.keys, 'restored');
      assert.equal(fs.readFileSync(keysPath(db), 'utf8'), keyBefore, 'the kept key came back with the kept store');
    } finally {
      t.close();
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});

describe('restore brings the full-text index up to the store', () => {
  it('a backup whose index misses a memory (watermark current) or lags the change log is wholly searchable after restore', async () => {
    const t = tempCore();
    const dir = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      for (let i = 0; i < 30; i++) await t.core.call(R.upsert, { namespace: 'project.a', key: `k${i}`, value: `ordinary note ${i}` });
      await t.core.call(R.upsert, { namespace: 'project.a', key: 'missing', value: 'the quokka migration plan' });
      await t.core.call(R.upsert, { namespace: 'project.a', key: 'lagging', value: 'the axolotl rollout checklist' });
      const backupFile = path.join(dir, 'b.db');
      await t.core.call(R.backup, { path: backupFile });
      // Make the copy as a backup under writers can leave it: one memory's entry is missing from the index while
      // the watermark says the index is current, and the latest change is not indexed at all (watermark behind it).
      const b = new Database(backupFile);
      const rowOf = (key: string) => b.prepare('SELECT rowid FROM memories WHERE key = ?').pluck().get(key) as number;
      b.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(rowOf('missing'));
      b.prepare('DELETE FROM memories_fts WHERE rowid = ?').run(rowOf('lagging'));
      const head = b.prepare('SELECT max(position) FROM changes').pluck().get() as number;
      b.prepare(`UPDATE index_state SET watermark = ? WHERE name = 'fts'`).run(head - 1);
      assert.equal(b.pragma('integrity_check', { simple: true }), 'ok', 'the damage is invisible to integrity_check');
      b.close();
      t.store.close();

      const r = restore(db, backupFile);
      const s = new Store(db);
      const core = new Core(s);
      try {
        for (const [q, key] of [
          ['quokka', 'missing'],
          ['axolotl', 'lagging'],
        ]) {
          const hits = (await core.call(R.search, { query: q, mode: 'fts' })).hits.map((h) => h.memory.key);
          assert.deepEqual(hits, [key], q);
        }
        assert.equal(s.ftsWatermark(), s.position());
        assert.equal(r.fullTextIndexed, 32);
      } finally {
        s.close();
      }
      assert.equal(r.vectorsMissing, 0, 'the copy has no vector index: nothing to re-embed beyond what the daemon does anyway');
      assert.deepEqual(
        fs.readdirSync(t.dir).filter((f) => f.includes('.restoring-')),
        [],
        'no temporary file is left',
      );
    } finally {
      t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('restore of a backup without its key file', () => {
  it('keeps the key the restore made, so forgotten values stored unkeyed still match', async () => {
    const t = tempCore();
    const dir = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      const f = await t.core.call(R.upsert, { namespace: 'project.a', key: 'wrong', value: 'the build uses make' });
      await t.core.call(R.forget, { id: f.memory.id });
      const file = path.join(dir, 'nokeys.db');
      await t.core.call(R.backup, { path: file });
      fs.rmSync(keysPath(file));
      // As a store from before keyed hashes holds it: the rejection is an unkeyed hash, re-keyed at the next open.
      const b = new Database(file);
      b.prepare('UPDATE rejected_values SET value_hash = ?').run(normalizedValueHash('the build uses make'));
      b.close();
      t.store.close();
      const r = restore(db, file);
      assert.equal(r.keys, 'missing');
      assert.ok(fs.existsSync(keysPath(db)), 'the key the copy was opened with is the store key');
      const s = new Store(db);
      try {
        await rejectsWith(
          new Core(s).call(R.upsert, { namespace: 'project.a', key: 'again', value: 'the build uses make' }),
          'RejectedValue',
        );
      } finally {
        s.close();
      }
    } finally {
      t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('restore checks the vector index against the memories', () => {
  it('a copy whose vector table misses a live memory (watermark current) is re-embedded from scratch at the next open', async () => {
    const t = tempCore();
    const dir = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      for (let i = 0; i < 5; i++) await t.core.call(R.upsert, { namespace: 'project.a', key: `k${i}`, value: `note ${i}` });
      const copyOf = async (name: string, skip: string | null) => {
        const file = path.join(dir, name);
        await t.core.call(R.backup, { path: file });
        const s = new Store(file, { log: () => {} });
        const model = s.transaction(() => s.vectors.ensure('test-model', 4));
        const rows = s.db.prepare('SELECT rowid, key FROM memories').all() as { rowid: number; key: string }[];
        s.transaction(() => {
          for (const row of rows)
            if (row.key !== skip)
              s.db
                .prepare(`INSERT INTO ${model.table}(rowid, q, sig, text_hash) VALUES (?, ?, ?, 0)`)
                .run(row.rowid, Buffer.alloc(4), Buffer.alloc(8));
          s.feed.setActiveModel('test-model');
          s.feed.setWatermark(model, s.position());
        });
        s.close();
        return file;
      };
      const whole = await copyOf('whole.db', null);
      const gap = await copyOf('gap.db', 'k3');
      t.store.close();
      const a = restore(db, whole);
      assert.equal(a.vectorsMissing, 0);
      let s = new Store(db);
      assert.equal(s.feed.watermark('test-model'), s.position(), 'a whole vector index keeps its watermark');
      s.close();
      const b = restore(db, gap);
      assert.equal(b.vectorsMissing, 1);
      s = new Store(db);
      assert.equal(s.feed.watermark('test-model'), 0, 'the daemon re-embeds the store at its next open');
      s.close();
    } finally {
      t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
