/**
 * Memory bounded per connection on the export path: a one-reply store/export holds the whole export in the
 * daemon, so past Limits.exportReplyBytes it is refused with ValueTooLarge naming store/exportPage (which pages
 * with bounded memory) instead of growing the daemon; the extension and dashboard now export page by page and
 * import in chunks (extension/src/dashboard/chunks.ts), with the same records and totals as one call.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Limits } from '../../daemon/src/protocol/types';
import { exportRecords } from '../../daemon/src/store/portable';
import { exportAllPages, importInChunks } from '../../extension/src/dashboard/chunks';
import { rejectsWith, tempCore } from '../helpers';

async function filled(n: number) {
  const t = tempCore();
  for (let b = 0; b < n; b += 500)
    await t.core.call(R.upsertBatch, {
      items: Array.from({ length: Math.min(500, n - b) }, (_, i) => ({
        namespace: 'project.big',
        key: `k${b + i}`,
        value: `memory ${b + i} ${'x'.repeat(200)}`,
      })),
    });
  return t;
}

describe('one store/export reply is bounded', () => {
  it('past the limit: ValueTooLarge naming store/exportPage, before the whole export is held', async () => {
    const t = await filled(1200);
    try {
      const whole = await exportRecords(t.store, { includeHistory: true });
      const bytes = whole.reduce((a, r) => a + JSON.stringify(r).length, 0);
      assert.ok(bytes > 300_000);
      const limit = Math.floor(bytes / 3);
      let progressed = 0;
      await assert.rejects(
        exportRecords(t.store, { includeHistory: true }, undefined, (done) => (progressed = done), limit),
        (e: { codeName?: string; data?: Record<string, unknown> }) =>
          e.codeName === 'ValueTooLarge' && e.data?.limit === limit && e.data?.method === 'store/exportPage',
      );
      assert.ok(progressed < 1200, 'it stopped before reading everything');
      // Under the limit: the whole export, as before.
      assert.equal((await exportRecords(t.store, { includeHistory: true }, undefined, undefined, bytes + 1)).length, whole.length);
      // The daemon's own limit is documented and applies through the request.
      assert.equal(Limits.exportReplyBytes, 16 * 1024 * 1024);
      assert.equal((await t.core.call(R.exportRecords, { includeHistory: true })).records.length, whole.length);
    } finally {
      t.close();
    }
  });

  it('through Core, a store past the limit is refused with the typed error', async () => {
    const t = tempCore();
    try {
      // 64 KiB values: about 300 memories pass 16 MiB with their history.
      const value = 'y'.repeat(60 * 1024);
      for (let b = 0; b < 300; b += 50)
        await t.core.call(R.upsertBatch, {
          items: Array.from({ length: 50 }, (_, i) => ({ namespace: 'project.huge', key: `h${b + i}`, value: `${b + i} ${value}` })),
        });
      const data = await rejectsWith(t.core.call(R.exportRecords, { includeHistory: true }), 'ValueTooLarge');
      assert.equal(data.limit, Limits.exportReplyBytes);
      assert.equal(data.method, 'store/exportPage');
      // The paged export still gives everything.
      const paged = await exportAllPages((cursor) =>
        t.core.call(R.exportPage, cursor === undefined ? { includeHistory: true } : { cursor }),
      );
      assert.equal(paged.filter((r) => r.type === 'memory').length, 300);
    } finally {
      t.close();
    }
  });
});

describe('the extension exports in pages and imports in chunks', () => {
  it('exportAllPages gives the records of one store/export; importInChunks the totals of one store/import', async () => {
    const src = await filled(700);
    const one = tempCore();
    const chunked = tempCore();
    try {
      const whole = (await src.core.call(R.exportRecords, { includeHistory: true })).records;
      let pages = 0;
      const paged = await exportAllPages(async (cursor) => {
        pages++;
        // The limit is per call: every page asks for 300 records (pages may also end early on time, never later).
        return src.core.call(R.exportPage, cursor === undefined ? { includeHistory: true, limit: 300 } : { cursor, limit: 300 });
      });
      assert.ok(pages > 2, `paged in ${pages} calls`);
      const strip = (rs: typeof whole) => rs.filter((r) => r.type !== 'header');
      assert.deepEqual(strip(paged), strip(whole));

      const once = await one.core.call(R.importRecords, { records: whole });
      const parts: number[] = [];
      const sum = await importInChunks(
        whole,
        (chunk) => chunked.core.call(R.importRecords, { records: chunk }),
        (done, total) => parts.push(done / total),
      );
      assert.ok(parts.length > 1);
      assert.equal(parts.at(-1), 1);
      assert.deepEqual(
        { memories: sum.memories, history: sum.history, links: sum.links, skipped: sum.skipped },
        { memories: once.memories, history: once.history, links: once.links, skipped: once.skipped },
      );
      assert.equal(chunked.core.status().counts.memories, 700);
    } finally {
      src.close();
      one.close();
      chunked.close();
    }
  });
});
