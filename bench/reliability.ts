/**
 * Crash and concurrency checks of the store, shared by the CI tests (short
 * counts, test/integration/reliability.test.ts) and the bench command (full
 * counts, bench/crash-loop.ts). Each spawns the built daemon (npm run build).
 *
 * - crashLoop: writers send upserts over the socket while the daemon is
 *   SIGKILLed and restarted again and again; afterwards every acknowledged
 *   write must be present with its value, and integrity checks must pass.
 * - socketWriters: N clients write at once through one daemon; all acked present.
 * - directWriters: N processes write the store directly (no daemon) at once.
 * - daemonRace: N daemons started at the same instant on one store: exactly one serves.
 * - stallProbe: while one connection imports (then exports) a large store, another sends small requests one
 *   after another; the longest wait for one of them is the stall a big request causes the others.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DAEMON_NODE_FLAGS, daemonEnv } from '../daemon/src/client/ensure-daemon';
import { StreamClient } from '../daemon/src/client/socket-client';
import { Requests as R } from '../daemon/src/protocol/methods';
import { Store } from '../daemon/src/store/store';
import type { ExportRecord } from '../daemon/src/protocol/types';
import { CAIRN_BIN, ROOT, tempCore, tempDir } from '../test/helpers';

export interface Verdict {
  acked: number;
  lost: string[];
  memories: number;
  integrity: string;
  ftsIntegrity: string;
  ftsBehind: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function startDaemon(db: string, socket: string, bin = CAIRN_BIN): ChildProcess {
  // with the daemon settings (as every starter): the pid started is the pid serving, and SIGKILL reaches the daemon
  return spawn(process.execPath, [...DAEMON_NODE_FLAGS, bin, 'daemon', '--db', db, '--socket', socket, '--no-embeddings'], {
    env: daemonEnv({ ...process.env, XDG_RUNTIME_DIR: path.dirname(socket) }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
}

async function waitServing(socket: string, proc: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let err = '';
  proc.stderr?.on('data', (d) => (err += d));
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) throw new Error(`daemon exited ${proc.exitCode}: ${err}`);
    try {
      const c = await StreamClient.connect(socket, 500);
      await c.call(R.status, {});
      await c.close();
      return;
    } catch {
      await sleep(25);
    }
  }
  throw new Error(`daemon did not serve within ${timeoutMs} ms: ${err}`);
}

const exited = (p: ChildProcess) =>
  p.exitCode !== null || p.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => p.once('exit', () => r()));

/** Key -> value of every write that got a successful reply. */
type Acked = Map<string, string>;

/**
 * One writer: keeps `inFlight` upserts pipelined on a socket connection,
 * reconnecting whenever the daemon goes away. A write counts as acknowledged
 * only when its result arrived; one that failed or whose connection dropped
 * is "in doubt" (it may or may not be stored; never counted as lost).
 */
async function writer(
  id: number,
  socket: string,
  acked: Acked,
  stop: () => boolean,
  inFlight = 4,
  limit = Infinity,
): Promise<{ inDoubt: number }> {
  let seq = 0;
  let inDoubt = 0;
  while (!stop() && seq < limit) {
    let c: StreamClient;
    try {
      c = await StreamClient.connect(socket, 500);
    } catch {
      await sleep(20);
      continue;
    }
    // A dropped connection rejects every pending request at once (never leaves one hanging).
    const dropped = new Promise<never>((_, reject) => c.connection.onClose(() => reject(new Error('connection closed'))));
    dropped.catch(() => {});
    let broken = false;
    await Promise.all(
      Array.from({ length: inFlight }, async () => {
        while (!broken && !stop() && seq < limit) {
          const key = `w${id}-${seq++}`;
          const value = `crash loop write ${key} marker${id}x${seq}`;
          try {
            await Promise.race([c.call(R.upsert, { namespace: `project.crash.w${id}`, key, value }), dropped]);
            acked.set(`project.crash.w${id}/${key}`, value);
          } catch {
            inDoubt++;
            broken = true;
          }
        }
      }),
    );
    await c.close().catch(() => {});
  }
  return { inDoubt };
}

