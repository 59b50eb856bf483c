/**
 * The embedding worker's read-only view of a compact index's stored int8 vectors (store/vector-rerank.ts
 * StoredVectorReader): it ranks hits as the event loop's rerankStored does, follows a file replaced at the same path
 * (a restore), and answers null, never throws, when the file or the table is gone.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { rerankStored, StoredVectorReader, storedVectorsSql } from '../../daemon/src/store/vector-rerank';
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
});
