/**
 * The clients' frame reader (daemon/src/client/framed-reader.ts) delivers what vscode-jsonrpc's StreamMessageReader
 * delivers, in the same order, however the bytes are cut into chunks: several frames in one chunk, a header or a
 * body split anywhere, a large body in many chunks, extra headers, an empty body. Malformed input is reported as an
 * error, as the stock reader does, and the frames after a body that is not JSON are still read. StreamClient, which
 * handles its replies and notifications without vscode-jsonrpc's message queue, sends and delivers what the
 * connection did, in the same order.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { StreamMessageReader, type Message } from 'vscode-jsonrpc/node';
import { FramedMessageReader } from '../../daemon/src/client/framed-reader';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { CairnError } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';

const frame = (body: string, extra = '') => Buffer.from(`Content-Length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`, 'utf8');

/** Feed `chunks` to a reader; resolve with its messages and error messages once the stream closed. */
async function read(
  make: (s: PassThrough) => StreamMessageReader | FramedMessageReader,
  chunks: Buffer[],
): Promise<{ messages: Message[]; errors: string[] }> {
  const s = new PassThrough();
  const r = make(s);
  const messages: Message[] = [];
  const errors: string[] = [];
  r.onError((e) => errors.push((e as Error).message.split('\n')[0]));
  r.listen((m) => messages.push(m));
  await new Promise((res) => setImmediate(res));
  for (const c of chunks) s.write(c);
  // The stock reader hands messages on through setImmediate and promises: let them arrive.
  for (let i = 0; i < 5; i++) await new Promise((res) => setImmediate(res));
  s.destroy();
  return { messages, errors };
}

/** The stream cut every `n` bytes. */
function cut(buf: Buffer, n: number): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < buf.length; i += n) out.push(buf.subarray(i, i + n));
  return out;
}

const bodies = [
  JSON.stringify({ jsonrpc: '2.0', id: 1, result: { ok: true, text: 'héllo — ✓ 𝄞' } }),
  JSON.stringify({ jsonrpc: '2.0', method: 'memory/didChange', params: { position: 3, op: 'upsert' } }),
  JSON.stringify({ jsonrpc: '2.0', id: 'x', error: { code: -32011, message: 'not found', data: { name: 'NotFound' } } }),
  JSON.stringify({ jsonrpc: '2.0', id: 2, result: { records: Array.from({ length: 2000 }, (_, i) => ({ i, s: 'v'.repeat(50) })) } }),
  JSON.stringify({ jsonrpc: '2.0', id: 3, result: null }),
];

describe('client frame reader', () => {
  it('delivers what the stock reader delivers, however the stream is cut', async () => {
    const stream = Buffer.concat([
      ...bodies.map((b) => frame(b)),
      frame(bodies[0], 'Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n'),
    ]);
    const small = Buffer.concat(bodies.filter((b) => b.length < 1000).map((b) => frame(b)));
    for (const [n, bytes] of [
      ...[1, 2, 3, 7, 19].map((k) => [k, small] as const),
      ...[64, 1000, 65536, stream.length].map((k) => [k, stream] as const),
    ]) {
      const chunks = cut(bytes, n);
      const stock = await read((s) => new StreamMessageReader(s), chunks);
      const mine = await read((s) => new FramedMessageReader(s), chunks);
      assert.deepEqual(mine, stock, `chunks of ${n} bytes`);
      assert.equal(mine.messages.length, bytes === stream ? bodies.length + 1 : bodies.length - 1);
      assert.deepEqual(mine.errors, []);
    }
  });

  it('reports a body that is not JSON and reads the frames after it', async () => {
    const chunks = [Buffer.concat([frame(bodies[0]), frame('{"jsonrpc":"2.0",'), frame(bodies[1])])];
    const stock = await read((s) => new StreamMessageReader(s), chunks);
    const mine = await read((s) => new FramedMessageReader(s), chunks);
    assert.equal(mine.errors.length, 1);
    assert.equal(stock.errors.length, 1);
    assert.deepEqual(mine.messages, stock.messages);
    assert.equal(mine.messages.length, 2);
  });

  it('reports a header section without a numeric Content-Length, as the stock reader does', async () => {
    for (const bad of ['Content-Type: x\r\n\r\n{}', 'Content-Length: abc\r\n\r\n{}', 'no colon here\r\n\r\n{}']) {
      const chunks = [Buffer.from(bad)];
      const stock = await read((s) => new StreamMessageReader(s), chunks);
      const mine = await read((s) => new FramedMessageReader(s), chunks);
      assert.deepEqual(mine, stock, bad);
      assert.equal(mine.errors.length, 1, bad);
    }
  });

  it('reports the stream closing', async () => {
    const s = new PassThrough();
    const r = new FramedMessageReader(s);
    let closed = false;
    r.onClose(() => (closed = true));
    r.listen(() => {});
    s.destroy();
    await new Promise((res) => setImmediate(res));
    assert.equal(closed, true);
  });
});

