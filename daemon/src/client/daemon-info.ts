/**
 * Finding a running daemon: its info file (`<db>.daemon.json`), whether its
 * process lives, and whether its socket answers. Pure Node (no native modules):
 * the daemon, the CLI, `cairn mcp`, the VS Code extension and tests share it.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { daemonInfoPath, identityLockDir } from '../paths';
import { unsafeSocketReason } from '../private-files';

export interface DaemonInfo {
  pid: number;
  /** null for a daemon serving stdio only. */
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

function readInfoFile(file: string): DaemonInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(file, 'utf8')) as DaemonInfo;
    if (typeof info.pid !== 'number') return null;
    return { ...info, socket: typeof info.socket === 'string' ? info.socket : null };
  } catch {
    return null;
  }
}

/**
 * The info file a daemon also writes under the identity of its store file (device and inode), next to its
 * identity lock (server/lock.ts), or null when the file does not exist (yet). A client that names the store
 * through a hard link (or another mount) finds the daemon through it: path spellings differ, the identity not.
 */
export function identityInfoPath(dbPath: string): string | null {
  if (process.platform === 'win32') return null;
  try {
    const st = fs.statSync(dbPath);
    return path.join(identityLockDir(), `${st.dev}-${st.ino}.json`);
  } catch {
    return null;
  }
}

/**
 * The info of the daemon that owns `dbPath` (it may be stale: check pidAlive): the info file next to that path,
 * else, when there is none, the one under the store file's identity (a daemon started under another spelling).
 */
export function readDaemonInfo(dbPath: string): DaemonInfo | null {
  const byPath = readInfoFile(daemonInfoPath(dbPath));
  if (byPath) return byPath;
  const idFile = identityInfoPath(dbPath);
  return idFile ? readInfoFile(idFile) : null;
}

/**
 * The running daemon (another process) that owns `dbPath`, if any: named by the info file next to that path,
 * else by the one kept under the store file's identity (the daemon was started under another spelling).
 */
export function runningDaemon(dbPath: string): DaemonInfo | null {
  const live = (info: DaemonInfo | null) => (info && info.pid !== process.pid && pidAlive(info.pid) ? info : null);
  const byPath = live(readDaemonInfo(dbPath));
  if (byPath) return byPath;
  const idFile = identityInfoPath(dbPath);
  return idFile ? live(readInfoFile(idFile)) : null;
}

/** A socket that another user could have put there: never connected to, nothing is sent. */
export class UntrustedSocketError extends Error {
  constructor(
    readonly socketPath: string,
    reason: string,
  ) {
    super(
      `refusing to connect to ${socketPath}: ${reason}; another user may have planted it. Remove it, or use a private XDG_RUNTIME_DIR or --socket`,
    );
    this.name = 'UntrustedSocketError';
  }
}

/**
 * Open a socket, failing after `timeoutMs` instead of waiting on a wedged peer. The socket must be owned by
 * this user in a folder only this user can change (checked before connecting, so nothing reaches a planted one).
 */
export function connectSocket(socketPath: string, timeoutMs = 2000): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const unsafe = unsafeSocketReason(socketPath);
    if (unsafe) return reject(new UntrustedSocketError(socketPath, unsafe));
    const sock = net.connect(socketPath);
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`timed out connecting to ${socketPath}`));
    }, timeoutMs);
    sock.once('connect', () => {
      clearTimeout(timer);
      resolve(sock);
    });
    sock.once('error', (e) => {
      clearTimeout(timer);
      sock.destroy();
      reject(e);
    });
  });
}

/** True when something accepts connections on the socket within `timeoutMs`. */
export async function probeSocket(socketPath: string, timeoutMs = 1000): Promise<boolean> {
  try {
    (await connectSocket(socketPath, timeoutMs)).destroy();
    return true;
  } catch {
    return false;
  }
}