/** Open the store directly (no daemon may run) and check every acked write and the indexes. */
export function verify(db: string, acked: Acked): Verdict {
  const s = new Store(db);
  try {
    const get = s.db.prepare(
      'SELECT m.value FROM memories m JOIN namespaces n ON n.id = m.ns_id WHERE n.path = ? AND m.key = ? AND m.deleted_at IS NULL',
    );
    const lost: string[] = [];
    for (const [k, v] of acked) {
      const slash = k.indexOf('/');
      const row = get.get(k.slice(0, slash), k.slice(slash + 1)) as { value: string } | undefined;
      if (!row || row.value !== v) lost.push(k);
    }
    const integrity = s.db.pragma('integrity_check', { simple: true }) as string;
    let ftsIntegrity = 'ok';
    try {
      s.db.exec(`INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 0)`);
    } catch (e) {
      ftsIntegrity = (e as Error).message;
    }
    const memories = s.db.prepare('SELECT count(*) FROM memories').pluck().get() as number;
    return { acked: acked.size, lost, memories, integrity, ftsIntegrity, ftsBehind: s.position() - s.ftsWatermark() };
  } finally {
    s.close();
  }
}

export interface CrashLoopResult extends Verdict {
  cycles: number;
  inDoubt: number;
  /** Per cycle: writes acked while that daemon lived, and whether reads saw the previous cycle's last acked write. */
  perCycle: { acked: number; readBack: boolean }[];
  ms: number;
}

export async function crashLoop(opts: {
  cycles: number;
  writers: number;
  upMs: [number, number];
  dir?: string;
  log?: (s: string) => void;
}): Promise<CrashLoopResult> {
  const dir = opts.dir ?? tempDir('cairn-crash-');
  const db = path.join(dir, 'cairn.db');
  const socket = path.join(dir, 'd.sock');
  const acked: Acked = new Map();
  const t0 = Date.now();
  let stopping = false;
  let proc = startDaemon(db, socket);
  await waitServing(socket, proc);
  const writers = Array.from({ length: opts.writers }, (_, i) => writer(i, socket, acked, () => stopping));
  const perCycle: CrashLoopResult['perCycle'] = [];
  try {
    for (let cycle = 0; cycle < opts.cycles; cycle++) {
      const before = acked.size;
      const up = opts.upMs[0] + Math.random() * (opts.upMs[1] - opts.upMs[0]);
      // Let writes flow, making sure some land in this daemon's life.
      const until = Date.now() + up;
      while (Date.now() < until || acked.size === before) await sleep(10);
      const last = [...acked.entries()].pop()!;
      proc.kill('SIGKILL');
      await exited(proc);
      proc = startDaemon(db, socket);
      await waitServing(socket, proc);
      // Read-your-acked-writes right after recovery, through the new daemon.
      const c = await StreamClient.connect(socket);
      const slash = last[0].indexOf('/');
      const got = await c.call(R.get, { namespace: last[0].slice(0, slash), key: last[0].slice(slash + 1) }).catch(() => null);
      const st = await c.call(R.status, {});
      await c.close();
      perCycle.push({
        acked: acked.size - before,
        readBack: got?.value === last[1] && st.indexes.every((i) => i.name !== 'fts' || i.behind === 0),
      });
      opts.log?.(`cycle ${cycle + 1}/${opts.cycles}: ${acked.size - before} acked, read back ${perCycle[perCycle.length - 1].readBack}`);
    }
  } finally {
    stopping = true;
  }
  const inDoubt = (await Promise.all(writers)).reduce((a, w) => a + w.inDoubt, 0);
  proc.kill('SIGKILL');
  await exited(proc);
  const v = verify(db, acked);
  if (!opts.dir) fs.rmSync(dir, { recursive: true, force: true });
  return { ...v, cycles: opts.cycles, inDoubt, perCycle, ms: Date.now() - t0 };
}

