/**
 * Cells of the vector index (store/vector-cells.ts): a duplicate check in a namespace of at least CELL_MIN visible
 * memories reads the memories of its CELL_PROBES nearest cells instead of the whole namespace. The cells are trained
 * and assigned only by a scan run with `build` (the embedding worker's); an event-loop scan uses them as they are and
 * reads the whole namespace while any of its slots has no cell, so both threads answer alike. They find what the whole
 * pass finds (planted near copies, and the exact top 5 at least as often, within a small margin), a changed or
 * removed vector loses its cell, the index's growth keeps them, and they are trained again when the index doubles.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { quantize, SIG_WORDS } from '../../daemon/src/store/quantize';
import { buildDuplicateScan } from '../../daemon/src/store/vector-duplicates';
import { byCell, CELL_MIN, CELL_PROBES, CELLS, nearestCellsOf, slotsOfCells, UNASSIGNED } from '../../daemon/src/store/vector-cells';
import { VectorIndex, type MetaRow } from '../../daemon/src/store/vector-index';
import {
  duplicateHits,
  nearest,
  newScratch,
  normalized,
  runDuplicateScan,
  type DuplicateScan,
  type SlotArrays,
} from '../../daemon/src/store/vector-scan';
import { DUP_CANDIDATES, DUP_EXACT_MAX } from '../../daemon/src/store/vectors';

const DIM = 64;
const BIG = 1; // a namespace above CELL_MIN
const SMALL = 2;
const LIMIT = 5;

function rng(seed: number) {
  let s = seed;
  return () => (s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff - 0.5;
}
const meta = (rowid: number, ns: number): MetaRow => ({
  rowid,
  ns,
  status: 'active',
  deleted_at: null,
  expires_at: null,
  valid_from: null,
  valid_to: null,
});
function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Memories on 300 topics sharing a common direction (as the models' embeddings do), in two namespaces. */
function corpus(seed: number) {
  const r = rng(seed);
  const common = normalized(new Float32Array(DIM).map(() => r()));
  const topics = Array.from({ length: 300 }, () => new Float32Array(DIM).map(() => r()));
  const vec = (t: number, noise: number) => normalized(Float32Array.from(topics[t], (y, i) => y + 1.2 * common[i] + noise * r()));
  const ix = new VectorIndex({ model: 'm', dimension: DIM, table: 'none' }, false);
  const vectors = new Map<number, Float32Array>();
  const put = (rowid: number, ns: number, v: Float32Array) => {
    const z = quantize(v);
    ix.put(meta(rowid, ns), z.q, z.sig, z.inv);
    vectors.set(rowid, v);
  };
  return { r, ix, vectors, put, vec, topics: topics.length };
}

const arraysOf = (ix: VectorIndex): SlotArrays => ({
  rowid: ix.rowid,
  inv: ix.inv,
  q: ix.q,
  q4: ix.q4,
  sig: ix.sig,
  dimension: DIM,
  kmem: ix.kmem,
  centre: null,
  cells: ix.cells,
});

function scanOf(ix: VectorIndex, checks: { vector: Float32Array; nsRowid: number; exclude: number }[], cellMin = CELL_MIN): DuplicateScan {
  const scan = buildDuplicateScan(ix, arraysOf(ix), checks, LIMIT, Date.now(), DUP_EXACT_MAX, DUP_CANDIDATES, null);
  scan.size = ix.size;
  scan.live = ix.size - ix.free.length;
  scan.cellMin = cellMin;
  return scan;
}

/** The exact top `LIMIT` of a check among the live memories of its namespace but itself. */
function exactTop(vectors: Map<number, Float32Array>, nsOf: (rowid: number) => number, q: Float32Array, ns: number, self: number) {
  const top: { rowid: number; s: number }[] = [];
  for (const [rowid, v] of vectors) {
    if (rowid === self || nsOf(rowid) !== ns) continue;
    const s = dot(q, v);
    if (top.length === LIMIT && s <= top[LIMIT - 1].s) continue;
    top.push({ rowid, s });
    top.sort((a, b) => b.s - a.s);
    if (top.length > LIMIT) top.pop();
  }
  return top.map((e) => e.rowid);
}

