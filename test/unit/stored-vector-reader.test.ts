/**
 * The embedding worker's read-only view of a compact index's stored int8 vectors (store/vector-rerank.ts
 * StoredVectorReader): it ranks hits as the event loop's rerankStored does, follows a file replaced at the same path
 * (a restore), and answers null, never throws, when the file or the table is gone. It keeps the vectors it read
 * while the index's vector epoch holds (a memory's vector put again or removed moves it), and never answers from a
 * kept vector of another file, table or epoch.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { SIG_WORDS } from '../../daemon/src/store/quantize';
import { VectorIndex, type MetaRow } from '../../daemon/src/store/vector-index';
import { rerankStored, StoredVectorCache, StoredVectorReader, storedVectorsSql } from '../../daemon/src/store/vector-rerank';
import { tempDir } from '../helpers';

/** A store file holding `table` with one int8 vector per rowid. */
function storeFile(file: string, table: string, rows: [number, number[]][]): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.exec(`CREATE TABLE ${table} (rowid INTEGER PRIMARY KEY, q BLOB NOT NULL, sig BLOB NOT NULL, text_hash INTEGER NOT NULL)`);
  const put = db.prepare(`INSERT INTO ${table} VALUES (?, ?, x'00', 0)`);
  for (const [rowid, q] of rows) put.run(rowid, Buffer.from(Int8Array.from(q).buffer));
  db.close();
}

const query = Float32Array.from([1, 0, 0, 0]);
const hits = [1, 2, 3, 9].map((rowid) => ({ rowid, score: 0 }));

