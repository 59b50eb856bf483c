/**
 * Bounded requests, in-process: shape limits checked before schema validation (filter depth and size,
 * params depth, forbidden property names, unpaired surrogates), a scope of 33,000 namespaces in every
 * search arm, and the framing reader's per-connection bounds (chunked bodies, invalid UTF-8, empty and
 * oversized lengths, header and frame deadlines, backpressure, a peer that never reads).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { ErrorCodes } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Limits } from '../../daemon/src/protocol/types';
import type { VectorSearcher } from '../../daemon/src/retrieval/search';
import { GuardedMessageReader } from '../../daemon/src/server/framing';
import { rejectsWith, tempCore } from '../helpers';

const leaf = { field: 'importance', op: 'gte', value: 0 };
function deepFilter(depth: number): unknown {
  let f: unknown = leaf;
  for (let i = 0; i < depth; i++) f = { not: f };
  return f;
}
function wideFilter(fanout: number, levels: number): unknown {
  let f: unknown = leaf;
  for (let i = 0; i < levels; i++) f = { or: Array.from({ length: fanout }, () => f) };
  return f;
}

describe('shape limits before schema validation', () => {
  let t: ReturnType<typeof tempCore>;
  before(async () => {
    t = tempCore();
    await t.core.call(R.upsert, { namespace: 'project.a', key: 'k', value: 'a value' });
  });
  after(() => t.close());

  for (const depth of [17, 1000, 100_000]) {
    it(`a filter nested ${depth} deep is InvalidFilter with the limit, not a stack overflow`, async () => {
      for (const m of [R.list, R.search] as const) {
        const params = m === R.search ? { query: 'value', filter: deepFilter(depth) } : { filter: deepFilter(depth) };
        const data = await rejectsWith(t.core.request(m.method, params), 'InvalidFilter');
        assert.equal(data.limit, Limits.filterDepth);
      }
    });
  }

  it('a filter of 262,144 leaves is refused by its node count', async () => {
    const data = await rejectsWith(t.core.request(R.list.method, { filter: wideFilter(64, 3) }), 'InvalidFilter');
    assert.equal(data.limit, Limits.filterNodes);
  });

  it('a filter at the limits still works', async () => {
    const r = await t.core.request(R.list.method, { filter: deepFilter(Limits.filterDepth) });
    assert.equal((r as { items: unknown[] }).items.length, 1);
  });

  it('params nested deeper than the limit are InvalidParams', async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 5000; i++) deep = [deep];
    const data = await rejectsWith(
      t.core.request(R.upsert.method, { namespace: 'project.a', key: 'x', value: 'v', properties: { p: deep } }),
      'InvalidParams',
    );
    assert.equal(data.limit, Limits.paramsDepth);
  });

  for (const key of ['__proto__', 'constructor', 'prototype']) {
    it(`"${key}" as a property name is refused, not applied or dropped`, async () => {
      const params = JSON.parse(`{"namespace":"project.a","key":"p-${key}","value":"v","properties":{"${key}":"x","ok":1}}`);
      await rejectsWith(t.core.request(R.upsert.method, params), 'InvalidParams', `properties.${key}`);
      const top = JSON.parse(`{"${key}":{"scope":{"root":"user"}},"limit":5}`);
      await rejectsWith(t.core.request(R.list.method, top), 'InvalidParams', key);
      await rejectsWith(t.core.request(R.get.method, { namespace: 'project.a', key: `p-${key}` }), 'NotFound');
    });
  }

  it('a string with an unpaired surrogate is refused, not stored as U+FFFD', async () => {
    for (const bad of ['\ud800', 'a\udc00b', 'x\ud83d']) {
      await rejectsWith(t.core.request(R.upsert.method, { namespace: 'project.a', key: 'lone', value: bad }), 'InvalidParams', 'value');
    }
    await rejectsWith(
      t.core.request(R.upsert.method, { namespace: 'project.a', key: 'lone', value: 'v', properties: { ['k\ud800']: 1 } }),
      'InvalidParams',
      'properties',
    );
    // a paired surrogate (an emoji) is fine and round-trips
    const ok = await t.core.call(R.upsert, { namespace: 'project.a', key: 'emoji', value: 'ship it \ud83d\ude80' });
    assert.equal((await t.core.call(R.get, { id: ok.memory.id })).value, 'ship it 🚀');
  });
});

describe('a scope of 33,000 namespaces', () => {
  let t: ReturnType<typeof tempCore>;
  const N = 33_000;
  const DIM = 4;
  let hooks: VectorSearcher;
  const vec = (s: string) => {
    const v = new Float32Array(DIM);
    for (let i = 0; i < s.length; i++) v[i % DIM] += s.charCodeAt(i) % 7;
    v[0] += 1;
    return v;
  };

  before(async () => {
    t = tempCore();
    const ins = t.store.db.prepare('INSERT INTO namespaces(id, path, created_at) VALUES (?, ?, ?)');
    t.store.db.transaction(() => {
      for (let i = 0; i < N; i++) ins.run(randomUUID(), `wide.n${i}`, Date.now());
    })();
    for (const i of [0, 16_500, N - 1]) await t.core.call(R.upsert, { namespace: `wide.n${i}`, key: 'k', value: `walrus memory ${i}` });
    await t.core.call(R.upsert, { namespace: 'other', key: 'k', value: 'walrus memory outside' });
    if (t.store.vecAvailable) {
      const model = t.store.vectors.ensure('test-model', DIM);
      const rows = t.store.db.prepare('SELECT rowid, value FROM memories').all() as { rowid: number; value: string }[];
      t.store.transaction(() => {
        for (const r of rows) t.store.vectors.put(model, r.rowid, vec(r.value), 1);
      });
      hooks = {
        unavailable: () => null,
        fusion: () => ({ k: 2, vectorWeight: 1 }),
        search: async (q, arm) => t.store.vectors.knn(model, vec(q), arm),
      };
      t.core.hooks.vectors = hooks;
    }
  });
  after(() => t.close());

  for (const mode of ['fts', 'vector', 'hybrid'] as const) {
    it(`${mode} search works inside it and keeps the rest out`, async (ctx) => {
      if (mode !== 'fts' && !t.store.vecAvailable) return ctx.skip('sqlite-vec is not available');
      const r = await t.core.call(R.search, { query: 'walrus memory', mode, scope: { root: 'wide', includeUser: false }, limit: 10 });
      assert.deepEqual(r.hits.map((h) => h.memory.namespace).sort(), ['wide.n0', 'wide.n16500', `wide.n${N - 1}`].sort());
      assert.equal(r.mode, mode);
    });
  }

  it('list and the whole-store vector arm work too', async () => {
    const l = await t.core.call(R.list, { scope: { root: 'wide' } });
    assert.equal(l.items.length, 3);
    if (t.store.vecAvailable) {
      // a deleted namespace that still holds a memory makes the whole-store arm name every live namespace
      await t.core.call(R.upsert, { namespace: 'doomed', key: 'k', value: 'walrus doomed' });
      await t.core.call(R.namespacesDelete, { path: 'doomed' });
      const r = await t.core.call(R.search, { query: 'walrus memory', mode: 'vector', limit: 10 });
      assert.equal(r.hits.length, 4);
      assert.ok(!r.hits.some((h) => h.memory.namespace === 'doomed'));
    }
  });
});

describe('framing reader bounds', () => {
  const frame = (body: Buffer | string) => {
    const b = typeof body === 'string' ? Buffer.from(body) : body;
    return Buffer.concat([Buffer.from(`Content-Length: ${b.length}\r\n\r\n`), b]);
  };
  /** A writable that keeps everything (or holds it unread when `stuck`). */
  function sink(stuck = false) {
    const got: Buffer[] = [];
    let release: (() => void) | null = null;
    const w = new Writable({
      highWaterMark: 1024,
      write(chunk, _enc, cb) {
        got.push(Buffer.from(chunk));
        if (stuck) release = cb;
        else cb();
      },
    });
    return {
      w,
      got,
      text: () => Buffer.concat(got).toString('utf8'),
      release: () => {
        stuck = false;
        release?.();
      },
    };
  }
  const waitFor = async (what: string, ok: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setImmediate(r));
    }
  };
  const limits = { frameHeaderMs: 50, frameTimeMs: 50, outputHighWaterBytes: 4096, outputMaxBytes: 64 * 1024 };

  it('joins a body sent in many chunks once, and refuses invalid UTF-8 without closing', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024 * 1024, () => {}, limits);
    const msgs: unknown[] = [];
    reader.listen((m) => msgs.push(m));
    const big = JSON.stringify({ jsonrpc: '2.0', method: 'x', params: { s: 'é'.repeat(200_000) } });
    const bytes = frame(big);
    for (let i = 0; i < bytes.length; i += 997) input.write(bytes.subarray(i, i + 997));
    await waitFor('the big message', () => msgs.length === 1);
    input.write(frame(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d])));
    input.write(frame(JSON.stringify({ jsonrpc: '2.0', method: 'after' })));
    await waitFor('the message after the bad one', () => msgs.length === 2);
    assert.match(out.text(), /"code":-32700,"message":"message body is not valid UTF-8"/);
    assert.equal((msgs[1] as { method: string }).method, 'after');
  });

  it('reads every form of a Content-Length header section alike, the common one and the rest', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', method: 'x', params: { s: 'ok' } });
    const n = Buffer.byteLength(body);
    const forms = [
      `Content-Length: ${n}`,
      `content-length: ${n}`,
      `Content-Length:${n}`,
      `Content-Length:   ${n}  `,
      `Content-Length: ${String(n).padStart(15, '0')}`,
      `Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: ${n}`,
      `Content-Length: ${n}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8`,
    ];
    for (const head of forms) {
      const input = new PassThrough();
      const out = sink();
      const reader = new GuardedMessageReader(input, out.w, 1024 * 1024, () => {}, limits);
      const msgs: unknown[] = [];
      reader.listen((m) => msgs.push(m));
      input.write(Buffer.from(`${head}\r\n\r\n${body}${head}\r\n\r\n${body}`));
      await waitFor(`two messages after ${JSON.stringify(head)}`, () => msgs.length === 2);
      assert.equal(out.text(), '', head);
    }
    // Not a number: the connection gets a ParseError and is closed, whatever the form.
    for (const head of ['Content-Length: 12a', 'Content-Length: ', 'Content-Length: -1', 'Content-Length: 1e20']) {
      const input = new PassThrough();
      const out = sink();
      const reader = new GuardedMessageReader(input, out.w, 1024 * 1024, () => {}, limits);
      reader.listen(() => assert.fail(`a message after ${JSON.stringify(head)}`));
      input.write(Buffer.from(`${head}\r\n\r\n{}`));
      await waitFor(`the error reply to ${JSON.stringify(head)}`, () => out.text().includes('-32700'));
      assert.match(out.text(), /malformed frame: Content-Length is not a number/, head);
    }
  });

  it('closes a connection whose frame stays incomplete', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024, () => {}, limits);
    let closed = false;
    reader.onClose(() => (closed = true));
    reader.listen(() => {});
    input.write('Content-Length: 100\r\n\r\n{"jsonrpc":');
    await waitFor('the close', () => closed);
    assert.match(out.text(), /frame not complete within 50 ms/);
    assert.ok(input.destroyed);
  });

  /** Feed `bytes` one byte every `everyMs` until the reader closes; returns how many bytes went in. */
  async function trickle(input: PassThrough, bytes: Buffer, everyMs: number, closed: () => boolean): Promise<number> {
    let i = 0;
    const deadline = Date.now() + 20_000;
    while (!closed() && i < bytes.length) {
      if (Date.now() > deadline) throw new Error('the reader never closed the connection');
      input.write(bytes.subarray(i, i + 1));
      i++;
      await new Promise((r) => setTimeout(r, everyMs));
    }
    return i;
  }

  it('closes a connection that sends a header a byte at a time past the header limit (slowloris)', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024, () => {}, { ...limits, frameHeaderMs: 150, frameTimeMs: 10_000 });
    let closed = false;
    reader.onClose(() => (closed = true));
    reader.listen(() => assert.fail('no message'));
    // Each byte comes well inside any idle limit; the header as a whole does not.
    const sent = await trickle(input, Buffer.from('Content-Length: 2\r\nX-Padding: ' + 'x'.repeat(4000) + '\r\n\r\n{}'), 5, () => closed);
    assert.ok(closed && sent < 4000, `closed after ${sent} bytes`);
    assert.match(out.text(), /header section not complete within 150 ms/);
  });

  it('closes a connection whose body trickles in past the frame limit, though bytes keep coming', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024 * 1024, () => {}, { ...limits, frameHeaderMs: 10_000, frameTimeMs: 200 });
    let closed = false;
    reader.onClose(() => (closed = true));
    reader.listen(() => assert.fail('no message'));
    const body = JSON.stringify({ jsonrpc: '2.0', method: 'x', params: { s: 'y'.repeat(4000) } });
    input.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n`); // the header at once, then the body a byte at a time
    const sent = await trickle(input, Buffer.from(body), 5, () => closed);
    assert.ok(closed && sent < body.length, `closed after ${sent} bytes`);
    assert.match(out.text(), /frame not complete within 200 ms/);
  });

  it('frames that complete in time are never cut, however many follow each other', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024, () => {}, { ...limits, frameHeaderMs: 1000, frameTimeMs: 1000 });
    let closed = false;
    reader.onClose(() => (closed = true));
    const msgs: unknown[] = [];
    reader.listen((m) => msgs.push(m));
    // one whole frame every 20 ms for longer than the frame limit: each one is quick, so none is late
    const started = Date.now();
    for (let i = 0; Date.now() - started < 1500; i++) {
      input.write(frame(`{"jsonrpc":"2.0","method":"m${i}"}`));
      await new Promise((r) => setTimeout(r, 20));
    }
    await waitFor('every message', () => msgs.length > 10);
    assert.equal(closed, false);
    assert.equal(out.text(), '');
  });

  it('answers an empty body with ParseError and reads on', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024, () => {}, limits);
    const msgs: unknown[] = [];
    reader.listen((m) => msgs.push(m));
    input.write(Buffer.concat([Buffer.from('Content-Length: 0\r\n\r\n'), frame('{"jsonrpc":"2.0","method":"after"}')]));
    await waitFor('the message after the empty one', () => msgs.length === 1);
    assert.match(out.text(), /"id":null,"error":\{"code":-32700,"message":"empty message body \(Content-Length: 0\)"/);
  });

  it('refuses a Content-Length of any size past the limit with ValueTooLarge', async () => {
    for (const [n, stays] of [
      ['1025', true],
      ['1234567890123456', false],
      ['100000000000000000000', false],
      ['9'.repeat(400), false],
    ] as const) {
      const input = new PassThrough();
      const out = sink();
      const reader = new GuardedMessageReader(input, out.w, 1024, () => {}, limits);
      let closed = false;
      reader.onClose(() => (closed = true));
      reader.listen(() => {});
      input.write(`Content-Length: ${n}\r\n\r\n`);
      await waitFor(`the reply to ${n.slice(0, 30)}`, () => out.text().includes('"error"'));
      const reply = JSON.parse(out.text().slice(out.text().indexOf('{'))) as {
        error: { code: number; data: { name: string; limit: number } };
      };
      assert.equal(reply.error.code, ErrorCodes.ValueTooLarge, n);
      assert.deepEqual(reply.error.data, { name: 'ValueTooLarge', limit: 1024 });
      // a length that can be skipped keeps the connection; one past any skippable size ends it
      assert.equal(closed, !stays, n);
    }
  });

  it('answers a request holding invalid UTF-8 under its own id and keeps the connection', async () => {
    for (const pad of [0, 300_000]) {
      // the second size goes through the sliced decoder of large frames
      const input = new PassThrough();
      const out = sink();
      const reader = new GuardedMessageReader(input, out.w, 1024 * 1024, () => {}, limits);
      const msgs: unknown[] = [];
      reader.listen((m) => msgs.push(m));
      const bad = Buffer.concat([
        Buffer.from(`{"jsonrpc":"2.0","id":42,"method":"memory/search","params":{"pad":"${'p'.repeat(pad)}","query":"a`),
        Buffer.from([0xff, 0xfe, 0xc3]),
        Buffer.from('"}}'),
      ]);
      input.write(frame(bad));
      input.write(frame('{"jsonrpc":"2.0","id":43,"method":"after"}'));
      await waitFor('the message after the bad one', () => msgs.length === 1);
      await waitFor('the reply', () => out.text().includes('"id":42'));
      const reply = JSON.parse(out.text().slice(out.text().indexOf('{'))) as {
        id: number;
        error: { code: number; data: { name: string } };
      };
      assert.equal(reply.id, 42);
      assert.equal(reply.error.code, ErrorCodes.InvalidParams);
      assert.equal(reply.error.data.name, 'InvalidParams');
      assert.equal((msgs[0] as { id: number }).id, 43);
    }
  });

  it('pauses reading while replies wait unread, resumes when the peer reads', async () => {
    const input = new PassThrough();
    const out = sink(true);
    const reader = new GuardedMessageReader(input, out.w, 1024 * 1024, () => {}, limits);
    const msgs: unknown[] = [];
    reader.listen((m) => {
      msgs.push(m);
      out.w.write(Buffer.alloc(8192)); // the reply to it: more than the high-water mark, unread
    });
    input.write(Buffer.concat([frame('{"jsonrpc":"2.0","method":"a"}'), frame('{"jsonrpc":"2.0","method":"b"}')]));
    await waitFor('the first message', () => msgs.length === 1);
    await new Promise((r) => setImmediate(r));
    assert.equal(msgs.length, 1, 'the second request waits while the first reply is unread');
    assert.ok(input.isPaused());
    out.release();
    await waitFor('the second message after the peer read', () => msgs.length === 2);
  });

  it('disconnects a peer that leaves more than the cap unread', async () => {
    const input = new PassThrough();
    const out = sink(true);
    const logs: string[] = [];
    const reader = new GuardedMessageReader(input, out.w, 1024, (m) => logs.push(m), limits);
    let closed = false;
    reader.onClose(() => (closed = true));
    reader.listen(() => {});
    assert.equal(reader.checkOutput(), false);
    for (let i = 0; i < 20; i++) out.w.write(Buffer.alloc(4096));
    assert.equal(reader.checkOutput(), true);
    assert.ok(closed && input.destroyed);
    assert.match(logs.join('\n'), /unread \(limit 65536\)/);
  });

  it('refuses an id that is neither string, number nor null', async () => {
    const input = new PassThrough();
    const out = sink();
    const reader = new GuardedMessageReader(input, out.w, 1024, () => {}, limits);
    const msgs: unknown[] = [];
    reader.listen((m) => msgs.push(m));
    for (const id of ['{}', '[]', 'true']) input.write(frame(`{"jsonrpc":"2.0","id":${id},"method":"memory/get","params":{}}`));
    await waitFor('three replies', () => (out.text().match(/-32600/g) ?? []).length === 3);
    assert.equal(msgs.length, 0);
  });
});
