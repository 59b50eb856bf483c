/**
 * Duplicate checks scored in the embedding worker (store/vector-scan.ts runDuplicateScan over the vector index's
 * shared arrays) give exactly what the same checks give on the event loop: the same memories, in the same order,
 * with bit-identical similarities, on both the exact path (up to dupExactMax) and the Hamming path, with deleted
 * memories and the checked memory itself left out. The indexer sends a pass's checks to the worker as one scan,
 * and what it records equals a check made on the event loop afterwards.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import { DUPLICATE_LIMIT, Indexer, type EmbeddingModel } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { duplicateHits, nearest, newScratch, runDuplicateScan, type DuplicateScan } from '../../daemon/src/store/vector-scan';
import { SIG_WORDS } from '../../daemon/src/store/quantize';
import { DUP_CANDIDATES, DUP_EXACT_MAX, DUP_FLIPS, DUP_LSH_SHAPE, type VecModel } from '../../daemon/src/store/vectors';
import { cosine, tempCore } from '../helpers';

const DIM = 32;
function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}

describe('duplicate checks in the embedding worker', () => {
  const c = tempCore();
  let model: VecModel;
  let embedder: Embedder;
  const vecs = new Map<number, { v: Float32Array; ns: string; id: string }>();
  const nsRowid = new Map<string, number>();
  const deleted = new Set<number>();
  const r = rng(7);
  before(async () => {
    embedder = await Embedder.start({ model: 'builtin', allowRemote: false });
    model = c.store.transaction(() => c.store.vectors.ensure('test-model', DIM));
    c.store.vectors.dupBands = DUP_LSH_SHAPE; // the index keeps LSH buckets (the 'bucket' path below)
    c.store.vectors.load(model);
    // project.a: 450 memories (above DUP_EXACT_MAX), project.b: 120, with clusters of near copies.
    const base = Array.from({ length: 60 }, () => new Float32Array(DIM).map(() => r()));
    const items = Array.from({ length: 570 }, (_, i) => ({
      namespace: i < 450 ? 'project.a' : 'project.b',
      key: `k${i}`,
      value: `memory ${i}`,
    }));
    const res = await c.core.call(R.upsertBatch, { items });
    c.store.transaction(() => {
      res.results.forEach((x, i) => {
        if (!x.ok) throw new Error('write failed');
        const v = Float32Array.from(base[i % 60], (y) => y + 0.35 * r());
        const rowid = c.store.rowidOf(x.id)!;
        vecs.set(rowid, { v, ns: items[i].namespace, id: x.id });
        c.store.vectors.put(model, rowid, v, i);
      });
    });
    for (const ns of ['project.a', 'project.b'])
      nsRowid.set(ns, (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = ?`).get(ns) as { rowid: number }).rowid);
    // Deleted memories are not candidates: they must be left out on both sides (admission on the event loop).
    for (const [rowid, e] of [...vecs].filter((_, i) => i % 17 === 3)) {
      await c.core.call(R.delete, { id: e.id, reason: 'test' });
      deleted.add(rowid);
    }
  });
  after(async () => {
    await embedder?.close();
    c.close();
  });

  /** Checks of many memories of both namespaces, each against its own namespace without itself, some with a near copy's vector. */
  const checks = () =>
    [...vecs]
      .filter(([rowid], i) => !deleted.has(rowid) && i % 7 === 0)
      .map(([rowid, e], i) => ({
        vector: i % 2 ? e.v : Float32Array.from(e.v, (y, j) => y + (j % 5 === 0 ? 0.05 : 0)),
        nsRowid: nsRowid.get(e.ns)!,
        exclude: rowid,
      }));

  for (const path of ['exact', 'Hamming', 'bucket'] as const)
    it(`${path} path: the worker's hits equal the event loop's, bit for bit`, async () => {
      const vs = c.store.vectors;
      try {
        // exact: project.b (120) scored whole, project.a (450) through the whole namespace's Hamming pass (no LSH
        // buckets); Hamming: both namespaces so; bucket: project.a's checks take their LSH buckets' memories.
        if (path !== 'bucket') vs.dupFlips = null;
        if (path === 'Hamming') {
          vs.dupExactMax = 50; // both namespaces take the Hamming path
          vs.dupCandidates = 40;
        }
        const cs = checks();
        assert.ok(cs.length > 60);
        const now = Date.now();
        const prepare = (): DuplicateScan => vs.prepareDuplicateScan(model, cs, DUPLICATE_LIMIT, now);
        const here = duplicateHits(runDuplicateScan(prepare()));
        const there = duplicateHits(await embedder.scanDuplicates(prepare()));
        assert.deepEqual(there, here);
        // And each equals the single check on the event loop (what the indexer ran before), with no threshold.
        cs.forEach((ch, i) => {
          assert.deepEqual(
            here[i],
            vs.similarInNamespace(model, ch.vector, ch.nsRowid, ch.exclude, -1, DUPLICATE_LIMIT, now),
            `check ${i}`,
          );
        });
        if (path === 'bucket') {
          // Only visible memories of the check's namespace other than itself.
          cs.forEach((ch, i) => {
            for (const h of here[i]) {
              assert.ok(!deleted.has(h.rowid) && h.rowid !== ch.exclude);
              assert.equal(nsRowid.get(vecs.get(h.rowid)!.ns), ch.nsRowid);
            }
          });
          assert.ok(here.some((h) => h.length > 0));
          return;
        }
        let found = 0;
        cs.forEach((ch, i) => {
          const ns = [...vecs].filter(([rowid, e]) => nsRowid.get(e.ns) === ch.nsRowid && rowid !== ch.exclude && !deleted.has(rowid));
          assert.equal(here[i].length, DUPLICATE_LIMIT);
          for (const h of here[i]) {
            assert.ok(!deleted.has(h.rowid) && h.rowid !== ch.exclude, 'only visible memories of the namespace other than itself');
            assert.equal(nsRowid.get(vecs.get(h.rowid)!.ns), ch.nsRowid);
          }
          // The best match is the true nearest neighbour by float cosine (int8 rounding aside).
          const best = ns.map(([rowid, e]) => ({ rowid, s: cosine(ch.vector, e.v) })).sort((a, b) => b.s - a.s)[0];
          if (here[i][0].rowid === best.rowid) found++;
          else assert.ok(Math.abs(here[i][0].score - best.s) < 0.02, `check ${i}: best ${best.s}, got ${here[i][0].score}`);
        });
        assert.ok(found > cs.length * 0.9, `${found} of ${cs.length} found their true nearest neighbour first`);
      } finally {
        vs.dupExactMax = DUP_EXACT_MAX;
        vs.dupCandidates = DUP_CANDIDATES;
        vs.dupFlips = DUP_FLIPS;
      }
    });

  for (const path of ['exact', 'Hamming', 'bucket'] as const)
    it(`${path} path: each check's hits are those of its namespace's list without its own memory, copied (the former way)`, () => {
      const vs = c.store.vectors;
      try {
        if (path !== 'bucket') vs.dupFlips = null;
        if (path === 'Hamming') {
          vs.dupExactMax = 50;
          vs.dupCandidates = 40;
        }
        const cs = checks();
        // Two checks of one memory, a check of a deleted memory (not listed: nothing is left out) and one whose
        // memory is in the other namespace (not in this list either).
        const other = [...vecs].find(([, e]) => e.ns === 'project.b')![0];
        const gone = [...deleted][0];
        cs.push({ ...cs[0] }, { vector: vecs.get(gone)!.v, nsRowid: nsRowid.get(vecs.get(gone)!.ns)!, exclude: gone });
        cs.push({ vector: cs[1].vector, nsRowid: nsRowid.get('project.a')!, exclude: other });
        const scan = vs.prepareDuplicateScan(model, cs, DUPLICATE_LIMIT, Date.now());
        const got = duplicateHits(runDuplicateScan(scan));
        const sc = newScratch();
        cs.forEach((ch, i) => {
          const g = scan.group[i];
          const list = Array.from(scan.slots.subarray(scan.starts[g], scan.starts[g + 1]));
          const without = Int32Array.from(list.filter((slot) => scan.arrays.rowid[slot] !== ch.exclude));
          const want = nearest(
            scan.arrays,
            sc,
            without,
            scan.vectors.subarray(i * DIM, (i + 1) * DIM),
            scan.limit,
            () => scan.sigs.subarray(i * SIG_WORDS, (i + 1) * SIG_WORDS),
            scan.exactMax,
            scan.candidates,
          );
          assert.deepEqual(got[i], want, `check ${i}`);
          assert.ok(!got[i].some((h) => h.rowid === ch.exclude));
        });
      } finally {
        vs.dupExactMax = DUP_EXACT_MAX;
        vs.dupCandidates = DUP_CANDIDATES;
        vs.dupFlips = DUP_FLIPS;
      }
    });

  it('an empty scan and a check of an empty namespace answer nothing', async () => {
    const none = c.store.vectors.prepareDuplicateScan(model, [], DUPLICATE_LIMIT, Date.now());
    assert.deepEqual(duplicateHits(await embedder.scanDuplicates(none)), []);
    const lonely = c.store.vectors.prepareDuplicateScan(
      model,
      [{ vector: new Float32Array(DIM).fill(1), nsRowid: 999_999, exclude: -1 }],
      5,
      Date.now(),
    );
    assert.deepEqual(duplicateHits(await embedder.scanDuplicates(lonely)), [[]]);
  });

  it('a closed embedder refuses a scan instead of hanging', async () => {
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    await e.close();
    await assert.rejects(e.scanDuplicates(c.store.vectors.prepareDuplicateScan(model, checks().slice(0, 2), 5, Date.now())), /closed/);
  });
});