describe('StreamClient over a pair of streams', () => {
  /** A fake daemon: the client's requests as parsed messages, and a way to send it frames. */
  function pair() {
    const toClient = new PassThrough();
    const fromClient = new PassThrough();
    const requests: { id: number; method: string; params: unknown }[] = [];
    const r = new StreamMessageReader(fromClient);
    r.listen((m) => requests.push(m as unknown as { id: number; method: string; params: unknown }));
    const c = new StreamClient(toClient, fromClient);
    const send = (...msgs: unknown[]) => toClient.write(Buffer.concat(msgs.map((m) => frame(JSON.stringify(m)))));
    const next = async () => {
      while (requests.length === 0) await new Promise((res) => setImmediate(res));
      return requests.shift()!;
    };
    return { c, send, next, toClient };
  }

  it('sends requests as the connection did and hands a notification sent before a reply on first', async () => {
    const { c, send, next } = pair();
    const seen: string[] = [];
    c.onDidChange((ch) => seen.push(`didChange ${ch.position}`));
    const p = c.call(R.namespacesList, {}).then((r) => seen.push(`reply ${JSON.stringify(r)}`));
    const q1 = await next();
    assert.deepEqual(q1, { jsonrpc: '2.0', id: 0, method: 'namespaces/list', params: {} });
    send(
      { jsonrpc: '2.0', method: 'memory/didChange', params: { position: 7, id: null, namespace: null, key: null, op: 'upsert' } },
      { jsonrpc: '2.0', method: 'store/progress', params: { operation: 'import', done: 1, total: 2 } }, // no handler: dropped
      { jsonrpc: '2.0', id: 0, result: { namespaces: [] } },
    );
    await p;
    assert.deepEqual(seen, ['didChange 7', 'reply {"namespaces":[]}']);
    const p2 = c.call(R.status, undefined as never);
    assert.deepEqual(await next(), { jsonrpc: '2.0', id: 1, method: 'store/status', params: [null] });
    send({ jsonrpc: '2.0', id: 1, error: { code: -32011, message: 'no such memory', data: { name: 'NotFound', field: 'id' } } });
    await assert.rejects(
      p2,
      (e: unknown) => e instanceof CairnError && e.codeName === 'NotFound' && e.data.field === 'id' && e.message === 'no such memory',
    );
    await c.close();
  });

  it('fails a request waiting for its reply with Unavailable (sent) when the client closes or the daemon goes', async () => {
    const a = pair();
    const p = a.c.call(R.namespacesList, {});
    await a.next();
    await a.c.close();
    await assert.rejects(p, (e: unknown) => e instanceof CairnError && e.codeName === 'Unavailable' && e.data.sent === true);
    await assert.rejects(a.c.call(R.namespacesList, {}), (e: unknown) => e instanceof CairnError && e.data.sent === false);
    const b = pair();
    const q = b.c.call(R.namespacesList, {});
    await b.next();
    b.toClient.end();
    await assert.rejects(q, (e: unknown) => e instanceof CairnError && e.codeName === 'Unavailable' && e.data.sent === true);
  });
});
