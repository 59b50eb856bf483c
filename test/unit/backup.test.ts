/**
 * Streaming export (paged from one snapshot, memory-major), streamed import in
 * arbitrary batches, online backup with progress, and a restore that verifies
 * the copy before it replaces anything.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { ExportRecord } from '../../daemon/src/protocol/types';
import { Core } from '../../daemon/src/server/core';
import { restore, verifyCopy } from '../../daemon/src/store/backup';
import { keysPath } from '../../daemon/src/store/keys';
import { holdExclusiveLock } from '../../daemon/src/store/lock';
import { Store } from '../../daemon/src/store/store';
import { rejectsWith, tempCore, tempDir } from '../helpers';

async function seed(core: Core, n: number) {
  await core.call(R.upsertBatch, {
    items: Array.from({ length: n }, (_, i) => ({ namespace: i % 2 ? 'project.a' : 'project.b', key: `k${i}`, value: `memory ${i} v1` })),
  });
  await core.call(R.upsertBatch, {
    items: Array.from({ length: n }, (_, i) => ({ namespace: i % 2 ? 'project.a' : 'project.b', key: `k${i}`, value: `memory ${i} v2` })),
  });
  const a = await core.call(R.get, { namespace: 'project.a', key: 'k1' });
  const b = await core.call(R.get, { namespace: 'project.b', key: 'k0' });
  await core.call(R.link, { from: a.id, to: b.id, type: 'relates_to' });
  const f = await core.call(R.upsert, { namespace: 'project.a', key: 'gone', value: 'forget this value' });
  await core.call(R.forget, { id: f.memory.id });
  const p = await core.call(R.upsert, { namespace: 'project.a', key: 'purged', value: 'purge me' });
  await core.call(R.delete, { id: p.memory.id });
  await core.call(R.purge, { id: p.memory.id });
}

async function allPages(
  core: Core,
  first: Parameters<Core['call']>[1] & object,
  limit: number,
): Promise<{ records: ExportRecord[]; pages: number; progress: { memories: number; total: number }[] }> {
  const records: ExportRecord[] = [];
  const progress: { memories: number; total: number }[] = [];
  let cursor: string | undefined;
  let pages = 0;
  do {
    const page = await core.call(R.exportPage, cursor ? { cursor, limit } : { ...(first as object), limit });
    records.push(...page.records);
    progress.push(page.progress);
    cursor = page.nextCursor ?? undefined;
    pages++;
  } while (cursor);
  return { records, pages, progress };
}

describe('streaming export and import', () => {
  it('pages hold the same records as the one-shot export, memory-major, with progress', async () => {
    const t = tempCore();
    try {
      await seed(t.core, 120);
      const whole = (await t.core.call(R.exportRecords, {})).records;
      const paged = await allPages(t.core, {}, 25);
      assert.ok(paged.pages > 5, `pages: ${paged.pages}`);
      const noHeader = (rs: ExportRecord[]) => rs.filter((r) => r.type !== 'header');
      assert.deepEqual(noHeader(paged.records), noHeader(whole));
      // every history record of a live memory follows its memory
      let current: string | null = null;
      const orphans: string[] = [];
      for (const r of paged.records) {
        if (r.type === 'memory') current = r.memory.id;
        else if (r.type === 'history' && r.entry.memoryId !== current) orphans.push(r.entry.op);
        else if (r.type !== 'history') current = null;
      }
      assert.deepEqual(orphans, ['purge'], 'only the purge row (its memory is gone) stands apart');
      const last = paged.progress[paged.progress.length - 1];
      assert.equal(last.memories, last.total);
      assert.equal(last.total, 121);
      // scoped
      const scoped = await allPages(t.core, { scope: { root: 'project.a', includeUser: false } }, 10);
      assert.ok(scoped.records.filter((r) => r.type === 'memory').every((r) => r.type === 'memory' && r.memory.namespace === 'project.a'));
      assert.equal(scoped.records.filter((r) => r.type === 'memory').length, 61);
      assert.equal(scoped.records.filter((r) => r.type === 'link').length, 0, 'the link leaves the scope');
    } finally {
      t.close();
    }
  });

  it('reads one snapshot: writes made between pages are not in the export', async () => {
    const t = tempCore();
    try {
      await seed(t.core, 40);
      const first = await t.core.call(R.exportPage, { limit: 5 });
      await t.core.call(R.upsert, { namespace: 'project.new', key: 'late', value: 'written during the export' });
      const k0 = await t.core.call(R.get, { namespace: 'project.b', key: 'k0' });
      const er = await t.core.call(R.erase, { id: k0.id });
      assert.equal(
        'walTruncated' in er.receipt ? er.receipt.walTruncated : null,
        false,
        'the export holds a snapshot, and erase says the WAL could not be truncated yet',
      );
      const recs: ExportRecord[] = [...first.records];
      let cursor = first.nextCursor;
      while (cursor) {
        const p = await t.core.call(R.exportPage, { cursor });
        recs.push(...p.records);
        cursor = p.nextCursor;
      }
      const keys = recs.filter((r) => r.type === 'memory').map((r) => (r.type === 'memory' ? r.memory.key : ''));
      assert.ok(!keys.includes('late'));
      assert.ok(keys.includes('k0'), 'erased after the export began, still in the snapshot');
      // the export is finished and its snapshot released: erasing again truncates
      const k2 = await t.core.call(R.get, { namespace: 'project.b', key: 'k2' });
      const again = (await t.core.call(R.erase, { id: k2.id })).receipt;
      assert.equal('walTruncated' in again ? again.walTruncated : null, true);
    } finally {
      t.close();
    }
  });

  it('refuses an unknown cursor with InvalidState', async () => {
    const t = tempCore();
    try {
      await rejectsWith(t.core.call(R.exportPage, { cursor: Buffer.from('nope').toString('base64url') }), 'InvalidState', 'cursor');
      await rejectsWith(t.core.call(R.exportPage, { limit: 0 }), 'InvalidParams', 'limit');
    } finally {
      t.close();
    }
  });

  it("imports in any batch size, even cut inside a memory's history, exactly", async () => {
    const a = tempCore();
    const b = tempCore();
    try {
      await seed(a.core, 30);
      const recs = (await allPages(a.core, {}, 7)).records;
      for (let i = 0; i < recs.length; i += 7) await b.core.call(R.importRecords, { records: recs.slice(i, i + 7) });
      const again = (await b.core.call(R.exportRecords, {})).records;
      const strip = (rs: ExportRecord[]) =>
        rs
          .filter((r) => r.type !== 'header')
          .map((r) =>
            r.type === 'history' ? { ...r, entry: { ...r.entry, seq: 0 } } : r.type === 'rejected' ? { ...r, valueHash: '' } : r,
          );
      assert.deepEqual(strip(again), strip(recs));
      await rejectsWith(b.core.call(R.upsert, { namespace: 'project.a', key: 'x', value: 'forget this value' }), 'RejectedValue');
    } finally {
      a.close();
      b.close();
    }
  });
});

describe('backup and restore', () => {
  it('backs up online with progress, while writes go on, to a verified copy with its keys', async () => {
    const t = tempCore();
    try {
      await seed(t.core, 400);
      const progress: { done: number; total: number }[] = [];
      t.core.hooks.progress = (p) => progress.push(p);
      const dest = path.join(t.dir, 'copy.db');
      let writing = true;
      let written = 0;
      const writer = (async () => {
        while (writing) {
          await t.core.call(R.upsert, { namespace: 'project.live', key: `w${written}`, value: `during backup ${written}` });
          written++;
          await new Promise((r) => setImmediate(r));
        }
      })();
      const r = await t.core.call(R.backup, { path: dest });
      writing = false;
      await writer;
      assert.equal(r.path, dest);
      assert.ok(r.pages > 0 && r.bytes === fs.statSync(dest).size);
      assert.ok(progress.length >= 1);
      assert.equal(progress[progress.length - 1].done, progress[progress.length - 1].total);
      assert.equal(verifyCopy(dest).problem, null);
      assert.equal(fs.statSync(dest).mode & 0o777, 0o600);
      assert.equal(r.keys, keysPath(dest));
      assert.equal(fs.readFileSync(r.keys!, 'utf8'), fs.readFileSync(keysPath(path.join(t.dir, 'cairn.db')), 'utf8'));
      const copy = new Database(dest, { readonly: true });
      assert.ok((copy.prepare('SELECT count(*) FROM memories').pluck().get() as number) >= 402);
      copy.close();
      await rejectsWith(t.core.call(R.backup, { path: dest }), 'InvalidState', 'path');
      await rejectsWith(t.core.call(R.backup, { path: 'relative.db' }), 'InvalidParams', 'path');
      await rejectsWith(t.core.call(R.backup, { path: path.join(t.dir, 'cairn.db') }), 'InvalidParams', 'path');
      await rejectsWith(t.core.call(R.backup, { path: path.join(t.dir, 'no', 'such', 'x.db') }), 'NotFound', 'path');
      const again = await t.core.call(R.backup, { path: dest, overwrite: true });
      assert.equal(again.path, dest);
    } finally {
      t.close();
    }
  });

  it('restore verifies the copy first and replaces nothing when it is bad', async () => {
    const t = tempCore();
    const dir = tempDir();
    const db = path.join(t.dir, 'cairn.db');
    try {
      await seed(t.core, 20);
      const good = path.join(dir, 'good.db');
      await t.core.call(R.backup, { path: good });
      await t.core.call(R.upsert, { namespace: 'project.after', key: 'k', value: 'written after the backup' });
      t.store.close();
      const before = fs.readFileSync(db);

      const garbage = path.join(dir, 'garbage.db');
      fs.writeFileSync(garbage, Buffer.alloc(8192, 7));
      await rejectsWith(
        Promise.resolve().then(() => restore(db, garbage)),
        'InvalidState',
        'from',
      );
      const corrupt = path.join(dir, 'corrupt.db');
      const buf = fs.readFileSync(good);
      for (let i = 4096 * 3; i < buf.length; i += 4096) buf.fill(0xff, i + 100, i + 600); // damage every page past the first few
      fs.writeFileSync(corrupt, buf);
      await rejectsWith(
        Promise.resolve().then(() => restore(db, corrupt)),
        'InvalidState',
        'from',
      );
      const other = path.join(dir, 'other.db');
      const o = new Database(other);
      o.exec('CREATE TABLE x(a)');
      o.close();
      await rejectsWith(
        Promise.resolve().then(() => restore(db, other)),
        'InvalidState',
        'from',
      );
      const newer = path.join(dir, 'newer.db');
      fs.copyFileSync(good, newer);
      const n = new Database(newer);
      n.pragma('user_version = 999');
      n.close();
      await rejectsWith(
        Promise.resolve().then(() => restore(db, newer)),
        'InvalidState',
        'from',
      );
      await rejectsWith(
        Promise.resolve().then(() => restore(db, path.join(dir, 'missing.db'))),
        'NotFound',
        'from',
      );
      assert.deepEqual(fs.readFileSync(db), before, 'nothing was replaced');

      // a daemon holding the store: refused
      const lock = holdExclusiveLock(db + '.lock', 1)!;
      await rejectsWith(
        Promise.resolve().then(() => restore(db, good)),
        'InvalidState',
        'db',
      );
      lock.release();

      const r = restore(db, good);
      assert.equal(r.keys, 'restored');
      assert.ok(r.previous && fs.existsSync(r.previous));
      const s = new Store(db);
      const core = new Core(s);
      try {
        await rejectsWith(core.call(R.get, { namespace: 'project.after', key: 'k' }), 'NotFound');
        assert.equal((await core.call(R.get, { namespace: 'project.a', key: 'k1' })).value, 'memory 1 v2');
        await rejectsWith(core.call(R.upsert, { namespace: 'project.a', key: 'x', value: 'forget this value' }), 'RejectedValue');
      } finally {
        s.close();
      }
      const prev = new Store(r.previous!);
      assert.equal(
        prev.db.prepare(`SELECT count(*) FROM memories WHERE key = 'k' AND value = 'written after the backup'`).pluck().get(),
        1,
        'the replaced store is kept whole',
      );
      prev.close();
    } finally {
      t.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
