/**
 * Keeping Cairn's files private to the user who owns them: folders 0700, files 0600, and sockets that are
 * verified to belong to this user before anything is sent to them. Pure Node (no native modules), so the
 * daemon, the CLI, `cairn mcp` and the VS Code extension share it. POSIX only; on Windows every check passes
 * (named pipes and %APPDATA% have their own access control).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const posix = process.platform !== 'win32';
const myUid = (): number | null => (posix && typeof process.getuid === 'function' ? process.getuid() : null);

/** A folder or socket that another user could control: refused, with the reason and what to do. */
export class UnsafePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsafePathError';
  }
}

const octal = (mode: number) => (mode & 0o7777).toString(8).padStart(4, '0');

/**
 * Why `dir` is not safe to hold a socket (or other private files), or null when it is: it must be a real folder
 * (not a symlink) owned by this user, and not writable by group or others — except a sticky folder owned by this
 * user or root (like /tmp), where others cannot remove or replace what is ours.
 */
export function unsafeDirReason(dir: string): string | null {
  const uid = myUid();
  if (uid === null) return null;
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (e) {
    return `cannot inspect ${dir}: ${(e as Error).message}`;
  }
  if (st.isSymbolicLink()) return `${dir} is a symbolic link`;
  if (!st.isDirectory()) return `${dir} is not a folder`;
  const sticky = (st.mode & 0o1000) !== 0;
  if (st.uid !== uid && !(sticky && st.uid === 0)) return `${dir} belongs to uid ${st.uid}, not to you (uid ${uid})`;
  if ((st.mode & 0o022) !== 0 && !sticky) return `${dir} is writable by other users (mode ${octal(st.mode)})`;
  return null;
}

/**
 * Create `dir` (and missing parents) with mode 0700 and check it is safe; throws UnsafePathError when it is
 * not (another user's folder, or one others can write to). `tighten`: an existing folder of ours that is
 * readable by others is set to 0700 (saying so through `log`); used for Cairn's own folders, never for a
 * folder the user chose for something else.
 */
export function ensurePrivateDir(dir: string, o: { tighten?: boolean; log?: (msg: string) => void; what?: string } = {}): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (!posix) return;
  const problem = unsafeDirReason(dir);
  if (problem) {
    throw new UnsafePathError(
      `refusing to use ${o.what ?? 'the folder'} ${dir}: ${problem}. Another user could read or replace Cairn's files there; ` +
        `remove it (or fix its owner and mode: chmod 700) or point Cairn elsewhere (XDG_RUNTIME_DIR, --socket, --db).`,
    );
  }
  if (o.tighten) {
    const st = fs.statSync(dir);
    if ((st.mode & 0o077) !== 0 && (st.mode & 0o1000) === 0) {
      fs.chmodSync(dir, 0o700);
      o.log?.(`tightened ${dir} from mode ${octal(st.mode)} to 0700 (only you may read Cairn's data)`);
    }
  }
}

/**
 * Make an existing file private (0600), saying so through `log` when it was readable or writable by others.
 * Missing files are ignored. Returns true when the mode changed.
 */
export function tightenFile(file: string, log?: (msg: string) => void): boolean {
  if (!posix) return false;
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return false;
  }
  if (!st.isFile() || (st.mode & 0o077) === 0 || st.uid !== myUid()) return false;
  fs.chmodSync(file, 0o600);
  log?.(`tightened ${file} from mode ${octal(st.mode)} to 0600 (only you may read Cairn's data)`);
  return true;
}

/**
 * Make the socket a daemon has just bound private (0600). Bound under umask 0177 it already is; this is the check
 * for systems that ignore the umask for sockets. A path that is gone (a client moved or removed it after it was bound)
 * is logged, not thrown: the daemon still serves, and the inode it listens on is 0600. Returns true when chmod ran.
 */
export function privateSocket(socket: string, log: (msg: string) => void): boolean {
  try {
    fs.chmodSync(socket, 0o600);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    log(`the socket ${socket} was moved or removed right after it was bound; serving on it as it is`);
    return false;
  }
}

/** Create `file` empty with mode 0600 when it does not exist (so whatever opens it next inherits a private mode). */
export function createPrivateFile(file: string): void {
  try {
    fs.closeSync(fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL, 0o600));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
}

/**
 * Why the socket at `socketPath` must not be trusted, or null when it may: it must be a socket (not a symlink)
 * owned by this user, in a folder that passes {@link unsafeDirReason}. A missing socket is not "unsafe"
 * (connecting to it simply fails).
 */
export function unsafeSocketReason(socketPath: string): string | null {
  const uid = myUid();
  if (uid === null) return null;
  let st: fs.Stats;
  try {
    st = fs.lstatSync(socketPath);
  } catch {
    return null;
  }
  if (st.isSymbolicLink()) return `${socketPath} is a symbolic link`;
  if (!st.isSocket()) return `${socketPath} is not a socket`;
  if (st.uid !== uid) return `${socketPath} belongs to uid ${st.uid}, not to you (uid ${uid})`;
  return unsafeDirReason(path.dirname(socketPath));
}
