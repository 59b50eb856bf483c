/**
 * The daemon over a real socket: several clients, broadcasts, one daemon per
 * store, stdio, and a daemon that survives every kind of bad input.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { Notifications as N, Requests as R } from '../../daemon/src/protocol/methods';
import type { DidChangeParams } from '../../daemon/src/protocol/types';
import { CAIRN_BIN, rejectsWith, spawnDaemon, tempDir, type SpawnedDaemon } from '../helpers';

let d: SpawnedDaemon;
before(async () => {
  d = await spawnDaemon();
});
after(async () => {
  await d.stop();
});

/** Send raw bytes on a fresh connection and collect the framed replies that arrive within `ms`. */
async function raw(bytes: Buffer | string, ms = 400): Promise<{ replies: any[]; closed: boolean }> {
  const sock = net.connect(d.socket);
  await new Promise((r) => sock.once('connect', r));
  let buf = Buffer.alloc(0);
  let closed = false;
  sock.on('data', (c) => (buf = Buffer.concat([buf, c])));
  sock.on('close', () => (closed = true));
  sock.on('error', () => {});
  sock.write(bytes);
  await new Promise((r) => setTimeout(r, ms));
  sock.destroy();
  const replies: any[] = [];
  let s = buf.toString('utf8');
  for (;;) {
    const m = /^Content-Length: (\d+)\r\n\r\n/.exec(s);
    if (!m) break;
    const body = Buffer.from(s.slice(m[0].length));
    replies.push(JSON.parse(body.subarray(0, Number(m[1])).toString('utf8')));
    s = body.subarray(Number(m[1])).toString('utf8');
  }
  return { replies, closed };
}
const frame = (o: unknown) => {
  const b = typeof o === 'string' ? o : JSON.stringify(o);
  return `Content-Length: ${Buffer.byteLength(b)}\r\n\r\n${b}`;
};

