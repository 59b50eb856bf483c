/**
 * Dropping a model's vectors (the end of a model switch, a rebuild that starts over): the table's pages are freed
 * without being zeroed or written again, inside the switch's transaction too, and every later statement of the
 * connection still zeroes what it frees (secure_delete, on for every store, is back on).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { openDatabase, writeTx } from '../../daemon/src/store/db';
import { VectorTables } from '../../daemon/src/store/vectors';
import { tempDir } from '../helpers';

const PAGE = 4096;
const walFrames = (file: string) => (fs.existsSync(`${file}-wal`) ? Math.max(0, (fs.statSync(`${file}-wal`).size - 32) / (PAGE + 24)) : 0);

describe('dropping a model’s vectors', () => {
  const file = path.join(tempDir(), 'drop.db');
  const { db, vec } = openDatabase(file);
  db.pragma('secure_delete = ON'); // as Store does on every writable store
  after(() => db.close());

  it('frees the table’s pages without writing them again, in a transaction with other writes, and keeps secure_delete on', () => {
    const tables = new VectorTables(db, vec, () => 0);
    const m = writeTx(db, () => tables.ensure('previous-model', 256));
    const ins = db.prepare(`INSERT INTO ${m.table}(rowid, q, sig, text_hash) VALUES (?, ?, ?, ?)`);
    writeTx(db, () => {
      for (let i = 1; i <= 3000; i++) ins.run(i, randomBytes(256), randomBytes(32), i);
    });
    db.pragma('wal_checkpoint(TRUNCATE)');
    assert.equal(walFrames(file), 0);
    const freeBefore = db.pragma('freelist_count', { simple: true }) as number;

    // As at a switch's end: the new model made the active one and the previous model's vectors dropped, one commit.
    writeTx(db, () => {
      db.prepare(
        `INSERT INTO meta(key, value) VALUES ('active_model', 'next-model') ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
      ).run();
      tables.drop('previous-model');
    });

    const freed = (db.pragma('freelist_count', { simple: true }) as number) - freeBefore;
    assert.ok(freed >= 200, `the table's pages were freed (${freed})`);
    // Zeroed, every freed page was written to the WAL again (and held in the statement journal until the commit).
    assert.ok(walFrames(file) < freed / 4, `${walFrames(file)} WAL frames for ${freed} freed pages`);
    assert.equal(tables.model('previous-model'), undefined);
    assert.equal(db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE name = ?`).pluck().get(m.table), 0);
    assert.equal(db.pragma('secure_delete', { simple: true }), 1, 'later deletes are zeroed as before');
  });
});