describe('cells of the vector index for duplicate checks', () => {
  const N = CELL_MIN + 3_000; // the large namespace
  const c = corpus(11);
  const nsOf = (rowid: number) => (rowid <= N ? BIG : SMALL);
  for (let i = 1; i <= N + 600; i++) c.put(i, nsOf(i), c.vec(i % c.topics, 0.9));
  // Checks: near copies of memories of both namespaces (each leaves itself out, so its copy's twin is its answer)
  // and new vectors on the same topics.
  const copies = Array.from({ length: 40 }, (_, j) => {
    const twin = 1 + ((j * 463) % (N + 600));
    return { twin, check: { vector: Float32Array.from(c.vectors.get(twin)!, (y) => y + 0.02 * c.r()), nsRowid: nsOf(twin), exclude: -1 } };
  });
  const fresh = Array.from({ length: 80 }, (_, j) => ({
    vector: c.vec((j * 7) % c.topics, 0.9),
    nsRowid: j % 4 ? BIG : SMALL,
    exclude: -1,
  }));
  const checks = [...copies.map((x) => x.check), ...fresh];
  const whole = duplicateHits(runDuplicateScan(scanOf(c.ix, checks, Infinity)));

  it('an event-loop scan never trains the cells: without them it answers as the whole pass', () => {
    assert.equal(c.ix.cells!.state[0], 0);
    assert.deepEqual(duplicateHits(runDuplicateScan(scanOf(c.ix, checks), undefined, false)), whole);
    assert.equal(c.ix.cells!.state[0], 0, 'still not trained');
  });

  let cellsHits: ReturnType<typeof duplicateHits> = [];
  it("the worker's scan trains and assigns them, and finds what the whole pass finds reading a fraction", () => {
    cellsHits = duplicateHits(runDuplicateScan(scanOf(c.ix, checks), undefined, true));
    const cells = c.ix.cells!;
    assert.equal(cells.state[0], N + 600, 'trained with the live count');
    for (const s of c.ix.namespaceSlots(BIG)) assert.notEqual(cells.cell[s], UNASSIGNED, `slot ${s} of the large namespace`);
    // The small namespace (below CELL_MIN) is not read by cells, so its slots were never assigned.
    assert.ok([...c.ix.namespaceSlots(SMALL)].every((s) => cells.cell[s] === UNASSIGNED));
    assert.notDeepEqual(cellsHits, whole, 'the large namespace was read through cells (some answers differ)');
    // Every near copy finds its twin first, in either namespace.
    copies.forEach((x, j) => assert.equal(cellsHits[j][0]?.rowid, x.twin, `copy ${j}`));
    // The exact top 5 found: at least what the whole pass finds, less a small margin.
    const found = (hits: typeof whole) =>
      checks.reduce((n, ch, j) => {
        const want = exactTop(c.vectors, nsOf, ch.vector, ch.nsRowid, ch.exclude);
        return n + hits[j].filter((h) => want.includes(h.rowid)).length;
      }, 0);
    const w = found(whole);
    const k = found(cellsHits);
    assert.ok(w > checks.length * 2, `the whole pass finds ${w}`);
    assert.ok(k >= w * 0.97, `cells found ${k} of the exact top 5, the whole pass ${w}`);
    // Each large-namespace check read its 16 nearest cells: a small share of the namespace.
    // And each one's hits are `nearest`'s over that list (the kernels read each cell once for several checks).
    const scan = scanOf(c.ix, checks);
    assert.ok(scan.arrays.kmem, 'the kernels run at this dimension');
    const by = byCell(c.ix.namespaceSlots(BIG), cells.cell);
    const sc = newScratch();
    let large = 0;
    checks.forEach((ch, j) => {
      if (ch.nsRowid !== BIG) return;
      large++;
      const v = scan.vectors.subarray(j * DIM, (j + 1) * DIM);
      const { slots, skip } = slotsOfCells(by, nearestCellsOf(cells, v, CELL_PROBES), -1);
      assert.equal(skip, -1);
      assert.ok(slots.length < N * 0.25, `read ${slots.length} of ${N}`);
      const sig = () => scan.sigs.subarray(j * SIG_WORDS, (j + 1) * SIG_WORDS);
      assert.deepEqual(
        cellsHits[j],
        nearest(scan.arrays, sc, slots, v, LIMIT, sig, scan.exactMax, scan.candidates, -1, scan.rerank),
        `check ${j}`,
      );
    });
    assert.ok(large > 60);
  });

  it("the event loop's scan then answers as the worker's, bit for bit", () => {
    assert.deepEqual(duplicateHits(runDuplicateScan(scanOf(c.ix, checks), undefined, false)), cellsHits);
    assert.deepEqual(duplicateHits(runDuplicateScan(scanOf(c.ix, checks), undefined, true)), cellsHits, 'and the worker again');
  });

  it('a changed vector loses its cell until a worker scan assigns it again; a removed one loses it for good', () => {
    const cells = c.ix.cells!;
    const moved = 17;
    const slot = c.ix.slotOf.get(moved)!;
    const before = cells.cell[slot];
    // Rewritten onto another topic: its cell is cleared, and the event loop reads the whole namespace meanwhile.
    const v = c.vec(150, 0.9);
    c.put(moved, BIG, v);
    assert.equal(cells.cell[slot], UNASSIGNED);
    const probe = [{ vector: Float32Array.from(v, (y) => y + 0.02 * c.r()), nsRowid: BIG, exclude: -1 }];
    assert.deepEqual(
      duplicateHits(runDuplicateScan(scanOf(c.ix, probe), undefined, false)),
      duplicateHits(runDuplicateScan(scanOf(c.ix, probe, Infinity))),
      'the whole pass while a slot has no cell',
    );
    const got = duplicateHits(runDuplicateScan(scanOf(c.ix, probe), undefined, true));
    assert.equal(got[0][0].rowid, moved, 'found in its new cell');
    assert.notEqual(cells.cell[slot], UNASSIGNED);
    assert.ok(cells.cell[slot] < CELLS);
    assert.ok(before < CELLS);
    const gone = 23;
    const goneSlot = c.ix.slotOf.get(gone)!;
    c.ix.remove(gone);
    c.vectors.delete(gone);
    assert.equal(cells.cell[goneSlot], UNASSIGNED);
    const again = duplicateHits(runDuplicateScan(scanOf(c.ix, [{ vector: probe[0].vector, nsRowid: BIG, exclude: -1 }]), undefined, true));
    assert.ok(!again[0].some((h) => h.rowid === gone));
  });

  it('the cells survive the index growing, and are trained again when it doubles', () => {
    const cells = c.ix.cells!;
    const trained = cells.state[0];
    const slots = [...c.ix.namespaceSlots(BIG)];
    const kept = slots.map((s) => cells.cell[s]);
    const cap = c.ix.cap;
    let rowid = N + 1_000;
    while (c.ix.cap === cap) c.put(++rowid, SMALL, c.vec(rowid % c.topics, 0.9));
    assert.deepEqual(
      slots.map((s) => c.ix.cells!.cell[s]),
      kept,
      'assignments kept through growth',
    );
    // Not yet doubled: a worker scan keeps the centroids.
    runDuplicateScan(scanOf(c.ix, checks.slice(0, 4)), undefined, true);
    assert.equal(c.ix.cells!.state[0], trained);
    const centroids = Float32Array.from(c.ix.cells!.centroids);
    while (c.ix.size - c.ix.free.length < 2 * trained) c.put(++rowid, SMALL, c.vec(rowid % c.topics, 0.9));
    const live = c.ix.size - c.ix.free.length;
    const hits = duplicateHits(runDuplicateScan(scanOf(c.ix, checks.slice(0, 4)), undefined, true));
    assert.equal(c.ix.cells!.state[0], live, 'trained again');
    assert.notDeepEqual(Float32Array.from(c.ix.cells!.centroids), centroids);
    copies.slice(0, 4).forEach((x, j) => assert.equal(hits[j][0]?.rowid, x.twin, `copy ${j} after training again`));
  });

  it('a scan with no group at or above its cell minimum never trains', () => {
    const d = corpus(5);
    for (let i = 1; i <= 2_000; i++) d.put(i, SMALL, d.vec(i % d.topics, 0.9));
    runDuplicateScan(scanOf(d.ix, [{ vector: d.vec(3, 0.9), nsRowid: SMALL, exclude: -1 }]), undefined, true);
    assert.equal(d.ix.cells!.state[0], 0);
  });
});