describe('indexer: a pass scores its duplicate checks in the worker', () => {
  it('records what a check on the event loop finds, and sends the checks as one scan', async () => {
    const c = tempCore();
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    let scans = 0;
    let checksSent = 0;
    const counted: EmbeddingModel = {
      info: e.info,
      embed: (t, o) => e.embed(t, o),
      embedWithSignatures: (t) => e.embedWithSignatures(t),
      scanDuplicates: (s) => {
        scans++;
        checksSent += s.group.length;
        return e.scanDuplicates(s);
      },
      close: () => e.close(),
    };
    const ix = new Indexer(c.store, () => {});
    try {
      await ix.use(counted); // empty store: ready at once
      assert.equal(ix.state, 'ready');
      const topics = [
        'the login session token is stored in redis',
        'database migrations run with knex before deploy',
        'the api rate limit is 100 requests per minute',
      ];
      const items = Array.from({ length: 90 }, (_, i) => ({
        namespace: i % 2 ? 'project.a' : 'project.b',
        key: `note-${i}`,
        value: `${topics[i % 3]} (note ${i}${i % 4 ? ', see the wiki' : ''})`,
      }));
      // The store's batch is one transaction, so every check sees all 90 (memory/upsertBatch commits a large batch in
      // several, and a pass between them checks the first items against what is written so far, as single writes).
      const res = c.store.upsertBatch(items);
      assert.equal(res.results.filter((x) => x.ok).length, 90);
      const waited = await ix.waitFor(c.store.position(), 30_000);
      assert.ok(waited.reached);
      assert.ok(scans >= 1 && checksSent === 90, `${scans} scans, ${checksSent} checks`);
      const model = ix.model!;
      let withDuplicates = 0;
      const vectors = await e.embed(items.map((it) => `${it.key.replace(/[._:/-]+/g, ' ')}\n\n${it.value}`));
      res.results.forEach((x, i) => {
        if (!x.ok) throw new Error('write failed');
        const rowid = c.store.rowidOf(x.id)!;
        const recorded = c.store.feed.duplicates(rowid).map((d) => ({ rowid: d.other_rowid, score: d.similarity }));
        const ns = (c.store.db.prepare('SELECT ns_id FROM memories WHERE rowid = ?').get(rowid) as { ns_id: string }).ns_id;
        const nsr = (c.store.db.prepare('SELECT rowid FROM namespaces WHERE id = ?').get(ns) as { rowid: number }).rowid;
        const want = c.store.vectors.similarInNamespace(
          model,
          vectors[i],
          nsr,
          rowid,
          ix.duplicateThreshold(),
          DUPLICATE_LIMIT,
          Date.now(),
        );
        assert.deepEqual(recorded, want, `memory ${i}`);
        if (want.length) withDuplicates++;
      });
      assert.ok(withDuplicates > 60, `${withDuplicates} of 90 memories have possible duplicates`);
    } finally {
      await ix.stop();
      c.close();
    }
  });
});

