/**
 * The single-write request path (issue 8): when the daemon's framed writer sends what it corked, memory/upsert's
 * params fast path (the same result as the zod schema, and the schema's own typed errors), and the pooled randomness
 * of memory ids.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { Message } from 'vscode-jsonrpc/node';
import * as path from 'node:path';
import { FramedMessageWriter } from '../../daemon/src/client/framed-writer';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Limits, UpsertParams } from '../../daemon/src/protocol/types';
import { Core, validationError } from '../../daemon/src/server/core';
import { fastUpsertParams } from '../../daemon/src/server/fast-params';
import { Store } from '../../daemon/src/store/store';
import { uuidv7 } from '../../daemon/src/text/hash';
import { tempDir, until } from '../helpers';

/** A stream that records each system-call-sized write: one entry per write() or writev() with the frames' bodies. */
function recorder(name = '', order: string[] = []): { out: Writable; calls: string[][] } {
  const calls: string[][] = [];
  const bodies = (b: Buffer) =>
    b
      .toString()
      .split(/Content-Length: \d+\r\n\r\n/)
      .filter(Boolean);
  const out = new Writable({
    write: (c, _e, cb) => (order.push(name), calls.push(bodies(Buffer.from(c))), cb()),
    writev: (chunks, cb) => (order.push(name), calls.push(chunks.flatMap((x) => bodies(Buffer.from(x.chunk)))), cb()),
  });
  return { out, calls };
}
const note = (n: number) => ({ jsonrpc: '2.0', method: 'memory/didChange', params: { position: n } }) as unknown as Message;
const reply = (id: number) => ({ jsonrpc: '2.0', id, result: { ok: id } }) as unknown as Message;
const tick = () => new Promise((r) => process.nextTick(r));
const turn = () => new Promise((r) => setImmediate(r));

describe('framed writer: when corked frames leave', () => {
  it('a reply leaves at the end of its tick, with the notifications written before it, in one write', async () => {
    const { out, calls } = recorder();
    const w = new FramedMessageWriter(out, { notificationDelayMs: 60_000 });
    void w.write(note(1));
    void w.write(reply(1));
    assert.equal(calls.length, 0, 'nothing is written synchronously');
    await tick();
    assert.deepEqual(calls, [[JSON.stringify(note(1)), JSON.stringify(reply(1))]]);
  });

  it('a notification alone waits for the next reply (one write for both) or for its delay', async () => {
    const { out, calls } = recorder();
    const w = new FramedMessageWriter(out, { notificationDelayMs: 60_000 });
    void w.write(note(2));
    await turn();
    await turn();
    assert.equal(calls.length, 0, 'held for a reply to carry it');
    void w.write(reply(2));
    await tick();
    assert.deepEqual(calls, [[JSON.stringify(note(2)), JSON.stringify(reply(2))]]);

    const short = recorder();
    const w2 = new FramedMessageWriter(short.out, { notificationDelayMs: 3 });
    void w2.write(note(3));
    void w2.write(note(4));
    await until('the notifications after their 3 ms delay', () => short.calls.length > 0);
    assert.deepEqual(short.calls, [[JSON.stringify(note(3)), JSON.stringify(note(4))]]);
  });

  it('without a delay (clients), notifications leave on the next event-loop turn, replies and requests at the end of the tick', async () => {
    const { out, calls } = recorder();
    const w = new FramedMessageWriter(out);
    void w.write(note(5));
    await turn();
    assert.deepEqual(calls, [[JSON.stringify(note(5))]]);
    void w.write({ jsonrpc: '2.0', id: 9, method: 'memory/get', params: {} } as unknown as Message);
    await tick();
    assert.equal(calls.length, 2);
    assert.match(calls[1][0], /"method":"memory\/get"/);
  });

  it('a reply on one connection first sends the notifications waiting on the others', async () => {
    const order: string[] = [];
    const a = recorder('a', order);
    const b = recorder('b', order);
    const wa = new FramedMessageWriter(a.out, { notificationDelayMs: 60_000 });
    const wb = new FramedMessageWriter(b.out, { notificationDelayMs: 60_000 });
    void wa.write(note(7)); // progress broadcast to connection a...
    await turn();
    void wb.write(reply(7)); // ...then the reply of the request on connection b
    await tick();
    assert.deepEqual(order, ['a', 'b']);
    assert.deepEqual(a.calls, [[JSON.stringify(note(7))]]);
    assert.deepEqual(b.calls, [[JSON.stringify(reply(7))]]);
  });

  it('end() sends what is still corked first', async () => {
    const { out, calls } = recorder();
    const w = new FramedMessageWriter(out, { notificationDelayMs: 60_000 });
    void w.write(note(6));
    w.end();
    await until('the notification written by end()', () => calls.length > 0);
    assert.deepEqual(calls, [[JSON.stringify(note(6))]]);
  });
});

describe('memory ids from pooled randomness', () => {
  it('are distinct UUIDv7s carrying the time, across many pool refills', () => {
    const seen = new Set<string>();
    const now = Date.UTC(2026, 0, 2, 3, 4, 5, 6);
    for (let i = 0; i < 5000; i++) {
      const id = uuidv7(now);
      assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      assert.equal(parseInt(id.slice(0, 8) + id.slice(9, 13), 16), now);
      seen.add(id);
    }
    assert.equal(seen.size, 5000);
    // The random part is not constant (a pool handed out twice, or zeros, would show here).
    const tails = new Set([...seen].map((id) => id.slice(24)));
    assert.equal(tails.size, 5000);
  });
});

