/**
 * A daemon that cannot be reached, or goes away before answering, is `Unavailable` (never `Internal`, never a
 * silent success): the client says whether the request was sent, and the CLI exits non-zero.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { CairnError, ErrorCodes, toCairnError, toWireError } from '../../daemon/src/protocol/errors';
import { Requests } from '../../daemon/src/protocol/methods';
import { CAIRN_BIN, rejectsWith, tempDir } from '../helpers';

/** A socket that accepts connections, reads what is sent, and closes without ever answering. */
async function silentServer(socket: string): Promise<{ close: () => Promise<void>; received: () => number }> {
  let bytes = 0;
  const server = net.createServer((s) => {
    s.on('data', (d) => {
      bytes += d.length;
      s.destroy();
    });
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(socket, r));
  return { close: () => new Promise<void>((r) => server.close(() => r())), received: () => bytes };
}

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CAIRN_BIN, ...args], { env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

describe('an unreachable daemon is Unavailable', () => {
  let dir: string;
  let socket: string;
  let server: Awaited<ReturnType<typeof silentServer>>;
  let env: NodeJS.ProcessEnv;
  before(async () => {
    dir = tempDir();
    socket = path.join(dir, 's.sock');
    server = await silentServer(socket);
    env = { CAIRN_DB: path.join(dir, 'x.db'), XDG_RUNTIME_DIR: dir };
  });
  after(async () => {
    await server.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a request whose connection closes before the reply fails with Unavailable, sent: true', async () => {
    const c = await StreamClient.connect(socket);
    const data = await rejectsWith(c.call(Requests.status, {}), 'Unavailable');
    assert.equal(data.sent, true);
    // The connection is gone now: the next request is refused before it is written.
    const again = await rejectsWith(c.call(Requests.status, {}), 'Unavailable');
    assert.equal(again.sent, false);
    await c.close();
  });

  it('connecting where nothing listens fails with Unavailable, sent: false', async () => {
    const data = await rejectsWith(StreamClient.connect(path.join(dir, 'nobody.sock'), 500), 'Unavailable');
    assert.equal(data.sent, false);
  });

  it('cairn add and cairn wait against a socket that closes without answering exit non-zero with Unavailable', async () => {
    const before = server.received();
    const add = await cli(['add', 'project.x', 'k', 'v', '--socket', socket], env);
    assert.equal(add.code, 1, add.out + add.err);
    assert.match(add.err, /Unavailable 1013/);
    assert.ok(server.received() > before, 'the request was written to the socket');
    const wait = await cli(['wait', '1', '--socket', socket], env);
    assert.equal(wait.code, 1, wait.out + wait.err);
    assert.match(wait.err, /Unavailable 1013/);
    assert.equal(add.out, '');
  });
});

describe('clients verify the socket before sending anything', () => {
  it('a socket in a folder other users may write to is refused, and nothing is written to it', async () => {
    const dir = tempDir();
    const shared = path.join(dir, 'shared');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o777);
    const socket = path.join(shared, 'd.sock');
    const server = await silentServer(socket);
    try {
      const data = await rejectsWith(StreamClient.connect(socket), 'Unavailable');
      assert.equal(data.sent, false);
      assert.equal(server.received(), 0);
      const add = await cli(['add', 'project.x', 'k', 'v', '--socket', socket], { CAIRN_DB: path.join(dir, 'x.db'), XDG_RUNTIME_DIR: dir });
      assert.equal(add.code, 1);
      assert.match(add.err, /writable by other users[\s\S]*Unavailable 1013/);
      assert.equal(server.received(), 0);
    } finally {
      await server.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    'a socket owned by another user is refused',
    { skip: process.getuid?.() !== 0 && 'needs root to give a socket to another user' },
    async () => {
      const dir = tempDir();
      const socket = path.join(dir, 'd.sock');
      const server = await silentServer(socket);
      try {
        fs.lchownSync(socket, 65534, 65534);
        const data = await rejectsWith(StreamClient.connect(socket), 'Unavailable');
        assert.match(String(((await StreamClient.connect(socket).catch((e: Error) => e)) as Error).message), /belongs to uid 65534/);
        assert.equal(data.sent, false);
        assert.equal(server.received(), 0);
      } finally {
        await server.close();
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('error conversions (protocol/errors.ts)', () => {
  it('a CairnError crosses the wire and comes back with its code, name and data', () => {
    const w = toWireError(new CairnError('VersionConflict', 'stale', { currentVersion: 3 }), 'memory/upsert');
    assert.equal(w.unexpected, false);
    const back = toCairnError({ code: w.code, message: w.message, data: w.data });
    assert.equal(back.codeName, 'VersionConflict');
    assert.equal(back.code, ErrorCodes.VersionConflict);
    assert.equal(back.data.currentVersion, 3);
  });

  it('anything else is Internal on the wire (flagged unexpected) and JSON-RPC codes map to the nearest Cairn code', () => {
    const w = toWireError(new TypeError('boom'), 'memory/get');
    assert.equal(w.unexpected, true);
    assert.equal(w.data.name, 'Internal');
    assert.equal(toCairnError({ code: -32601, message: 'Unhandled method x' }).codeName, 'NotFound');
    assert.equal(toCairnError({ code: -32099, message: 'odd' }).codeName, 'Internal');
    assert.equal(toCairnError(new Error('x')).codeName, 'Internal');
  });
});
