/**
 * MCP test harness: a real MCP client (the SDK's Client over StdioClientTransport)
 * talking to `cairn mcp` in a child process, inside a temp dir that also holds
 * the store, the runtime dir (sockets, daemon logs) and HOME, so nothing
 * touches the real user directories. The daemon that `cairn mcp` starts is
 * detached: stopDaemon() ends it by the pid in `<db>.daemon.json`.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { daemonInfoPath } from '../../daemon/src/paths';
import { holdExclusiveLock } from '../../daemon/src/store/lock';
import { ROOT, tempDir } from '../helpers';

export const ENTRY = path.join(__dirname, 'entry.ts');
export const TSX_LOADER = pathToFileURL(require.resolve('tsx')).href;
export const BUNDLE = path.join(ROOT, 'daemon', 'dist', 'cairn.js');
export const BIN = path.join(ROOT, 'daemon', 'bin', 'cairn.js');

/** An environment confined to `dir`: no real HOME, XDG dirs, store or scope leak in. */
export function isolatedEnv(dir: string, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || k.startsWith('CAIRN_') || k.startsWith('XDG_') || k === 'NODE_OPTIONS' || k === 'NODE_TEST_CONTEXT') continue;
    env[k] = v;
  }
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { recursive: true });
  return {
    ...env,
    HOME: home,
    XDG_RUNTIME_DIR: path.join(dir, 'run'),
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    ...extra,
  };
}

/** A folder that looks like a clone of `<remote>` (only .git/config), for project-namespace derivation. */
export function fakeRepo(parent: string, folder: string, remoteUrl?: string): string {
  const dir = path.join(parent, folder);
  fs.mkdirSync(path.join(dir, '.git'), { recursive: true });
  fs.writeFileSync(
    path.join(dir, '.git', 'config'),
    `[core]\n\trepositoryformatversion = 0\n${remoteUrl ? `[remote "origin"]\n\turl = ${remoteUrl}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n` : ''}`,
  );
  return dir;
}

export interface McpSession {
  client: Client;
  dir: string;
  db: string;
  env: Record<string, string>;
  stderr: () => string;
  close: () => Promise<void>;
}

export interface StartOptions {
  dir?: string;
  cwd?: string;
  env?: Record<string, string>;
  args?: string[];
  /** Run `daemon/bin/cairn.js mcp` (the built CLI) instead of the source entry. */
  bin?: boolean;
  clientName?: string;
  /** Declare the MCP roots capability and answer roots/list with these folders. */
  roots?: () => string[];
}

/** Spawn `cairn mcp --db <dir>/cairn.db` and connect an MCP client to it. */
export async function startMcp(o: StartOptions = {}): Promise<McpSession> {
  const dir = o.dir ?? tempDir('cairn-mcp-');
  const db = path.join(dir, 'cairn.db');
  const env = isolatedEnv(dir, o.env);
  const args = o.bin
    ? [BIN, 'mcp', '--db', db, ...(o.args ?? [])]
    : ['--import', TSX_LOADER, ENTRY, '--db', db, '--no-embeddings', ...(o.args ?? [])];
  const transport = new StdioClientTransport({ command: process.execPath, args, env, cwd: o.cwd ?? dir, stderr: 'pipe' });
  let err = '';
  transport.stderr?.on('data', (d: Buffer) => (err += d.toString()));
  const client = new Client(
    { name: o.clientName ?? 'cairn-test-client', version: '1.0.0' },
    o.roots ? { capabilities: { roots: { listChanged: true } } } : {},
  );
  const roots = o.roots;
  if (roots)
    client.setRequestHandler(ListRootsRequestSchema, async () => ({
      roots: roots().map((d) => ({ uri: pathToFileURL(d).href, name: path.basename(d) })),
    }));
  await client.connect(transport);
  return {
    client,
    dir,
    db,
    env,
    stderr: () => err,
    close: async () => {
      await client.close().catch(() => undefined);
    },
  };
}

import { pidAlive } from '../../daemon/src/client/daemon-info';
export { pidAlive };

export function daemonInfo(db: string): { pid: number; socket: string } | null {
  try {
    return JSON.parse(fs.readFileSync(daemonInfoPath(db), 'utf8')) as { pid: number; socket: string };
  } catch {
    return null;
  }
}