describe('the worker reading stored vectors', () => {
  it('ranks as the event loop does, follows a file replaced at its path, and answers null when it cannot read', () => {
    const dir = tempDir();
    const file = path.join(dir, 'cairn.db');
    storeFile(file, 'vq_1', [
      [1, [10, 0, 0, 0]],
      [2, [0, 10, 0, 0]],
      [3, [10, 10, 0, 0]],
    ]);
    const reader = new StoredVectorReader();
    try {
      const got = reader.rerank({ file, table: 'vq_1' }, [{ query, hits }], 10);
      const db = new Database(file, { readonly: true });
      assert.deepEqual(got, rerankStored(db.prepare(storedVectorsSql('vq_1')), [{ query, hits }], 10));
      db.close();
      assert.deepEqual(
        got![0].map((h) => h.rowid),
        [1, 3, 2],
        'best first; rowid 9 has no stored vector (purged) and is left out',
      );
      assert.deepEqual(reader.rerank({ file, table: 'vq_1' }, [{ query, hits }], 1)![0], [{ rowid: 1, score: 1 }], 'cut to the limit');

      // Another file put at the same path (a restore): read from the new one, not the file still open.
      const next = path.join(dir, 'restored.db');
      storeFile(next, 'vq_1', [
        [1, [0, 10, 0, 0]],
        [2, [10, 0, 0, 0]],
      ]);
      fs.renameSync(next, file);
      assert.deepEqual(
        reader.rerank({ file, table: 'vq_1' }, [{ query, hits }], 10)![0].map((h) => h.rowid),
        [2, 1],
      );

      assert.equal(reader.rerank({ file, table: 'vq_2' }, [{ query, hits }], 10), null, 'no such table (a model switch dropped it)');
      assert.equal(reader.rerank({ file: path.join(dir, 'none.db'), table: 'vq_1' }, [{ query, hits }], 10), null, 'no such file');
      assert.deepEqual(
        reader.rerank({ file, table: 'vq_1' }, [{ query, hits }], 10)![0].map((h) => h.rowid),
        [2, 1],
        'and reads again afterwards',
      );
      reader.close();
      assert.equal(reader.rerank({ file, table: 'vq_1' }, [{ query, hits }], 10), null, 'closed for good (the worker is closing)');
    } finally {
      reader.close();
    }
  });

  it('keeps the vectors it read for one epoch: read once, read again after a vector changes, the least recent dropped', () => {
    const dir = tempDir();
    const file = path.join(dir, 'cairn.db');
    storeFile(file, 'vq_1', [
      [1, [10, 0, 0, 0]],
      [2, [0, 10, 0, 0]],
      [3, [10, 10, 0, 0]],
    ]);
    const epoch = new Int32Array(new SharedArrayBuffer(8));
    epoch[1] = 77;
    const at = { file, table: 'vq_1', epoch };
    const reader = new StoredVectorReader();
    const writer = new Database(file);
    try {
      const first = reader.rerank(at, [{ query, hits }], 10)![0];
      assert.equal(reader.cache.size, 3, 'the three stored vectors kept (rowid 9 has none)');
      // The stored vector of rowid 1 changes on disk without the epoch moving: the kept one answers (nothing read).
      writer.prepare('UPDATE vq_1 SET q = ? WHERE rowid = 1').run(Buffer.from(Int8Array.from([-10, 0, 0, 0]).buffer));
      assert.deepEqual(reader.rerank(at, [{ query, hits }], 10)![0], first, 'answered from the kept vectors');
      // The index moves its epoch when a vector is put again: the new vector is read.
      Atomics.add(epoch, 0, 1);
      assert.deepEqual(
        reader.rerank(at, [{ query, hits }], 10)![0].map((h) => h.rowid),
        [3, 2, 1],
        'read again: rowid 1 now points away from the query',
      );
      // Another index (another id) with the same count does not reuse them either.
      writer.prepare('UPDATE vq_1 SET q = ? WHERE rowid = 2').run(Buffer.from(Int8Array.from([10, 0, 0, 0]).buffer));
      const other = new Int32Array(new SharedArrayBuffer(8));
      other[0] = epoch[0];
      other[1] = 78;
      assert.equal(reader.rerank({ ...at, epoch: other }, [{ query, hits }], 10)![0][0].rowid, 2, "another index's epoch: read again");
      // Without an epoch nothing is kept or used.
      reader.cache.clear();
      reader.rerank({ file, table: 'vq_1' }, [{ query, hits }], 10);
      assert.equal(reader.cache.size, 0);
    } finally {
      writer.close();
      reader.close();
    }

    // Another file put at the path (a restore, with no connection writing the one it replaces), the same epoch: read
    // from it, not from the vectors kept from the file before.
    const dir2 = tempDir();
    const file2 = path.join(dir2, 'cairn.db');
    storeFile(file2, 'vq_1', [[3, [10, 10, 0, 0]]]);
    const reader2 = new StoredVectorReader();
    try {
      const at2 = { file: file2, table: 'vq_1', epoch };
      assert.equal(reader2.rerank(at2, [{ query, hits }], 10)![0][0].rowid, 3);
      assert.equal(reader2.cache.size, 1);
      const next = path.join(dir2, 'restored.db');
      storeFile(next, 'vq_1', [[3, [-10, 0, 0, 0]]]);
      fs.renameSync(next, file2);
      assert.deepEqual(reader2.rerank(at2, [{ query, hits }], 10)![0], [{ rowid: 3, score: -1 }], 'the restored file');
    } finally {
      reader2.close();
    }

    // The statement sees only the rowids the cache does not hold; past its capacity the least recently used go.
    const asked: number[][] = [];
    const read = {
      all(ids: string) {
        const want = JSON.parse(ids) as number[];
        asked.push(want);
        return want.map((rowid) => ({ rowid, q: Buffer.from(Int8Array.from([rowid, 1, 0, 0]).buffer) }));
      },
    };
    const cache = new StoredVectorCache(3).keyed('k');
    const h = (...ids: number[]) => [{ query, hits: ids.map((rowid) => ({ rowid, score: 0 })) }];
    const plain = rerankStored(read, h(1, 2, 3), 10);
    assert.deepEqual(rerankStored(read, h(1, 2, 3), 10, false, cache), plain, 'the same ranking with a cache');
    assert.deepEqual(rerankStored(read, h(1, 2, 3), 10, false, cache), plain);
    assert.deepEqual(asked.slice(1), [[1, 2, 3]], 'read once');
    rerankStored(read, h(1, 4), 10, false, cache); // 1 used again, 4 read: 2 (least recently used) dropped
    assert.deepEqual(asked.at(-1), [4]);
    rerankStored(read, h(1, 2, 3, 4), 10, false, cache);
    assert.deepEqual(asked.at(-1), [2], 'only the dropped one read again');
    assert.equal(cache.size, 3);
    cache.keyed('other');
    assert.equal(cache.size, 0, 'another key empties it');
  });

  it("the index's vector epoch moves when a vector is put again or removed, not when a new memory's is put", () => {
    const ix = new VectorIndex({ model: 'm', dimension: 16, table: 'vq_test' });
    const meta = (rowid: number): MetaRow => ({
      rowid,
      ns: 1,
      status: 'active',
      deleted_at: null,
      expires_at: null,
      valid_from: null,
      valid_to: null,
    });
    const put = (rowid: number) => ix.put(meta(rowid), new Int8Array(16).fill(rowid), new Int32Array(SIG_WORDS), 1);
    const at = () => Atomics.load(ix.vectorEpoch, 0);
    put(1);
    put(2);
    assert.equal(at(), 0, 'new memories');
    put(1);
    assert.equal(at(), 1, 'a vector put again');
    ix.setMeta(ix.slotOf.get(2)!, { ...meta(2), status: 'proposed' });
    assert.equal(at(), 1, 'facts only');
    ix.remove(2);
    assert.equal(at(), 2, 'a removal');
    put(2);
    assert.equal(at(), 2, 'a new memory in the freed slot');
    assert.notEqual(
      new VectorIndex({ model: 'm', dimension: 16, table: 'vq_test' }).vectorEpoch[1],
      ix.vectorEpoch[1],
      'each index its own id',
    );
  });
});
