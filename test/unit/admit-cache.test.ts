/**
 * The vector arm's admitted sets are cached per scope and visibility flags (store/vectors.ts VectorIndex.admit):
 * a search never admits what it would not admit without the cache, across writes, deletes, namespace changes and
 * time crossing expiry and validity bounds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Include, Scope } from '../../daemon/src/protocol/types';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { and, visibility } from '../../daemon/src/store/rows';
import { scopePredicate } from '../../daemon/src/store/scope';
import type { VecModel } from '../../daemon/src/store/vectors';
import { tempCore } from '../helpers';

const DIM = 8;
const T0 = Date.UTC(2026, 0, 1);
const HOUR = 3_600_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('admitted sets cached per scope', () => {
  const c = tempCore();
  let model: VecModel;
  let clock = T0;
  let seed = 7;
  const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff;
  before(() => {
    c.store.now = () => clock;
    model = c.store.transaction(() => c.store.vectors.ensure('cache-model', DIM));
    c.store.vectors.load(model);
  });
  after(() => c.close());

  /** Write a memory with a random lifetime (maybe expiring, maybe valid only later or only until soon) and its vector. */
  async function write(i: number): Promise<void> {
    const ns = ['project.a', 'project.a.api', 'project.b', 'user.notes'][i % 4];
    const r = rnd();
    const m = await c.core.call(R.upsert, {
      namespace: ns,
      key: `k${i}`,
      value: `memory ${i} ${rnd()}`,
      ...(r < 0.2 ? { expiresAt: iso(clock + (1 + Math.floor(rnd() * 6)) * HOUR) } : {}),
      ...(r >= 0.2 && r < 0.35 ? { validFrom: iso(clock + (1 + Math.floor(rnd() * 6)) * HOUR) } : {}),
      ...(r >= 0.35 && r < 0.5 ? { validTo: iso(clock + (1 + Math.floor(rnd() * 6)) * HOUR) } : {}),
      ...(r >= 0.5 && r < 0.6 ? { status: 'proposed' as const } : {}),
    });
    const rowid = c.store.rowidOf(m.memory.id)!;
    c.store.transaction(() =>
      c.store.vectors.put(
        model,
        rowid,
        new Float32Array(DIM).map(() => rnd() - 0.5),
        i,
      ),
    );
  }

  /** What the SQL admits: visible at the store's time, in scope (every memory here has a vector). */
  function expected(scope: Scope | undefined, include: Include | undefined): number[] {
    const where = and(visibility(include, clock), scopePredicate(scope));
    return (
      c.store.db
        .prepare(`SELECT m.rowid AS rowid FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE ${where.sql}`)
        .all(...where.params) as {
        rowid: number;
      }[]
    )
      .map((r) => r.rowid)
      .sort((a, b) => a - b);
  }

  const scopes: (Scope | undefined)[] = [
    undefined,
    { root: 'project.a', includeUser: false },
    { root: 'project.a', includeUser: true },
    { root: 'project.b', includeUser: false },
  ];
  const includes: (Include | undefined)[] = [undefined, { expired: true }, { outOfValidity: true, proposed: true }];

  function check(step: string): number {
    let seen = 0;
    for (const scope of scopes)
      for (const include of includes)
        // Twice: the second answer comes from the cache when nothing changed in between.
        for (let round = 0; round < 2; round++) {
          const hits = c.store.vectors.knn(model, new Float32Array(DIM).fill(0.3), { scope, include, now: clock, limit: 10_000 });
          const got = hits.map((h) => h.rowid).sort((a, b) => a - b);
          assert.deepEqual(got, expected(scope, include), `${step}: scope ${JSON.stringify(scope)}, include ${JSON.stringify(include)}`);
          seen += got.length;
        }
    return seen;
  }

  it('admits exactly what the SQL admits, through writes, deletes, namespace changes and time bounds', async () => {
    for (let i = 0; i < 120; i++) await write(i);
    let admittedSomething = 0;
    let next = 120;
    for (let step = 0; step < 40; step++) {
      const op = step % 5;
      if (op === 0)
        clock += Math.floor(rnd() * 2 * HOUR); // may cross expiries and validity bounds
      else if (op === 1) await write(next++);
      else if (op === 2)
        await c.core
          .call(R.delete, { namespace: ['project.a', 'project.b'][step % 2], key: `k${(step * 7) % next}` })
          .catch(() => undefined);
      else if (op === 3)
        clock += 1; // within the window: cached answers must still hold
      else if (step === 9) await c.core.call(R.namespacesRename, { from: 'project.a.api', to: 'project.b.api' });
      else if (step === 19) await c.core.call(R.namespacesDelete, { path: 'project.b.api' });
      admittedSomething += check(`step ${step} (op ${op})`);
    }
    assert.ok(admittedSomething > 0, 'the checks admitted memories');
  });
});
