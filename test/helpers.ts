/** Shared test helpers: temporary stores, a spawned daemon, a socket client. */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DAEMON_NODE_FLAGS, daemonEnv } from '../daemon/src/client/ensure-daemon';
import { StreamClient } from '../daemon/src/client/socket-client';
import { Requests } from '../daemon/src/protocol/methods';
import type { UpsertBatchParams } from '../daemon/src/protocol/types';
import type { z } from 'zod';
import { Core } from '../daemon/src/server/core';
import { Store } from '../daemon/src/store/store';

export const ROOT = path.resolve(__dirname, '..');
export const CAIRN_BIN = path.join(ROOT, 'daemon', 'bin', 'cairn.js');

/** Temp dirs made by this test process, removed when it exits (a test that fails midway, or never removes its own, leaves none behind). */
const made: string[] = [];

export function tempDir(prefix = 'cairn-test-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  if (!made.length)
    process.once('exit', () => {
      for (const d of made) fs.rmSync(d, { recursive: true, force: true });
    });
  made.push(dir);
  return dir;
}

/** A fresh store in a temp dir, and a Core over it (the daemon's request path without a transport). */
export function tempCore(): { core: Core; store: Store; dir: string; close: () => void } {
  const dir = tempDir();
  const store = new Store(path.join(dir, 'cairn.db'));
  const core = new Core(store);
  return {
    core,
    store,
    dir,
    close: () => {
      store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Write `items` through memory/upsertBatch, `per` to a call, asserting every one was written. */
export async function upsertItems(core: Core, items: z.input<typeof UpsertBatchParams>['items'], per = 500): Promise<void> {
  for (let i = 0; i < items.length; i += per) {
    const r = await core.call(Requests.upsertBatch, { items: items.slice(i, i + per) });
    assert.ok(r.results.every((x) => x.ok));
  }
}

/** The keys of the memories at `rowids`, in the same order. */
export function keysOf(store: Store, rowids: number[]): string[] {
  const key = store.db.prepare('SELECT key FROM memories WHERE rowid = ?');
  return rowids.map((r) => (key.get(r) as { key: string }).key);
}

/** Wait for a state: poll `ok` every 5 ms until it holds, failing with `what` after `ms`. */
export async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Assert that a promise rejects with a CairnError of the given code name (and optional field). */
export async function rejectsWith(p: Promise<unknown>, name: string, field?: string): Promise<Record<string, unknown>> {
  try {
    await p;
  } catch (e) {
    const data = (e as { data?: Record<string, unknown> }).data;
    if (!data || data.name !== name) throw new Error(`expected ${name}, got ${(e as Error).message} ${JSON.stringify(data)}`);
    if (field !== undefined && data.field !== field)
      throw new Error(`expected field ${field}, got ${String(data.field)}: ${(e as Error).message}`);
    return data;
  }
  throw new Error(`expected ${name}, but it succeeded`);
}

export interface SpawnedDaemon {
  proc: ChildProcess;
  socket: string;
  db: string;
  dir: string;
  stderr: () => string;
  client: () => Promise<StreamClient>;
  stop: () => Promise<void>;
}

/** Start the built daemon (daemon/dist) on a temp store and socket; waits until the socket answers. */
export async function spawnDaemon(
  opts: { args?: string[]; env?: NodeJS.ProcessEnv; dir?: string; bin?: string; nodeFlags?: string[] } = {},
): Promise<SpawnedDaemon> {
  const dir = opts.dir ?? tempDir();
  const db = path.join(dir, 'cairn.db');
  const socket = path.join(dir, 'd.sock');
  let err = '';
  const proc = spawn(
    process.execPath,
    [
      ...DAEMON_NODE_FLAGS,
      ...(opts.nodeFlags ?? []),
      opts.bin ?? CAIRN_BIN,
      'daemon',
      '--db',
      db,
      '--socket',
      socket,
      ...(opts.args ?? ['--no-embeddings']),
    ],
    {
      env: daemonEnv({ ...process.env, XDG_RUNTIME_DIR: dir, ...opts.env }),
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  proc.stderr!.on('data', (d) => (err += d.toString()));
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`daemon exited ${proc.exitCode}: ${err}`);
    if (fs.existsSync(socket)) {
      try {
        const c = await StreamClient.connect(socket, 1000);
        await c.close();
        break;
      } catch {
        /* not yet */
      }
    }
    if (Date.now() > deadline) throw new Error(`daemon did not start: ${err}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  const clients: StreamClient[] = [];
  return {
    proc,
    socket,
    db,
    dir,
    stderr: () => err,
    client: async () => {
      const c = await StreamClient.connect(socket);
      clients.push(c);
      return c;
    },
    stop: async () => {
      for (const c of clients) await c.close();
      if (proc.exitCode === null) {
        proc.kill('SIGTERM');
        await new Promise<void>((r) => {
          const t = setTimeout(() => {
            proc.kill('SIGKILL');
            r();
          }, 5000);
          proc.once('exit', () => {
            clearTimeout(t);
            r();
          });
        });
      }
      if (!opts.dir) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Whether a process with this pid exists (signal 0 probes without touching it). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * Processes and folders a test file leaves behind: `after` the file, each pid gets SIGTERM (waited for up to
 * 5 s) and each folder is removed. Call at module level; push into the returned lists.
 */
export function cleanupAfter(after: (fn: () => Promise<void>) => void): { pids: number[]; dirs: string[] } {
  const pids: number[] = [];
  const dirs: string[] = [];
  after(async () => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
    for (const pid of pids) for (let i = 0; i < 100 && alive(pid); i++) await new Promise((r) => setTimeout(r, 50));
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  return { pids, dirs };
}

/** The cosine of two float vectors, computed plainly (the reference the vector tests compare the index with). */
export function cosine(a: Float32Array, b: Float32Array): number {
  let d = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return d / Math.sqrt(na * nb);
}
