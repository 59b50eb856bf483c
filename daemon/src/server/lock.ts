/**
 * One daemon per store file. The daemon holds an OS lock on `<db>.lock` (see
 * store/lock.ts; released by the OS when the process dies) and, once it holds
 * it, writes `<db>.daemon.json` with its pid and socket for clients to find it.
 * A second daemon cannot take the lock and refuses with a message naming the
 * first one's socket.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { daemonInfoPath, identityLockDir } from '../paths';
import { createPrivateFile, ensurePrivateDir } from '../private-files';
import { daemonAlive, identityInfoPath, processIdentity, readDaemonInfo, type DaemonInfo } from '../client/daemon-info';
import { holdExclusiveLock, type HeldLock } from '../store/lock';

export { daemonAlive, pidAlive, readDaemonInfo, runningDaemon, type DaemonInfo } from '../client/daemon-info';

export class StoreLockedError extends Error {
  constructor(
    readonly owner: DaemonInfo,
    under?: string,
  ) {
    super(
      under
        ? `another Cairn daemon already serves this store file ${under}; use that path, or stop that daemon`
        : owner.pid === 0
          ? 'another Cairn daemon already holds this store (its lock file is taken, but it has not said where it listens yet)'
          : `another Cairn daemon (pid ${owner.pid}) already serves this store` +
            (owner.socket ? ` on socket ${owner.socket}; connect to it instead (cairn commands do this automatically)` : ' over stdio'),
    );
  }
}

/**
 * Take the store's identity lock: one per (device, inode) of the store file, so a hard link or another mount of
 * the same file cannot get a second daemon (two daemons would each keep their own -wal and -shm, corrupting it).
 * Creates the store file (0600) when it does not exist yet, to have an identity to lock.
 */
function holdIdentityLock(dbPath: string): HeldLock | null | 'unsupported' {
  if (process.platform === 'win32') return 'unsupported';
  createPrivateFile(dbPath);
  const st = fs.statSync(dbPath);
  const dir = identityLockDir();
  ensurePrivateDir(dir, { what: 'the store lock folder' });
  return holdExclusiveLock(path.join(dir, `${st.dev}-${st.ino}.lock`));
}

/**
 * Take the lock or throw StoreLockedError. Returns a release function. `dbPath` should be canonical
 * (resolveDbPath): symbolic links resolved, so every spelling shares `<db>.lock` and `<db>.daemon.json`.
 */
export function acquireDaemonLock(dbPath: string, info: Omit<DaemonInfo, 'pid' | 'procStart'>): () => void {
  const file = daemonInfoPath(dbPath);
  fs.mkdirSync(path.dirname(dbPath), { recursive: true, mode: 0o700 });
  const pathLock = holdExclusiveLock(dbPath + '.lock');
  const identity = pathLock ? holdIdentityLock(dbPath) : null;
  const lock: HeldLock | null =
    pathLock && identity ? { release: () => (identity !== 'unsupported' && identity.release(), pathLock.release()) } : null;
  if (pathLock && !identity) {
    pathLock.release();
    throw new StoreLockedError(
      { pid: 0, socket: null, version: '?', startedAt: '?', db: dbPath },
      'under another path (a hard link or another mount of the same file)',
    );
  }
  if (!lock) {
    // The owner writes its info right after taking the lock: give it a moment.
    let owner = readDaemonInfo(dbPath);
    for (let i = 0; i < 40 && (!owner || owner.pid === process.pid || !daemonAlive(owner)); i++) {
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 50);
      owner = readDaemonInfo(dbPath);
    }
    throw new StoreLockedError(owner && daemonAlive(owner) ? owner : { pid: 0, socket: null, version: '?', startedAt: '?', db: dbPath });
  }
  // Which process this pid is (daemonAlive): a file this daemon leaves behind when killed does not name a later one.
  const procStart = processIdentity(process.pid);
  const body = JSON.stringify({ pid: process.pid, ...info, ...(procStart ? { procStart } : {}) }, null, 1);
  const publish = (to: string) => {
    const tmp = `${to}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, body, { mode: 0o600 });
    fs.renameSync(tmp, to); // atomic: readers never see a half-written file
  };
  publish(file);
  // The same info under the file's identity, for clients that name the store through a hard link.
  const idFile = identity !== 'unsupported' ? identityInfoPath(dbPath) : null;
  if (idFile) publish(idFile);
  return () => {
    try {
      if ((JSON.parse(fs.readFileSync(file, 'utf8')) as DaemonInfo).pid === process.pid) fs.rmSync(file, { force: true });
    } catch {
      /* gone already */
    }
    if (idFile) {
      try {
        if ((JSON.parse(fs.readFileSync(idFile, 'utf8')) as DaemonInfo).pid === process.pid) fs.rmSync(idFile, { force: true });
      } catch {
        /* gone already */
      }
    }
    lock.release();
  };
}
