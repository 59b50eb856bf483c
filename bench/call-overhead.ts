/**
 * The per-call cost of the socket path, on both sides, for builds side by side:
 *
 *   node --import tsx bench/call-overhead.ts --tree before=path/to/other/checkout --tree after=. \
 *     [--rounds 3] [--calls 3000] [--upserts 3000] [--corpus DIR] [--embeddings] [--json out.json]
 *
 * Each `--tree` is a checkout with a built daemon (`daemon/bin/cairn.js`); its own client layer
 * (`daemon/src/client/socket-client.ts`) drives its own daemon, so both sides of the socket are that tree's code.
 * Per round, every tree gets a fresh daemon on a fresh store (`--no-embeddings` unless `--embeddings`), all running
 * at once; then `--calls` awaited trivial calls (`namespaces/list` on the empty store) and `--upserts` awaited single
 * upserts of the side-by-side corpus, one at a time over one socket, each phase in `--slices` slices that alternate
 * between the trees (so the machine's changing load falls on every build alike). Reported per call:
 * the daemon's main-thread CPU and its other threads' (/proc task times), and this process's CPU (the client:
 * framing, JSON, promises), which are fairer than wall-clock figures on a shared machine; calls/s for reference.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnDaemon, tempDir } from '../test/helpers';
import { arg, now } from './stats';

interface Tree {
  label: string;
  root: string;
}
const argv = process.argv.slice(2);
const trees: Tree[] = [];
for (let i = 0; i < argv.length; i++)
  if (argv[i] === '--tree') {
    const [label, root] = argv[++i].split('=');
    trees.push({ label, root: path.resolve(root) });
  }
if (trees.length === 0) trees.push({ label: 'this', root: path.resolve(__dirname, '..') });
const rounds = Number(arg('rounds', '3'));
const calls = Number(arg('calls', '3000'));
const upserts = Number(arg('upserts', '3000'));
const corpus = arg('corpus', '/work/corpus');
const embeddings = argv.includes('--embeddings');
const jsonOut = arg('json', '');
const slices = Number(arg('slices', '20'));

function threadCpu(pid: number): { main: number; other: number } {
  const out = { main: 0, other: 0 };
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const rest = fs
        .readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
        .replace(/^.*\) /s, '')
        .split(' ');
      out[tid === String(pid) ? 'main' : 'other'] += ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
    } catch {
      /* thread ended */
    }
  }
  return out;
}
const clientCpu = () => {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1000;
};

const KINDS: Record<string, string> = { semantic: 'fact', episodic: 'episode', procedural: 'procedure', preference: 'preference' };
const records = fs
  .readFileSync(path.join(corpus, 'corpus-10000.jsonl'), 'utf8')
  .split('\n')
  .filter((l) => l.trim())
  .slice(0, upserts)
  .map((l) => {
    const r = JSON.parse(l) as { namespace: string; key: string; value: string; tags: string[]; kind: string; importance: number };
    return { namespace: r.namespace, key: r.key, value: r.value, tags: r.tags, kind: KINDS[r.kind] ?? 'note', importance: r.importance };
  });

interface Figures {
  perSec: number;
  daemonMainMs: number;
  daemonOtherMs: number;
  clientMs: number;
}
type Client = { call(def: { method: string }, params: unknown): Promise<unknown>; close(): Promise<void> };

interface Session {
  tree: Tree;
  pid: number;
  c: Client;
  stop: () => Promise<void>;
  /** Accumulated per phase: calls, wall ms, daemon main / other CPU ms, client CPU ms. */
  acc: Record<'trivial' | 'upsert', { n: number; wall: number; main: number; other: number; client: number }>;
}

