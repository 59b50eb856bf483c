/**
 * Centred signatures (quantize.ts signatureInput, embed/signature-centre.ts): a vector table made now records the
 * model's centre and every signature of it — stored by the worker or by the event loop, a search's query, a duplicate
 * check's — is taken of the unit vector less that centre; a table made before centres keeps plain signatures for
 * its old and its new vectors alike, so one table never mixes the two.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Embedder } from '../../daemon/src/embed';
import { fastSignature } from '../../daemon/src/embed/embed-kernels';
import { CENTRE_TEXTS, signatureCentre } from '../../daemon/src/embed/signature-centre';
import { embeddingText } from '../../daemon/src/index/embedding-model';
import { Indexer } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { signature, signatureInput, SIG_BITS } from '../../daemon/src/store/quantize';
import { newScratch, normalized, queryNearest } from '../../daemon/src/store/vector-scan';
import { tempCore } from '../helpers';

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296 - 0.5;
  };
}

/** Vectors in a narrow cone, as embedding models make them: a shared direction plus a little of their own. */
function cone(count: number, dim: number, seed: number): { vectors: Float32Array[]; mean: Float32Array } {
  const r = rng(seed);
  const common = normalized(Float32Array.from({ length: dim }, r));
  const vectors = Array.from({ length: count }, () => normalized(Float32Array.from({ length: dim }, (_, i) => 2 * common[i] + 0.25 * r())));
  const mean = new Float32Array(dim);
  for (const v of vectors) for (let i = 0; i < dim; i++) mean[i] += v[i] / count;
  return { vectors, mean };
}

