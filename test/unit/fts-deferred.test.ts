/**
 * The full-text index follows the change log in batches (store.ts catchUpFullText) instead of in every write's
 * own commit. These tests hold the batching back (no timer has fired yet when they search) and show that reads
 * still see every write: a search catches the index up first, index/wait reports the `fts` watermark only once
 * it reached the position, an update's old words stop matching, a purge leaves no text, an import is found, and
 * a store closed with an unindexed tail is caught up when opened again.
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Store } from '../../daemon/src/store/store';
import { tempCore } from '../helpers';

let t: ReturnType<typeof tempCore>;
beforeEach(() => (t = tempCore()));
afterEach(() => t.close());

const ftsKeys = async (query: string, core = t.core) =>
  (await core.call(R.search, { query, mode: 'fts', limit: 10 })).hits.map((h) => h.memory.key).sort();
const ftsRows = (store: Store, word: string) =>
  (store.db.prepare(`SELECT count(*) AS c FROM memories_fts WHERE memories_fts MATCH ?`).get(word) as { c: number }).c;

describe('full text indexed behind the write, read-your-writes kept', () => {
  it('a write leaves the index behind, and a full-text search right after it finds it', async () => {
    const w = await t.core.call(R.upsert, { namespace: 'project.a', key: 'bird', value: 'the kestrel hovers over the field' });
    assert.ok(t.store.ftsWatermark() < w.position, 'the write committed without indexing its text');
    assert.equal(ftsRows(t.store, 'kestrel'), 0);
    assert.deepEqual(await ftsKeys('kestrel'), ['bird']);
    assert.equal(t.store.ftsWatermark(), w.position, 'the search caught the index up');
    // Hybrid without a vector arm degrades to full text and finds it too.
    const h = await t.core.call(R.upsert, { namespace: 'project.a', key: 'bird2', value: 'a kestrel nest under the bridge' });
    const hybrid = await t.core.call(R.search, { query: 'kestrel', limit: 10 });
    assert.deepEqual(hybrid.hits.map((x) => x.memory.key).sort(), ['bird', 'bird2']);
    assert.equal(t.store.ftsWatermark(), h.position);
  });

  it('index/wait (full-text only) answers reached once the fts watermark reached the position', async () => {
    const w = await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'osprey' });
    assert.ok(t.store.ftsWatermark() < w.position);
    const r = await t.core.call(R.indexWait, { position: w.position, timeoutMs: 1000 });
    assert.deepEqual(r, {
      watermark: w.position,
      reached: true,
      index: 'fts',
      // index/wait also reports the episodes' event index (docs/episodes.md): no events here, so nothing to wait for
      events: { position: 0, fts: 0, vector: null, reached: true },
    });
    assert.equal(ftsRows(t.store, 'osprey'), 1);
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k2', value: 'egret' });
    const st = await t.core.call(R.status, {});
    assert.equal(ftsRows(t.store, 'egret'), 1, 'store/status caught the index up too');
    assert.deepEqual(
      st.indexes.find((i) => i.name === 'fts'),
      { name: 'fts', watermark: st.position, behind: 0 },
    );
  });

  it('the timer indexes a burst of writes in one batch without any reader', async () => {
    let last = 0;
    for (let i = 0; i < 20; i++)
      last = (await t.core.call(R.upsert, { namespace: 'project.a', key: `k${i}`, value: `heron ${i}` })).position;
    assert.ok(t.store.ftsWatermark() < last);
    for (let i = 0; t.store.ftsWatermark() < last; i++) {
      assert.ok(i < 2000, 'the batch ran');
      await new Promise((r) => setTimeout(r, 5));
    }
    assert.equal(ftsRows(t.store, 'heron'), 20);
  });

  it('an update replaces the indexed text; a purge before indexing leaves no text', async () => {
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'pelican' });
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'cormorant' });
    assert.deepEqual(await ftsKeys('pelican'), []);
    assert.deepEqual(await ftsKeys('cormorant'), ['k']);
    assert.equal(ftsRows(t.store, 'pelican'), 0, 'the old words left the index');
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'albatross' }); // not indexed yet
    await t.core.call(R.delete, { namespace: 'project.a', key: 'k' });
    await t.core.call(R.purge, { namespace: 'project.a', key: 'k' });
    t.store.catchUpFullText();
    assert.equal(t.store.ftsWatermark(), t.store.position());
    for (const w of ['albatross', 'cormorant', 'pelican']) assert.equal(ftsRows(t.store, w), 0, w);
  });

  it('a deleted memory stays out of results while its text waits to be indexed', async () => {
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'flamingo' });
    await t.core.call(R.delete, { namespace: 'project.a', key: 'k' });
    assert.deepEqual(await ftsKeys('flamingo'), []);
    await t.core.call(R.restore, { namespace: 'project.a', key: 'k' });
    assert.deepEqual(await ftsKeys('flamingo'), ['k']);
  });

  it('imported memories are found by full-text search', async () => {
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'sandpiper on the shore' });
    const records = (await t.core.call(R.exportRecords, {})).records;
    const b = tempCore();
    try {
      await b.core.call(R.importRecords, { records });
      assert.deepEqual(await ftsKeys('sandpiper', b.core), ['k']);
    } finally {
      b.close();
    }
  });

  it('a store closed with an unindexed tail is caught up when opened again', async () => {
    const w = await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'woodpecker' });
    const file = path.join(t.dir, 'cairn.db');
    assert.ok(t.store.ftsWatermark() < w.position);
    t.store.db.close(); // as a crash would: Store.close() would have indexed the tail
    const again = new Store(file);
    try {
      assert.equal(again.ftsWatermark(), w.position);
      assert.equal(ftsRows(again, 'woodpecker'), 1);
    } finally {
      again.close();
    }
  });

  it('Store.close indexes the tail, so a read-only reader of the file finds every write', async () => {
    const w = await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'nightjar' });
    const file = path.join(t.dir, 'cairn.db');
    t.store.close();
    const ro = new Store(file, { readonly: true });
    try {
      assert.equal(ro.ftsWatermark(), w.position);
      assert.equal(ftsRows(ro, 'nightjar'), 1);
    } finally {
      ro.close();
    }
  });
});
