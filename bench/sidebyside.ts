/**
 * Side-by-side workload (issue 8): drives Cairn daemons with the shared synthetic
 * developer corpus and its 200 queries, measured exactly as the shared bench
 * README describes, so the figures compare directly with the issue's table
 * (whose peer column is kube-coder's store, measured on the same workload).
 *
 *   node --import tsx bench/sidebyside.ts [--sizes 10000,100000] [--corpus DIR] [--gen gen_corpus.py]
 *       [--cairn label=path/to/bin/cairn.js ...] [--phases writes,search,batch,full,noembed] [--load single|batch] [--json out.json]
 *
 * - corpus: `gen_corpus.py` (Python standard library, deterministic; default `../shared/bench/gen_corpus.py`
 *   next to the repository) writes `corpus-<N>.jsonl` and `queries-<N>.jsonl` into `--corpus`
 *   (default `bench/.corpus`), once; existing files are reused.
 * - every phase starts a fresh daemon on a fresh store in private XDG directories, with the built-in
 *   embedding model, remote models off, embeddings and duplicate detection on (`noembed`: off);
 * - writes: one `memory/upsert` per record in corpus order over one socket connection, each awaited;
 *   records/s over the whole load, per-call p50/p95, daemon CPU per upsert (main thread and others), the bench
 *   client's own CPU per upsert; disk (`.db`+`-wal`+`-shm`) right after the writes and again once the vector
 *   index caught up (`index/wait`). First, the ceiling of the same socket and client: 2,000 awaited calls of a
 *   trivial method (`namespaces/list` on the empty store), calls/s and CPU per call on both sides;
 * - search: after `index/wait` on the last position and 10 untimed warm-ups, the 200 queries with
 *   `limit: 25`, unscoped and scoped (`{root: <query scope>, includeUser: false}`), `hybrid` and `fts`;
 *   nearest-rank percentiles of the client-side round trip;
 * - batch: `memory/upsertBatch`, 100 records per call, on a fresh store;
 * - full: the writes phase with `CAIRN_STORE_SYNCHRONOUS=FULL` (cairn.store.synchronous), at sizes up to `--full-max`
 *   (default 10000), right after the default (NORMAL) writes of the same size, so both durabilities come from one run;
 *   every writes phase reads the durability back from the daemon (`store/status` `synchronous`, SQLite's
 *   `PRAGMA synchronous` on its connection), fails if it is not the one asked for, and labels its JSON and table row;
 * - floor (with full): the disk's cost of a commit in the same run, without Cairn: Python's sqlite3 in process, one
 *   row and its FTS5 entry per commit, WAL, at NORMAL and at FULL (read back). A stand-in for an in-process FULL store
 *   such as the peer's, not its code (which is not available here);
 * - memory: the daemon's peak RSS (VmHWM, reset through /proc/<pid>/clear_refs at each phase).
 *
 * Several `--cairn` builds run interleaved (per size, per phase), so before/after figures
 * come from the same machine state.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StreamClient } from '../daemon/src/client/socket-client';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon, tempDir, ROOT, type SpawnedDaemon } from '../test/helpers';
import { cpuMs, diskMiB, memoryMiB, resetPeak } from './proc';
import { arg, fmt, now, summarize } from './stats';
import { ensureCorpus, readJsonl, toUpsert, type CorpusQuery, type CorpusRecord } from './workload';

const argv = process.argv.slice(2);
const sizes = arg('sizes', '10000,100000').split(',').map(Number);
const corpusDir = path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus')));
const gen = path.resolve(ROOT, arg('gen', path.join('..', 'shared', 'bench', 'gen_corpus.py')));
const phases = new Set(arg('phases', 'writes,search,batch,full,floor').split(','));
const jsonOut = arg('json', '');
/** `batch`: load the store for the search phase with upsertBatch (500 per call) instead of single writes (quick look only). */
const load = arg('load', 'single');
/** The synchronous=FULL writes run at sizes up to this (one fsync per write makes 100k long). */
const fullMax = Number(arg('full-max', '10000'));
const builds: { label: string; bin: string }[] = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] !== '--cairn') continue;
  const [label, bin] = argv[i + 1].includes('=') ? argv[i + 1].split('=', 2) : [`build${builds.length}`, argv[i + 1]];
  builds.push({ label, bin: path.resolve(bin) });
}
if (builds.length === 0) builds.push({ label: 'cairn', bin: path.join(ROOT, 'daemon', 'bin', 'cairn.js') });

