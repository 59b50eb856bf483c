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
  /**
   * Which process the pid named when the daemon wrote this (processIdentity): absent in files older than it and
   * where the system cannot tell.
   */
  procStart?: string;
}

export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * What tells a process from a later one given the same pid: on Linux the boot and the start time in clock ticks since
 * boot (/proc/<pid>/stat, field 22), which no later process with that pid can share; null elsewhere or when it
 * cannot be read (the process is gone).
 */
export function processIdentity(pid: number): string | null {
  if (process.platform !== 'linux') return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces: field 3 (state) first.
    const start = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
    const boot = fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
    return /^\d+$/.test(start ?? '') && boot ? `${boot}:${start}` : null;
  } catch {
    return null;
  }
}

/**
 * Whether the daemon an info file names still runs: its pid is alive and, where the file recorded which process it
 * was (procStart), the process with that pid now is that one. A daemon that died without removing its file (SIGKILL,
 * a crash, a power cut) leaves a pid that the system hands to a later process; that process is not the daemon.
 */
export function daemonAlive(info: Pick<DaemonInfo, 'pid' | 'procStart'>): boolean {
  if (!pidAlive(info.pid)) return false;
  if (!info.procStart) return true;
  const now = processIdentity(info.pid);
  return now === null || now === info.procStart;
}

function readInfoFile(file: string): DaemonInfo | null {
  try {
    const info = JSON.parse(fs.readFileSync(file, 'utf8')) as DaemonInfo;
    if (typeof info.pid !== 'number') return null;
    return {
      ...info,
      socket: typeof info.socket === 'string' ? info.socket : null,
      procStart: typeof info.procStart === 'string' ? info.procStart : undefined,
    };
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

/** Same device and inode: the same file, whatever the spelling. */
function sameFile(a: string, b: string): boolean {
  try {
    const x = fs.statSync(a);
    const y = fs.statSync(b);
    return x.dev === y.dev && x.ino === y.ino;
  } catch {
    return false;
  }
}

/**
 * The info kept under the store file's identity, when it is about this file: a store deleted while its daemon was
 * killed leaves that file behind, and a new store can get the same inode (seen in a test run: a later store file
 * reused the inode, and a later process the dead daemon's pid). The file it names must be this one.
 */
function identityInfo(dbPath: string): DaemonInfo | null {
  const idFile = identityInfoPath(dbPath);
  const info = idFile ? readInfoFile(idFile) : null;
  return info && typeof info.db === 'string' && sameFile(info.db, dbPath) ? info : null;
}

/**
 * The info of the daemon that owns `dbPath` (it may be stale: check daemonAlive): the info file next to that path,
 * else, when there is none, the one under the store file's identity (a daemon started under another spelling).
 */
export function readDaemonInfo(dbPath: string): DaemonInfo | null {
  return readInfoFile(daemonInfoPath(dbPath)) ?? identityInfo(dbPath);
}

/**
 * The running daemon (another process) that owns `dbPath`, if any: named by the info file next to that path,
 * else by the one kept under the store file's identity (the daemon was started under another spelling).
 */
export function runningDaemon(dbPath: string): DaemonInfo | null {
  const live = (info: DaemonInfo | null) => (info && info.pid !== process.pid && daemonAlive(info) ? info : null);
  return live(readInfoFile(daemonInfoPath(dbPath))) ?? live(identityInfo(dbPath));
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
