/**
 * ensureDaemon: find the daemon that owns a store or start one detached, wait
 * for its socket, and survive callers racing to start it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, test } from 'node:test';
import {
  DAEMON_ENV,
  DAEMON_NODE_FLAGS,
  EnsureDaemonError,
  ensureDaemon,
  findDaemonScript,
  probeSocket,
} from '../../daemon/src/client/ensure-daemon';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { Requests } from '../../daemon/src/protocol/methods';
import { daemonInfoPath, defaultSocketPath } from '../../daemon/src/paths';
import { ROOT, tempDir, until } from '../helpers';
import { daemonInfo, isolatedEnv, killAndWait, pidAlive, rmDir, stopDaemonAndRemove } from './harness';

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups.reverse()) await c();
});

function sandbox(): { dir: string; db: string; env: Record<string, string> } {
  const dir = tempDir('cairn-ensure-');
  const db = path.join(dir, 'store', 'cairn.db');
  cleanups.push(() => stopDaemonAndRemove(db, dir));
  return { dir, db, env: isolatedEnv(dir) };
}

const ARGS = ['--no-embeddings'];

test('starts a detached daemon when none serves the store, then reuses it', async () => {
  const { db, env } = sandbox();
  const first = await ensureDaemon({ db, env, args: ARGS });
  assert.equal(first.started, true);
  assert.equal(first.db, db);
  assert.equal(first.socket, defaultSocketPath(db, env), 'the default socket under $XDG_RUNTIME_DIR');
  assert.ok(first.socket.startsWith(env.XDG_RUNTIME_DIR));
  assert.ok(first.logFile && fs.existsSync(first.logFile), 'the daemon logs to a file, not to our stdio');
  assert.equal(daemonInfo(db)?.pid, first.pid);

  const c = await StreamClient.connect(first.socket);
  try {
    const st = await c.call(Requests.status, {});
    assert.equal(st.path, db);
    assert.equal(st.daemon?.pid, first.pid);
  } finally {
    await c.close();
  }

  const second = await ensureDaemon({ db, env, args: ARGS });
  assert.deepEqual({ ...second, logFile: undefined }, { socket: first.socket, started: false, pid: first.pid, db, logFile: undefined });
});

/** A daemon's environment variable, read from /proc (these tests run on Linux). */
function environOf(pid: number, name: string): string | undefined {
  const vars = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
  return vars.find((v) => v.startsWith(`${name}=`))?.slice(name.length + 1);
}

test('the daemon starts with the daemon Node flags and environment; a variable the caller sets wins', async () => {
  const a = sandbox();
  const first = await ensureDaemon({ db: a.db, env: a.env, args: ARGS });
  const cmdline = fs.readFileSync(`/proc/${first.pid}/cmdline`, 'utf8').split('\0');
  for (const f of DAEMON_NODE_FLAGS) assert.ok(cmdline.includes(f), `${f} in ${cmdline.join(' ')}`);
  assert.ok(Object.keys(DAEMON_ENV).length > 0);
  for (const [k, v] of Object.entries(DAEMON_ENV)) assert.equal(environOf(first.pid!, k), v, k);
  const b = sandbox();
  const second = await ensureDaemon({ db: b.db, env: { ...b.env, MALLOC_ARENA_MAX: '4' }, args: ARGS });
  assert.equal(environOf(second.pid!, 'MALLOC_ARENA_MAX'), '4');
});

test('callers racing to start a daemon all end up on the one that won', async () => {
  const { db, env } = sandbox();
  const results = await Promise.all([1, 2, 3, 4].map(() => ensureDaemon({ db, env, args: ARGS })));
  const owner = daemonInfo(db)!;
  assert.ok(pidAlive(owner.pid));
  for (const r of results) {
    assert.equal(r.socket, owner.socket);
    assert.equal(r.pid, owner.pid);
  }
  assert.equal(results.filter((r) => r.started).length, 1, 'exactly one caller started the serving daemon');
  assert.ok(await probeSocket(owner.socket));
});