// ------------------------------------------------------------------ /proc
/** CPU ms of the main thread and of the others (V8 helpers, libuv pool, the embedding worker) from /proc/<pid>/task. */
function threadCpu(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const f = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = tid === String(pid) ? 'main' : 'other threads';
        const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
        out[name] = (out[name] ?? 0) + ((Number(rest[11]) + Number(rest[12])) * 1000) / 100;
      } catch {
        /* thread ended */
      }
    }
  } catch {
    /* no /proc */
  }
  return out;
}
// ------------------------------------------------------------------ daemon
/** The XDG directories of the daemons started here, removed when the bench exits (the stores are spawnDaemon's own). */
const scratchDirs: string[] = [];
process.on('exit', () => {
  for (const d of scratchDirs) fs.rmSync(d, { recursive: true, force: true });
});

async function start(
  bin: string,
  opts: { embeddings: boolean; env?: NodeJS.ProcessEnv },
): Promise<{ d: SpawnedDaemon; c: StreamClient; pid: number; idleRssMiB: number; synchronous: string }> {
  const dir = tempDir('cairn-sbs-');
  scratchDirs.push(dir);
  const env = {
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
    ...opts.env,
  };
  const d = await spawnDaemon({ bin, args: opts.embeddings ? ['--model', 'builtin'] : ['--no-embeddings'], env });
  const c = await d.client();
  if (opts.embeddings) {
    for (let i = 0; ; i++) {
      const st = await c.call(R.status, {});
      if (st.embeddings?.state === 'ready') break;
      if (i > 600) throw new Error(`embedding model not ready: ${JSON.stringify(st.embeddings)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // The durability the daemon's connection really has (PRAGMA synchronous read back), not the one asked for.
  const synchronous = (await c.call(R.status, {})).synchronous ?? 'unknown (build without store/status synchronous)';
  const wanted = (opts.env?.CAIRN_STORE_SYNCHRONOUS ?? 'normal').toLowerCase();
  if (synchronous !== wanted && !synchronous.startsWith('unknown'))
    throw new Error(`asked for synchronous=${wanted}, the daemon's connection has ${synchronous}`);
  return { d, c, pid: d.proc.pid!, idleRssMiB: memoryMiB(d.proc.pid!, 'VmRSS'), synchronous };
}

async function writes(bin: string, records: CorpusRecord[], opts: { embeddings: boolean; env?: NodeJS.ProcessEnv; keep?: boolean }) {
  const s = await start(bin, opts);
  const { c, pid } = s;
  // The ceiling: the same client and socket with a request that does almost nothing.
  const pings = 2000;
  const pc0 = threadCpu(pid).main ?? 0;
  const pu0 = process.cpuUsage();
  const pt0 = now();
  for (let i = 0; i < pings; i++) await c.call(R.namespacesList, {});
  const pu = process.cpuUsage(pu0);
  const ceiling = {
    perSec: Math.round(pings / ((now() - pt0) / 1000)),
    daemonMainCpuMsPerCall: Math.round((((threadCpu(pid).main ?? 0) - pc0) / pings) * 1000) / 1000,
    clientCpuMsPerCall: Math.round(((pu.user + pu.system) / 1000 / pings) * 1000) / 1000,
  };
  resetPeak(pid);
  const cpu0 = cpuMs(pid);
  const client0 = process.cpuUsage();
  const threads0 = threadCpu(pid);
  const ms: number[] = [];
  let last = 0;
  let dups = 0;
  const t0 = now();
  if (load === 'batch') {
    for (let i = 0; i < records.length; i += 500)
      last = (await c.call(R.upsertBatch, { items: records.slice(i, i + 500).map(toUpsert) })).position;
  } else {
    for (const r of records) {
      const t = now();
      const res = await c.call(R.upsert, toUpsert(r));
      ms.push(now() - t);
      last = res.position;
      if (res.possibleDuplicates?.length) dups++;
    }
  }
  const wallMs = now() - t0;
  const daemonCpuMs = cpuMs(pid) - cpu0;
  const clientCpu = process.cpuUsage(client0);
  const threads1 = threadCpu(pid);
  const perThread: Record<string, number> = {};
  for (const [k, v] of Object.entries(threads1)) perThread[k] = Math.round(((v - (threads0[k] ?? 0)) / records.length) * 100) / 100;
  const result: Record<string, unknown> = {
    /** Durability of every acknowledged write in this phase, read back from the daemon (PRAGMA synchronous). */
    synchronous: s.synchronous,
    records: records.length,
    load,
    perSec: Math.round(records.length / (wallMs / 1000)),
    call: ms.length ? summarize(ms) : null,
    daemonCpuMsPerUpsert: Math.round((daemonCpuMs / records.length) * 100) / 100,
    /** The same CPU split: the main (event loop) thread and the other threads. */
    daemonCpuMsPerUpsertByThread: perThread,
    /** This bench process's CPU per upsert (framing, JSON, awaiting): part of every round trip. */
    clientCpuMsPerUpsert: Math.round(((clientCpu.user + clientCpu.system) / 1000 / records.length) * 1000) / 1000,
    ceiling,
    peakRssMiB: memoryMiB(pid, 'VmHWM'),
    idleRssMiB: s.idleRssMiB,
    diskMiBAfterWrites: diskMiB(s.d.db),
    upsertsReportingDuplicates: dups,
  };
  if (opts.embeddings) {
    const t1 = now();
    const w = await c.call(R.indexWait, { position: last, timeoutMs: 600_000 });
    result.indexCatchUpMs = Math.round(now() - t1);
    result.indexReached = w.reached;
    result.diskMiBAfterIndex = diskMiB(s.d.db);
  }
  if (!opts.keep) {
    await s.d.stop();
    return { result, s: null, last };
  }
  return { result, s, last };
}

async function searches(s: { c: StreamClient; pid: number; d: SpawnedDaemon }, queries: CorpusQuery[], last: number) {
  const { c, pid } = s;
  await c.call(R.indexWait, { position: last, timeoutMs: 600_000 });
  resetPeak(pid);
  for (let i = 0; i < 10; i++) await c.call(R.search, { query: queries[i % queries.length].q, limit: 25 }); // warm-ups
  const out: Record<string, unknown> = {};
  for (const mode of ['hybrid', 'fts'] as const) {
    for (const scoped of [false, true]) {
      const ms: number[] = [];
      for (const q of queries) {
        const t = now();
        await c.call(R.search, { query: q.q, mode, limit: 25, ...(scoped ? { scope: { root: q.scope, includeUser: false } } : {}) });
        ms.push(now() - t);
      }
      out[`${mode}_${scoped ? 'scoped' : 'whole'}`] = summarize(ms);
    }
  }
  out.peakRssMiB = memoryMiB(pid, 'VmHWM');
  out.diskMiB = diskMiB(s.d.db);
  return out;
}

async function batch(bin: string, records: CorpusRecord[]) {
  const s = await start(bin, { embeddings: true });
  resetPeak(s.pid);
  const t0 = now();
  let last = 0;
  for (let i = 0; i < records.length; i += 100)
    last = (await s.c.call(R.upsertBatch, { items: records.slice(i, i + 100).map(toUpsert) })).position;
  const wallMs = now() - t0;
  const result = {
    synchronous: s.synchronous,
    records: records.length,
    perSec: Math.round(records.length / (wallMs / 1000)),
    peakRssMiB: memoryMiB(s.pid, 'VmHWM'),
    diskMiBAfterWrites: diskMiB(s.d.db),
  };
  void last;
  await s.d.stop();
  return result;
}

/** The floor phase's writer (see the header): prints {records, perSec, synchronous}. */
const FLOOR_PY = `
import json, sqlite3, sys, time
corpus, db, sync = sys.argv[1:4]
recs = [json.loads(l) for l in open(corpus) if l.strip()]
c = sqlite3.connect(db, isolation_level=None)
c.execute('PRAGMA journal_mode=WAL')
c.execute('PRAGMA synchronous=' + sync)
got = c.execute('PRAGMA synchronous').fetchone()[0]
c.executescript('''CREATE TABLE m(id INTEGER PRIMARY KEY, namespace TEXT, key TEXT, value TEXT, tags TEXT, kind TEXT, importance REAL);
CREATE VIRTUAL TABLE f USING fts5(value, content='m', content_rowid='id');
CREATE TRIGGER mi AFTER INSERT ON m BEGIN INSERT INTO f(rowid, value) VALUES (new.id, new.value); END;''')
t = time.perf_counter()
for r in recs:
    c.execute('BEGIN')
    c.execute('INSERT INTO m(namespace, key, value, tags, kind, importance) VALUES (?, ?, ?, ?, ?, ?)',
              (r['namespace'], r['key'], r['value'], json.dumps(r['tags']), r['kind'], r['importance']))
    c.execute('COMMIT')
dt = time.perf_counter() - t
print(json.dumps({'records': len(recs), 'perSec': round(len(recs) / dt), 'synchronous': {1: 'normal', 2: 'full'}.get(got, str(got))}))
`;

function floor(size: number, synchronous: 'NORMAL' | 'FULL'): { records: number; perSec: number; synchronous: string } {
  const dir = tempDir('cairn-sbs-floor-');
  scratchDirs.push(dir);
  const out = execFileSync(
    'python3',
    ['-c', FLOOR_PY, path.join(corpusDir, `corpus-${size}.jsonl`), path.join(dir, 'floor.db'), synchronous],
    {
      encoding: 'utf8',
    },
  );
  const r = JSON.parse(out) as { records: number; perSec: number; synchronous: string };
  if (r.synchronous !== synchronous.toLowerCase()) throw new Error(`floor: asked for ${synchronous}, got ${r.synchronous}`);
  return r;
}

const line = (label: string, k: string, v: unknown) => console.log(`[${label}] ${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`);

async function main() {
  ensureCorpus(corpusDir, gen, sizes);
  const results: Record<string, Record<string, unknown>> = {};
  for (const size of sizes) {
    const records = readJsonl<CorpusRecord>(path.join(corpusDir, `corpus-${size}.jsonl`));
    const queries = readJsonl<CorpusQuery>(path.join(corpusDir, `queries-${size}.jsonl`));
    for (const b of builds) {
      const key = `${b.label}_${size}`;
      const r: Record<string, unknown> = (results[key] = {});
      if (phases.has('writes') || phases.has('search')) {
        const w = await writes(b.bin, records, { embeddings: true, keep: phases.has('search') });
        r.writes = w.result;
        const call = (w.result.call ?? { p50: NaN, p95: NaN }) as { p50: number; p95: number };
        line(
          key,
          `writes (${load}), synchronous=${w.result.synchronous}`,
          `${w.result.perSec}/s, p50 ${fmt(call.p50)} p95 ${fmt(call.p95)} ms, ${w.result.daemonCpuMsPerUpsert} ms CPU/upsert (${Object.entries(
            w.result.daemonCpuMsPerUpsertByThread as Record<string, number>,
          )
            .filter(([, v]) => v >= 0.01)
            .map(([k, v]) => `${k} ${v}`)
            .join(
              ', ',
            )}), client ${w.result.clientCpuMsPerUpsert} ms CPU/upsert; ceiling ${JSON.stringify(w.result.ceiling)}; disk ${w.result.diskMiBAfterWrites} MiB (after index ${w.result.diskMiBAfterIndex}), peak RSS ${w.result.peakRssMiB} MiB, idle ${w.result.idleRssMiB} MiB`,
        );
        if (w.s) {
          r.search = await searches(w.s, queries, w.last);
          const sr = r.search as Record<string, { p50: number; p95: number }>;
          for (const k of ['hybrid_whole', 'hybrid_scoped', 'fts_whole', 'fts_scoped'])
            line(key, k, `p50 ${fmt(sr[k].p50)} p95 ${fmt(sr[k].p95)} ms`);
          line(
            key,
            'search peak RSS',
            `${(r.search as { peakRssMiB: number }).peakRssMiB} MiB, disk ${(r.search as { diskMiB: number }).diskMiB} MiB`,
          );
          await w.s.d.stop();
        }
      }
      if (phases.has('full') && size <= fullMax) {
        const w = await writes(b.bin, records, { embeddings: true, env: { CAIRN_STORE_SYNCHRONOUS: 'FULL' } });
        r.writesSynchronousFull = w.result;
        const call = (w.result.call ?? { p50: NaN, p95: NaN }) as { p50: number; p95: number };
        line(
          key,
          `writes, synchronous=${w.result.synchronous}`,
          `${w.result.perSec}/s, p50 ${fmt(call.p50)} p95 ${fmt(call.p95)} ms, ${w.result.daemonCpuMsPerUpsert} ms CPU/upsert (${JSON.stringify(w.result.daemonCpuMsPerUpsertByThread)})`,
        );
      }
      if (phases.has('floor') && phases.has('full') && size <= fullMax && b === builds[0]) {
        r.floorNormal = floor(size, 'NORMAL');
        r.floorFull = floor(size, 'FULL');
        line(
          key,
          'floor (python sqlite3, one row + FTS5 per commit)',
          `NORMAL ${JSON.stringify(r.floorNormal)}, FULL ${JSON.stringify(r.floorFull)}`,
        );
      }
      if (phases.has('batch')) {
        r.batch = await batch(b.bin, records);
        line(key, 'batch(100)', r.batch);
      }
      if (phases.has('noembed')) {
        const w = await writes(b.bin, records, { embeddings: false });
        r.writesNoEmbeddings = w.result;
        line(
          key,
          'writes, embeddings off',
          `${w.result.perSec}/s, ${w.result.daemonCpuMsPerUpsert} ms CPU/upsert (${JSON.stringify(w.result.daemonCpuMsPerUpsertByThread)})`,
        );
      }
      if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ sizes, builds, peer: PEER_JSON, load: loadAvg(), results }, null, 2));
    }
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ sizes, builds, peer: PEER_JSON, load: loadAvg(), results }, null, 2));
  console.log(table(results));
}