/** Wait until a process is gone (SIGKILL after `graceMs`). */
export async function killAndWait(pid: number, graceMs = 5000): Promise<void> {
  if (!pidAlive(pid)) return;
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
      if (Date.now() > deadline + 2000) break;
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Stop the daemon that serves `db` (started detached by ensureDaemon). */
export async function stopDaemon(db: string): Promise<void> {
  const info = daemonInfo(db);
  if (info && info.pid !== process.pid) await killAndWait(info.pid);
}

/**
 * The pids of every `cairn daemon --db <db>` process (Linux: /proc; elsewhere none are found): the owner, and any
 * daemon a client spawned that lost the race for the store and is still retrying its lock.
 */
export function daemonProcesses(db: string): number[] {
  let entries: string[];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const want = path.resolve(db);
  const pids: number[] = [];
  for (const e of entries) {
    if (!/^[0-9]+$/.test(e) || Number(e) === process.pid) continue;
    let argv: string[];
    try {
      argv = fs.readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    const at = argv.indexOf('--db');
    if (argv.includes('daemon') && at >= 0 && path.resolve(argv[at + 1] ?? '') === want) pids.push(Number(e));
  }
  return pids;
}

/**
 * Stop every daemon of `db` for good and remove `dir`. A client that found the owner's socket late may have
 * spawned a second daemon that is still retrying the store lock, creating the lock file at each try; killing the
 * owner alone would hand it the store (a daemon serving files being removed). So: stop every daemon process of the
 * store (found by its command line), then take the store lock ourselves (where the processes cannot be listed: stop
 * any daemon that got it first), and remove the folder while holding it.
 */
export async function stopDaemonAndRemove(db: string, dir: string): Promise<void> {
  for (let i = 0; ; i++) {
    await stopDaemon(db);
    for (const pid of daemonProcesses(db)) await killAndWait(pid);
    if (!fs.existsSync(db + '.lock')) break;
    const held = holdExclusiveLock(db + '.lock', 1);
    if (held) {
      try {
        rmDir(dir);
      } finally {
        held.release();
      }
      return;
    }
    if (i > 200) throw new Error(`the store lock of ${db} is still held after stopping its daemons`);
    await new Promise((r) => setTimeout(r, 25)); // a daemon is between taking the lock and publishing its info
  }
  rmDir(dir);
}

/** A direct protocol client to the daemon serving `db`, to seed data behind the MCP server's back. */
export async function daemonClient(db: string): Promise<StreamClient> {
  const info = daemonInfo(db);
  if (!info) throw new Error(`no daemon serves ${db}`);
  return StreamClient.connect(info.socket);
}

export interface ToolResult {
  isError?: boolean;
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, unknown>;
}

export async function call(s: McpSession, name: string, args: Record<string, unknown> = {}): Promise<ToolResult> {
  return (await s.client.callTool({ name, arguments: args })) as ToolResult;
}

export const textOf = (r: ToolResult): string => r.content.map((c) => c.text ?? '').join('\n');

/** Call a tool that must succeed; returns its structured content and text. */
export async function ok(s: McpSession, name: string, args: Record<string, unknown> = {}): Promise<{ data: any; text: string }> {
  const r = await call(s, name, args);
  if (r.isError) throw new Error(`${name} failed: ${textOf(r)}`);
  return { data: r.structuredContent, text: textOf(r) };
}

/** Call a tool that must fail with the given Cairn error code name (and field). */
export async function fails(
  s: McpSession,
  name: string,
  args: Record<string, unknown>,
  code: string,
  field?: string,
): Promise<{ error: any; text: string }> {
  const r = await call(s, name, args);
  const text = textOf(r);
  if (!r.isError) throw new Error(`${name} should have failed with ${code}, got: ${text}`);
  const error = (r.structuredContent as { error?: { name?: string; field?: string } } | undefined)?.error;
  if (error?.name !== code) throw new Error(`${name}: expected ${code}, got ${error?.name}: ${text}`);
  if (!text.includes(code)) throw new Error(`${name}: the error text does not name ${code}: ${text}`);
  if (field !== undefined) {
    if (error.field !== field) throw new Error(`${name}: expected field ${field}, got ${error.field}: ${text}`);
    if (!text.includes(field)) throw new Error(`${name}: the error text does not name the field ${field}: ${text}`);
  }
  return { error, text };
}

export function rmDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
