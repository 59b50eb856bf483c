/**
 * The files a store owns, and whether a path names one of them.
 *
 * Beside `<db>` live `<db>-wal`, `<db>-shm` (SQLite's WAL and its index), `<db>-journal`, `<db>.keys` (the store's
 * secrets, store/keys.ts), `<db>.lock` (the daemon's OS lock, store/lock.ts), `<db>.daemon.json` (where the daemon
 * listens, server/lock.ts), the temporary files backup and restore write (`.partial-*`, `.restoring-*`), the copies
 * restore keeps (`.pre-restore-*`), and the identity lock and info files under the store file's device and inode
 * (paths.ts identityLockDir). Writing over any of them destroys the store or its keys, so backup and restore compare
 * a target with each of them by file identity, not by spelling: the device and inode of what the path names after
 * every symbolic link is followed (a hard link, a symlink to the file, a folder that is a symlink to the store's
 * folder), and for a file that does not exist yet, the identity of the folder it would be created in plus its name.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { identityInfoPath } from '../client/daemon-info';
import { canonicalPath, identityLockDir } from '../paths';

/** `<db><suffix>`: the files the store keeps beside itself, with what each one is. */
const OWNED: [suffix: string, what: string][] = [
  ['', 'database file'],
  ['-wal', 'write-ahead log (-wal)'],
  ['-shm', 'shared-memory index of the write-ahead log (-shm)'],
  ['-journal', 'rollback journal (-journal)'],
  ['.keys', 'key file (.keys: its HMAC and signing keys)'],
  ['.lock', 'daemon lock file (.lock)'],
  ['.daemon.json', 'daemon info file (.daemon.json)'],
];
const KEPT = '.pre-restore-';
/** `<db><prefix>…`: temporary files and kept copies of the store. */
const OWNED_PREFIXES: [prefix: string, what: string][] = [
  ['.partial-', 'backup in progress (.partial-*)'],
  ['.restoring-', 'restore in progress (.restoring-*)'],
  [KEPT, 'copy kept by a restore (.pre-restore-*)'],
  ['.keys.', 'key file being created (.keys.*)'],
  ['.daemon.json.', 'daemon info file being written (.daemon.json.*)'],
];

interface Identity {
  /** device:inode of the file, when it exists. */
  file: string | null;
  /** device:inode of the folder it is (or would be) in, when that exists. */
  dir: string | null;
  /** Its name in that folder, after links are followed. */
  base: string;
}

const idOf = (st: fs.Stats) => `${st.dev}:${st.ino}`;

/** `p` with every symbolic link followed, also a dangling one (then: the path it points to, which does not exist). */
function followLinks(p: string): string {
  let cur = path.resolve(p);
  for (let hops = 0; hops < 40; hops++) {
    cur = path.join(canonicalPath(path.dirname(cur)), path.basename(cur));
    let st: fs.Stats;
    try {
      st = fs.lstatSync(cur);
    } catch {
      return cur;
    }
    if (!st.isSymbolicLink()) return cur;
    cur = path.resolve(path.dirname(cur), fs.readlinkSync(cur));
  }
  return cur;
}

function identity(p: string): Identity {
  const target = followLinks(p);
  const stat = (x: string) => {
    try {
      return idOf(fs.statSync(x));
    } catch {
      return null;
    }
  };
  return { file: stat(target), dir: stat(path.dirname(target)), base: path.basename(target) };
}

const same = (a: Identity, b: Identity) =>
  (a.file !== null && a.file === b.file) || (a.dir !== null && a.dir === b.dir && a.base === b.base);

/**
 * What `candidate` is among the files of the store at `db` ("database file", "key file (.keys…)", …), or null when
 * it is none of them. Compared by identity (see the module comment), so no spelling of a store file gets through.
 * `keptCopies: false` leaves out the copies a restore keeps (`.pre-restore-*`): a restore may read one, to go back.
 */
export function storeFileAt(db: string, candidate: string, opts: { keptCopies?: boolean } = {}): string | null {
  if (db === ':memory:' || db === '') return null;
  const c = identity(candidate);
  const real = followLinks(db);
  for (const [suffix, what] of OWNED) if (same(c, identity(real + suffix))) return what;
  const dir = identity(real);
  if (c.dir !== null && c.dir === dir.dir)
    for (const [prefix, what] of OWNED_PREFIXES)
      if (c.base.startsWith(dir.base + prefix) && (opts.keptCopies !== false || prefix !== KEPT)) return what;
  // The identity lock and info files of the store file (server/lock.ts), kept under its device and inode.
  if (dir.file !== null && process.platform !== 'win32') {
    const [dev, ino] = dir.file.split(':');
    const lockFile = path.join(identityLockDir(), `${dev}-${ino}.lock`);
    if (same(c, identity(lockFile))) return 'identity lock file';
    const info = identityInfoPath(real);
    if (info && same(c, identity(info))) return 'identity info file';
  }
  return null;
}
