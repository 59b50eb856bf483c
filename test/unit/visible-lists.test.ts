/**
 * A duplicate check's candidates are its namespace's visible slots, which the vector index keeps per namespace and
 * only extends by the slots appended since (VectorIndex.visibleIn). Through new memories, changed facts (status,
 * deletion, time bounds), zero and non-zero vectors put again, removals and reused slots, namespace moves, the turn
 * to a compact index, and time moving both ways across the bounds, the kept list is always exactly the namespace's
 * list filtered by `visible` now, in the list's order.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SIG_WORDS } from '../../daemon/src/store/quantize';
import { VectorIndex, type MetaRow } from '../../daemon/src/store/vector-index';

const DIM = 32;
const T0 = 1_000_000;
const NAMESPACES = [1, 2, 3];

describe('visible lists kept per namespace', () => {
  it('always equal the namespace list filtered by visibility now', () => {
    let seed = 5;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
    const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)];
    // Turns compact past 90 slots, in the middle of the run.
    const ix = new VectorIndex({ model: 'm', dimension: DIM, table: 'vq_test' }, false, 90);
    const rows = new Map<number, MetaRow>();
    const bound = () => T0 + Math.floor(rnd() * 200);
    const meta = (rowid: number, ns = pick(NAMESPACES)): MetaRow => {
      const r = rnd();
      return {
        rowid,
        ns,
        status: r < 0.1 ? 'proposed' : r < 0.15 ? 'superseded' : 'active',
        deleted_at: r >= 0.15 && r < 0.22 ? T0 : null,
        expires_at: r >= 0.3 && r < 0.5 ? bound() : null,
        valid_from: r >= 0.45 && r < 0.6 ? bound() : null,
        valid_to: r >= 0.55 && r < 0.7 ? bound() : null,
      };
    };
    const put = (m: MetaRow, zero = false) => {
      const q = new Int8Array(DIM).map(() => (zero ? 0 : 1 + Math.floor(rnd() * 50)));
      ix.put(m, q, new Int32Array(SIG_WORDS), zero ? 0 : 1);
      rows.set(m.rowid, m);
    };
    let now = T0 + 50;
    let compared = 0;
    let visibleSeen = 0;
    const check = (step: string) => {
      // Twice at each time: the second answer is the kept list as it is.
      for (const t of [now, now, now + 1, now + 1])
        for (const ns of NAMESPACES) {
          const want = [...ix.namespaceSlots(ns)].filter((s) => ix.visible(s, {}, t));
          assert.deepEqual([...ix.visibleIn(ns, t)], want, `${step}: namespace ${ns} at ${t}`);
          compared++;
          visibleSeen += want.length;
        }
    };
    let next = 1;
    for (let i = 0; i < 60; i++) put(meta(next++));
    check('written');
    for (let step = 0; step < 400; step++) {
      const ids = [...rows.keys()];
      const id = pick(ids);
      const op = step % 8;
      if (op === 0 || op === 1)
        put(meta(next++)); // appended (maybe into a freed slot), the lists only extended
      else if (op === 2) {
        const m = { ...meta(id), ns: rows.get(id)!.ns }; // new facts, same namespace
        ix.setMeta(ix.slotOf.get(id)!, m);
        rows.set(id, m);
      } else if (op === 3) {
        ix.remove(id);
        rows.delete(id);
      } else if (op === 4)
        put(meta(id)); // put again, maybe into another namespace
      else if (op === 5)
        put(rows.get(id)!, rnd() < 0.5); // the vector put again: zero (never visible) or not
      else if (op === 6)
        now += Math.floor(rnd() * 40); // may cross expiries and validity bounds
      else now -= Math.floor(rnd() * 30); // and back
      check(`step ${step} (op ${op})`);
    }
    assert.ok(ix.compact, 'the index turned compact during the run');
    assert.ok(compared > 0 && visibleSeen > compared, `lists compared (${compared}) held visible slots (${visibleSeen})`);
  });
});
