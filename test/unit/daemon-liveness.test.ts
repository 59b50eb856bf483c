/**
 * Whether the daemon an info file names still runs (client/daemon-info.ts): a daemon killed without removing its
 * files leaves a pid the system hands to a later process, and a store deleted meanwhile leaves its identity file
 * for a later store that gets the same inode. Neither may pass for a live daemon: `cairn compact` and `restore
 * --from` refuse while one serves the store, and `--no-start` connects to it.
 */
import { strict as assert } from 'node:assert';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { daemonAlive, identityInfoPath, processIdentity, readDaemonInfo, runningDaemon } from '../../daemon/src/client/daemon-info';
import { daemonInfoPath } from '../../daemon/src/paths';
import { acquireDaemonLock } from '../../daemon/src/server/lock';
import { tempDir } from '../helpers';

const linux = process.platform === 'linux';

/** A live process that is not a daemon: what a reused pid points at. */
function otherProcess(): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(child));
    child.once('error', reject);
  });
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

function writeInfo(file: string, info: Record<string, unknown>): void {
  fs.writeFileSync(file, JSON.stringify({ version: 'test', startedAt: new Date().toISOString(), socket: null, ...info }), { mode: 0o600 });
}

describe('daemon liveness', { skip: !linux && 'process identities are read from /proc' }, () => {
  let child: ChildProcess;
  before(async () => {
    child = await otherProcess();
  });
  after(async () => {
    child.kill('SIGKILL');
    await exited(child);
  });

  it('tells a process from a later one with the same pid', () => {
    const id = processIdentity(child.pid!);
    assert.match(id ?? '', /^[0-9a-f-]{36}:\d+$/, 'boot and start ticks');
    assert.equal(processIdentity(child.pid!), id, 'the same process reads the same');
    assert.notEqual(processIdentity(process.pid), id, 'another process differs');
    const [boot, ticks] = id!.split(':');
    // The record a dead daemon left: its pid is now this other process, which started later.
    assert.equal(daemonAlive({ pid: child.pid!, procStart: `${boot}:${Number(ticks) - 1}` }), false);
    assert.equal(daemonAlive({ pid: child.pid!, procStart: `00000000-0000-0000-0000-000000000000:${ticks}` }), false, 'another boot');
    assert.equal(daemonAlive({ pid: child.pid!, procStart: id! }), true);
    // Files written before procStart existed: the pid alone decides, as before.
    assert.equal(daemonAlive({ pid: child.pid! }), true);
  });

  it('a dead pid is no daemon, and has no identity', async () => {
    const gone = await otherProcess();
    const pid = gone.pid!;
    const id = processIdentity(pid);
    gone.kill('SIGKILL');
    await exited(gone);
    assert.equal(processIdentity(pid), null);
    assert.equal(daemonAlive({ pid, procStart: id! }), false);
  });

  it('runningDaemon skips an info file whose pid now names another process', () => {
    const db = path.join(tempDir(), 'cairn.db');
    fs.writeFileSync(db, '');
    const [boot, ticks] = processIdentity(child.pid!)!.split(':');
    writeInfo(daemonInfoPath(db), { pid: child.pid, db, procStart: `${boot}:${Number(ticks) - 100}` });
    assert.equal(runningDaemon(db), null);
    assert.equal(readDaemonInfo(db)?.pid, child.pid, 'the file is still read (it may be stale: daemonAlive says)');
    writeInfo(daemonInfoPath(db), { pid: child.pid, db, procStart: processIdentity(child.pid!) });
    assert.equal(runningDaemon(db)?.pid, child.pid);
  });

  it('the identity file counts only for the store file it names', () => {
    const dir = tempDir();
    const db = path.join(dir, 'cairn.db');
    fs.writeFileSync(db, '');
    const idFile = identityInfoPath(db)!;
    fs.mkdirSync(path.dirname(idFile), { recursive: true, mode: 0o700 });
    try {
      // A store deleted while its daemon was killed; this file got its inode.
      writeInfo(idFile, { pid: child.pid, db: path.join(dir, 'deleted', 'cairn.db'), procStart: processIdentity(child.pid!) });
      assert.equal(readDaemonInfo(db), null);
      assert.equal(runningDaemon(db), null);
      // A daemon serving this file under another name (a hard link) is found through it.
      const link = path.join(dir, 'link.db');
      fs.linkSync(db, link);
      writeInfo(idFile, { pid: child.pid, db: link, procStart: processIdentity(child.pid!) });
      assert.equal(readDaemonInfo(db)?.db, link);
      assert.equal(runningDaemon(db)?.pid, child.pid);
    } finally {
      fs.rmSync(idFile, { force: true });
    }
  });

  it('a daemon records which process it is, next to the store and under its identity', () => {
    const db = path.join(tempDir(), 'cairn.db');
    const release = acquireDaemonLock(db, { socket: null, version: 'test', startedAt: new Date().toISOString(), db });
    try {
      const mine = processIdentity(process.pid);
      assert.ok(mine);
      for (const file of [daemonInfoPath(db), identityInfoPath(db)!]) {
        const info = JSON.parse(fs.readFileSync(file, 'utf8')) as { pid: number; procStart?: string };
        assert.equal(info.pid, process.pid, file);
        assert.equal(info.procStart, mine, file);
      }
    } finally {
      release();
    }
    assert.equal(fs.existsSync(daemonInfoPath(db)), false, 'released: the file goes');
  });
});
