/**
 * The team store's access counts (store/pg/access-stats.ts) against a pool whose UPDATE lands when the test says:
 * a get whose read began before a batch of bumps committed may have read the row without them, and must still
 * answer one more than the daemon's previous answer; a read that began after reads them stored.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type pg from 'pg';
import { AccessBumps } from '../../daemon/src/store/pg/access-stats';

/** A pool whose every query waits for release(); `stored` is what the UPDATEs applied, by rowid. */
function heldPool() {
  const stored = new Map<string, number>();
  const waiting: (() => void)[] = [];
  let fail = false;
  const pool = {
    query(q: { values: [string[], number[], number[]] }) {
      return new Promise<void>((resolve, reject) =>
        waiting.push(() => {
          if (fail) return reject(new Error('read-only'));
          q.values[0].forEach((k, i) => stored.set(k, (stored.get(k) ?? 0) + q.values[1][i]));
          resolve();
        }),
      );
    },
  };
  return {
    pool: pool as unknown as pg.Pool,
    stored,
    failing: () => (fail = true),
    /** Waits for the next UPDATE to be sent, then lets it land. */
    async release() {
      while (!waiting.length) await new Promise((r) => setTimeout(r, 5));
      waiting.shift()!();
    },
  };
}

/** Let the next UPDATE land, and wait until the bumps have seen it. */
async function landed(h: ReturnType<typeof heldPool>, bumps: AccessBumps): Promise<void> {
  await h.release();
  await bumps.flushed();
}

/** One get's read, begun and answered at once (not held open across a landing): the count it answers. */
function read(bumps: AccessBumps, rowid: number, now: number, stored: number): number {
  const t = bumps.begin();
  try {
    return bumps.add(rowid, now, stored, t);
  } finally {
    bumps.end(t);
  }
}

describe('access counts of team gets', () => {
  it('a read in flight while its row’s bumps land answers one more than the previous answer', async () => {
    const h = heldPool();
    const bumps = new AccessBumps(h.pool);
    assert.equal(read(bumps, 7, 1000, 0), 1);
    const t2 = bumps.begin(); // its SELECT reads the row before the UPDATE commits: stored count 0
    await landed(h, bumps);
    assert.equal(h.stored.get('7'), 1);
    assert.equal(bumps.add(7, 1001, 0, t2), 2); // not 1: the first read is not in the count it read
    bumps.end(t2);
    await landed(h, bumps);
    assert.equal(read(bumps, 7, 1002, h.stored.get('7')!), 3); // began after both landed: the stored count has them
    await landed(h, bumps);
    assert.equal(h.stored.get('7'), 3);
    assert.equal(bumps.tracked, 0); // nothing in flight: no row is remembered
  });

  it('a read begun after a batch landed trusts the stored count, so other daemons’ reads count and none counts twice', async () => {
    const h = heldPool();
    const bumps = new AccessBumps(h.pool);
    assert.equal(read(bumps, 9, 1000, 4), 5);
    await landed(h, bumps);
    assert.equal(read(bumps, 9, 1001, 8), 9); // another daemon read it three times meanwhile
    await landed(h, bumps);
  });

  it('a dropped batch (a reader’s bumps are refused) counts from the stored count again, not upward forever', async () => {
    const h = heldPool();
    h.failing();
    const bumps = new AccessBumps(h.pool);
    for (let i = 0; i < 3; i++) {
      assert.equal(read(bumps, 3, 1000 + i, 0), 1);
      await landed(h, bumps);
    }
    assert.equal(h.stored.size, 0);
    assert.equal(bumps.tracked, 0);
  });

  it('remembers a row only while a read that began before its bumps landed is still in flight', async () => {
    const h = heldPool();
    const bumps = new AccessBumps(h.pool);
    assert.equal(read(bumps, 1, 1000, 0), 1);
    const slow = bumps.begin(); // a read of another row, still in flight when the batch lands
    await landed(h, bumps);
    assert.equal(bumps.tracked, 1);
    bumps.end(slow); // a failed or not-found read ends without add
    assert.equal(bumps.tracked, 0);
  });
});