/** N socket clients writing at once through one daemon. */
export async function socketWriters(opts: { writers: number; perWriter: number }): Promise<Verdict & { ms: number }> {
  const dir = tempDir('cairn-conc-');
  const db = path.join(dir, 'cairn.db');
  const socket = path.join(dir, 'd.sock');
  const proc = startDaemon(db, socket);
  const t0 = Date.now();
  try {
    await waitServing(socket, proc);
    const acked: Acked = new Map();
    await Promise.all(Array.from({ length: opts.writers }, (_, i) => writer(i, socket, acked, () => false, 8, opts.perWriter)));
    proc.kill('SIGTERM');
    await exited(proc);
    return { ...verify(db, acked), ms: Date.now() - t0 };
  } finally {
    if (proc.exitCode === null) proc.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** N processes writing the same store directly (the CLI's --direct path: Core over the Store, no daemon) at once. */
export async function directWriters(opts: { writers: number; perWriter: number }): Promise<Verdict & { ms: number; exitCodes: number[] }> {
  const dir = tempDir('cairn-direct-');
  const db = path.join(dir, 'cairn.db');
  const t0 = Date.now();
  try {
    new Store(db).close(); // create the schema once, so the writers race on writes, not on the first migration
    const procs = Array.from({ length: opts.writers }, (_, i) => {
      const p = spawn(
        process.execPath,
        ['--import', 'tsx', path.join(ROOT, 'bench', 'direct-writer.ts'), db, String(i), String(opts.perWriter)],
        { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      p.stdout!.on('data', (d) => (out += d));
      p.stderr!.on('data', (d) => (err += d));
      return new Promise<{ code: number; acked: [string, string][]; err: string }>((resolve) =>
        p.on('exit', (code) =>
          resolve({
            code: code ?? -1,
            acked: out
              .split('\n')
              .filter(Boolean)
              .map((l) => JSON.parse(l) as [string, string]),
            err,
          }),
        ),
      );
    });
    const results = await Promise.all(procs);
    const acked: Acked = new Map(results.flatMap((r) => r.acked));
    return { ...verify(db, acked), ms: Date.now() - t0, exitCodes: results.map((r) => r.code) };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Start `daemons` daemons on one fresh store at the same instant; count how many serve. */
export async function daemonRace(opts: {
  daemons: number;
  trials: number;
}): Promise<{ trials: number; exactlyOne: number; failures: string[] }> {
  let exactlyOne = 0;
  const failures: string[] = [];
  for (let t = 0; t < opts.trials; t++) {
    const dir = tempDir('cairn-race-');
    const db = path.join(dir, 'cairn.db');
    const procs = Array.from({ length: opts.daemons }, (_, i) => startDaemon(db, path.join(dir, `d${i}.sock`)));
    const errs = procs.map(() => '');
    procs.forEach((p, i) => p.stderr!.on('data', (d) => (errs[i] += d)));
    // A failure inside one trial (a socket error, a daemon dying mid-probe) is that trial's failure, never the
    // harness's: the full-count run used to die before printing anything.
    procs.forEach((p) => p.on('error', (e) => failures.push(`trial ${t + 1}: spawn failed: ${e.message}`)));
    try {
      // Losers exit on their own (the lock is taken); wait until only survivors remain and one of them serves.
      const deadline = Date.now() + 30_000;
      let serving: number[] = [];
      while (Date.now() < deadline) {
        const alive = procs.map((p, i) => (p.exitCode === null ? i : -1)).filter((i) => i >= 0);
        serving = [];
        for (const i of alive) {
          try {
            const c = await StreamClient.connect(path.join(dir, `d${i}.sock`), 300);
            const st = await c.call(R.status, {});
            await c.close();
            if (st.daemon?.pid === procs[i].pid) serving.push(i);
          } catch {
            /* not serving (yet) */
          }
        }
        if (alive.length === serving.length && serving.length > 0) break;
        await sleep(50);
      }
      const stillAlive = procs.filter((p) => p.exitCode === null).length;
      if (serving.length === 1 && stillAlive === 1) exactlyOne++;
      else
        failures.push(
          `trial ${t + 1}: ${serving.length} serving, ${stillAlive} alive; exits ${procs.map((p) => p.exitCode).join(',')}; ${errs.join(' | ').slice(0, 400)}`,
        );
    } catch (e) {
      failures.push(`trial ${t + 1}: the harness failed: ${(e as Error)?.stack ?? String(e)}`);
    } finally {
      for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
      await Promise.all(procs.map(exited));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
  return { trials: opts.trials, exactlyOne, failures };
}

export interface StallResult {
  memories: number;
  /**
   * Small requests answered while the big work ran, and the longest / 99th-percentile wait for one (ms): an import
   * sent as the CLI sends it (messages of 1,000 records), the same records in one message, a paged export
   * (store/exportPage, as the CLI exports) and the one-reply store/export (of one namespace: the whole store passes its 16 MiB limit).
   */
  duringImport: { probes: number; maxMs: number; p99Ms: number; bigMs: number };
  duringImportOneMessage: { probes: number; maxMs: number; p99Ms: number; bigMs: number };
  duringExportPages: { probes: number; maxMs: number; p99Ms: number; bigMs: number };
  duringExport: { probes: number; maxMs: number; p99Ms: number; bigMs: number };
  /** The same small request on an idle daemon. */
  idle: { probes: number; maxMs: number; p99Ms: number };
}

/** Records of a store holding `memories` memories (built in-process). */
export async function exportOf(memories: number, namespace = 'project.stall'): Promise<ExportRecord[]> {
  const t = tempCore();
  try {
    for (let b = 0; b < memories; b += 2000) {
      const items = Array.from({ length: Math.min(2000, memories - b) }, (_, i) => ({
        namespace,
        key: `k${b + i}`,
        value: `bulk memory ${b + i} for the stall probe, with some words to index`,
      }));
      await t.core.call(R.upsertBatch, { items });
    }
    return (await t.core.call(R.exportRecords, { includeHistory: true })).records;
  } finally {
    t.close();
  }
}

/**
 * While one connection runs a large store/import (then a whole-store store/export), another sends memory/get
 * requests one after another and times each: the longest wait is the stall the big request causes.
 */
export async function stallProbe(opts: {
  memories: number;
  /** another build's bin/cairn.js (before/after) */ bin?: string;
}): Promise<StallResult> {
  const dir = tempDir('cairn-stall-');
  const db = path.join(dir, 'cairn.db');
  const socket = path.join(dir, 'd.sock');
  const proc = startDaemon(db, socket, opts.bin);
  // The big requests come from another process (bench/stall-big.ts): building, serializing and parsing a 16 MiB
  // message there must not count as the daemon's stall (it did, in this process, before).
  const bigProc = fork(path.join(ROOT, 'bench', 'stall-big.ts'), [socket, String(opts.memories)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const replies: ((m: { ok: boolean; error?: string }) => void)[] = [];
  bigProc.on('message', (m: { ok: boolean; error?: string }) => replies.shift()?.(m));
  const ask = (op: string) =>
    new Promise<void>((resolve, reject) => {
      replies.push((m) => (m.ok ? resolve() : reject(new Error(`${op}: ${m.error}`))));
      bigProc.send({ op });
    });
  try {
    await waitServing(socket, proc);
    await ask('build'); // the records, built in the other process
    const small = await StreamClient.connect(socket);
    await small.call(R.upsert, { namespace: 'project.probe', key: 'p', value: 'probe' });
    const probeWhile = async (running: () => boolean, min = 0) => {
      const waits: number[] = [];
      while (running() || waits.length < min) {
        const t0 = performance.now();
        await small.call(R.get, { namespace: 'project.probe', key: 'p' });
        waits.push(performance.now() - t0);
      }
      waits.sort((a, b) => a - b);
      return { probes: waits.length, maxMs: waits.at(-1) ?? 0, p99Ms: waits[Math.floor(waits.length * 0.99)] ?? 0 };
    };
    const idle = await probeWhile(() => false, 200);
    const timed = async (op: string) => {
      const t0 = performance.now();
      let done = false;
      // Settled either way ends the probing (a refused request must not leave the probe loop spinning).
      const run = ask(op).finally(() => (done = true));
      run.catch(() => undefined); // a refusal is thrown by `await run` below, after probing (never an unhandled rejection that skips the clean-up)
      const probes = await probeWhile(() => !done);
      await run;
      return { ...probes, bigMs: performance.now() - t0 };
    };
    const duringImport = await timed('importBatched');
    const duringImportOneMessage = await timed('importOne');
    const duringExportPages = await timed('exportPages');
    const duringExport = await timed('exportOne');
    await small.close();
    return { memories: opts.memories, duringImport, duringImportOneMessage, duringExportPages, duringExport, idle };
  } finally {
    bigProc.kill('SIGKILL');
    await exited(bigProc);
    proc.kill('SIGKILL');
    await exited(proc);
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