describe('memory/upsert params: the fast path is the schema', () => {
  const base = { namespace: 'project.fast', key: 'k', value: 'v' };
  const s = (n: number, c = 'a') => c.repeat(n);
  /** Field values at and around every bound the schema sets, of the right and the wrong types. */
  const variants: Record<string, unknown[]> = {
    namespace: ['project.x', '', s(Limits.namespaceChars), s(Limits.namespaceChars + 1), 7, null, ['a']],
    key: ['k', '', s(Limits.keyChars), s(Limits.keyChars + 1), 1, false],
    value: ['', 'text', s(10_000), 3, null, { a: 1 }],
    kind: ['fact', 'note', 'episode', 'unknown', '', 1],
    tags: [
      [],
      ['a'],
      [''],
      [s(Limits.tagChars)],
      [s(Limits.tagChars + 1)],
      Array(Limits.tags).fill('t'),
      Array(Limits.tags + 1).fill('t'),
      ['a', 2],
      'a',
    ],
    importance: [0, 0.5, 1, -3, 7, 1e308, '1', null, true],
    confidence: [0, 1, 2.5, '0.5'],
    source: ['agent', '', s(200), s(201), 1],
    actor: ['alice', '', s(200), s(201), {}],
    reason: ['', 'why', s(2000), s(2001), 5],
    status: ['active', 'proposed', 'superseded', 'gone'],
    restore: [true, false, 'true', 1],
    force: [true, 0],
    waitForDuplicates: [false, null],
    // Fields the fast path leaves to the schema (accepted or refused there).
    ifVersion: [0, 3, -1, 1.5],
    idempotencyKey: ['abcdefgh-1', 'short', 'bad key!'],
    anchors: [[{ path: 'a.ts', startLine: 1 }], [{ path: '' }]],
    properties: [{ a: 1 }],
    validFrom: ['2026-01-01T00:00:00Z', 'yesterday', null],
    supersedes: ['0190', ''],
    scope: [{ root: 'project' }, { root: '' }],
    unknownField: [1],
    __proto__x: [1],
  };

  function inputs(): unknown[] {
    const out: unknown[] = [
      base,
      {},
      null,
      [],
      'str',
      5,
      { namespace: 'a', key: 'k' },
      { key: 'k', value: 'v' },
      Object.create({ namespace: 'a', key: 'k', value: 'v' }),
    ];
    for (const [field, values] of Object.entries(variants)) for (const v of values) out.push({ ...base, [field]: v });
    // Some combinations, in another key order than the schema's.
    out.push({
      value: 'v',
      tags: ['x', 'y'],
      key: 'k',
      importance: 0.2,
      namespace: 'user.me',
      kind: 'decision',
      actor: 'a',
      reason: 'r',
      source: 's',
    });
    out.push({ ...base, tags: ['a'], status: 'proposed', restore: true, force: false, waitForDuplicates: true, confidence: 0.9 });
    return out;
  }

  it('accepts only what the schema accepts, and returns what the schema returns (same fields, same order)', () => {
    let accepted = 0;
    let refusedBySchema = 0;
    for (const x of inputs()) {
      const fast = fastUpsertParams(x);
      const z = UpsertParams.safeParse(x);
      if (!z.success) refusedBySchema++;
      if (fast === null) continue;
      accepted++;
      assert.equal(z.success, true, `fast path accepted what the schema refuses: ${JSON.stringify(x)}`);
      assert.equal(JSON.stringify(fast), JSON.stringify(z.data), `different result for ${JSON.stringify(x)}`);
      assert.deepEqual(fast, z.data);
      if (Array.isArray((x as { tags?: unknown }).tags))
        assert.notEqual(fast.tags, (x as { tags: unknown }).tags, 'tags copied, as zod does');
    }
    assert.ok(accepted >= 35, `the fast path took the common shapes (${accepted})`);
    assert.ok(refusedBySchema >= 40, `invalid inputs were part of the comparison (${refusedBySchema})`);
  });

  it('a bad memory/upsert gets exactly the typed error of the schema path', async () => {
    const dir = tempDir();
    const store = new Store(path.join(dir, 'f.db'));
    try {
      const core = new Core(store);
      let compared = 0;
      for (const x of inputs()) {
        const z = UpsertParams.safeParse(x ?? undefined);
        if (z.success) continue;
        const want = validationError(z.error, 'memory/upsert', x);
        await assert.rejects(core.request('memory/upsert', x), (e: unknown) => {
          assert.ok(e instanceof CairnError, String(e));
          assert.equal(e.code, want.code);
          assert.equal(e.message, want.message);
          assert.deepEqual(e.data, want.data);
          return true;
        });
        compared++;
      }
      assert.ok(compared >= 40);
      // And a fast-path write is stored exactly as the same write through the schema.
      const a = (await core.request('memory/upsert', { ...base, key: 'a', tags: ['x'], importance: 0.4, kind: 'fact' })) as {
        memory: Record<string, unknown>;
      };
      const b = (await core.request('memory/upsert', { ...base, key: 'b', tags: ['x'], importance: 0.4, kind: 'fact', ifVersion: 0 })) as {
        memory: Record<string, unknown>;
      };
      const strip = (m: Record<string, unknown>) => ({ ...m, id: '', key: '', createdAt: '', updatedAt: '' });
      assert.deepEqual(strip(a.memory), strip(b.memory));
    } finally {
      store.close();
    }
  });
});
