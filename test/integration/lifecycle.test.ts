/**
 * Local security and daemon lifecycle: private store files, a fresh machine, socket folders another user
 * controls, stale daemon info whose pid was reused, and one daemon per store file whatever its spelling.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { DAEMON_NODE_FLAGS, daemonEnv, ensureDaemon } from '../../daemon/src/client/ensure-daemon';
import { readDaemonInfo } from '../../daemon/src/client/daemon-info';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { daemonInfoPath } from '../../daemon/src/paths';
import { Requests } from '../../daemon/src/protocol/methods';
import { alive, CAIRN_BIN, cleanupAfter, tempDir } from '../helpers';

const { pids: pids, dirs } = cleanupAfter(after);
function sandbox(): { dir: string; env: NodeJS.ProcessEnv } {
  const dir = tempDir('cairn-life-');
  dirs.push(dir);
  fs.mkdirSync(path.join(dir, 'run'), { mode: 0o700 });
  return { dir, env: { ...process.env, XDG_RUNTIME_DIR: path.join(dir, 'run'), XDG_DATA_HOME: path.join(dir, 'data'), CAIRN_DB: '' } };
}
const mode = (f: string) => fs.statSync(f).mode & 0o777;

/** Run `cairn daemon ...` until it serves (its info file names a socket that answers) or exits. */
async function startDaemon(
  args: string[],
  env: NodeJS.ProcessEnv,
  db: string,
): Promise<{ pid: number; exit: Promise<number | null>; err: () => string }> {
  // with the daemon settings, as every starter passes them (a daemon without them runs a copy of itself: another pid)
  const p = spawn(process.execPath, [...DAEMON_NODE_FLAGS, CAIRN_BIN, 'daemon', ...args], {
    env: daemonEnv(env),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  p.stderr.on('data', (d) => (err += d));
  const exit = new Promise<number | null>((r) => p.once('exit', (c) => r(c)));
  let exited = false;
  void exit.then(() => (exited = true));
  pids.push(p.pid!);
  for (let i = 0; i < 600 && !exited; i++) {
    const info = readDaemonInfo(db);
    if (info && info.pid === p.pid && info.socket) {
      try {
        await (await StreamClient.connect(info.socket, 500)).close();
        break;
      } catch {
        /* not yet */
      }
    }
    await new Promise((r) => setTimeout(r, 25));
  }
  return { pid: p.pid!, exit, err: () => err };
}

describe('private files and a fresh machine', () => {
  it('cairn daemon on a fresh machine creates the data folder 0700 and every store file 0600', async () => {
    const { dir, env } = sandbox();
    const data = path.join(dir, 'data', 'cairn');
    assert.equal(fs.existsSync(data), false);
    const d = await startDaemon(['--no-embeddings'], env, path.join(data, 'cairn.db'));
    const info = readDaemonInfo(path.join(data, 'cairn.db'));
    assert.equal(info?.pid, d.pid, d.err());
    const c = await StreamClient.connect(info!.socket!);
    await c.call(Requests.upsert, { namespace: 'project.p', key: 'k', value: 'private text' });
    await c.close();
    assert.equal(mode(data), 0o700);
    const files = fs.readdirSync(data);
    for (const f of ['cairn.db', 'cairn.db-wal', 'cairn.db-shm', 'cairn.db.lock', 'cairn.db.daemon.json'])
      assert.ok(files.includes(f), `${f} in ${files}`);
    for (const f of files) assert.equal(mode(path.join(data, f)), 0o600, `${f} is ${mode(path.join(data, f)).toString(8)}`);
    assert.equal(mode(info!.socket!), 0o600);
  });

  it('an existing store readable by others is tightened at open, with a log line', async () => {
    const { dir, env } = sandbox();
    const data = path.join(dir, 'data', 'cairn');
    fs.mkdirSync(data, { recursive: true, mode: 0o755 });
    fs.chmodSync(data, 0o755);
    const db = path.join(data, 'cairn.db');
    const r = spawnSync(process.execPath, [CAIRN_BIN, 'add', 'project.p', 'k', 'v', '--direct'], {
      env: { ...env, CAIRN_DB: db },
      encoding: 'utf8',
    });
    assert.equal(r.status, 0, r.stderr);
    fs.chmodSync(db, 0o644);
    const d = await startDaemon(['--no-embeddings'], env, db);
    assert.equal(readDaemonInfo(db)?.pid, d.pid, d.err());
    assert.equal(mode(data), 0o700);
    assert.equal(mode(db), 0o600);
    assert.match(d.err(), /tightened .*data\/cairn from mode 0755 to 0700/);
    assert.match(d.err(), /tightened .*cairn\.db from mode 0644 to 0600/);
  });
});

describe('socket folders', () => {
  it('the daemon refuses a socket folder other users may write to', async () => {
    const { dir, env } = sandbox();
    const shared = path.join(dir, 'shared');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o777);
    const db = path.join(dir, 's.db');
    const d = await startDaemon(['--db', db, '--socket', path.join(shared, 'd.sock'), '--no-embeddings'], env, db);
    assert.equal(await d.exit, 1);
    assert.match(d.err(), /refusing to use the socket folder .*shared: .* writable by other users \(mode 0777\)/);
    assert.equal(fs.existsSync(path.join(shared, 'd.sock')), false);
  });

  it('and one owned by another user', { skip: process.getuid?.() !== 0 && 'needs root to give a folder to another user' }, async () => {
    const { dir, env } = sandbox();
    const theirs = path.join(dir, 'theirs');
    fs.mkdirSync(theirs, { mode: 0o700 });
    fs.chownSync(theirs, 65534, 65534);
    const db = path.join(dir, 's.db');
    const d = await startDaemon(['--db', db, '--socket', path.join(theirs, 'd.sock'), '--no-embeddings'], env, db);
    assert.equal(await d.exit, 1);
    assert.match(d.err(), /belongs to uid 65534/);
  });
});

describe('who owns a store', () => {
  it('stale daemon info whose pid now belongs to another process: clients start a new daemon at once', async () => {
    const { dir, env } = sandbox();
    const db = path.join(dir, 'stale.db');
    // A live process that is not a daemon holds the pid named by the info file (a reused pid).
    const squatter = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    pids.push(squatter.pid!);
    fs.writeFileSync(
      daemonInfoPath(db),
      JSON.stringify({ pid: squatter.pid, socket: path.join(dir, 'run', 'gone.sock'), version: '0', startedAt: '', db }),
    );
    const t0 = Date.now();
    const r = await ensureDaemon({ db, env, args: ['--no-embeddings'], timeoutMs: 60_000 });
    pids.push(r.pid!);
    assert.equal(r.started, true);
    assert.notEqual(r.pid, squatter.pid);
    assert.ok(Date.now() - t0 < 15_000, 'it did not wait for the stale owner until a timeout');
    const c = await StreamClient.connect(r.socket);
    assert.equal((await c.call(Requests.status, {})).daemon?.pid, r.pid);
    await c.close();
    // cairn status works too (it was failing until someone started a daemon by hand).
    const st = spawnSync(process.execPath, [CAIRN_BIN, 'status', '--json'], { env: { ...env, CAIRN_DB: db }, encoding: 'utf8' });
    assert.equal(st.status, 0, st.stderr);
    assert.equal(JSON.parse(st.stdout).daemon.pid, r.pid);
  });

  it('a symlink to the store finds the same daemon; a hard link cannot get a second one', async () => {
    const { dir, env } = sandbox();
    const real = path.join(dir, 'real', 'cairn.db');
    const d = await startDaemon(['--db', real, '--no-embeddings'], env, real);
    assert.equal(readDaemonInfo(real)?.pid, d.pid, d.err());

    const sym = path.join(dir, 'sym.db');
    fs.symlinkSync(real, sym);
    const viaSym = await ensureDaemon({ db: sym, env, args: ['--no-embeddings'], timeoutMs: 30_000 });
    assert.equal(viaSym.pid, d.pid, 'the symlink spelling reaches the running daemon');
    assert.equal(viaSym.started, false);
    const second = await startDaemon(['--db', sym, '--no-embeddings'], env, sym);
    assert.equal(await second.exit, 3, second.err());

    const hard = path.join(dir, 'hard.db');
    fs.linkSync(real, hard);
    const third = await startDaemon(['--db', hard, '--no-embeddings'], env, hard);
    assert.equal(await third.exit, 3, third.err());
    assert.match(third.err(), /already serves this store file under another path/);
    assert.ok(alive(d.pid), 'the first daemon keeps serving');
  });
});