describe('indexer: a memory purged while its duplicate check was scored', () => {
  it('is recorded nowhere and notified nowhere; its pair and the others are', async () => {
    const c = tempCore();
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    let scanned!: () => void;
    const wasScanned = new Promise<void>((r) => (scanned = r));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const held: EmbeddingModel = {
      info: e.info,
      embed: (t, o) => e.embed(t, o),
      embedWithSignatures: (t) => e.embedWithSignatures(t),
      // The worker scores at once; its answer is held until the purge below committed.
      scanDuplicates: async (s) => {
        const r = await e.scanDuplicates(s);
        scanned();
        await gate;
        return r;
      },
      close: () => e.close(),
    };
    const notified: number[][] = [];
    const ix = new Indexer(
      c.store,
      () => {},
      undefined,
      (reports) => notified.push(reports.map((r) => r.rowid)),
    );
    try {
      await ix.use(held);
      const text = 'the login session token is stored in redis with a one hour expiry';
      const res = await c.core.call(R.upsertBatch, {
        items: [
          { namespace: 'project.a', key: 'session-a', value: text },
          { namespace: 'project.a', key: 'session-b', value: `${text}, see the wiki` },
          { namespace: 'project.a', key: 'session-c', value: `${text} (ops notes)` },
        ],
      });
      const [a, b, cc] = res.results.map((x) => {
        if (!x.ok) throw new Error('write failed');
        return { id: x.id, rowid: c.store.rowidOf(x.id)! };
      });
      const waited = ix.waitFor(c.store.position(), 30_000);
      await wasScanned;
      // While the pass waits for the worker's answer (which names b as a possible duplicate of a and c), b is purged.
      await c.core.call(R.delete, { id: b.id, reason: 'test' });
      await c.core.call(R.purge, { id: b.id });
      release();
      await waited;
      assert.ok((await ix.waitFor(c.store.position(), 30_000)).reached);
      const rows = c.store.db.prepare('SELECT memory_rowid AS m, other_rowid AS o FROM duplicate_candidates').all() as {
        m: number;
        o: number;
      }[];
      assert.ok(!rows.some((x) => x.m === b.rowid || x.o === b.rowid), JSON.stringify(rows));
      assert.deepEqual(
        c.store.feed.duplicates(a.rowid).map((d) => d.other_rowid),
        [cc.rowid],
        "a and c are still each other's possible duplicates",
      );
      assert.ok(!notified.flat().includes(b.rowid), 'no notification names the purged memory');
      assert.ok(notified.flat().includes(a.rowid));
    } finally {
      release();
      await ix.stop();
      c.close();
    }
  });
});

