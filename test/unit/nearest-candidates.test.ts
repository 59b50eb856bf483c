/**
 * A duplicate check in a large namespace takes `nearest`'s Hamming candidates without every slot's distance: the first
 * chunk's histogram estimates a bound, the rest of the list is read for the slots within it (hammingBelow), and when
 * fewer than the wanted number lie within it the check runs nearest's whole pass (vector-scan.ts nearestCandidates).
 * Over namespaces several chunks long, with the checked memory at the start, in the middle or not listed, with many
 * tied distances, and with a first chunk nearer to the queries than the rest (the bound falls short), the candidates
 * are exactly those nearest's rule picks, and every check's hits equal nearest's over the list without its memory.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SIG_BITS, SIG_WORDS } from '../../daemon/src/store/quantize';
import { buildDuplicateScan } from '../../daemon/src/store/vector-duplicates';
import { VectorIndex, type MetaRow } from '../../daemon/src/store/vector-index';
import { KERNEL_CHUNK } from '../../daemon/src/store/vector-kernels';
import { duplicateHits, nearest, nearestCandidates, newScratch, runDuplicateScan } from '../../daemon/src/store/vector-scan';

const DIM = 32;
const NS = 7;
const N = 2 * KERNEL_CHUNK + 3_000; // three chunks, the last one short

function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
}
const pop = (x: number) => {
  let c = 0;
  for (let v = x >>> 0; v; v &= v - 1) c++;
  return c;
};

/** A signature `flips` bits away from `base` on average (each bit flipped with that share). */
function near(base: Int32Array, share: number, r: () => number): Int32Array {
  return Int32Array.from(base, (w) => {
    let m = 0;
    for (let b = 0; b < 32; b++) if (r() < share) m |= 1 << b;
    return w ^ m;
  });
}

/** An index of one namespace of N memories; `sigAt(i)` gives memory i's signature. */
function index(sigAt: (i: number) => Int32Array, r: () => number): VectorIndex {
  const ix = new VectorIndex({ model: 'm', dimension: DIM, table: 'vq_test' });
  for (let i = 0; i < N; i++) {
    const m: MetaRow = { rowid: i + 1, ns: NS, status: 'active', deleted_at: null, expires_at: null, valid_from: null, valid_to: null };
    const q = new Int8Array(DIM).map(() => Math.floor(r() * 200) - 100);
    ix.put(m, q, sigAt(i), 1 / Math.hypot(...q));
  }
  assert.ok(ix.kmem, 'the kernels run here');
  return ix;
}

/** nearest's choice, from every distance: below the cut-off, then at it in list order, `skip` left out. */
function reference(ix: VectorIndex, list: Int32Array, q: Int32Array, skip: number, want: number): number[] {
  const dist = Array.from(list, (s) => {
    let d = 0;
    for (let w = 0; w < SIG_WORDS; w++) d += pop(ix.sig[s * SIG_WORDS + w] ^ q[w]);
    return d;
  });
  const hist = new Array<number>(SIG_BITS + 1).fill(0);
  dist.forEach((d, i) => i !== skip && hist[d]++);
  let cut = 0;
  let below = 0;
  for (; cut < SIG_BITS && below + hist[cut] < want; cut++) below += hist[cut];
  let atCut = want - below;
  return Array.from(list).filter((_, i) => i !== skip && (dist[i] < cut || (dist[i] === cut && atCut-- > 0)));
}

describe('duplicate candidates within an estimated Hamming bound', () => {
  const WANT = 128;

  for (const shape of ['spread', 'ties'] as const)
    it(`${shape}: the candidates are nearest's, with the checked memory anywhere or nowhere in the list`, () => {
      const r = rng(shape === 'spread' ? 3 : 4);
      const centers = Array.from({ length: 8 }, () => Int32Array.from({ length: SIG_WORDS }, () => (r() * 2 ** 32) | 0));
      // 'ties': a few hundred distinct signatures, so thousands of slots share each distance.
      const ix = index((i) => (shape === 'ties' ? centers[i % 8] : near(centers[i % 8], 0.2, r)), r);
      const list = ix.visibleIn(NS, 0).slice();
      assert.equal(list.length, N);
      const skips = Int32Array.from([-1, 0, 5, KERNEL_CHUNK - 1, KERNEL_CHUNK, N - 1, 12_345, -1]);
      const qsigs = new Int32Array(skips.length * SIG_WORDS);
      // A check's own memory is nearest to it (distance 0 with its own signature): the first query has no memory in
      // the list, the others are of the memory at their skip, some with a few bits changed.
      for (let j = 0; j < skips.length; j++) {
        const own = skips[j] >= 0 ? ix.sig.slice(list[skips[j]] * SIG_WORDS, (list[skips[j]] + 1) * SIG_WORDS) : centers[(j * 3) % 8];
        qsigs.set(j % 2 ? near(own, 0.02, r) : own, j * SIG_WORDS);
      }
      const got = nearestCandidates(ix.kmem!, list, qsigs, skips, WANT);
      for (let j = 0; j < skips.length; j++) {
        const q = qsigs.subarray(j * SIG_WORDS, (j + 1) * SIG_WORDS);
        const pool = got[j];
        assert.ok(pool !== null, `query ${j}: the bound held`);
        assert.deepEqual(Array.from(pool), reference(ix, list, q, skips[j], WANT), `query ${j}`);
        assert.equal(pool.length, WANT);
        if (skips[j] >= 0) assert.ok(!pool.includes(list[skips[j]]), `query ${j}: its own memory left out`);
      }
    });

  it('a first chunk nearer than the rest: the bound falls short and the check takes the whole pass, with the same hits', () => {
    const r = rng(9);
    const q = Int32Array.from({ length: SIG_WORDS }, () => (r() * 2 ** 32) | 0);
    // The first chunk's signatures ~26 bits from the query, the rest's ~77: scaled to the list, the first chunk's
    // histogram puts about 256 slots within ~16 bits, but only its own ~110 lie there (none of the rest's).
    const ix = index((i) => near(q, i < KERNEL_CHUNK ? 0.1 : 0.3, r), r);
    const list = ix.visibleIn(NS, 0).slice();
    const got = nearestCandidates(ix.kmem!, list, q, Int32Array.of(-1), WANT);
    assert.equal(got[0], null, 'fewer than 128 within the estimated bound');
    // Through a whole scan: checks of memories of this namespace get exactly nearest's hits.
    const checks = [1, 50, KERNEL_CHUNK + 7, N - 2].map((row) => ({
      vector: Float32Array.from({ length: DIM }, () => r() - 0.5),
      nsRowid: NS,
      exclude: row,
      sig: row === 1 ? q : near(q, 0.2, r),
    }));
    const scan = buildDuplicateScan(ix, ix, checks, 5, 0, 256, WANT);
    const hits = duplicateHits(runDuplicateScan(scan));
    const sc = newScratch();
    checks.forEach((c, i) => {
      const without = list.filter((s) => ix.rowid[s] !== c.exclude);
      const want = nearest(ix, sc, without, scan.vectors.subarray(i * DIM, (i + 1) * DIM), 5, () => c.sig, 256, WANT, -1, scan.rerank);
      assert.deepEqual(hits[i], want, `check ${i}`);
      assert.equal(hits[i].length, 5);
    });
  });
});
