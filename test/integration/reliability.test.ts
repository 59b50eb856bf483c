/**
 * Crash loop and concurrency, short counts (the full counts run with
 * `npm run bench:reliability`, bench/crash-loop.ts): no acknowledged write is
 * lost across SIGKILLs of the daemon, nor with concurrent socket or direct
 * writers, and of several daemons started at once exactly one serves.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { crashLoop, daemonRace, directWriters, socketWriters, verify } from '../../bench/reliability';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { tempCore } from '../helpers';

describe('reliability (short counts)', () => {
  it('the checker notices a lost or changed write (so a pass means something)', async () => {
    const t = tempCore();
    const db = path.join(t.dir, 'cairn.db');
    await t.core.call(R.upsert, { namespace: 'project.v', key: 'a', value: 'one' });
    t.store.close();
    const v = verify(
      db,
      new Map([
        ['project.v/a', 'one'],
        ['project.v/b', 'two'],
        ['project.v/a2', 'x'],
      ]),
    );
    assert.deepEqual(v.lost, ['project.v/b', 'project.v/a2']);
    assert.equal(verify(db, new Map([['project.v/a', 'changed']])).lost.length, 1);
    assert.equal(v.integrity, 'ok');
    fs.rmSync(t.dir, { recursive: true, force: true });
  });

  it('5 SIGKILL cycles while 2 clients write over the socket: every acked write present, integrity ok', async () => {
    const r = await crashLoop({ cycles: 5, writers: 2, upMs: [150, 400] });
    assert.ok(r.acked > 0);
    assert.deepEqual(r.lost, []);
    assert.equal(r.integrity, 'ok');
    assert.equal(r.ftsIntegrity, 'ok');
    assert.equal(r.ftsBehind, 0);
    assert.ok(r.memories >= r.acked);
    assert.ok(
      r.perCycle.every((c) => c.readBack && c.acked > 0),
      JSON.stringify(r.perCycle),
    );
  });

  it('4 concurrent socket writers: all acked, none lost', async () => {
    const r = await socketWriters({ writers: 4, perWriter: 100 });
    assert.equal(r.acked, 400);
    assert.deepEqual(r.lost, []);
    assert.equal(r.memories, 400);
    assert.equal(r.integrity, 'ok');
  });

  it('3 concurrent direct writers (no daemon): all acked, none lost', async () => {
    const r = await directWriters({ writers: 3, perWriter: 40 });
    assert.deepEqual(r.exitCodes, [0, 0, 0]);
    assert.equal(r.acked, 120);
    assert.deepEqual(r.lost, []);
    assert.equal(r.integrity, 'ok');
  });

  it('3 daemons started at once on one store: exactly one serves', async () => {
    const r = await daemonRace({ daemons: 3, trials: 2 });
    assert.deepEqual(r.failures, []);
    assert.equal(r.exactlyOne, 2);
  });
});