describe('indexer: the worker fails a duplicate scan after the vectors were stored', () => {
  it('scores the checks on the event loop instead of losing them, and says so', async () => {
    const c = tempCore();
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    const failing: EmbeddingModel = {
      info: e.info,
      embed: (t, o) => e.embed(t, o),
      embedWithSignatures: (t) => e.embedWithSignatures(t),
      scanDuplicates: async () => {
        throw new Error('the worker died (test)');
      },
      close: () => e.close(),
    };
    const logs: string[] = [];
    const ix = new Indexer(c.store, (m) => logs.push(m));
    try {
      await ix.use(failing);
      const text = 'deploys go through the staging cluster first, then production after a smoke test';
      const items = Array.from({ length: 12 }, (_, i) => ({ namespace: 'project.a', key: `deploy-${i}`, value: `${text} (${i})` }));
      const res = await c.core.call(R.upsertBatch, { items });
      assert.ok((await ix.waitFor(c.store.position(), 30_000)).reached);
      assert.ok(
        logs.some((m) => /duplicate checks scored on the event loop: the worker died \(test\)/.test(m)),
        logs.join('\n'),
      );
      const vectors = await e.embed(items.map((it) => `${it.key.replace(/[._:/-]+/g, ' ')}\n\n${it.value}`));
      const nsr = (c.store.db.prepare(`SELECT rowid FROM namespaces WHERE path = 'project.a'`).get() as { rowid: number }).rowid;
      let withDuplicates = 0;
      res.results.forEach((x, i) => {
        if (!x.ok) throw new Error('write failed');
        const rowid = c.store.rowidOf(x.id)!;
        const recorded = c.store.feed.duplicates(rowid).map((d) => ({ rowid: d.other_rowid, score: d.similarity }));
        const want = c.store.vectors.similarInNamespace(
          ix.model!,
          vectors[i],
          nsr,
          rowid,
          ix.duplicateThreshold(),
          DUPLICATE_LIMIT,
          Date.now(),
        );
        assert.deepEqual(recorded, want, `memory ${i}`);
        if (want.length) withDuplicates++;
      });
      assert.equal(withDuplicates, 12);
    } finally {
      await ix.stop();
      c.close();
    }
  });
});