/** The machine's load average (1, 5, 15 min) when the JSON was written: the figures are wall-clock on a shared machine. */
function loadAvg(): number[] {
  try {
    return fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);
  } catch {
    return [];
  }
}

/**
 * kube-coder's figures from issue 8 (same corpus, queries and method; no peer code is available here, so they are quoted,
 * not re-run). Its store commits every write with synchronous=FULL (an fsync per write).
 */
const PEER_JSON = {
  store: 'kube-coder',
  synchronous: 'full',
  source: 'issue 8 (quoted, not re-run)',
  singleUpsertsPerSec: { 10000: 459, 100000: 463 },
};
const PEER: Record<string, string> = {
  'single upserts/s': '459 (10k) / 463 (100k), FULL',
  'scoped hybrid p50/p95 ms': '35.9 / 56.0 at 100k (FTS)',
  'whole-store hybrid p50/p95 ms': '48.8 / 79.2 at 100k (FTS)',
  'peak RSS MiB': '~28',
  'disk MiB': '135 at 100k',
};

function table(results: Record<string, Record<string, unknown>>): string {
  const rows: string[] = [
    '| what | ' + Object.keys(results).join(' | ') + ' | kube-coder (issue 8) |',
    '| --- |' + ' --- |'.repeat(Object.keys(results).length + 1),
  ];
  const cell = (f: (r: any) => string) =>
    Object.values(results)
      .map((r) => {
        try {
          return f(r);
        } catch {
          return '—';
        }
      })
      .join(' | ');
  const p = (s: { p50: number; p95: number }) => `${fmt(s.p50, 1)} / ${fmt(s.p95, 1)}`;
  rows.push(
    `| single upserts/s, synchronous=NORMAL (Cairn's default) | ${cell((r) => `${r.writes.perSec} (${r.writes.synchronous})`)} | — (runs FULL only) |`,
  );
  rows.push(
    `| single upserts/s, synchronous=FULL (both stores) | ${cell((r) => `${r.writesSynchronousFull.perSec} (${r.writesSynchronousFull.synchronous})`)} | ${PEER['single upserts/s']} |`,
  );
  rows.push(
    `| same-run floor: python sqlite3, one row + FTS5 per commit, NORMAL / FULL (records/s) | ${cell((r) => `${r.floorNormal.perSec} / ${r.floorFull.perSec}`)} | — |`,
  );
  rows.push(`| upsert call p50/p95 ms, FULL | ${cell((r) => p(r.writesSynchronousFull.call))} | — |`);
  rows.push(
    `| daemon CPU ms per upsert, FULL (main thread) | ${cell((r) => `${r.writesSynchronousFull.daemonCpuMsPerUpsert} (${r.writesSynchronousFull.daemonCpuMsPerUpsertByThread.main})`)} | — |`,
  );
  rows.push(`| upsert call p50/p95 ms, NORMAL | ${cell((r) => p(r.writes.call))} | — |`);
  rows.push(`| daemon CPU ms per upsert, NORMAL | ${cell((r) => String(r.writes.daemonCpuMsPerUpsert))} | 1.4 |`);
  rows.push(`| daemon main-thread CPU ms per upsert | ${cell((r) => String(r.writes.daemonCpuMsPerUpsertByThread.main))} | — |`);
  rows.push(`| bench client CPU ms per upsert | ${cell((r) => String(r.writes.clientCpuMsPerUpsert))} | — |`);
  rows.push(
    `| ceiling: trivial calls/s (daemon main / client CPU ms per call) | ${cell((r) => `${r.writes.ceiling.perSec} (${r.writes.ceiling.daemonMainCpuMsPerCall} / ${r.writes.ceiling.clientCpuMsPerCall})`)} | — |`,
  );
  rows.push(
    `| single upserts/s, embeddings off (main-thread CPU ms) | ${cell((r) => `${r.writesNoEmbeddings.perSec} (${r.writesNoEmbeddings.daemonCpuMsPerUpsertByThread.main})`)} | — |`,
  );
  rows.push(`| upsertBatch(100) records/s (NORMAL) | ${cell((r) => `${r.batch.perSec} (${r.batch.synchronous})`)} | — |`);
  rows.push(`| scoped hybrid p50/p95 ms | ${cell((r) => p(r.search.hybrid_scoped))} | ${PEER['scoped hybrid p50/p95 ms']} |`);
  rows.push(`| whole-store hybrid p50/p95 ms | ${cell((r) => p(r.search.hybrid_whole))} | ${PEER['whole-store hybrid p50/p95 ms']} |`);
  rows.push(`| scoped fts p50/p95 ms | ${cell((r) => p(r.search.fts_scoped))} | — |`);
  rows.push(`| whole-store fts p50/p95 ms | ${cell((r) => p(r.search.fts_whole))} | — |`);
  rows.push(
    `| peak RSS MiB (writes / search), idle | ${cell((r) => `${r.writes.peakRssMiB} / ${r.search.peakRssMiB}, ${r.writes.idleRssMiB}`)} | ${PEER['peak RSS MiB']} |`,
  );
  rows.push(
    `| disk MiB after writes / after index | ${cell((r) => `${r.writes.diskMiBAfterWrites} / ${r.writes.diskMiBAfterIndex}`)} | ${PEER['disk MiB']} |`,
  );
  return rows.join('\n');
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