describe('daemon over a socket', () => {
  it('initializes like an LSP server', async () => {
    const c = await d.client();
    const init = await c.initialize('test');
    assert.equal(init.serverInfo.name, 'cairn');
    assert.equal(init.capabilities.hoverProvider, true);
    assert.ok(init.capabilities.cairn.methods.includes('memory/search'));
  });

  it('creates the socket with mode 0600', () => {
    assert.equal(fs.statSync(d.socket).mode & 0o777, 0o600);
  });

  it('broadcasts every write to every connected client', async () => {
    const a = await d.client();
    const b = await d.client();
    const seen: DidChangeParams[] = [];
    b.onDidChange((c) => seen.push(c));
    const r = await a.call(R.upsert, { namespace: 'project.bcast', key: 'k', value: 'hello' });
    for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((res) => setTimeout(res, 20));
    assert.deepEqual(seen[0], { position: r.position, id: r.memory.id, namespace: 'project.bcast', key: 'k', op: 'create' });
  });

  it('returns typed errors and keeps serving', async () => {
    const c = await d.client();
    await c.call(R.upsert, { namespace: 'project.err', key: 'gone', value: 'x' });
    await c.call(R.delete, { namespace: 'project.err', key: 'gone', actor: 'tester' });
    const data = await rejectsWith(c.call(R.upsert, { namespace: 'project.err', key: 'gone', value: 'y' }), 'Deleted', 'key');
    assert.equal(data.deletedBy, 'tester');
    await rejectsWith(c.call(R.upsert, { namespace: 'bad namespace', key: 'k', value: 'v' }), 'InvalidNamespace', 'namespace');
    await rejectsWith(
      c.connection.sendRequest('memory/upsert', { namespace: 'a', key: 'k', value: 'v', extra: 1 }).catch((e) => {
        throw fromErr(e);
      }),
      'InvalidParams',
      'extra',
    );
    const st = await c.call(R.status, {});
    assert.ok(st.counts.memories >= 1);
  });

  it('answers garbage with JSON-RPC errors and keeps serving everyone', async () => {
    const c = await d.client();
    const notJson = await raw(frame('{not json'));
    assert.equal(notJson.replies[0].error.code, -32700);
    assert.equal(notJson.closed, false);
    const batch = await raw(frame([{ jsonrpc: '2.0', id: 1, method: 'store/status' }]));
    assert.equal(batch.replies[0].error.code, -32600);
    const noVersion = await raw(frame({ id: 7, method: 'store/status' }));
    assert.deepEqual([noVersion.replies[0].id, noVersion.replies[0].error.code], [7, -32600]);
    const unknown = await raw(frame({ jsonrpc: '2.0', id: 2, method: 'memory/explode', params: {} }));
    assert.equal(unknown.replies[0].error.code, -32601);
    const badParams = await raw(frame({ jsonrpc: '2.0', id: 3, method: 'memory/upsert', params: 'hello' }));
    assert.equal(badParams.replies[0].error.code, -32600);
    const noLength = await raw('Content-Type: x\r\n\r\n{}');
    assert.equal(noLength.replies[0].error.code, -32700);
    assert.equal(noLength.closed, true, 'an unparseable frame closes only that connection');
    // and a valid request after garbage on the same connection still works
    const mixed = await raw(frame('[[[') + frame({ jsonrpc: '2.0', id: 9, method: 'namespaces/list', params: {} }));
    assert.equal(mixed.replies.length, 2);
    assert.ok(Array.isArray(mixed.replies[1].result.namespaces));
    assert.ok((await c.call(R.status, {})).position >= 0, 'other clients unaffected');
  });

  it('refuses a message over the size limit without reading it, and continues', async () => {
    const big = 17 * 1024 * 1024;
    const sock = net.connect(d.socket);
    await new Promise((r) => sock.once('connect', r));
    let reply = '';
    sock.on('data', (x) => (reply += x.toString()));
    sock.write(`Content-Length: ${big}\r\n\r\n`);
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    for (let i = 0; i < 17; i++) sock.write(chunk);
    sock.write(frame({ jsonrpc: '2.0', id: 5, method: 'namespaces/list', params: {} }));
    for (let i = 0; i < 100 && !reply.includes('"id":5'); i++) await new Promise((r) => setTimeout(r, 50));
    sock.destroy();
    assert.match(reply, /"code":1007/);
    assert.match(reply, /"id":5,"result"/);
  });

  it('serves many clients at once', async () => {
    const clients = await Promise.all(Array.from({ length: 8 }, () => d.client()));
    await Promise.all(
      clients.map((c, i) =>
        Promise.all(
          Array.from({ length: 25 }, (_, j) =>
            c.call(R.upsert, { namespace: 'project.many', key: `c${i}-${j}`, value: `value ${i} ${j}` }),
          ),
        ),
      ),
    );
    const list = await clients[0].call(R.list, { scope: { root: 'project.many', includeUser: false }, limit: 1000 });
    assert.equal(list.items.length, 200);
  });

  it('refuses a second daemon on the same store, naming the first one’s socket', async () => {
    const second = spawn(
      process.execPath,
      [CAIRN_BIN, 'daemon', '--db', d.db, '--socket', path.join(d.dir, 'other.sock'), '--no-embeddings'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let err = '';
    second.stderr.on('data', (x) => (err += x));
    const code = await new Promise<number | null>((r) => second.once('exit', r));
    assert.equal(code, 3);
    assert.match(err, new RegExp(`already serves this store on socket ${d.socket.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  });

  it('answers LSP hovers for anchored memories and nothing elsewhere', async () => {
    const c = await d.client();
    const root = path.join(d.dir, 'ws');
    await c.connection.sendRequest('initialize', {
      processId: null,
      rootUri: `file://${root}`,
      capabilities: {},
      initializationOptions: { projectNamespace: 'project.hover' },
    });
    await c.call(R.upsert, {
      namespace: 'project.hover',
      key: 'retry-policy',
      value: 'Retries use exponential backoff',
      anchors: [{ path: 'src/http.ts', startLine: 3, endLine: 5 }],
    });
    const uri = `file://${root}/src/http.ts`;
    const hit = (await c.connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 3, character: 0 } })) as {
      contents: { value: string };
    } | null;
    assert.ok(hit && hit.contents.value.includes('retry-policy') && hit.contents.value.includes('exponential backoff'));
    assert.match(hit!.contents.value, /command:cairn\.openMemory\?/);
    const miss = await c.connection.sendRequest('textDocument/hover', { textDocument: { uri }, position: { line: 10, character: 0 } });
    assert.equal(miss, null);
    // anchors follow a line inserted above them
    await c.connection.sendNotification('textDocument/didOpen', {
      textDocument: { uri, languageId: 'typescript', version: 1, text: 'a\nb\nc\nd\ne\nf\n' },
    });
    await c.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 2 },
      contentChanges: [{ range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, text: 'new line\n' }],
    });
    await new Promise((r) => setTimeout(r, 100));
    const m = await c.call(R.get, { namespace: 'project.hover', key: 'retry-policy' });
    assert.deepEqual([m.anchors[0].startLine, m.anchors[0].endLine], [4, 6]);
    // deleting the anchored lines hides the hover at once; saving marks the anchor stale and sends the memory to review
    await c.connection.sendNotification('textDocument/didChange', {
      textDocument: { uri, version: 3 },
      contentChanges: [{ range: { start: { line: 3, character: 0 }, end: { line: 6, character: 0 } }, text: '' }],
    });
    await c.connection.sendNotification('textDocument/didSave', { textDocument: { uri } });
    const staleNow = async () => (await c.call(R.get, { namespace: 'project.hover', key: 'retry-policy' })).anchors[0].stale === true;
    for (let i = 0; i < 200 && !(await staleNow()); i++) await new Promise((r) => setTimeout(r, 25));
    const s = await c.call(R.get, { namespace: 'project.hover', key: 'retry-policy' });
    assert.deepEqual([s.anchors[0].stale, s.status], [true, 'proposed']);
  });
});