async function open(t: Tree): Promise<Session> {
  const mod = (await import(path.join(t.root, 'daemon/src/client/socket-client.ts'))) as {
    StreamClient: { connect(socket: string): Promise<Client> };
  };
  const dir = tempDir('cairn-calls-');
  const d = await spawnDaemon({
    bin: path.join(t.root, 'daemon/bin/cairn.js'),
    args: embeddings ? ['--model', 'builtin'] : ['--no-embeddings'],
    env: {
      CAIRN_ALLOW_REMOTE_MODELS: '0',
      XDG_DATA_HOME: path.join(dir, 'data'),
      XDG_CACHE_HOME: path.join(dir, 'cache'),
      XDG_CONFIG_HOME: path.join(dir, 'config'),
    },
  });
  const c = await mod.StreamClient.connect(d.socket);
  if (embeddings)
    for (let i = 0; ; i++) {
      const st = (await c.call({ method: 'store/status' }, {})) as { embeddings?: { state?: string } };
      if (st.embeddings?.state === 'ready') break;
      if (i > 600) throw new Error('embedding model not ready');
      await new Promise((r) => setTimeout(r, 100));
    }
  for (let i = 0; i < 200; i++) await c.call(LIST, {}); // warm-up
  const zero = () => ({ n: 0, wall: 0, main: 0, other: 0, client: 0 });
  return {
    tree: t,
    pid: d.proc.pid!,
    c,
    acc: { trivial: zero(), upsert: zero() },
    stop: async () => {
      await c.close();
      await d.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const LIST = { method: 'namespaces/list' };
const UPSERT = { method: 'memory/upsert' };

/** Run calls [from, to) of a phase on one session, adding their CPU and wall time to its totals. */
async function slice(s: Session, phase: 'trivial' | 'upsert', from: number, to: number): Promise<void> {
  const d0 = threadCpu(s.pid);
  const c0 = clientCpu();
  const t0 = now();
  if (phase === 'trivial') for (let i = from; i < to; i++) await s.c.call(LIST, {});
  else for (let i = from; i < to; i++) await s.c.call(UPSERT, records[i]);
  const a = s.acc[phase];
  a.wall += now() - t0;
  a.client += clientCpu() - c0;
  const d1 = threadCpu(s.pid);
  a.main += d1.main - d0.main;
  a.other += d1.other - d0.other;
  a.n += to - from;
}

function figures(a: Session['acc']['trivial']): Figures {
  const r3 = (x: number) => Math.round(x * 1000) / 1000;
  return {
    perSec: Math.round(a.n / (a.wall / 1000)),
    daemonMainMs: r3(a.main / a.n),
    daemonOtherMs: r3(a.other / a.n),
    clientMs: r3(a.client / a.n),
  };
}

async function main() {
  const all: Record<string, { trivial: Figures; upsert: Figures }[]> = {};
  for (let r = 0; r < rounds; r++) {
    // Every tree's daemon runs at once; the phases alternate between them in slices, so a change in the machine's
    // load falls on every build alike.
    const sessions: Session[] = [];
    for (const t of trees) sessions.push(await open(t));
    try {
      for (const [phase, n] of [
        ['trivial', calls],
        ['upsert', records.length],
      ] as const) {
        const step = Math.max(1, Math.ceil(n / slices));
        for (let from = 0, k = 0; from < n; from += step, k++) {
          const order = k % 2 === 0 ? sessions : [...sessions].reverse();
          for (const s of order) await slice(s, phase, from, Math.min(n, from + step));
        }
      }
    } finally {
      for (const s of sessions) await s.stop();
    }
    for (const s of sessions) {
      const f = { trivial: figures(s.acc.trivial), upsert: figures(s.acc.upsert) };
      (all[s.tree.label] ??= []).push(f);
      console.log(
        `round ${r + 1} ${s.tree.label.padEnd(8)} trivial ${f.trivial.perSec}/s daemon main ${f.trivial.daemonMainMs} ms, client ${f.trivial.clientMs} ms | ` +
          `upsert ${f.upsert.perSec}/s daemon main ${f.upsert.daemonMainMs} other ${f.upsert.daemonOtherMs} ms, client ${f.upsert.clientMs} ms`,
      );
    }
  }
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [label, fs_] of Object.entries(all)) {
    const m = (k: 'trivial' | 'upsert', f: keyof Figures) => med(fs_.map((x) => x[k][f]));
    console.log(
      `median ${label.padEnd(8)} trivial ${m('trivial', 'perSec')}/s daemon main ${m('trivial', 'daemonMainMs')} ms, client ${m('trivial', 'clientMs')} ms | ` +
        `upsert ${m('upsert', 'perSec')}/s daemon main ${m('upsert', 'daemonMainMs')} other ${m('upsert', 'daemonOtherMs')} ms, client ${m('upsert', 'clientMs')} ms`,
    );
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ rounds, calls, upserts, embeddings, results: all }, null, 2));
}

void main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