test('a race with different sockets: the loser exits with code 3 and its caller uses the winner’s socket', async () => {
  const { dir, db, env } = sandbox();
  const [a, b] = await Promise.all([
    ensureDaemon({ db, env, args: ARGS, socket: path.join(dir, 'a.sock') }),
    ensureDaemon({ db, env, args: ARGS, socket: path.join(dir, 'b.sock') }),
  ]);
  assert.equal(a.socket, b.socket);
  assert.equal(a.socket, daemonInfo(db)!.socket);
  assert.notEqual(a.started, b.started);
});

test('an info file left by a dead daemon is ignored and a new daemon starts', async () => {
  const { db, env } = sandbox();
  fs.mkdirSync(path.dirname(db), { recursive: true });
  fs.writeFileSync(
    daemonInfoPath(db),
    JSON.stringify({ pid: 2 ** 22 + 12345, socket: '/nonexistent/cairn.sock', version: '0', startedAt: '', db }),
  );
  const r = await ensureDaemon({ db, env, args: ARGS });
  assert.equal(r.started, true);
  assert.notEqual(r.socket, '/nonexistent/cairn.sock');
  assert.equal(daemonInfo(db)!.pid, r.pid);
});

test('waits for a daemon that owns the store but is not listening yet', async () => {
  const { db, env } = sandbox();
  const started = await ensureDaemon({ db, env, args: ARGS });
  // Pretend the owner's socket is not there yet: move it away, then back after a moment.
  const info = daemonInfo(db)!;
  const hidden = info.socket + '.hidden';
  fs.renameSync(info.socket, hidden);
  setTimeout(() => fs.renameSync(hidden, info.socket), 300);
  const t0 = Date.now();
  const r = await ensureDaemon({ db, env, args: ARGS });
  assert.equal(r.started, false);
  assert.equal(r.pid, started.pid);
  assert.ok(Date.now() - t0 >= 250, 'it waited for the socket instead of starting a second daemon');
});

test('an explicit socket that answers is used as is', async () => {
  const { db, env } = sandbox();
  const started = await ensureDaemon({ db, env, args: ARGS });
  const r = await ensureDaemon({ db: path.join(path.dirname(db), 'other.db'), env, socket: started.socket });
  assert.equal(r.socket, started.socket);
  assert.equal(r.started, false);
});

test('a daemon that fails to start is reported with its log, within the timeout', async () => {
  const { dir, db, env } = sandbox();
  const script = path.join(dir, 'broken.js');
  fs.writeFileSync(script, "process.stderr.write('boom: the store is on fire\\n'); process.exit(7);\n");
  await assert.rejects(ensureDaemon({ db, env, script, timeoutMs: 10_000 }), (e: Error) => {
    assert.ok(e instanceof EnsureDaemonError);
    assert.match(e.message, /exited with code 7/);
    assert.match(e.message, /boom: the store is on fire/);
    return true;
  });

  const silent = path.join(dir, 'silent.js');
  fs.writeFileSync(silent, 'setTimeout(() => {}, 60_000);\n');
  const t0 = Date.now();
  let pid: number | null = null;
  await assert.rejects(ensureDaemon({ db, env, script: silent, timeoutMs: 600 }), (e: Error) => {
    assert.ok(e instanceof EnsureDaemonError);
    assert.match(e.message, /did not answer .* within/);
    pid = e.pid;
    return true;
  });
  assert.ok(Date.now() - t0 < 5000);
  assert.ok(pid !== null && pidAlive(pid), 'the error names the process it left running');
  await killAndWait(pid);
});

test('finds bin/cairn.js from the sources and from the bundle, and honours CAIRN_DAEMON', () => {
  const daemonDir = path.resolve(__dirname, '..', '..', 'daemon');
  const bin = path.join(daemonDir, 'bin', 'cairn.js');
  if (fs.existsSync(path.join(daemonDir, 'dist', 'cairn.js'))) {
    assert.equal(findDaemonScript({}, path.join(daemonDir, 'src', 'client')), bin);
    assert.equal(findDaemonScript({}, path.join(daemonDir, 'dist')), bin);
  }
  assert.equal(findDaemonScript({ CAIRN_DAEMON: bin }, '/'), bin);
  assert.throws(() => findDaemonScript({ CAIRN_DAEMON: '/nonexistent/cairn.js' }), EnsureDaemonError);
  const lonely = tempDir('cairn-nobin-');
  try {
    assert.throws(() => findDaemonScript({}, lonely), /cannot find the Cairn daemon script/);
  } finally {
    rmDir(lonely);
  }
});

