/**
 * A large message is decoded, parsed, shape-checked and (as a reply) serialized in slices that yield to the event
 * loop (docs/protocol.md#limits, "Request time and stalls"), so one 16 MiB store/import or one-reply store/export
 * does not hold the other connections: the sliced parse gives exactly what JSON.parse gives (and refuses exactly
 * what it refuses), a small frame on another connection is delivered before a large frame that arrived first, and
 * a sliced reply is the same JSON. Ordering and equality only: no timed assertions.
 */
import assert from 'node:assert/strict';
import { PassThrough, Writable } from 'node:stream';
import { describe, it } from 'node:test';
import type { Message } from 'vscode-jsonrpc/node';
import { FramedMessageWriter } from '../../daemon/src/client/framed-writer';
import { GuardedMessageReader } from '../../daemon/src/server/framing';
import { checkParamsShape, checkParamsShapePaced } from '../../daemon/src/server/limits';
import { SLICED_PARSE_BYTES, decodeSliced, parseSliced } from '../../daemon/src/server/sliced-json';
import { CairnError } from '../../daemon/src/protocol/errors';

/** Padding that makes any text large enough for the sliced path. */
const PAD = 'p'.repeat(SLICED_PARSE_BYTES);
const big = (inner: string) => `{"jsonrpc":"2.0","id":1,"method":"store/import","pad":"${PAD}","params":${inner}}`;

const VALID = [
  big('{"records":[{"type":"memory","v":"a \\"quoted\\" ] } [ { , : value"},{"x":[1,2,{"y":"\\\\"}]},3,-1.5e3,true,false,null,"s",[]]}'),
  big('{ "records" : [ 1 , 2 , 3 ] , "actor" : "me" }'),
  big('{"records":[]}'),
  big('{"records":[ ]}'),
  big('{"records":[{"a":"\\u005d\\u002c"}],"items":[{"b":1},{"b":2}],"scope":{"root":"user"}}'),
  big('{"records":[1],"records":[2]}'), // a duplicate key: JSON.parse keeps the last
  big('{"rec\\u006frds":[1,2]}'), // an escaped key
  big('{"__proto__":[1,2],"records":[3]}'),
  `  ${big('{"records":["\\\\\\"",{"k":["]"]}]}')}\n\t `,
  big('[1,2,3]'),
  `[${JSON.stringify(PAD)}]`,
  JSON.stringify({ params: { records: Array.from({ length: 3000 }, (_, i) => ({ i, s: `record ${i} ${'x'.repeat(100)}` })) } }),
];

const INVALID = [
  big('{"records":[1,2,]}'),
  big('{"records":[,1]}'),
  big('{"records":[1,,2]}'),
  big('{"records":[1 2]}'),
  big('{"records":[:1]}'),
  big('{"records":[1}}'),
  big('{"records":[{"a":1]]}'),
  big('{"records":["unterminated]}'),
  big('{"records":[1]}') + 'x',
  big('{"records":[1]'),
  big('{"records":[tru]}'),
  big('{"records":[01]}'),
  big('{"records" [1]}'),
  big('{"records":[1]]'),
];

describe('sliced JSON parse', () => {
  it('gives exactly what JSON.parse gives', async () => {
    for (const text of VALID) {
      assert.ok(text.length >= SLICED_PARSE_BYTES);
      assert.deepEqual(await parseSliced(text), JSON.parse(text), text.slice(-120));
    }
  });

  it('refuses exactly what JSON.parse refuses, with a SyntaxError', async () => {
    for (const text of INVALID) {
      assert.throws(() => JSON.parse(text), SyntaxError, `JSON.parse accepts ${text.slice(-60)}`);
      await assert.rejects(parseSliced(text), SyntaxError, text.slice(-60));
    }
  });

  it('keeps "__proto__" as an own property, as JSON.parse does (the shape check then refuses it)', async () => {
    const text = big('{"records":[{"__proto__":{"polluted":1}}]}');
    const m = (await parseSliced(text)) as { params: { records: Record<string, unknown>[] } };
    assert.ok(Object.prototype.hasOwnProperty.call(m.params.records[0], '__proto__'));
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.throws(
      () => checkParamsShape(m.params),
      (e: CairnError) => e.codeName === 'InvalidParams',
    );
  });

  it('decodes UTF-8 across slice boundaries and refuses invalid UTF-8', async () => {
    const text = 'é€😀'.repeat(SLICED_PARSE_BYTES);
    assert.equal(await decodeSliced(Buffer.from(text)), text);
    const bad = Buffer.from(text);
    bad[bad.length >> 1] = 0xff;
    await assert.rejects(decodeSliced(bad), TypeError);
  });
});

