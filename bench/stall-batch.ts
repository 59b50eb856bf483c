/**
 * Stall probe for one huge `memory/upsertBatch` (issue 27: "a 15 MiB batch of 5,000 items stalls other clients
 * 4.9 s"). One process (bench/stall-batch-big.ts, forked, so building and serializing the batch is not counted)
 * sends the batch; meanwhile this process measures, one after another, the round trip of a small request on a
 * connection it holds (`memory/get`) and of a fresh client (connect, `memory/get`, close). Prints the longest of
 * each, their count, and how long the batch took to be answered.
 *
 *   node --import tsx bench/stall-batch.ts [--items 5000] [--mb 15] [--rounds 2] [--embeddings yes|no]
 *       [--bin other/bin/cairn.js ...] [--json out.json] [--cpu-prof DIR]
 *
 * `--bin` may be given several times (label=path): the builds run interleaved per round. `--embeddings yes` (default)
 * starts the daemon with the built-in model, as a daemon started by hand runs. `--cpu-prof DIR` writes the
 * daemon's CPU profile (node --cpu-prof) of each run there, for where the time goes.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DAEMON_NODE_FLAGS, daemonEnv } from '../daemon/src/client/ensure-daemon';
import { StreamClient } from '../daemon/src/client/socket-client';
import { Requests as R } from '../daemon/src/protocol/methods';
import { CAIRN_BIN, ROOT, tempDir } from '../test/helpers';
import { arg } from './stats';

const items = Number(arg('items', '5000'));
const mb = Number(arg('mb', '15'));
const rounds = Number(arg('rounds', '2'));
const embeddings = arg('embeddings', 'yes') !== 'no';
const cpuProf = arg('cpu-prof', '');
const argv = process.argv.slice(2);
const builds: { label: string; bin: string }[] = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] !== '--bin') continue;
  const [label, bin] = argv[i + 1].includes('=') ? argv[i + 1].split('=', 2) : [`build${builds.length}`, argv[i + 1]];
  builds.push({ label, bin: path.resolve(bin) });
}
if (builds.length === 0) builds.push({ label: 'this', bin: CAIRN_BIN });

interface Probe {
  probes: number;
  maxMs: number;
  p99Ms: number;
}
const summary = (w: number[]): Probe => {
  const s = [...w].sort((a, b) => a - b);
  return {
    probes: s.length,
    maxMs: Math.round((s.at(-1) ?? 0) * 10) / 10,
    p99Ms: Math.round((s[Math.floor(s.length * 0.99)] ?? 0) * 10) / 10,
  };
};

async function serving(socket: string, proc: ChildProcess): Promise<void> {
  let err = '';
  proc.stderr?.on('data', (d) => (err += d));
  for (let i = 0; i < 600; i++) {
    if (proc.exitCode !== null) throw new Error(`daemon exited ${proc.exitCode}: ${err}`);
    try {
      const c = await StreamClient.connect(socket, 500);
      const st = await c.call(R.status, {});
      await c.close();
      if (!embeddings || st.embeddings?.state === 'ready') return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`daemon not ready: ${err}`);
}

async function once(bin: string, label: string, round: number) {
  const dir = tempDir('cairn-stall-batch-');
  const socket = path.join(dir, 'd.sock');
  const env = daemonEnv({
    ...process.env,
    XDG_RUNTIME_DIR: dir,
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    CAIRN_ALLOW_REMOTE_MODELS: '0',
  });
  const flags = cpuProf ? [`--cpu-prof`, `--cpu-prof-dir=${path.resolve(cpuProf)}`, `--cpu-prof-name=${label}-${round}.cpuprofile`] : [];
  const proc = spawn(
    process.execPath,
    [
      ...DAEMON_NODE_FLAGS,
      ...flags,
      bin,
      'daemon',
      '--db',
      path.join(dir, 'cairn.db'),
      '--socket',
      socket,
      ...(embeddings ? ['--model', 'builtin'] : ['--no-embeddings']),
    ],
    { env, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const big = fork(path.join(ROOT, 'bench', 'stall-batch-big.ts'), [socket, String(items), String(mb)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const replies: ((m: { ok: boolean; error?: string; detail?: unknown }) => void)[] = [];
  big.on('message', (m: { ok: boolean; error?: string }) => replies.shift()?.(m));
  const ask = (op: string) =>
    new Promise<unknown>((resolve, reject) => {
      replies.push((m) => (m.ok ? resolve(m.detail) : reject(new Error(`${op}: ${m.error}`))));
      big.send({ op });
    });
  try {
    await serving(socket, proc);
    await ask('build');
    const small = await StreamClient.connect(socket);
    await small.call(R.upsert, { namespace: 'project.probe', key: 'p', value: 'probe' });
    // The machine's own noise first: the same probes with nothing else running.
    const idle: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = performance.now();
      const c = await StreamClient.connect(socket);
      await c.call(R.get, { namespace: 'project.probe', key: 'p' });
      await c.close();
      idle.push(performance.now() - t);
    }
    const held: number[] = [];
    const fresh: number[] = [];
    let done = false;
    const t0 = performance.now();
    const run = ask('send').finally(() => (done = true));
    run.catch(() => undefined);
    let answeredAt = 0;
    void run.then(() => (answeredAt = performance.now() - t0));
    // Probe until the batch is answered and its indexing settled (the derived indexes follow it).
    while (!done) {
      let t = performance.now();
      await small.call(R.get, { namespace: 'project.probe', key: 'p' });
      held.push(performance.now() - t);
      t = performance.now();
      const c = await StreamClient.connect(socket);
      await c.call(R.get, { namespace: 'project.probe', key: 'p' });
      fresh.push(performance.now() - t);
      await c.close();
    }
    const detail = (await run) as { ok: number; failed: number; bytes: number; chunks: number };
    // After the answer: the derived indexes (full text, vectors) catch up; probe that too.
    const after: number[] = [];
    const pos = (await small.call(R.status, {})).position;
    let caught = false;
    const wait = small.call(R.indexWait, { position: pos, timeoutMs: 600_000 }).finally(() => (caught = true));
    const probe2 = await StreamClient.connect(socket);
    while (!caught) {
      const t = performance.now();
      await probe2.call(R.get, { namespace: 'project.probe', key: 'p' });
      after.push(performance.now() - t);
    }
    await wait;
    const indexedMs = performance.now() - t0;
    await probe2.close();
    await small.close();
    return {
      label,
      round,
      batchAnsweredMs: Math.round(answeredAt),
      indexedMs: Math.round(indexedMs),
      ...detail,
      idleFreshClient: summary(idle),
      heldClient: summary(held),
      freshClient: summary(fresh),
      whileIndexing: summary(after),
    };
  } finally {
    big.kill('SIGKILL');
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r(null) : proc.once('exit', r)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function main() {
  const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const out: unknown[] = [];
  console.log(`load ${load()}; ${items} items, ${mb} MiB, embeddings ${embeddings ? 'on' : 'off'}`);
  for (let r = 1; r <= rounds; r++) {
    for (const b of builds) {
      const res = await once(b.bin, b.label, r);
      out.push({ ...res, load: load() });
      console.log(
        `[${b.label} round ${r}] batch answered in ${res.batchAnsweredMs} ms (${res.chunks} call(s), ${res.ok} ok, ${res.failed} failed, ` +
          `${(res.bytes / 1048576).toFixed(1)} MiB); idle: fresh client max ${res.idleFreshClient.maxMs} ms; held client max ${res.heldClient.maxMs} ms (${res.heldClient.probes} probes), ` +
          `fresh client max ${res.freshClient.maxMs} ms (${res.freshClient.probes}); indexed at ${res.indexedMs} ms, ` +
          `meanwhile max ${res.whileIndexing.maxMs} ms (${res.whileIndexing.probes}); load ${load()}`,
      );
    }
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