/** Whether a process runs: exists and is not a zombie (an orphan's exit status waits for an init that may not reap it). */
function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** `cairn daemon` started by hand (the built CLI), with none of the daemon settings in its environment or flags. */
function handStarted(dir: string, env: Record<string, string>, args: string[], stdin: 'ignore' | 'pipe' = 'ignore') {
  const clean = { ...env };
  for (const k of Object.keys(DAEMON_ENV)) delete clean[k];
  return spawn(process.execPath, [path.join(ROOT, 'daemon', 'bin', 'cairn.js'), 'daemon', ...args], {
    env: clean,
    cwd: dir,
    stdio: [stdin, 'pipe', 'pipe'],
  });
}

/** Wait for a child process to end; its exit code, or the signal that ended it. */
function ended(p: ReturnType<typeof spawn>): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((r) =>
    p.exitCode !== null || p.signalCode !== null
      ? r({ code: p.exitCode, signal: p.signalCode })
      : p.once('exit', (code, signal) => r({ code, signal })),
  );
}

test('a daemon started by hand runs with the daemon memory settings too, and ends as its starter is told to', async () => {
  const { dir, db, env } = sandbox();
  const socket = path.join(dir, 'hand.sock');
  const p = handStarted(dir, env, ['--db', db, '--socket', socket, ...ARGS]);
  let err = '';
  p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await until('the hand-started daemon to serve', () => daemonInfo(db) !== null && fs.existsSync(socket), 30_000);
    const pid = daemonInfo(db)!.pid;
    const c = await StreamClient.connect(socket);
    assert.equal((await c.call(Requests.status, {})).daemon?.pid, pid);
    await c.close();
    for (const [k, v] of Object.entries(DAEMON_ENV)) assert.equal(environOf(pid, k), v, `${k} of the serving daemon; ${err}`);
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    for (const f of DAEMON_NODE_FLAGS) assert.ok(cmdline.includes(f), `${f} in ${cmdline.join(' ')}`);
    // SIGTERM to the process the user started stops the daemon, and the exit status is the daemon's
    p.kill('SIGTERM');
    assert.deepEqual(await ended(p), { code: 0, signal: null });
    await until('the daemon to stop', () => !running(pid));
  } finally {
    p.kill('SIGKILL');
  }
});

test('a hand-started daemon keeps its exit code (3: the store is served already) and serves --stdio through the same stdio', async () => {
  const { dir, db, env } = sandbox();
  const owner = await ensureDaemon({ db, env, args: ARGS });
  const second = handStarted(dir, env, ['--db', db, '--socket', path.join(dir, 'other.sock'), ...ARGS]);
  assert.deepEqual(await ended(second), { code: 3, signal: null });
  await killAndWait(owner.pid!);

  const p = handStarted(dir, env, ['--db', db, '--stdio', ...ARGS], 'pipe');
  try {
    const c = new StreamClient(p.stdout!, p.stdin!, () => p.stdin!.end());
    const st = await c.call(Requests.status, {});
    assert.ok(st.daemon && st.daemon.pid !== p.pid, 'served by the copy that has the settings');
    for (const [k, v] of Object.entries(DAEMON_ENV)) assert.equal(environOf(st.daemon.pid, k), v, k);
    // the stdio client leaving ends the daemon, and with it the process the client started
    await c.close();
    assert.deepEqual(await ended(p), { code: 0, signal: null });
  } finally {
    p.kill('SIGKILL');
  }
});

test('the copy a hand-started daemon runs stops when its starter is killed (SIGKILL cannot be passed on)', async () => {
  const { dir, db, env } = sandbox();
  const p = handStarted(dir, env, ['--db', db, '--socket', path.join(dir, 'k.sock'), ...ARGS]);
  try {
    await until('the copy to serve', () => daemonInfo(db) !== null && daemonInfo(db)!.pid !== p.pid, 30_000);
    const pid = daemonInfo(db)!.pid;
    p.kill('SIGKILL');
    await until('the copy to stop', () => !running(pid), 30_000);
  } finally {
    p.kill('SIGKILL');
  }
});
