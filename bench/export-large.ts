/**
 * Export of a large store (issue 10: past ~512 MB, `cairn export` through the
 * daemon never answered and `--direct` failed with "Invalid string length").
 * Builds a store whose export is about --mb megabytes (default 700), then runs
 * `cairn export FILE` through a daemon and with --direct, reporting the time,
 * the file size, and the daemon's peak resident memory while it exported.
 *
 *   node --import tsx bench/export-large.ts [--mb 700] [--json out.json] [--daemon-heap-mb N] [--direct no] [--bin B]
 *
 * `--bin` runs another build's bin/cairn.js (daemon and CLI), for a before/after in one run.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { Core } from '../daemon/src/server/core';
import { Store } from '../daemon/src/store/store';
import { CAIRN_BIN, spawnDaemon, tempDir } from '../test/helpers';
import { arg } from './stats';

const statusField = (pid: number, field: string): number => {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
  } catch {
    return 0;
  }
};
const rss = (pid: number): number => statusField(pid, 'VmRSS');
/** Anonymous memory only (heap, buffers): what a connection's work costs, without the file pages SQLite reads. */
const rssAnon = (pid: number): number => statusField(pid, 'RssAnon');

const BIN = arg('bin', '') || CAIRN_BIN;

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; ms: number; err: string; peakRss: number }> {
  const t0 = Date.now();
  const p = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  let peakRss = 0;
  p.stderr!.on('data', (d) => (err += d));
  const timer = setInterval(() => (peakRss = Math.max(peakRss, rss(p.pid!))), 100);
  return new Promise((resolve) =>
    p.on('exit', (code) => (clearInterval(timer), resolve({ code: code ?? -1, ms: Date.now() - t0, err: err.slice(-300), peakRss }))),
  );
}

async function main() {
  const mb = Number(arg('mb', '700'));
  const dir = tempDir('cairn-export-large-');
  const db = path.join(dir, 'cairn.db');
  // Each memory: a 48 KB value, exported twice (the memory and its create history entry): ~96 KB per memory.
  const n = Math.ceil((mb * 1024 * 1024) / (96 * 1024));
  const s = new Store(db);
  const core = new Core(s);
  const filler = 'lorem ipsum dolor sit amet consectetur '.repeat(1260).slice(0, 48 * 1024);
  for (let i = 0; i < n; i += 200) {
    await core.call(R.upsertBatch, {
      items: Array.from({ length: Math.min(200, n - i) }, (_, j) => ({
        namespace: 'project.large',
        key: `k${i + j}`,
        value: `${i + j} ${filler}`,
      })),
    });
  }
  s.close();
  const env = { CAIRN_DB: db, XDG_RUNTIME_DIR: dir };
  const out: Record<string, unknown> = { memories: n, storeBytes: fs.statSync(db).size };
  process.stdout.write(`store: ${n} memories, ${(fs.statSync(db).size / 2 ** 20).toFixed(0)} MB\n`);

  // --daemon-heap-mb N runs the daemon with --max-old-space-size=N: shows whether its peak is live data or garbage V8
  // has not collected yet (a bounded heap that still exports the whole store means each page's memory is freed).
  const heapMb = arg('daemon-heap-mb', '');
  const d = await spawnDaemon({ dir, bin: BIN, ...(heapMb ? { env: { NODE_OPTIONS: `--max-old-space-size=${heapMb}` } } : {}) });
  let daemonPeak = 0;
  let daemonAnonPeak = 0;
  const daemonIdle = rss(d.proc.pid!);
  const t = setInterval(() => {
    daemonPeak = Math.max(daemonPeak, rss(d.proc.pid!));
    daemonAnonPeak = Math.max(daemonAnonPeak, rssAnon(d.proc.pid!));
  }, 100);
  const viaDaemon = await runCli(['export', path.join(dir, 'daemon.jsonl')], env);
  clearInterval(t);
  await d.stop();
  const size1 = fs.existsSync(path.join(dir, 'daemon.jsonl')) ? fs.statSync(path.join(dir, 'daemon.jsonl')).size : 0;
  process.stdout.write(
    `through the daemon: exit ${viaDaemon.code}, ${(size1 / 2 ** 20).toFixed(0)} MB in ${(viaDaemon.ms / 1000).toFixed(1)} s; daemon RSS ${(daemonIdle / 2 ** 20).toFixed(0)} MB before, peak ${(daemonPeak / 2 ** 20).toFixed(0)} MB (anonymous ${(daemonAnonPeak / 2 ** 20).toFixed(0)} MB), CLI peak RSS ${(viaDaemon.peakRss / 2 ** 20).toFixed(0)} MB\n`,
  );
  out.daemon = { ...viaDaemon, bytes: size1, daemonIdleRss: daemonIdle, daemonPeakRss: daemonPeak, daemonPeakRssAnon: daemonAnonPeak };
  fs.rmSync(path.join(dir, 'daemon.jsonl'), { force: true });

  if (arg('direct', 'yes') === 'no') {
    fs.rmSync(dir, { recursive: true, force: true });
    process.exitCode = viaDaemon.code ? 1 : 0;
    return;
  }
  const direct = await runCli(['export', path.join(dir, 'direct.jsonl'), '--direct'], env);
  const size2 = fs.existsSync(path.join(dir, 'direct.jsonl')) ? fs.statSync(path.join(dir, 'direct.jsonl')).size : 0;
  process.stdout.write(
    `--direct: exit ${direct.code}, ${(size2 / 2 ** 20).toFixed(0)} MB in ${(direct.ms / 1000).toFixed(1)} s; peak RSS ${(direct.peakRss / 2 ** 20).toFixed(0)} MB${direct.code ? `; ${direct.err}` : ''}\n`,
  );
  out.direct = { ...direct, bytes: size2 };
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
  fs.rmSync(dir, { recursive: true, force: true });
  process.exitCode = viaDaemon.code || direct.code ? 1 : 0;
}

void main();
