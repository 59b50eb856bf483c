/**
 * The clients' frame reader (daemon/src/client/framed-reader.ts) delivers what vscode-jsonrpc's StreamMessageReader
 * delivers, in the same order, however the bytes are cut into chunks: several frames in one chunk, a header or a
 * body split anywhere, a large body in many chunks, extra headers, an empty body. Malformed input is reported as an
 * error, as the stock reader does, and the frames after a body that is not JSON are still read.
 */
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describe, it } from 'node:test';
import { StreamMessageReader, type Message } from 'vscode-jsonrpc/node';
import { FramedMessageReader } from '../../daemon/src/client/framed-reader';

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