describe('paced shape check', () => {
  it('refuses what the one-pass check refuses, deep inside a large params object', async () => {
    const records = Array.from({ length: 50_000 }, (_, i) => ({ type: 'memory', i, s: `v${i}` }));
    await checkParamsShapePaced({ records }); // passes
    (records[49_000] as Record<string, unknown>).s = 'x\ud800';
    await assert.rejects(
      checkParamsShapePaced({ records }),
      (e: CairnError) => e.codeName === 'InvalidParams' && e.data?.field === 'records[49000].s',
    );
    assert.throws(
      () => checkParamsShape({ records }),
      (e: CairnError) => e.codeName === 'InvalidParams' && e.data?.field === 'records[49000].s',
    );
  });
});

describe('framing: a large frame does not hold the other connections', () => {
  const frame = (s: string) => Buffer.concat([Buffer.from(`Content-Length: ${Buffer.byteLength(s)}\r\n\r\n`), Buffer.from(s)]);
  const sink = () => new Writable({ write: (_c, _e, cb) => cb() });
  const waitFor = async (ok: () => boolean) => {
    const deadline = Date.now() + 20_000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((r) => setImmediate(r));
    }
  };

  it('a small frame on another connection is delivered before a large frame that arrived first', async () => {
    const order: string[] = [];
    const a = new PassThrough();
    const b = new PassThrough();
    const ra = new GuardedMessageReader(a, sink());
    const rb = new GuardedMessageReader(b, sink());
    let bigMsg: unknown;
    ra.listen((m) => {
      order.push((m as unknown as { method: string }).method);
      bigMsg = m;
    });
    rb.listen((m) => order.push((m as unknown as { method: string }).method));
    const records = Array.from({ length: 20_000 }, (_, i) => ({ type: 'memory', memory: { id: `m${i}`, value: `value ${i}` } }));
    const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'store/import', params: { records } });
    assert.ok(text.length > SLICED_PARSE_BYTES);
    a.write(frame(text));
    b.write(frame(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'memory/get', params: { id: 'x' } })));
    await waitFor(() => order.length === 2);
    assert.deepEqual(order, ['memory/get', 'store/import']);
    assert.deepEqual(bigMsg, JSON.parse(text));
  });

  it("a connection's frames stay in order when a large one is parsed in slices", async () => {
    const a = new PassThrough();
    const ra = new GuardedMessageReader(a, sink());
    const got: string[] = [];
    ra.listen((m) => got.push((m as unknown as { method: string }).method));
    const text = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'first', params: { records: [PAD, PAD] } });
    a.write(Buffer.concat([frame(text), frame('{"jsonrpc":"2.0","id":2,"method":"second"}'), frame('{"jsonrpc":"2.0","method":"third"}')]));
    await waitFor(() => got.length === 3);
    assert.deepEqual(got, ['first', 'second', 'third']);
  });

  it('a large frame of invalid JSON gets -32700 and the connection keeps being served', async () => {
    const a = new PassThrough();
    const out: Buffer[] = [];
    const ra = new GuardedMessageReader(
      a,
      new Writable({
        write: (c, _e, cb) => (out.push(Buffer.from(c)), cb()),
      }),
    );
    const got: string[] = [];
    ra.listen((m) => got.push((m as unknown as { method: string }).method));
    a.write(frame(big('{"records":[1,2,]}')));
    a.write(frame('{"jsonrpc":"2.0","id":2,"method":"after"}'));
    await waitFor(() => got.length === 1);
    assert.deepEqual(got, ['after']);
    assert.match(Buffer.concat(out).toString(), /"code":-32700/);
  });
});

describe('sliced reply serialization', () => {
  it('a reply with a long array is the same JSON, in one frame', async () => {
    const out: Buffer[] = [];
    const w = new FramedMessageWriter(new Writable({ write: (c, _e, cb) => (out.push(Buffer.from(c)), cb()) }));
    const records = Array.from({ length: 5000 }, (_, i) => ({ type: 'memory', i, v: `é ${i}`, u: i % 7 === 0 ? undefined : 1 }));
    const msg = { jsonrpc: '2.0', id: 7, result: { records, n: 3, skip: undefined, other: [1, 2] } } as unknown as Message;
    await w.write(msg);
    await w.write({ jsonrpc: '2.0', id: 8, result: { small: [1] } } as unknown as Message);
    await new Promise((r) => setImmediate(r));
    const all = Buffer.concat(out);
    const frames: unknown[] = [];
    for (let at = 0; at < all.length;) {
      const end = all.indexOf('\r\n\r\n', at);
      const len = Number(/Content-Length: (\d+)/.exec(all.subarray(at, end).toString())![1]);
      frames.push(JSON.parse(all.subarray(end + 4, end + 4 + len).toString('utf8')));
      at = end + 4 + len;
    }
    assert.equal(frames.length, 2);
    assert.deepEqual(frames[0], JSON.parse(JSON.stringify(msg)));
    assert.deepEqual(frames[1], { jsonrpc: '2.0', id: 8, result: { small: [1] } });
  });
});
