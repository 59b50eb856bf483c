import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, suite, test } from 'node:test';
import {
  BootstrapError,
  daemonCandidates,
  ensureDaemon,
  findDaemonScript,
  findNode,
  isAlive,
  readDaemonInfo,
  resolveTarget,
  stopProcess,
} from '../../bootstrap';

/** A stand-in daemon: listens on --socket, writes <db>.daemon.json like the real one. */
const FAKE = `
const net = require('net'), fs = require('fs');
const a = process.argv; const sock = a[a.indexOf('--socket') + 1], db = a[a.indexOf('--db') + 1];
try { fs.unlinkSync(sock); } catch {}
net.createServer((c) => c.end()).listen(sock, () => {
  fs.writeFileSync(db + '.daemon.json', JSON.stringify({ pid: process.pid, socket: sock, version: 'fake' }));
  console.log('fake daemon listening on ' + sock);
});
process.on('SIGTERM', () => process.exit(0));
`;
const FAILING = `console.error('cairn daemon: cannot open the store: disk on fire'); process.exit(7);`;

suite('bootstrap', { timeout: 60_000 }, () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-boot-'));
  const env = { ...process.env, XDG_RUNTIME_DIR: path.join(tmp, 'run'), CAIRN_DB: '', CAIRN_DAEMON: '' };
  const pids: number[] = [];
  after(async () => {
    for (const p of pids) await stopProcess(p, 20_000);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  function script(name: string, body: string): string {
    const dir = path.join(tmp, name);
    fs.mkdirSync(dir, { recursive: true });
    const f = path.join(dir, 'daemon.js');
    fs.writeFileSync(f, body);
    return f;
  }

  test('target: explicit store path and its per-store socket', () => {
    const t = resolveTarget(path.join(tmp, 'a.db'), env);
    assert.equal(t.db, path.join(tmp, 'a.db'));
    assert.ok(t.socket.startsWith(path.join(tmp, 'run', 'cairn')), t.socket);
    assert.notEqual(resolveTarget(path.join(tmp, 'b.db'), env).socket, t.socket);
  });

  test('daemon candidates: setting, then env, then packaged copy, then checkout', () => {
    assert.deepEqual(daemonCandidates('/s/cairn.js', '/ext', { CAIRN_DAEMON: '/e/cairn.js' }), ['/s/cairn.js']);
    assert.deepEqual(daemonCandidates('', '/ext', { CAIRN_DAEMON: '/e/cairn.js' }), ['/e/cairn.js']);
    assert.deepEqual(daemonCandidates('', '/x/ext', {}), ['/x/ext/daemon/bin/cairn.js', '/x/daemon/bin/cairn.js']);
  });

  test('missing or unbuilt daemon: a sentence saying what to do', () => {
    assert.throws(
      () => findDaemonScript(path.join(tmp, 'nope.js'), tmp, {}),
      (e: Error) => e instanceof BootstrapError && /cairn\.daemon\.path/.test(e.message),
    );
    const bin = path.join(tmp, 'unbuilt', 'bin');
    fs.mkdirSync(bin, { recursive: true });
    fs.writeFileSync(path.join(bin, 'cairn.js'), '');
    assert.throws(() => findDaemonScript(path.join(bin, 'cairn.js'), tmp, {}), /not built.*npm run build/s);
  });

  test('node: found on PATH and version-checked; a bad path is reported', async () => {
    const { version } = await findNode('', process.env);
    assert.match(version, /^v\d+/);
    await assert.rejects(findNode(path.join(tmp, 'no-node'), process.env), /Cannot run Node\.js/);
    await assert.rejects(findNode('', { PATH: path.join(tmp, 'empty') }), /Node\.js not found/);
  });

  test('spawns a daemon once, then connects to the running one', async () => {
    const target = resolveTarget(path.join(tmp, 'store', 'c.db'), env);
    const o = {
      target,
      nodeSetting: process.execPath,
      daemonSetting: script('fake', FAKE),
      extensionPath: tmp,
      logFile: path.join(tmp, 'logs', 'd.log'),
      env,
    };
    const first = await ensureDaemon(o);
    assert.ok(first.spawned, 'first call starts the daemon');
    const info = readDaemonInfo(target.db);
    assert.ok(info && isAlive(info.pid));
    pids.push(info!.pid);
    const second = await ensureDaemon(o);
    assert.equal(second.spawned, undefined, 'second call reuses it');
    assert.equal(second.socket, target.socket);
    await stopProcess(info!.pid, 20_000); // returns once it is gone; the grace only bounds a loaded machine
    assert.equal(isAlive(info!.pid), false);
  });

  test('stale daemon info naming a live pid that is not a daemon does not block: a daemon starts (shared client layer)', async () => {
    const target = resolveTarget(path.join(tmp, 'store', 's.db'), env);
    fs.mkdirSync(path.dirname(target.db), { recursive: true });
    // The pid is alive (it is this test process) but nothing answers on the socket it names.
    fs.writeFileSync(target.db + '.daemon.json', JSON.stringify({ pid: process.pid, socket: path.join(tmp, 'gone.sock'), version: 'old' }));
    const r = await ensureDaemon({
      target,
      nodeSetting: process.execPath,
      daemonSetting: script('fake2', FAKE),
      extensionPath: tmp,
      logFile: path.join(tmp, 'logs', 's.log'),
      env,
      startTimeoutMs: 20_000,
    });
    assert.ok(r.spawned, 'a new daemon was started');
    pids.push(r.spawned!.pid);
    assert.equal(readDaemonInfo(target.db)?.pid, r.spawned!.pid);
    assert.equal(fs.statSync(path.join(tmp, 'logs', 's.log')).mode & 0o777, 0o600, 'the daemon log is private');
  });

  test('a daemon that exits at start-up: its output is in the error', async () => {
    const target = resolveTarget(path.join(tmp, 'store', 'd.db'), env);
    await assert.rejects(
      ensureDaemon({
        target,
        nodeSetting: process.execPath,
        daemonSetting: script('failing', FAILING),
        extensionPath: tmp,
        logFile: path.join(tmp, 'logs', 'f.log'),
        env,
      }),
      (e: Error) => e instanceof BootstrapError && /exited with code 7/.test(e.message) && /disk on fire/.test(e.message),
    );
  });
});
