/**
 * At synchronous=FULL a client's write commits with an fsync; the derived data that follows it (the full-text index
 * catching up, the vector indexer's vectors and watermark) commits at NORMAL, made durable by the next write's fsync
 * and rebuilt from the change log after a power loss (store/derived-commit.ts). Temporary triggers record the
 * setting each commit ran with.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Indexer, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { derivedCommit } from '../../daemon/src/store/derived-commit';
import { Store } from '../../daemon/src/store/store';
import { tempDir } from '../helpers';

function fullStore(sync: 'full' | 'normal' = 'full'): { store: Store; close: () => void } {
  const dir = tempDir();
  const store = new Store(path.join(dir, 'cairn.db'), { synchronous: sync });
  // What PRAGMA synchronous was while each statement below ran (the level its transaction commits with).
  store.db.exec(`
    CREATE TEMP TABLE seen(what TEXT, level INTEGER);
    CREATE TEMP TRIGGER seen_memory AFTER INSERT ON main.memories BEGIN
      INSERT INTO seen SELECT 'memory', synchronous FROM pragma_synchronous; END;
    CREATE TEMP TRIGGER seen_index_update AFTER UPDATE ON main.index_state BEGIN
      INSERT INTO seen SELECT NEW.name, synchronous FROM pragma_synchronous; END;
    CREATE TEMP TRIGGER seen_index_insert AFTER INSERT ON main.index_state BEGIN
      INSERT INTO seen SELECT NEW.name, synchronous FROM pragma_synchronous; END;`);
  return {
    store,
    close: () => {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
const seen = (s: Store) => s.db.prepare('SELECT what, level FROM seen ORDER BY rowid').all() as { what: string; level: number }[];
const level = (s: Store) => s.db.pragma('synchronous', { simple: true }) as number;

function fakeModel(): EmbeddingModel {
  return {
    info: { model: 'test/fake', configuredModel: 'test/fake', dimension: 8, fallbackReason: null },
    async embed(texts) {
      return texts.map((t) => Float32Array.from({ length: 8 }, (_, j) => ((t.length + j) % 7) / 7 + 0.1));
    },
    async close() {},
  };
}

describe('derived commits at synchronous=FULL', () => {
  it('a write commits at FULL, the full-text catch-up after it at NORMAL, and FULL is back for the next write', () => {
    const { store, close } = fullStore();
    try {
      store.upsert({ namespace: 'project.a', key: 'k1', value: 'the invoice rounding rule' });
      store.catchUpFullText();
      store.upsert({ namespace: 'project.a', key: 'k2', value: 'the second rule' });
      assert.deepEqual(seen(store), [
        { what: 'memory', level: 2 },
        { what: 'fts', level: 1 },
        { what: 'memory', level: 2 },
      ]);
      assert.equal(level(store), 2);
      assert.equal(store.ftsWatermark(), store.position() - 1, 'the catch-up indexed the first write');
    } finally {
      close();
    }
  });

  it('the vector indexer commits its vectors and watermark at NORMAL', async () => {
    const { store, close } = fullStore();
    const ix = new Indexer(store, () => {});
    try {
      await ix.use(fakeModel());
      for (const deadline = Date.now() + 20_000; ix.state !== 'ready' && Date.now() < deadline;)
        await new Promise((r) => setTimeout(r, 10));
      assert.equal(ix.state, 'ready');
      store.db.exec('DELETE FROM seen');
      const { position } = store.upsert({ namespace: 'project.a', key: 'k1', value: 'embedded after the model is ready' });
      assert.equal((await ix.waitFor(position)).reached, true);
      const vec = seen(store).filter((r) => r.what.startsWith('vec:'));
      assert.ok(vec.length > 0, 'the pass moved the vector watermark');
      assert.deepEqual(new Set(vec.map((r) => r.level)), new Set([1]));
      assert.deepEqual(seen(store)[0], { what: 'memory', level: 2 });
      assert.equal(level(store), 2);
    } finally {
      await ix.stop();
      close();
    }
  });

  it('restores FULL when the work throws, and leaves NORMAL stores and enclosing transactions alone', () => {
    const { store, close } = fullStore();
    try {
      const boom = (): never => {
        assert.equal(level(store), 1);
        throw new Error('boom');
      };
      assert.throws(() => derivedCommit(store.db, boom), /boom/);
      assert.equal(level(store), 2);
      // Inside a client's transaction (a batch indexing its own full text) the commit is the client's: FULL.
      store.transaction(() => derivedCommit(store.db, () => assert.equal(level(store), 2)));
    } finally {
      close();
    }
    const normal = fullStore('normal');
    try {
      derivedCommit(normal.store.db, () => assert.equal(level(normal.store), 1));
      assert.equal(level(normal.store), 1);
    } finally {
      normal.close();
    }
  });
});