describe('centred signatures', () => {
  it('are taken of the unit vector less the centre, the same in the kernel and in JavaScript', () => {
    const { vectors, mean } = cone(200, 64, 7);
    for (const v of vectors.slice(0, 50)) {
      const centred = signature(v, mean);
      assert.deepEqual(
        signature(
          v.map((x) => x * 3.5),
          mean,
        ),
        centred,
        'a vector and a multiple of it sign alike',
      );
      assert.deepEqual(fastSignature(v, mean), centred, 'the worker computes the same bits');
      assert.deepEqual(signature(signatureInput(v, mean)), centred, 'the signs of the centred input');
      assert.deepEqual(signature(v, null), signature(v), 'no centre: the plain signature');
    }
    assert.deepEqual(signature(new Float32Array(64), mean), new Int32Array(8), 'a zero vector signs as zero, centred or not');
    assert.equal(signatureInput(vectors[0], new Float32Array(3)), vectors[0], 'a centre of another length is not used');
  });

  it('split vectors of a narrow cone where plain signatures cannot', () => {
    const { vectors, mean } = cone(400, 64, 11);
    const constantBits = (sigs: Int32Array[]) => {
      let n = 0;
      for (let b = 0; b < SIG_BITS; b++) {
        const ones = sigs.filter((s) => (s[b >> 5] >>> (b & 31)) & 1).length;
        if (ones === 0 || ones === sigs.length) n++;
      }
      return n;
    };
    const plain = constantBits(vectors.map((v) => signature(v)));
    const centred = constantBits(vectors.map((v) => signature(v, mean)));
    assert.ok(plain > 64, `many plain bits are the same for every vector (${plain} of 256)`);
    assert.ok(centred < 5, `centred, nearly every bit splits them (${centred} constant)`);
  });

  it("a search's query signature is taken with its index's centre", () => {
    // 17 slots: slot 0 holds the query's own vector under its centred signature; 16 decoys hold another vector under
    // the query's plain signature. A one-hit KNN takes 8 slots by Hamming distance: with the centred query signature
    // slot 0 is among them (distance 0) and ranks first; with a plain one the 8 are decoys.
    const d = 64;
    const { vectors, mean } = cone(2, d, 5);
    const [v, other] = vectors;
    const slots = 17;
    const toInt8 = (x: Float32Array) => Int8Array.from(x, (c) => Math.round((c / Math.max(...x.map(Math.abs))) * 127));
    const q = new Int8Array(slots * d);
    const sig = new Int32Array(slots * 8);
    const inv = new Float32Array(slots);
    for (let s = 0; s < slots; s++) {
      const int8 = toInt8(s === 0 ? v : normalized(other.map((x, i) => (i % 2 ? x : -x))));
      q.set(int8, s * d);
      inv[s] = 1 / Math.hypot(...int8);
      sig.set(s === 0 ? signature(v, mean) : signature(v), s * 8);
    }
    assert.notDeepEqual(signature(v, mean), signature(v));
    const arrays = { rowid: Int32Array.from({ length: slots }, (_, s) => 100 + s), inv, q, sig, dimension: d, kmem: null };
    const admitted = Int32Array.from({ length: slots }, (_, s) => s);
    const top = (centre: Float32Array | null) => queryNearest({ ...arrays, centre }, newScratch(), admitted, v, 1, 0, 1)[0].rowid;
    assert.equal(top(mean), 100, 'centred index: its own vector found');
    assert.notEqual(top(null), 100, 'the same slots read as plain signatures: the decoys are taken instead');
  });

  describe('in a store', () => {
    /** A store indexed by its own worker (Indexer.stop closes the model); `legacy`: the table made first, without a centre. */
    async function indexed(texts: string[], legacy = false) {
      const c = tempCore();
      const e = await Embedder.start({ model: 'builtin', allowRemote: false });
      const ix = new Indexer(c.store, () => {});
      if (legacy) c.store.transaction(() => c.store.vectors.ensure(e.info.model, e.info.dimension, null));
      await ix.use(e);
      await c.core.call(R.upsertBatch, { items: texts.map((value, i) => ({ namespace: 'project.a', key: `k${i}`, value })) });
      assert.ok((await ix.waitFor(c.store.position(), 60_000)).reached);
      const model = c.store.vectors.models()[0];
      // Each memory's vector as the indexer embedded it (its embedding text), and the signature stored with it.
      const rows = await Promise.all(
        texts.map(async (value, i) => {
          const row = c.store.db.prepare('SELECT rowid, key, value, tags FROM memories WHERE key = ?').get(`k${i}`) as {
            rowid: number;
            key: string;
            value: string;
            tags: string;
          };
          const [vector] = await e.embed([embeddingText(row)]);
          const r = c.store.db.prepare(`SELECT sig FROM ${model.table} WHERE rowid = ?`).get(row.rowid) as { sig: Buffer };
          return {
            rowid: row.rowid,
            vector,
            stored: new Int32Array(r.sig.buffer.slice(r.sig.byteOffset, r.sig.byteOffset + r.sig.byteLength)),
          };
        }),
      );
      const centre = await e.signatureCentre();
      return { c, e, ix, model, rows, centre, done: async () => (await ix.stop(), c.close()) };
    }
    const SUBJECTS = ['the deploy script', 'redis', 'the migration runner', 'the api gateway', 'the nightly backup', 'vitest'];
    const ACTS = [
      'tags the release',
      'holds the session token for an hour',
      'runs before the tests',
      'retries three times',
      'logs to stdout',
    ];
    // 30 memories: more than the 8 a one-hit KNN takes by Hamming distance (vector-scan.ts hammingWant)
    const TEXTS = SUBJECTS.flatMap((who) => ACTS.map((what) => `${who} ${what}`));

    it("the model's centre: the mean of its unit embeddings of the notes, the same each time", async () => {
      const e = await Embedder.start({ model: 'builtin', allowRemote: false });
      try {
        const centre = await e.signatureCentre();
        assert.ok(centre);
        assert.equal(centre.length, e.info.dimension);
        const vs = await e.embed([...CENTRE_TEXTS]);
        const mean = new Float64Array(centre.length);
        for (const v of vs) {
          const u = normalized(v);
          for (let i = 0; i < u.length; i++) mean[i] += u[i] / vs.length;
        }
        mean.forEach((x, i) => assert.ok(Math.abs(x - centre[i]) < 1e-6, `component ${i}`));
        assert.deepEqual(await e.signatureCentre(), centre);
      } finally {
        await e.close();
      }
      assert.equal(
        await signatureCentre({ info: { dimension: 4 }, embed: async () => [new Float32Array(4)] }),
        null,
        'zero vectors give none',
      );
      const failing = { info: { dimension: 4 }, embed: () => Promise.reject(new Error('model failed')) };
      assert.equal(await signatureCentre(failing), null, 'a failing model gives none');
    });

    it('a new table records the centre, and the signatures the worker stores are centred on it', async () => {
      const t = await indexed(TEXTS);
      try {
        assert.ok(t.centre);
        assert.deepEqual(t.model.centre, t.centre, 'kept with the table');
        for (const r of t.rows) {
          assert.deepEqual(r.stored, signature(r.vector, t.centre), 'stored: centred (computed in the worker)');
          assert.notDeepEqual(r.stored, signature(r.vector));
        }
        // A duplicate check that comes without the worker's signature takes it here, centred the same way.
        t.c.store.vectors.dupExactMax = 0;
        const ns = (t.c.store.db.prepare('SELECT ns_id FROM memories WHERE rowid = ?').get(t.rows[0].rowid) as { ns_id: number }).ns_id;
        const nsRowid = (t.c.store.db.prepare('SELECT rowid FROM namespaces WHERE id = ?').get(ns) as { rowid: number }).rowid;
        const scan = t.c.store.vectors.prepareDuplicateScan(
          t.model,
          [{ vector: t.rows[0].vector, nsRowid, exclude: t.rows[0].rowid }],
          5,
          Date.now(),
        );
        assert.deepEqual(scan.sigs.subarray(0, 8), signature(t.rows[0].vector, t.centre));
      } finally {
        await t.done();
      }
    });

    it('a table made before centres keeps plain signatures for the vectors it gets now', async () => {
      const t = await indexed(TEXTS, true);
      try {
        assert.equal(t.model.centre, null);
        for (const r of t.rows) {
          assert.deepEqual(r.stored, signature(r.vector), 'plain, as the vectors it held before');
          assert.notDeepEqual(r.stored, signature(r.vector, t.centre));
        }
      } finally {
        await t.done();
      }
    });
  });
});
