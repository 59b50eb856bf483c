/**
 * Episodic memory at 200k events (issue 25): about 200 sessions of 1,000 events in a daemon process with the
 * built-in model, measured as the issue's bars ask:
 * - append: one `events/append` of 1,000 events per episode over one socket, each awaited; events/s for the appends
 *   alone and until both event indexes (full text and vectors) caught up (`index/wait`'s `events.reached`);
 * - search: 200 queries scoped to one project (`{root: project, includeUser: false}`), `events/search` hybrid and full
 *   text (limit 10) and `episodes/search` (limit 5), after 10 untimed warm-ups; client-side round trip p50/p95;
 * - expand: `events/expand` (3 before, 3 after) of 500 random events; p50/p95;
 * - memory: the daemon's peak RSS during the searches (VmHWM reset through /proc/<pid>/clear_refs first);
 * - disk: the store's files (.db, -wal, -shm) per event after the indexes caught up, and each table's share (dbstat).
 * The text is the shared developer corpus (`../shared/bench/gen_corpus.py`, 200,000 records, one event each, in corpus
 * order); episode i holds records i*1000 ... and belongs to project i mod P (`--projects P`, default 10, so a project
 * holds 20,000 events; `--projects 1` puts all 200,000 in the searched scope). A query is searched in the project of
 * the episode holding its source record; `found@10` is how often that record's event is among the hits. The load
 * average is recorded with every figure: the machine is shared.
 *
 *   node --import tsx bench/episodes-scale.ts [--events 200000] [--per-episode 1000] [--projects 10]
 *                                             [--corpus DIR] [--json bench/results/episodes-scale.json]
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import Database from 'better-sqlite3';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { EventInput } from '../daemon/src/protocol/types';
import { spawnDaemon, tempDir, ROOT } from '../test/helpers';
import { cpuMs, loadAvg, memoryMiB, resetPeak, threadCpuMs } from './proc';
import { arg, fmt, now, summarize } from './stats';

const EVENTS = Number(arg('events', '200000'));
const PER_EPISODE = Number(arg('per-episode', '1000'));
const PROJECTS = Number(arg('projects', '10'));
const CORPUS = path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus')));
const GEN = path.resolve(ROOT, arg('gen', path.join('..', 'shared', 'bench', 'gen_corpus.py')));
const JSON_OUT = arg('json', '');
const KINDS = ['user', 'agent', 'tool_call', 'tool_result', 'command', 'edit', 'note'];

/** The daemon's CPU time in ms split into its main thread and its other threads (the embedding worker, SQLite, GC). */
function mainAndOthers(pid: number): { main: number; others: number } {
  const { main = 0, ...others } = threadCpuMs(pid);
  return { main, others: Object.values(others).reduce((a, b) => a + b, 0) };
}
const fileBytes = (f: string) => (fs.existsSync(f) ? fs.statSync(f).size : 0);

interface Rec {
  value: string;
  key: string;
}
function corpus(): { records: Rec[]; queries: { q: string; src_key: string }[] } {
  const size = 200000;
  const file = path.join(CORPUS, `corpus-${size}.jsonl`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(CORPUS, { recursive: true });
    execFileSync('python3', [GEN, '--sizes', String(size), '--out', CORPUS], { stdio: 'inherit' });
  }
  const records = fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .slice(0, EVENTS)
    .map((l) => JSON.parse(l) as Rec);
  const queries = fs
    .readFileSync(path.join(CORPUS, `queries-${size}.jsonl`), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { q: string; src_key: string });
  return { records, queries };
}

