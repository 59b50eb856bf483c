/**
 * One daemon per store file. The daemon creates `<db>.daemon.json` exclusively
 * (O_EXCL) holding its pid and socket; a second daemon finds it, sees the
 * owner alive, and refuses with a message naming the owner's socket. A file
 * left by a crashed daemon (dead pid) is taken over.
 */
import * as fs from 'node:fs';
import { daemonInfoPath } from '../paths';

export interface DaemonInfo {
  pid: number;
  socket: string | null;
  version: string;
  startedAt: string;
  db: string;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export function readDaemonInfo(dbPath: string): DaemonInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(daemonInfoPath(dbPath), 'utf8')) as DaemonInfo;
    return typeof info.pid === 'number' ? info : null;
  } catch {
    return null;
  }
}

/** The running daemon that owns `dbPath`, if any. */
export function runningDaemon(dbPath: string): DaemonInfo | null {
  const info = readDaemonInfo(dbPath);
  return info && info.pid !== process.pid && pidAlive(info.pid) ? info : null;
}

export class StoreLockedError extends Error {
  constructor(readonly owner: DaemonInfo) {
    super(
      `another Cairn daemon (pid ${owner.pid}) already serves this store` +
        (owner.socket ? ` on socket ${owner.socket}; connect to it instead (cairn commands do this automatically)` : ' over stdio'),
    );
  }
}

/** Take the lock or throw StoreLockedError. Returns a release function. */
export function acquireDaemonLock(dbPath: string, info: Omit<DaemonInfo, 'pid'>): () => void {
  const file = daemonInfoPath(dbPath);
  const body = JSON.stringify({ pid: process.pid, ...info }, null, 1);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      fs.writeFileSync(file, body, { flag: 'wx', mode: 0o600 });
      return () => {
        const cur = readDaemonInfo(dbPath);
        if (cur?.pid === process.pid) fs.rmSync(file, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const owner = readDaemonInfo(dbPath);
      if (owner && owner.pid !== process.pid && pidAlive(owner.pid)) throw new StoreLockedError(owner);
      fs.rmSync(file, { force: true }); // stale: its daemon died
    }
  }
  throw new Error(`could not take the daemon lock ${file}`);
}
