/**
 * Where Cairn keeps its files. Pure Node (no native modules), so the extension
 * can import it to find the daemon's socket without loading SQLite.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readEnv, type Env } from './protocol/settings';

/** Per-user data directory: $XDG_DATA_HOME/cairn, ~/Library/Application Support/Cairn, %APPDATA%\Cairn. */
export function dataDir(env?: Env): string {
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Application Support', 'Cairn');
  if (process.platform === 'win32') return path.join(readEnv('APPDATA', env) ?? path.join(os.homedir(), 'AppData', 'Roaming'), 'Cairn');
  return path.join(readEnv('XDG_DATA_HOME', env) ?? path.join(os.homedir(), '.local', 'share'), 'cairn');
}

/** Per-user cache directory (downloaded models): $XDG_CACHE_HOME/cairn and platform equivalents. */
export function cacheDir(env?: Env): string {
  if (process.platform === 'darwin') return path.join(os.homedir(), 'Library', 'Caches', 'Cairn');
  if (process.platform === 'win32')
    return path.join(readEnv('LOCALAPPDATA', env) ?? path.join(os.homedir(), 'AppData', 'Local'), 'Cairn', 'Cache');
  return path.join(readEnv('XDG_CACHE_HOME', env) ?? path.join(os.homedir(), '.cache'), 'cairn');
}

/**
 * The store file: explicit path, else $CAIRN_DB, else <dataDir>/cairn.db — absolute, with symbolic links
 * resolved (see canonicalPath), so every spelling of one store finds the same daemon, socket and lock.
 */
export function resolveDbPath(explicit?: string, env?: Env): string {
  const p = explicit || readEnv('CAIRN_DB', env) || path.join(dataDir(env), 'cairn.db');
  return canonicalPath(p);
}

/**
 * `p` absolute with every symbolic link resolved: the file's real path when it exists, else the real path of
 * its nearest existing folder joined with the rest.
 */
export function canonicalPath(p: string): string {
  const abs = path.resolve(p);
  const rest: string[] = [];
  let cur = abs;
  for (;;) {
    try {
      return path.join(fs.realpathSync(cur), ...rest.reverse());
    } catch {
      const parent = path.dirname(cur);
      if (parent === cur) return abs;
      rest.push(path.basename(cur));
      cur = parent;
    }
  }
}

/**
 * The folder of the store-identity locks: one lock per store file identity (device and inode), so two spellings
 * of one file — a hard link, a bind mount — cannot each get a daemon. Under the temporary folder, not
 * $XDG_RUNTIME_DIR, so daemons started from different sessions of the user still meet there.
 */
export function identityLockDir(): string {
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return path.join(os.tmpdir(), `cairn-${uid}-locks`);
}

/** Runtime directory for sockets: $XDG_RUNTIME_DIR/cairn, else <tmpdir>/cairn-<uid>. */
export function runtimeDir(env?: Env): string {
  const dir = readEnv('XDG_RUNTIME_DIR', env);
  if (dir) return path.join(dir, 'cairn');
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return path.join(os.tmpdir(), `cairn-${uid}`);
}

/**
 * The default socket of the daemon that owns `dbPath`: one per store file, so
 * every window and the CLI find the same daemon. Short names keep it under the
 * 107-byte Unix socket path limit.
 */
export function defaultSocketPath(dbPath: string, env?: Env): string {
  const h = createHash('sha256').update(path.resolve(dbPath)).digest('hex').slice(0, 12);
  if (process.platform === 'win32') return `\\\\.\\pipe\\cairn-${h}`;
  return path.join(runtimeDir(env), `d-${h}.sock`);
}

/** Lock/info file next to the store naming the daemon that owns it. */
export function daemonInfoPath(dbPath: string): string {
  return path.resolve(dbPath) + '.daemon.json';
}