/** Deterministic PRNG (mulberry32). */
function rng(seed: number) {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = seed;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function main() {
  const { records, queries } = corpus();
  const episodes = Math.ceil(records.length / PER_EPISODE);
  const dir = tempDir('cairn-epscale-');
  const env = {
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
  };
  const d = await spawnDaemon({ dir, args: ['--model', 'builtin'], env });
  const pid = d.proc.pid!;
  const report: Record<string, unknown> = {
    events: records.length,
    episodes,
    perEpisode: PER_EPISODE,
    projects: PROJECTS,
    cpus: os.cpus().length,
  };
  try {
    const c = await d.client();
    for (let i = 0; ; i++) {
      const st = await c.call(R.status, {});
      if (st.embeddings?.state === 'ready') break;
      if (i > 600) throw new Error(`embedding model not ready: ${JSON.stringify(st.embeddings)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    report.idleRssMiB = memoryMiB(pid, 'VmRSS');

    // ---------------------------------------------------------------- append
    const epOfKey = new Map<string, number>();
    const posOfKey = new Map<string, number>();
    const base = Date.UTC(2025, 0, 1);
    const loadBefore = loadAvg();
    const c0 = cpuMs(pid);
    const th0 = mainAndOthers(pid);
    const t0 = now();
    let last = 0;
    for (let e = 0; e < episodes; e++) {
      const ep = await c.call(R.episodesStart, {
        id: `scale-episode-${e}`,
        namespace: `project.p${e % PROJECTS}`,
        title: `session ${e}`,
        source: 'agent:bench',
        startedAt: new Date(base + e * 6 * 3600_000).toISOString(),
      });
      const slice = records.slice(e * PER_EPISODE, (e + 1) * PER_EPISODE);
      const batch: EventInput[] = slice.map((r, i) => {
        const kind = KINDS[i % KINDS.length];
        const words = r.value.split(' ');
        return {
          seq: i,
          kind,
          text: r.value,
          at: new Date(base + e * 6 * 3600_000 + i * 2000).toISOString(),
          ...(kind === 'command' ? { context: { command: words.slice(0, 3).join(' '), exitCode: 0 } } : {}),
          ...(kind === 'edit' ? { context: { path: `src/${r.key.split('-')[0].replace(/\./g, '/')}.ts`, startLine: 1 + (i % 90) } } : {}),
        };
      });
      const res = await c.call(R.eventsAppend, { episodeId: ep.episode.id, events: batch });
      res.results.forEach((x, i) => {
        epOfKey.set(slice[i].key, e);
        posOfKey.set(slice[i].key, x.position);
      });
      last = res.position;
    }
    const tAppend = now() - t0;
    const cAppend = cpuMs(pid) - c0;
    const loadAfterAppend = loadAvg();
    const w = await c.call(R.indexWait, { position: 0, timeoutMs: 600_000 });
    const tIndexed = now() - t0;
    if (!w.events?.reached || w.events.position < last) throw new Error(`event indexes did not catch up: ${JSON.stringify(w.events)}`);
    report.append = {
      eventsPerSecAppendOnly: Math.round(records.length / (tAppend / 1000)),
      eventsPerSecIndexesCaughtUp: Math.round(records.length / (tIndexed / 1000)),
      appendSeconds: Math.round(tAppend) / 1000,
      daemonCpuSecondsAppend: Math.round(cAppend) / 1000,
      daemonCpuSecondsUntilIndexed: Math.round(cpuMs(pid) - c0) / 1000,
      // Threads that ended (a worker's) drop out of this split; the total above counts them.
      threadCpuSecondsUntilIndexed: ((t) => ({
        main: Math.round(t.main - th0.main) / 1000,
        others: Math.round(t.others - th0.others) / 1000,
      }))(mainAndOthers(pid)),
      indexedSeconds: Math.round(tIndexed) / 1000,
      daemonRssMiBAfter: memoryMiB(pid, 'VmRSS'),
      load: { before: loadBefore, afterAppend: loadAfterAppend, afterIndex: loadAvg() },
    };
    console.log(`append: ${JSON.stringify(report.append)}`);

    // ---------------------------------------------------------------- disk
    const files = { db: fileBytes(d.db), wal: fileBytes(d.db + '-wal'), shm: fileBytes(d.db + '-shm') };
    const total = files.db + files.wal + files.shm;
    const tables: Record<string, number> = {};
    try {
      const ro = new Database(d.db, { readonly: true });
      for (const r of ro.prepare(`SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC`).all() as {
        name: string;
        bytes: number;
      }[])
        if (/^(events|event_vectors|events_fts|episodes)/.test(r.name)) tables[r.name] = Math.round((r.bytes / records.length) * 10) / 10;
      ro.close();
    } catch (e) {
      tables.error = NaN;
      console.log(`dbstat: ${(e as Error).message}`);
    }
    report.disk = { files, bytesPerEvent: Math.round(total / records.length), tableBytesPerEvent: tables };
    console.log(`disk: ${JSON.stringify(report.disk)}`);

    // ---------------------------------------------------------------- search
    const qs = queries
      .filter((q) => epOfKey.has(q.src_key))
      .map((q) => ({ ...q, scope: { root: `project.p${epOfKey.get(q.src_key)! % PROJECTS}`, includeUser: false } }));
    for (const q of qs.slice(0, 10)) await c.call(R.eventsSearch, { query: q.q, scope: q.scope, limit: 10 });
    resetPeak(pid);
    const search: Record<string, unknown> = {};
    for (const [name, call] of [
      ['events/search hybrid', (q: (typeof qs)[0]) => c.call(R.eventsSearch, { query: q.q, scope: q.scope, limit: 10 })],
      ['events/search fts', (q: (typeof qs)[0]) => c.call(R.eventsSearch, { query: q.q, scope: q.scope, limit: 10, mode: 'fts' })],
      ['episodes/search hybrid', (q: (typeof qs)[0]) => c.call(R.episodesSearch, { query: q.q, scope: q.scope, limit: 5 })],
    ] as const) {
      const lat: number[] = [];
      let found = 0;
      const l0 = loadAvg();
      const c1 = cpuMs(pid);
      for (const q of qs) {
        const t = now();
        const r = await call(q);
        lat.push(now() - t);
        if ('hits' in r) found += r.hits.some((h) => h.position === posOfKey.get(q.src_key)) ? 1 : 0;
        else found += r.episodes.some((e) => e.episode.id === `scale-episode-${epOfKey.get(q.src_key)}`) ? 1 : 0;
      }
      const s = summarize(lat);
      search[name] = {
        n: s.n,
        p50: +fmt(s.p50),
        p95: +fmt(s.p95),
        p99: +fmt(s.p99),
        daemonCpuMsPerQuery: +fmt((cpuMs(pid) - c1) / qs.length),
        found: +(found / qs.length).toFixed(3),
        load: [l0, loadAvg()],
      };
      console.log(`${name}: ${JSON.stringify(search[name])}`);
    }
    search.peakRssMiB = memoryMiB(pid, 'VmHWM');
    search.rssMiBAfter = memoryMiB(pid, 'VmRSS');
    report.search = search;
    console.log(`search peak RSS ${search.peakRssMiB} MiB (now ${search.rssMiBAfter})`);

    // ---------------------------------------------------------------- expand
    const rand = rng(25);
    const lat: number[] = [];
    const l0 = loadAvg();
    const c2 = cpuMs(pid);
    for (let i = 0; i < 500; i++) {
      const position = 1 + Math.floor(rand() * last);
      const t = now();
      await c.call(R.eventsExpand, { position, before: 3, after: 3 });
      lat.push(now() - t);
    }
    const s = summarize(lat);
    report.expand = {
      n: s.n,
      p50: +fmt(s.p50),
      p95: +fmt(s.p95),
      p99: +fmt(s.p99),
      daemonCpuMsPerCall: +fmt((cpuMs(pid) - c2) / 500),
      load: [l0, loadAvg()],
    };
    console.log(`events/expand: ${JSON.stringify(report.expand)}`);
    report.peakRssMiBOverall = memoryMiB(pid, 'VmHWM');
  } finally {
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (JSON_OUT) {
    fs.mkdirSync(path.dirname(path.resolve(JSON_OUT)), { recursive: true });
    fs.writeFileSync(JSON_OUT, JSON.stringify(report, null, 2));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