describe('indexer: the daemon stops while a batch is being checked', () => {
  it('rolls the batch back instead of scoring it on the event loop; the next start embeds and checks every memory', async () => {
    const c = tempCore();
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    let scanAsked!: () => void;
    const asked = new Promise<void>((r) => (scanAsked = r));
    let cutOff: ((err: Error) => void) | null = null;
    let prepared = 0;
    let armed = false;
    const prepare = c.store.vectors.prepareDuplicateScan.bind(c.store.vectors);
    c.store.vectors.prepareDuplicateScan = (...a: Parameters<typeof prepare>) => (prepared++, prepare(...a));
    // The worker's scan of a large store takes long: this one runs until the model is closed under it.
    const slow: EmbeddingModel = {
      info: e.info,
      embed: (t, o) => e.embed(t, o),
      embedWithSignatures: (t) => e.embedWithSignatures(t),
      scanDuplicates: (scan) =>
        armed
          ? new Promise((_, reject) => {
              cutOff = reject;
              scanAsked();
            })
          : e.scanDuplicates(scan),
      close: async () => {
        cutOff?.(new Error('Embedder closed'));
        await e.close();
      },
    };
    const ix = new Indexer(c.store, () => {});
    try {
      await ix.use(slow); // empty store: ready at once, so the writes below go through the indexing pass
      // One memory indexed first (no near copy yet, so no scan): the index is past its first fill.
      c.store.upsertBatch([{ namespace: 'project.b', key: 'first', value: 'the build runs on every push' }]);
      assert.ok((await ix.waitFor(c.store.position(), 30_000)).reached);
      const before = c.store.feed.watermark(ix.model!.model);
      assert.ok(before > 0);
      armed = true;
      prepared = 0;
      const text = 'the retry policy backs off exponentially up to five attempts';
      const items = Array.from({ length: 600 }, (_, i) => ({ namespace: 'project.a', key: `retry-${i}`, value: `${text} (${i})` }));
      const res = c.store.upsertBatch(items);
      const position = c.store.position();
      ix.kick(true);
      await asked;
      const model = ix.model!;
      assert.equal(c.store.vectors.count(model), 1 + 512, 'the first batch is stored and being checked');
      await ix.stop();
      assert.equal(prepared, 1, 'the checks were not scored again on the event loop');
      assert.equal(c.store.vectors.count(model), 1, 'the batch was rolled back');
      assert.equal(c.store.feed.watermark(model.model), before, 'its changes stay to be indexed');
      assert.equal((c.store.db.prepare('SELECT count(*) AS n FROM duplicate_candidates').get() as { n: number }).n, 0);

      // The next start: every memory gets its vector and its duplicate check.
      const e2 = await Embedder.start({ model: 'builtin', allowRemote: false });
      const again = new Indexer(c.store, () => {});
      try {
        await again.use(e2);
        assert.ok((await again.waitFor(position, 60_000)).reached);
        assert.equal(c.store.vectors.count(again.model!), 1 + items.length);
        const missing = res.results.flatMap((x, i) => (x.ok && c.store.feed.duplicates(c.store.rowidOf(x.id)!).length > 0 ? [] : [i]));
        assert.deepEqual(missing, [], 'every memory was checked (each has near copies)');
      } finally {
        await again.stop();
      }
    } finally {
      await ix.stop();
      c.close();
    }
  });
});

describe('indexer: checks that find nothing', () => {
  it('clear what an earlier check of the memory recorded, and read no labels', async () => {
    const c = tempCore();
    const e = await Embedder.start({ model: 'builtin', allowRemote: false });
    const ix = new Indexer(c.store, () => {});
    const labelled: number[][] = [];
    const labels = c.store.feed.labels.bind(c.store.feed);
    c.store.feed.labels = (rowids) => (labelled.push(rowids), labels(rowids));
    try {
      await ix.use(e);
      const text = 'the login session token is stored in redis with a one hour expiry';
      const write = async (key: string, value: string) => {
        const r = await c.core.call(R.upsert, { namespace: 'project.a', key, value });
        assert.ok((await ix.waitFor(r.position, 30_000)).reached);
        return c.store.rowidOf(r.memory.id)!;
      };
      const a = await write('session-a', text);
      const b = await write('session-b', `${text}, see the wiki`);
      assert.deepEqual(
        c.store.feed.duplicates(b).map((d) => d.other_rowid),
        [a],
      );
      // b rewritten about something else: its check finds nothing, and its earlier record goes.
      labelled.length = 0;
      await write('session-b', 'database migrations run with knex before every deploy to production');
      assert.deepEqual(c.store.feed.duplicates(b), []);
      assert.ok(!labelled.flat().includes(b), `labels read for a check that found nothing: ${JSON.stringify(labelled)}`);
      // A batch of unrelated memories: none is recorded, none is labelled.
      labelled.length = 0;
      const res = await c.core.call(R.upsertBatch, {
        items: ['rate limits', 'css grid layout', 'kafka partitions'].map((v, i) => ({ namespace: 'project.z', key: `k${i}`, value: v })),
      });
      assert.ok((await ix.waitFor(res.position, 30_000)).reached);
      for (const x of res.results) if (x.ok) assert.deepEqual(c.store.feed.duplicates(c.store.rowidOf(x.id)!), []);
      assert.deepEqual(labelled.flat(), []);
    } finally {
      await ix.stop();
      c.close();
    }
  });
});
