/**
 * privateSocket: the check a daemon makes on the socket it has just bound. Clients connect as soon as it is bound,
 * so one may already have moved it away; the daemon must keep serving then (the daemon that threw here stopped
 * half-started, handing its store to the next daemon a client spawned).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { test } from 'node:test';
import { privateSocket } from '../../daemon/src/private-files';
import { tempDir } from '../helpers';

const posix = process.platform !== 'win32';

test('a bound socket left readable by others is made 0600, and nothing is logged', { skip: !posix && 'POSIX modes' }, async () => {
  const dir = tempDir('cairn-psock-');
  const socket = path.join(dir, 'd.sock');
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(socket, r));
  try {
    fs.chmodSync(socket, 0o666);
    const logged: string[] = [];
    assert.equal(
      privateSocket(socket, (m) => logged.push(m)),
      true,
    );
    assert.equal(fs.statSync(socket).mode & 0o777, 0o600);
    assert.deepEqual(logged, []);
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('a socket moved away right after it was bound is logged, not thrown', { skip: !posix && 'POSIX modes' }, async () => {
  const dir = tempDir('cairn-psock-');
  const socket = path.join(dir, 'd.sock');
  const server = net.createServer((c) => c.end('still here'));
  await new Promise<void>((r) => server.listen(socket, r));
  try {
    const moved = socket + '.moved';
    fs.renameSync(socket, moved);
    const logged: string[] = [];
    assert.equal(
      privateSocket(socket, (m) => logged.push(m)),
      false,
    );
    assert.equal(logged.length, 1);
    assert.match(logged[0]!, /d\.sock was moved or removed right after it was bound/);
    // The server still answers on the inode it bound, wherever its name went.
    const reply = await new Promise<string>((resolve, reject) => {
      const c = net.connect(moved);
      let got = '';
      c.on('data', (d) => (got += d));
      c.on('end', () => resolve(got));
      c.on('error', reject);
    });
    assert.equal(reply, 'still here');
  } finally {
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('any other failure is thrown: a path through a file is not a socket that moved', { skip: !posix && 'POSIX modes' }, () => {
  const dir = tempDir('cairn-psock-');
  const file = path.join(dir, 'plain');
  fs.writeFileSync(file, '');
  const logged: string[] = [];
  assert.throws(
    () => privateSocket(path.join(file, 'd.sock'), (m) => logged.push(m)),
    (e: NodeJS.ErrnoException) => e.code === 'ENOTDIR',
  );
  assert.deepEqual(logged, []);
});