describe('daemon over stdio', () => {
  it('serves one client on stdin/stdout and exits when it leaves', async () => {
    const dir = tempDir();
    const proc = spawn(process.execPath, [CAIRN_BIN, 'daemon', '--stdio', '--db', path.join(dir, 'c.db'), '--no-embeddings'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const c = new StreamClient(proc.stdout!, proc.stdin!);
    const init = await c.initialize('stdio-test');
    assert.equal(init.serverInfo.name, 'cairn');
    const r = await c.call(R.upsert, { namespace: 'user', key: 'k', value: 'over stdio' });
    assert.equal(r.created, true);
    proc.stdin!.end();
    const code = await new Promise<number | null>((res) => proc.once('exit', res));
    assert.equal(code, 0);
    assert.equal(fs.existsSync(path.join(dir, 'c.db.daemon.json')), false, 'lock released');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  // LSP's exit: status 0 after a shutdown request, 1 without one. The daemon used to dispose the connection and then
  // wait forever for a stdin that its client keeps open (the Python example hung CI until its 90-minute limit).
  for (const { shutdown, status } of [
    { shutdown: true, status: 0 },
    { shutdown: false, status: 1 },
  ]) {
    it(`exits with status ${status} on LSP exit ${shutdown ? 'after' : 'without'} shutdown, while its stdin stays open`, async () => {
      const dir = tempDir();
      const proc = spawn(process.execPath, [CAIRN_BIN, 'daemon', '--stdio', '--db', path.join(dir, 'c.db'), '--no-embeddings'], {
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      const exited = new Promise<number | null>((res) => proc.once('exit', res));
      const c = new StreamClient(proc.stdout!, proc.stdin!);
      await c.initialize('stdio-exit-test');
      assert.equal((await c.call(R.upsert, { namespace: 'user', key: 'k', value: 'before exit' })).created, true);
      if (shutdown) assert.equal(await c.call(R.shutdown, undefined), null);
      await c.connection.sendNotification(N.exit.method);
      assert.equal(await exited, status);
      assert.equal(fs.existsSync(path.join(dir, 'c.db.daemon.json')), false, 'lock released');
      proc.stdin!.end();
      fs.rmSync(dir, { recursive: true, force: true });
    });
  }
});

describe('LSP exit over the socket', () => {
  let d: SpawnedDaemon;
  before(async () => (d = await spawnDaemon()));
  after(async () => d.stop());

  it("closes the leaving client's connection only; the daemon keeps serving the others", async () => {
    const leaving = await StreamClient.connect(d.socket);
    const staying = await StreamClient.connect(d.socket);
    await leaving.initialize('leaving');
    await staying.initialize('staying');
    const closed = new Promise<void>((res) => leaving.connection.onClose(() => res()));
    await leaving.connection.sendNotification(N.exit.method);
    await closed;
    await rejectsWith(leaving.call(R.list, { scope: { root: 'user' } }), 'Unavailable');
    const r = await staying.call(R.upsert, { namespace: 'user', key: 'after-exit', value: 'still served' });
    assert.equal(r.created, true);
    await staying.close();
  });
});

function fromErr(e: unknown): unknown {
  const { fromResponseError } = require('../../daemon/src/client/socket-client');
  return fromResponseError(e);
}
