/**
 * The vector arm's SIMD kernels (store/vector-kernels.ts): the Hamming kernel gives exactly the distances of the
 * JavaScript loop, across the chunks a scratch area holds; the dot-product kernel gives the float64 sums up to
 * float32 rounding, the 4-bit one up to its query's i16 rounding (at the largest dimension too); and `nearest` ranks the same slots in the same order whether the index lives in a kernel memory
 * or in plain arrays, on the exact path and the Hamming path. A dimension the kernels do not take runs in JavaScript.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SIG_WORDS } from '../../daemon/src/store/quantize';
import {
  allocKernelArray,
  dotsKernel,
  growKernelArray,
  hammingBelowMany,
  hammingKernel,
  hammingManyKernel,
  kernelsRun,
  query16,
  type KernelMemory,
} from '../../daemon/src/store/vector-kernels';
import { VectorTables } from '../../daemon/src/store/vectors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { tempCore } from '../helpers';
import { nearest, newScratch, normalized, type SlotArrays } from '../../daemon/src/store/vector-scan';

function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
}
const popcount = (x: number) => {
  let c = 0;
  for (let b = x >>> 0; b; b >>>= 1) c += b & 1;
  return c;
};

/** `n` random slots of `dim`-d int8 vectors and signatures, in a kernel memory and in plain arrays. */
function fixture(n: number, dim: number, seed: number) {
  const r = rng(seed);
  const qa = allocKernelArray(n, dim);
  const sa = allocKernelArray(n, SIG_WORDS * 4);
  assert.ok(qa && sa, 'this runtime runs the kernels');
  const km: KernelMemory = { q: qa, sig: sa };
  const q = new Int8Array(qa.mem.buffer, qa.off, n * dim);
  const sig = new Int32Array(sa.mem.buffer, sa.off, n * SIG_WORDS);
  for (let i = 0; i < q.length; i++) q[i] = Math.floor(r() * 255) - 127;
  for (let i = 0; i < sig.length; i++) sig[i] = Math.floor(r() * 2 ** 32) | 0;
  const rowid = Int32Array.from({ length: n }, (_, i) => 1000 + i);
  const inv = new Float32Array(n);
  for (let s = 0; s < n; s++) {
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += q[s * dim + i] ** 2;
    inv[s] = 1 / Math.sqrt(ss);
  }
  const withKernels: SlotArrays = { rowid, inv, q, sig, dimension: dim, kmem: km };
  const plain: SlotArrays = { rowid, inv, q: q.slice(), sig: sig.slice(), dimension: dim, kmem: null };
  return { km, r, withKernels, plain };
}

