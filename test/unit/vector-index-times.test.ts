/**
 * The vector index keeps time bounds only for the slots that have any (VectorIndex timeRef / times): a slot's
 * expiry and validity window are set, changed, cleared, freed with the slot and reused by another slot, and the
 * admitted set and `visible` always agree with the bounds each memory has now (checked against a plain model of
 * the rows, at times on both sides of every bound, for every visibility flag that reads them).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Include } from '../../daemon/src/protocol/types';
import { SIG_WORDS } from '../../daemon/src/store/quantize';
import { VectorIndex, type MetaRow } from '../../daemon/src/store/vector-index';

const DIM = 16;
const T0 = 1_000_000;

describe('vector index time bounds', () => {
  it('admits by the bounds each memory has now, through sets, clears, removals and reused slots', () => {
    let seed = 11;
    const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
    const ix = new VectorIndex({ model: 'm', dimension: DIM, table: 'vq_test' });
    const rows = new Map<number, MetaRow>();
    const bound = () => T0 + Math.floor(rnd() * 100);
    const meta = (rowid: number): MetaRow => {
      const r = rnd();
      return {
        rowid,
        ns: 1 + (rowid % 3),
        status: 'active',
        deleted_at: null,
        expires_at: r < 0.3 ? bound() : null,
        valid_from: r >= 0.2 && r < 0.45 ? bound() : null,
        valid_to: r >= 0.4 && r < 0.6 ? bound() : null,
      };
    };
    const put = (m: MetaRow) => {
      const q = new Int8Array(DIM).map(() => 1 + Math.floor(rnd() * 50));
      ix.put(m, q, new Int32Array(SIG_WORDS), 1);
      rows.set(m.rowid, m);
    };
    const model = (m: MetaRow, inc: Include, now: number) =>
      (inc.expired || (m.expires_at ?? Infinity) > now) &&
      (inc.outOfValidity || ((m.valid_from ?? -Infinity) <= now && (m.valid_to ?? Infinity) > now));
    const includes: Include[] = [{}, { expired: true }, { outOfValidity: true }, { expired: true, outOfValidity: true }];
    let bounded = 0;
    let checked = 0;
    const check = (step: string) => {
      for (const now of [T0 - 1, T0 + 20, T0 + 50, T0 + 99, T0 + 200])
        for (const inc of includes) {
          const want = [...rows.values()].filter((m) => model(m, inc, now)).map((m) => m.rowid);
          const got = [...ix.admit(null, inc, now, null)].map((s) => ix.rowid[s]);
          assert.deepEqual(
            got.sort((a, b) => a - b),
            want.sort((a, b) => a - b),
            `${step} at ${now} ${JSON.stringify(inc)}`,
          );
          for (const m of rows.values()) assert.equal(ix.visible(ix.slotOf.get(m.rowid)!, inc, now), model(m, inc, now));
          checked += want.length;
        }
    };
    let next = 1;
    for (let i = 0; i < 200; i++) put(meta(next++));
    check('written');
    for (let step = 0; step < 60; step++) {
      const ids = [...rows.keys()];
      const id = ids[Math.floor(rnd() * ids.length)];
      const op = step % 3;
      if (op === 0) {
        // New bounds, or none (an entry freed), on a memory that may have had some.
        const m = { ...meta(id), ...(step % 2 ? { expires_at: null, valid_from: null, valid_to: null } : {}) };
        ix.setMeta(ix.slotOf.get(id)!, m);
        rows.set(id, m);
      } else if (op === 1) {
        ix.remove(id);
        rows.delete(id);
      } else put(meta(next++)); // takes a freed slot (and maybe a freed entry)
      check(`step ${step} (op ${op})`);
    }
    for (const m of rows.values()) if (m.expires_at !== null || m.valid_from !== null || m.valid_to !== null) bounded++;
    assert.ok(bounded > 20 && bounded < rows.size - 20, `a mix of bounded and unbounded memories (${bounded} of ${rows.size})`);
    assert.ok(checked > 0);
  });

  it('a memory with bounds costs one 24-byte entry beyond a memory without (which costs its 4-byte reference only)', () => {
    const ix = new VectorIndex({ model: 'm', dimension: DIM, table: 'vq_test' });
    const base = { ns: 1, status: 'active', deleted_at: null, expires_at: null, valid_from: null, valid_to: null };
    for (let r = 1; r <= 10_000; r++) ix.put({ rowid: r, ...base }, new Int8Array(DIM).fill(1), new Int32Array(SIG_WORDS), 1);
    const plain = ix.memoryBytes();
    const timed = new VectorIndex({ model: 'm', dimension: DIM, table: 'vq_test' });
    for (let r = 1; r <= 10_000; r++)
      timed.put({ rowid: r, ...base, expires_at: T0 + r }, new Int8Array(DIM).fill(1), new Int32Array(SIG_WORDS), 1);
    // Each bounded memory adds an entry of three float64s (24 bytes) beyond the plain index's, the entries growing
    // by a quarter at a time as the slots do.
    assert.ok(timed.memoryBytes() - plain >= 10_000 * 24, `${timed.memoryBytes()} vs ${plain}`);
    assert.ok(timed.memoryBytes() - plain <= 10_000 * 24 * 1.25 + 400, `${timed.memoryBytes()} vs ${plain}`);
  });
});
