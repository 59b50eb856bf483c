/**
 * A client that names the store through a hard link finds the daemon that serves it under another path (the
 * daemon also publishes its info under the store file's identity, device + inode), instead of starting a second
 * daemon that refuses (exit 3) and then timing out with Unavailable.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { DAEMON_NODE_FLAGS, daemonEnv, ensureDaemon } from '../../daemon/src/client/ensure-daemon';
import { identityInfoPath, readDaemonInfo, runningDaemon } from '../../daemon/src/client/daemon-info';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { daemonInfoPath } from '../../daemon/src/paths';
import { Requests } from '../../daemon/src/protocol/methods';
import { CAIRN_BIN, cleanupAfter, tempDir } from '../helpers';

const { pids, dirs } = cleanupAfter(after);

describe('a hard-link spelling of the store reaches the running daemon', { skip: process.platform === 'win32' }, () => {
  it('ensureDaemon and the CLI use the daemon serving the other path', async () => {
    const dir = tempDir('cairn-hl-');
    dirs.push(dir);
    fs.mkdirSync(path.join(dir, 'run'), { mode: 0o700 });
    const env = { ...process.env, XDG_RUNTIME_DIR: path.join(dir, 'run'), XDG_DATA_HOME: path.join(dir, 'data'), CAIRN_DB: '' };
    const real = path.join(dir, 'real', 'cairn.db');
    const p = spawn(process.execPath, [...DAEMON_NODE_FLAGS, CAIRN_BIN, 'daemon', '--db', real, '--no-embeddings'], {
      env: daemonEnv(env),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    p.stderr!.on('data', (d) => (err += d));
    pids.push(p.pid!);
    let socket: string | null = null;
    for (let i = 0; i < 800 && p.exitCode === null && !socket; i++) {
      const info = readDaemonInfo(real);
      if (info && info.pid === p.pid && info.socket) {
        try {
          await (await StreamClient.connect(info.socket, 500)).close();
          socket = info.socket;
        } catch {
          /* not yet */
        }
      }
      if (!socket) await new Promise((r) => setTimeout(r, 25));
    }
    assert.ok(socket, `the daemon did not start: ${err}`);
    const c = await StreamClient.connect(socket);
    await c.call(Requests.upsert, { namespace: 'project.hl', key: 'k', value: 'stored through the real path' });
    await c.close();

    const hard = path.join(dir, 'elsewhere.db');
    fs.linkSync(real, hard);
    assert.equal(fs.existsSync(daemonInfoPath(hard)), false, 'no info file sits next to the hard-link spelling');
    assert.equal(readDaemonInfo(hard)?.pid, p.pid, 'the info is found under the file identity (the extension reads it this way too)');
    const idFile = identityInfoPath(hard);
    assert.ok(idFile && fs.existsSync(idFile), 'the daemon published its info under the file identity');
    assert.equal(idFile, identityInfoPath(real));
    assert.equal(runningDaemon(hard)?.pid, p.pid);

    const viaHard = await ensureDaemon({ db: hard, env, args: ['--no-embeddings'], timeoutMs: 20_000 });
    assert.equal(viaHard.started, false);
    assert.equal(viaHard.pid, p.pid);
    assert.equal(viaHard.socket, socket);

    // The CLI through the hard link reads what the daemon holds (it used to time out with Unavailable).
    const out = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
      const q = spawn(process.execPath, [CAIRN_BIN, 'get', '--db', hard, 'project.hl', 'k', '--json'], { env });
      let o = '';
      let e = '';
      q.stdout.on('data', (d) => (o += d));
      q.stderr.on('data', (d) => (e += d));
      q.on('close', (code) => resolve({ code, out: o, err: e }));
    });
    assert.equal(out.code, 0, out.err);
    assert.equal(JSON.parse(out.out).value, 'stored through the real path');
    assert.equal(p.exitCode, null, 'the daemon keeps serving');

    // Stopping the daemon removes its identity info too.
    p.kill('SIGTERM');
    await new Promise((r) => p.once('exit', r));
    assert.equal(fs.existsSync(idFile), false);
  });
});