describe('vector kernels (WebAssembly SIMD)', () => {
  it('the Hamming kernel gives the distances of the JavaScript loop, across chunks', () => {
    const n = 20_000; // more than one scratch chunk (8,192 slots)
    const { km, r, plain } = fixture(n, 16, 1);
    const admitted = Int32Array.from({ length: n }, (_, i) => i).filter(() => r() < 0.9);
    const qsig = Int32Array.from({ length: SIG_WORDS }, () => Math.floor(r() * 2 ** 32) | 0);
    const dist = new Uint16Array(admitted.length);
    const hist = new Int32Array(SIG_WORDS * 32 + 1).fill(-1);
    hammingKernel(km, admitted, qsig, dist, hist);
    const want = new Int32Array(SIG_WORDS * 32 + 1);
    let checked = 0;
    admitted.forEach((s, i) => {
      let d = 0;
      for (let w = 0; w < SIG_WORDS; w++) d += popcount(plain.sig[s * SIG_WORDS + w] ^ qsig[w]);
      assert.equal(dist[i], d, `slot ${s}`);
      want[d]++;
      checked++;
    });
    assert.ok(checked > 17_000);
    assert.deepEqual(hist, want, 'the histogram counted in the same pass, from zero');
    // A second pass counts from zero again (the scratch histogram is cleared, not added to).
    hammingKernel(km, admitted, qsig, dist, hist);
    assert.deepEqual(hist, want);
  });

  it('the many-query Hamming kernel gives each query the distances the one-query kernel gives, across chunks', () => {
    const n = 20_000; // three scratch chunks, the last one partial
    const { km, r } = fixture(n, 16, 3);
    const admitted = Int32Array.from({ length: n }, (_, i) => i).filter(() => r() < 0.8);
    const queries = 19; // more than the 16 histograms the scratch area holds at once
    const qsigs = Int32Array.from({ length: queries * SIG_WORDS }, () => Math.floor(r() * 2 ** 32) | 0);
    const dists = new Uint16Array(queries * admitted.length);
    const H = SIG_WORDS * 32 + 1;
    const hists = new Int32Array(queries * H);
    hammingManyKernel(km, admitted, qsigs, dists, hists);
    const one = new Uint16Array(admitted.length);
    const hist = new Int32Array(H);
    for (let j = 0; j < queries; j++) {
      hammingKernel(km, admitted, qsigs.subarray(j * SIG_WORDS, (j + 1) * SIG_WORDS), one, hist);
      assert.deepEqual(dists.subarray(j * admitted.length, (j + 1) * admitted.length), one, `query ${j}`);
      assert.deepEqual(hists.subarray(j * H, (j + 1) * H), hist, `query ${j}'s histogram`);
      assert.equal(
        hist.reduce((a, b) => a + b, 0),
        admitted.length,
      );
    }
    // Not all alike: the queries differ, so their distances do.
    assert.notDeepEqual(dists.subarray(0, admitted.length), dists.subarray(admitted.length, 2 * admitted.length));
  });

  it('the bounded Hamming kernel gives each query exactly the slots within its bound, in order, across chunks', () => {
    const n = 20_000;
    const { km, r, plain } = fixture(n, 16, 5);
    const admitted = Int32Array.from({ length: n }, (_, i) => i).filter(() => r() < 0.85);
    const queries = 6;
    const qsigs = Int32Array.from({ length: queries * SIG_WORDS }, () => Math.floor(r() * 2 ** 32) | 0);
    const all = Array.from({ length: queries }, (_, j) =>
      Array.from(admitted, (s) => {
        let d = 0;
        for (let w = 0; w < SIG_WORDS; w++) d += popcount(plain.sig[s * SIG_WORDS + w] ^ qsigs[j * SIG_WORDS + w]);
        return d;
      }),
    );
    // Bounds at a distance some slots have (equal ones are kept), below every slot, and above every slot.
    const sorted = all.map((ds) => [...ds].sort((a, b) => a - b));
    const bounds = Int32Array.from([sorted[0][40], sorted[1][0] - 1, 256, sorted[3][500], sorted[4][1], sorted[5][3000]]);
    const got = hammingBelowMany(km, admitted, qsigs, bounds);
    for (let j = 0; j < queries; j++) {
      const pos = all[j].flatMap((d, i) => (d <= bounds[j] ? [i] : []));
      assert.deepEqual(Array.from(got[j].pos), pos, `query ${j}'s slots within ${bounds[j]}`);
      assert.deepEqual(
        Array.from(got[j].dist),
        pos.map((i) => all[j][i]),
        `query ${j}'s distances`,
      );
    }
    assert.equal(got[1].pos.length, 0);
    assert.equal(got[2].pos.length, admitted.length);
    assert.ok(got[0].pos.length > 40 && got[0].dist.includes(bounds[0]), 'slots at the bound itself are kept');
  });

  it('the dot-product kernel gives the float64 sums up to float32 rounding', () => {
    const n = 10_000;
    const dim = 256;
    const { km, r, plain } = fixture(n, dim, 2);
    const v = Float32Array.from({ length: dim }, () => r() - 0.5);
    const pool = Int32Array.from({ length: 9_000 }, () => Math.floor(r() * n));
    const out = new Float32Array(pool.length);
    dotsKernel(km, dim, pool, v, out);
    pool.forEach((s, p) => {
      let sum = 0;
      let mag = 0;
      for (let i = 0; i < dim; i++) {
        sum += plain.q[s * dim + i] * v[i];
        mag += Math.abs(plain.q[s * dim + i] * v[i]);
      }
      assert.ok(Math.abs(out[p] - sum) <= mag * 1e-6, `slot ${s}: ${out[p]} vs ${sum}`);
    });
  });

  it('the 4-bit kernel gives the sums of the 4-bit components times the query, within its i16 rounding', () => {
    for (const [dim, n, seed] of [
      [256, 12_000, 5], // more than one scratch chunk
      [4096, 64, 6], // the largest dimension: no i32 lane overflows
    ]) {
      const r = rng(seed);
      const qa = allocKernelArray(n, dim / 2);
      assert.ok(qa);
      const q4 = new Uint8Array(qa.mem.buffer, qa.off, (n * dim) / 2);
      // Random nibbles, and slot 0 every component at +7 (stored 15), slot 1 at -7 (stored 1): the largest sums.
      for (let i = 0; i < q4.length; i++) q4[i] = Math.floor(r() * 256);
      q4.fill(0xff, 0, dim / 2);
      q4.fill(0x11, dim / 2, dim);
      const km: KernelMemory = { q: qa, sig: qa };
      for (const v of [
        Float32Array.from({ length: dim }, () => r() - 0.5),
        new Float32Array(dim).fill(0.25), // every component the largest: i16 32767 each
        new Float32Array(dim), // zero
      ]) {
        const pool = Int32Array.from({ length: n + 3 }, (_, i) => (i < 2 ? i : Math.floor(r() * n))); // four at a time, then three
        const out = new Float32Array(pool.length);
        dotsKernel(km, dim, pool, v, out, true);
        const { scale } = query16(v, new Int16Array(dim));
        pool.forEach((s, p) => {
          let sum = 0;
          let mag = 0;
          let bound = 0;
          for (let b = 0; b < dim / 2; b++) {
            const x = q4[s * (dim / 2) + b];
            const i = (b >> 4) * 32 + (b & 15);
            const lo = (x & 15) - 8;
            const hi = (x >> 4) - 8;
            sum += lo * v[i] + hi * v[i + 16];
            mag += Math.abs(lo * v[i]) + Math.abs(hi * v[i + 16]);
            bound += (Math.abs(lo) + Math.abs(hi)) * scale * 0.5; // each i16 component within half a step
          }
          assert.ok(Math.abs(out[p] - sum) <= bound + mag * 1e-6, `${dim}-d slot ${s}: ${out[p]} vs ${sum}`);
        });
        if (v[0] === 0.25) assert.ok(Math.abs(out[0] - 7 * 0.25 * dim) < 1e-3 && Math.abs(out[1] + 7 * 0.25 * dim) < 1e-3);
      }
    }
  });

  it('nearest ranks the same slots in the same order over a kernel memory and over plain arrays', () => {
    const n = 6_000;
    const dim = 64;
    const { r, withKernels, plain } = fixture(n, dim, 3);
    const admitted = Int32Array.from({ length: n }, (_, i) => i).filter(() => r() < 0.8);
    let hamming = 0;
    for (let t = 0; t < 12; t++) {
      const v = normalized(Float32Array.from({ length: dim }, () => r() - 0.5));
      const sig = Int32Array.from({ length: SIG_WORDS }, () => Math.floor(r() * 2 ** 32) | 0);
      // exact over every admitted slot, then the Hamming pass (exactMax below the admitted count)
      for (const exactMax of [n, 1000]) {
        const a = nearest(withKernels, newScratch(), admitted, v, 50, () => sig, exactMax, 1500);
        const b = nearest(plain, newScratch(), admitted, v, 50, () => sig, exactMax, 1500);
        assert.equal(a.length, 50);
        assert.deepEqual(
          a.map((h) => h.rowid),
          b.map((h) => h.rowid),
        );
        a.forEach((h, i) => assert.ok(Math.abs(h.score - b[i].score) < 1e-6));
        if (exactMax < admitted.length) hamming++;
      }
    }
    assert.equal(hamming, 12);
  });

  it('a dimension the kernels do not take runs in JavaScript', () => {
    assert.equal(kernelsRun(12), false);
    assert.equal(kernelsRun(8192), false);
    assert.equal(kernelsRun(384), true);
  });

  it('a kernel array grows in place up to its maximum, keeping its contents', () => {
    const a = allocKernelArray(1024, 256)!;
    const before = new Int8Array(a.mem.buffer, a.off, 1024 * 256);
    before.fill(7);
    assert.ok(growKernelArray(a, 50_000, 256));
    const after = new Int8Array(a.mem.buffer, a.off, 50_000 * 256);
    assert.equal(after[1024 * 256 - 1], 7, 'the same memory, contents kept');
    assert.equal(after[50_000 * 256 - 1], 0);
    assert.equal(growKernelArray(a, a.maxPages * 65536, 256), false, 'past its maximum');
  });

  it('the vector index keeps one kernel memory per array while it grows past its first capacity', async () => {
    const c = tempCore();
    try {
      const vt: VectorTables = c.store.vectors;
      const model = c.store.transaction(() => vt.ensure('test-model', 32));
      vt.load(model);
      const r = rng(4);
      const index = () => (vt as unknown as { index: { kmem: KernelMemory | null; cap: number; size: number } }).index;
      const rowids: number[] = [];
      for (let b = 0; b < 4; b++) {
        const items = Array.from({ length: 1000 }, (_, i) => ({ namespace: 'project.a', key: `k${b}-${i}`, value: `memory ${b} ${i}` }));
        for (const x of (await c.core.call(R.upsertBatch, { items })).results) if (x.ok) rowids.push(c.store.rowidOf(x.id)!);
      }
      const put = (from: number, to: number) =>
        c.store.transaction(() => {
          for (let i = from; i < to; i++)
            vt.put(
              model,
              rowids[i],
              Float32Array.from({ length: 32 }, () => r() - 0.5),
              i,
            );
        });
      put(0, 10);
      const first = index().kmem;
      assert.ok(first, 'a 32-d index lives in kernel memories');
      const cap = index().cap;
      assert.ok(cap < 4000);
      put(10, 4000);
      assert.equal(index().size, 4000);
      assert.ok(index().cap > cap, 'the index grew');
      assert.equal(index().kmem!.q.mem, first.q.mem, 'in place');
      assert.equal(index().kmem!.sig.mem, first.sig.mem);
    } finally {
      c.close();
    }
  });
});
