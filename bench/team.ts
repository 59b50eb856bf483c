/**
 * Team memory on PostgreSQL + pgvector at scale (issues 12 and 23), beside the SQLite store:
 *  - per size (--sizes, default 100k): the team fixture (bench/team-fixture.ts: multi-row INSERTs by the owner,
 *    a FIXTURE, not the product write path) grown to that size, then the HNSW index built (time, disk);
 *  - `memory/get` p50/p95 and scoped hybrid p50/p95 from one daemon (Core -> router -> store, query embedding
 *    included), row-level security on; at the first size, the SQLite store's figures from the same corpus;
 *  - the vector arm over the whole team (where the HNSW index answers) and one project: latency and recall@10
 *    of the index's answer against exact search on the same queries;
 *  - at the first size: 10 writer daemons (10 PgBackends, each its own pool) for a fixed time (writes/s,
 *    VersionConflicts on 5 contended keys, then a check that every acknowledged write is in the database), and
 *    `memory/didChange` fan-out to 20 listening daemons (time from the write's start to each daemon's event);
 *  - round trips per get and per upsert, counted at the PostgreSQL client.
 * The PostgreSQL server is started here (scripts/pg/server.sh) on loopback, sized by CAIRN_PG_OPTIONS (default below),
 * with server.sh's malloc settings (CAIRN_PG_GLIBC_TUNABLES= runs it with glibc's defaults, for a before/after).
 *
 *   node --import tsx bench/team.ts [--sizes 100000,1000000] [--seconds 20] [--queries 300] [--writers 10]
 *     [--listeners 20] [--phases get,search,vector,writers,fanout,sqlite] [--writer-vectors on|off]
 *     [--ef-search 200,400,800] [--json out.json] [--keep DIR]
 *   (npm run bench:team writes bench/results/team.json; --phases runs only the phases named, after the fixture)
 * --keep DIR: the server's data stays in DIR, and a later run with the same DIR reuses its fixture: a size already
 * loaded with its HNSW index built is measured as it is (no load, no build: 1M takes ~45 minutes to build here).
 * CPU per write: this process's CPU (the writer daemons and their embedding worker) and the PostgreSQL server's
 * (postmaster and its children, from /proc), divided by the writes: fair when other work shares the machine.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { attachEmbeddings } from '../daemon/src/index/attach';
import type { Indexer } from '../daemon/src/index/indexer';
import { CairnError } from '../daemon/src/protocol/errors';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { DidChangeParams, UpsertParams } from '../daemon/src/protocol/types';
import { Daemon } from '../daemon/src/server/daemon';
import { PgBackend } from '../daemon/src/store/pg/backend';
import { pg as pgLib } from '../daemon/src/store/pg/db';
import { vectorArm, type ArmHit } from '../daemon/src/store/pg/search';
import { EF_SEARCH, HNSW_DIMS, hnswIndexName, hnswIndexSql } from '../daemon/src/store/pg/vector-index';
import { attachTeam } from '../daemon/src/team/attach';
import { tempDir } from '../test/helpers';
import { startPg } from '../test/team/pg-server';
import { memoryAt, queryAt } from './corpus';
import { arg, cpuNow, fmt, now, summarize } from './stats';
import { loadFixture, toTeam } from './team-fixture';

process.env.CAIRN_ALLOW_REMOTE_MODELS = '0';
const sizes = arg('sizes', arg('size', '100000')).split(',').map(Number);
const seconds = Number(arg('seconds', '20'));
const queries = Number(arg('queries', '300'));
const writerCount = Number(arg('writers', '10'));
const listenerCount = Number(arg('listeners', '20'));
// hnsw.ef_search values tried for the whole-team vector arm (recall on each half of the queries: pick on one, confirm
// on the other).
const efSearches = arg('ef-search', String(EF_SEARCH)).split(',').map(Number);
const jsonOut = arg('json', '');
const keep = arg('keep', '');
const PHASES = ['get', 'search', 'vector', 'writers', 'fanout', 'sqlite'] as const;
const phases = new Set(arg('phases', PHASES.join(',')).split(','));
for (const ph of phases) if (!(PHASES as readonly string[]).includes(ph)) throw new Error(`unknown phase ${ph}: ${PHASES.join(', ')}`);
const runs = (ph: (typeof PHASES)[number]) => phases.has(ph);
// --writer-vectors off: the writer daemons have no embedder (no vector, no HNSW insert per write), to show that cost.
const writerVectors = arg('writer-vectors', 'on') !== 'off';
// Server sizing: the working set (rows, HNSW index) in shared_buffers; the index build's graph in maintenance_work_mem.
process.env.CAIRN_PG_OPTIONS ??=
  Math.max(...sizes) > 200_000
    ? '-c shared_buffers=2GB -c maintenance_work_mem=2GB -c max_parallel_maintenance_workers=1'
    : '-c shared_buffers=512MB -c maintenance_work_mem=512MB';

const load = () => os.loadavg().map((x) => Math.round(x * 100) / 100);

/** CPU ms (user + system) of the PostgreSQL server in `dataDir`: the postmaster and every process it started (live or exited). */
function serverCpuMs(dataDir: string): number {
  const pm = Number(fs.readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  const tick = 1000 / 100; // USER_HZ
  let ms = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // f[1] ppid, f[11] utime, f[12] stime, f[13..14] exited children's
    if (Number(pid) === pm) ms += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * tick;
    else if (Number(f[1]) === pm) ms += (Number(f[11]) + Number(f[12])) * tick;
  }
  return ms;
}

async function main() {
  const pg = await startPg({ keep: keep || undefined });
  const dir = tempDir('cairn-bench-team-');
  const out: Record<string, unknown> = {
    sizes,
    seconds,
    queries,
    serverOptions: process.env.CAIRN_PG_OPTIONS,
    serverGlibcTunables: process.env.CAIRN_PG_GLIBC_TUNABLES ?? 'scripts/pg/server.sh default',
    startedAt: new Date().toISOString(),
    loadAtStart: load(),
  };
  const tStart = now();
  // Count round trips: every statement goes through pg.Client#query (the pool's too).
  let statements = 0;
  const clientQuery = pgLib.Client.prototype.query;
  pgLib.Client.prototype.query = function (this: unknown, ...a: unknown[]) {
    statements++;
    return (clientQuery as (...x: unknown[]) => unknown).apply(this, a);
  } as typeof clientQuery;
  try {
    const db = await pg.createDatabase('bench', keep ? 'bench_keep' : undefined);
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'write');
    const url = pg.url('alice', db);
    const admin = pg.admin(db);
    let indexer!: Indexer;
    const d = await Daemon.start({
      db: path.join(dir, 'local.db'),
      socket: null,
      sweepEveryMs: 0,
      log: () => {},
      setup: async (dd) => {
        indexer = await attachEmbeddings(dd, { model: 'builtin', allowRemote: false });
      },
    });
    for (let i = 0; i < 400 && indexer.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 50));
    const team = attachTeam(d.core, { url, roots: ['team'] });
    if (!(await team.ready)) throw new Error('team database did not open');
    const core = d.core;
    const embedder = indexer.embedder!;

    const lat = async (n: number, fn: (i: number) => Promise<unknown>) => {
      const ms: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = now();
        await fn(i);
        ms.push(now() - t);
      }
      return summarize(ms);
    };
    const searchLat = (teamStore: boolean) =>
      lat(queries, (i) => {
        const q = queryAt(i);
        const root = teamStore ? q.project.replace(/^project/, 'team.project') : q.project;
        return core.call(R.search, { query: q.query, mode: 'hybrid', limit: 10, scope: { root, includeUser: false } });
      });

    const perSize: Record<string, unknown>[] = [];
    out.perSize = perSize;
    // What a kept server already holds: the fixture's size, and whether its HNSW index was built at that size.
    await admin.query('CREATE TABLE IF NOT EXISTS public.bench_fixture (loaded int NOT NULL, indexed boolean NOT NULL)');
    const kept = (await admin.query<{ loaded: number; indexed: boolean }>('SELECT loaded, indexed FROM public.bench_fixture')).rows[0];
    let loaded = keep ? (kept?.loaded ?? 0) : 0;
    const note = async (l: number, indexed: boolean) => {
      await admin.query('DELETE FROM public.bench_fixture');
      await admin.query('INSERT INTO public.bench_fixture VALUES ($1, $2)', [l, indexed]);
    };
    for (const size of sizes) {
      const r: Record<string, unknown> = { size, loadAtStart: load() };
      perSize.push(r);
      if (keep && loaded > size) throw new Error(`--keep ${keep} holds ${loaded} memories: ask for sizes of at least that`);
      if (keep && loaded === size && kept?.indexed) {
        r.reused = keep;
        console.log(`size ${size}: fixture and HNSW index reused from ${keep}`);
      } else {
        // ---- fixture: grow to `size`, then (re)build the HNSW index as a bulk build
        for (const dim of HNSW_DIMS) await admin.query(`DROP INDEX IF EXISTS cairn.${hnswIndexName(dim)}`);
        await note(loaded, false);
        let t0 = now();
        await loadFixture(admin, embedder, loaded, size, (n) => {
          if (n % 20000 === 0) process.stderr.write(`\rteam fixture: ${loaded + n}/${size}   `);
        });
        r.fixtureLoadSeconds = Math.round((now() - t0) / 100) / 10;
        loaded = size;
        process.stderr.write('\n');
        await admin.query('VACUUM ANALYZE cairn.memories');
        t0 = now();
        for (const dim of HNSW_DIMS) await admin.query(hnswIndexSql(dim));
        const disk = (
          await admin.query(
            `SELECT pg_relation_size('cairn.${hnswIndexName(embedder.info.dimension)}') AS hnsw, pg_total_relation_size('cairn.memories') AS total,
                  pg_relation_size('cairn.memories') AS heap`,
          )
        ).rows[0];
        r.hnsw = {
          dimension: embedder.info.dimension,
          buildSeconds: Math.round((now() - t0) / 100) / 10,
          indexMB: Math.round(Number(disk.hnsw) / 1e5) / 10,
          tableMB: Math.round(Number(disk.heap) / 1e5) / 10,
          tableWithIndexesMB: Math.round(Number(disk.total) / 1e5) / 10,
          loadDuringBuild: load(),
        };
        console.log(`size ${size}: fixture ${r.fixtureLoadSeconds} s, HNSW build`, r.hnsw);
        await note(size, true);
      }

      // ---- memory/get, round trips per get
      if (runs('get')) {
        const keys = (i: number) => toTeam(memoryAt((i * 7919) % size));
        await lat(50, (i) => core.call(R.get, { namespace: keys(i).namespace, key: keys(i).key }));
        const s0 = statements;
        r.teamGet = await lat(queries, (i) => core.call(R.get, { namespace: keys(i + 50).namespace, key: keys(i + 50).key }));
        r.roundTripsPerGet = (statements - s0) / queries;
      }
      // ---- scoped hybrid search
      if (runs('search')) {
        await searchLat(true); // warm
        r.teamHybrid = await searchLat(true);
        r.loadAfterSearch = load();
        console.log(
          `size ${size}: get p50 ${fmt((r.teamGet as { p50: number }).p50)} ms (${r.roundTripsPerGet} round trips), hybrid p50/p95 ${fmt((r.teamHybrid as { p50: number }).p50)} / ${fmt((r.teamHybrid as { p95: number }).p95)} ms, load ${load()}`,
        );
      }

      // ---- the vector arm: HNSW vs exact, whole team and one project scope
      if (runs('vector')) {
        const b = team.backend;
        const vq = Math.min(queries, 200);
        const qvs = await embedder.embed(Array.from({ length: vq }, (_, i) => queryAt(i).query));
        const arm: Record<string, unknown> = {};
        for (const scopeOf of ['team', 'project'] as const) {
          const scope = (i: number) => ({
            root: scopeOf === 'team' ? 'team' : queryAt(i).project.replace(/^project/, 'team.project'),
            includeUser: false,
          });
          const run = async (exact: boolean) => {
            const hits: ArmHit[][] = [];
            const s = await lat(vq, async (i) =>
              hits.push(await vectorArm(b, qvs[i], { scope: scope(i), limit: 10, now: Date.now(), exact })),
            );
            return { s, hits };
          };
          await run(false); // warm (and learn which scopes are narrow)
          const ann = await run(false);
          const exact = await run(true);
          // Recall@10 by id, and counting ties: a hit as near as exact search's 10th is as good as it (the synthetic
          // corpus has many memories at exactly the same distance, and which of them exact search lists is arbitrary).
          let found = 0;
          let foundTies = 0;
          let want = 0;
          for (let i = 0; i < vq; i++) {
            const truth = new Set(exact.hits[i].map((h) => h.rowid));
            const kth = Math.min(...exact.hits[i].map((h) => h.score));
            want += truth.size;
            found += ann.hits[i].filter((h) => truth.has(h.rowid)).length;
            foundTies += Math.min(truth.size, ann.hits[i].filter((h) => h.score >= kth - 1e-6).length);
          }
          const recall = Math.round((found / Math.max(1, want)) * 1000) / 1000;
          const recallTies = Math.round((foundTies / Math.max(1, want)) * 1000) / 1000;
          arm[scopeOf] = { recallAt10: recall, recallAt10WithTies: recallTies, index: ann.s, exact: exact.s, load: load() };
          console.log(
            `size ${size}: vector arm, ${scopeOf} scope: index p50/p95 ${fmt(ann.s.p50)}/${fmt(ann.s.p95)} ms, exact ${fmt(exact.s.p50)}/${fmt(exact.s.p95)} ms, recall@10 ${recall} (ties counted: ${recallTies}), load ${load()}`,
          );
        }
        // hnsw.ef_search against recall@10 over the whole team, on each half of the queries (one connection, SET per value).
        const sweep: Record<string, unknown>[] = [];
        const one = await new PgBackend({ url, poolSize: 1 }).open();
        one.embedder = embedder;
        try {
          const scope = { root: 'team', includeUser: false };
          const truth: Set<number>[] = [];
          for (let i = 0; i < vq; i++)
            truth.push(new Set((await vectorArm(one, qvs[i], { scope, limit: 10, now: Date.now(), exact: true })).map((h) => h.rowid)));
          for (const ef of efSearches) {
            await one.pool.query(`SET hnsw.ef_search = ${Number(ef)}`);
            const per: number[] = [];
            const s = await lat(vq, async (i) => {
              const hits = await vectorArm(one, qvs[i], { scope, limit: 10, now: Date.now() });
              per.push(hits.filter((h) => truth[i].has(h.rowid)).length / Math.max(1, truth[i].size));
            });
            const mean = (a: number[]) => Math.round((a.reduce((x, y) => x + y, 0) / Math.max(1, a.length)) * 1000) / 1000;
            const half = Math.floor(vq / 2);
            const row = {
              efSearch: ef,
              recallAt10: mean(per),
              firstHalf: mean(per.slice(0, half)),
              secondHalf: mean(per.slice(half)),
              queriesWithNoTrueHit: per.filter((x) => x === 0).length,
              p50: s.p50,
              p95: s.p95,
              load: load(),
            };
            sweep.push(row);
            console.log(`size ${size}: whole-team vector arm, ef_search ${ef}:`, row);
          }
        } finally {
          await one.close();
        }
        arm.efSearch = sweep;
        r.vectorArm = arm;
      }
      r.loadAtEnd = load();
    }

    // ---- writer daemons at once
    if (runs('writers')) {
      const HOT = 5; // contended keys: read-modify-write with ifVersion (few, so writers do collide)
      const writers = await Promise.all(
        Array.from({ length: writerCount }, async () => {
          const w = await new PgBackend({ url, poolSize: 2 }).open();
          w.embedder = writerVectors ? embedder : null;
          return w;
        }),
      );
      {
        const ms: number[] = [];
        let conflicts = 0;
        const acked = new Map<string, string>(); // namespace/key -> value, for every acknowledged plain write
        const hotAcked = new Map<string, number>(); // hot key -> acknowledged increments
        const t0 = now();
        const until = t0 + seconds * 1000;
        const s0 = statements;
        const cpu0 = cpuNow();
        const pgCpu0 = serverCpuMs(path.join(pg.dir, 'data'));
        let writes = 0;
        await Promise.all(
          writers.map(async (b, w) => {
            for (let i = 0; now() < until; i++) {
              const hot = i % 4 === 0;
              const t = now();
              try {
                if (hot) {
                  const key = `hot-${(i * 7 + w) % HOT}`;
                  let cur: { value: string; version: number } | null = null;
                  try {
                    cur = await b.get({ namespace: 'team.bench.writers', key });
                  } catch (e) {
                    if (!(e instanceof CairnError) || e.codeName !== 'NotFound') throw e;
                  }
                  await b.upsert({
                    namespace: 'team.bench.writers',
                    key,
                    value: `count ${cur ? Number(cur.value.split(' ')[1]) + 1 : 1}`,
                    ifVersion: cur?.version ?? 0,
                  });
                  hotAcked.set(key, (hotAcked.get(key) ?? 0) + 1);
                } else {
                  const p: UpsertParams = {
                    namespace: `team.bench.writers.w${w}`,
                    key: `k-${i}`,
                    value: `Writer ${w} note ${i}: the ${i % 13} cache is warmed by job ${i % 31}`,
                  };
                  await b.upsert(p);
                  acked.set(`${p.namespace}/${p.key}`, p.value);
                }
                writes++;
                ms.push(now() - t);
              } catch (e) {
                if (e instanceof CairnError && e.codeName === 'VersionConflict') conflicts++;
                else throw e;
              }
            }
          }),
        );
        const elapsed = (now() - t0) / 1000;
        const stmts = statements - s0;
        const cpuMs = cpuNow() - cpu0;
        const pgCpuMs = serverCpuMs(path.join(pg.dir, 'data')) - pgCpu0;
        // No lost acknowledged write: every plain write is there with its value; each hot key counts its increments.
        const rows = (
          await admin.query(
            `SELECT n.path || '/' || m.key AS k, m.value FROM cairn.memories m JOIN cairn.namespaces n ON n.id = m.ns_id
           WHERE n.path LIKE 'team.bench.writers%' AND m.deleted_at IS NULL`,
          )
        ).rows as { k: string; value: string }[];
        const stored = new Map(rows.map((x) => [x.k, x.value]));
        let lost = 0;
        for (const [k, v] of acked) if (stored.get(k) !== v) lost++;
        for (const [k, n] of hotAcked) if (stored.get(`team.bench.writers/${k}`) !== `count ${n}`) lost++;
        const s = summarize(ms);
        out.writers = {
          daemons: writerCount,
          vectors: writerVectors,
          writesPerSec: Math.round(writes / elapsed),
          acknowledged: writes,
          lostAcknowledged: lost,
          conflicts,
          p50: s.p50,
          p95: s.p95,
          statementsPerWrite: Math.round((stmts / Math.max(1, writes + conflicts)) * 100) / 100,
          // CPU per write (acknowledged or conflicting): the daemons' process (embedding included) and the server.
          daemonCpuMsPerWrite: Math.round((cpuMs / Math.max(1, writes + conflicts)) * 100) / 100,
          serverCpuMsPerWrite: Math.round((pgCpuMs / Math.max(1, writes + conflicts)) * 100) / 100,
          cpuCoresBusy: Math.round(((cpuMs + pgCpuMs) / 1000 / elapsed) * 100) / 100,
          load: load(),
        };
        console.log(`${writerCount} writer daemons:`, out.writers);
      }
      // Round trips per upsert (creates, then updates of the same keys).
      {
        const b = writers[0];
        let s0 = statements;
        for (let i = 0; i < 100; i++) await b.upsert({ namespace: 'team.bench.rt', key: `k${i}`, value: `round trip ${i}` });
        const create = (statements - s0) / 100;
        s0 = statements;
        for (let i = 0; i < 100; i++) await b.upsert({ namespace: 'team.bench.rt', key: `k${i}`, value: `round trip ${i}, changed` });
        out.roundTripsPerUpsert = { create, update: (statements - s0) / 100 };
      }
      for (const b of writers) await b.close();
    }

    // ---- memory/didChange fan-out to listening daemons
    if (runs('fanout')) {
      const listeners = await Promise.all(Array.from({ length: listenerCount }, async () => new PgBackend({ url, poolSize: 2 }).open()));
      const started = new Map<string, number>();
      const delays: number[] = [];
      const pending = new Map<string, number>();
      let done: (() => void) | null = null;
      const offs = listeners.map((l) =>
        l.onChange((c: DidChangeParams) => {
          const t = started.get(`${c.namespace}/${c.key}`);
          if (t === undefined) return;
          delays.push(now() - t);
          const left = (pending.get(`${c.namespace}/${c.key}`) ?? 0) - 1;
          pending.set(`${c.namespace}/${c.key}`, left);
          if (left === 0 && done) done();
        }),
      );
      await Promise.all(listeners.map((l) => l.listening()));
      const writer = await new PgBackend({ url, poolSize: 2 }).open();
      const M = 100;
      for (let i = 0; i < M; i++) {
        const key = `fan-${i}`;
        pending.set(`team.bench.fanout/${key}`, listenerCount);
        const all = new Promise<void>((res) => (done = res));
        started.set(`team.bench.fanout/${key}`, now());
        await writer.upsert({ namespace: 'team.bench.fanout', key, value: `fan-out ${i}` });
        await Promise.race([all, new Promise((res) => setTimeout(res, 5000))]);
        done = null;
      }
      const s = summarize(delays);
      out.fanout = {
        daemons: listenerCount,
        writes: M,
        events: delays.length,
        expected: M * listenerCount,
        p50: s.p50,
        p95: s.p95,
        load: load(),
      };
      console.log(`didChange fan-out to ${listenerCount} daemons:`, out.fanout);
      offs.forEach((f) => f());
      await writer.close();
      for (const l of listeners) await l.close();
    }

    // ---- SQLite store, same corpus (first size only), through the product write path
    if (runs('sqlite')) {
      const size = sizes[0];
      const t0 = now();
      let pos = 0;
      for (let done = 0; done < size; done += 1000) {
        const items = Array.from({ length: Math.min(1000, size - done) }, (_, k) => memoryAt(done + k));
        pos = (await core.call(R.upsertBatch, { items })).position;
        if ((done / 1000) % 10 === 0) process.stderr.write(`\rsqlite load: ${done + items.length}/${size}   `);
      }
      process.stderr.write('\n');
      for (let i = 0; i < 4 && !(await core.call(R.indexWait, { position: pos, timeoutMs: 600_000 })).reached; i++);
      const keys = (i: number) => memoryAt((i * 7919) % size);
      await lat(50, (i) => core.call(R.get, { namespace: keys(i).namespace, key: keys(i).key }));
      const get = await lat(queries, (i) => core.call(R.get, { namespace: keys(i + 50).namespace, key: keys(i + 50).key }));
      await searchLat(false);
      const hybrid = await searchLat(false);
      out.sqlite = { size, loadSeconds: Math.round((now() - t0) / 100) / 10, get, hybrid, load: load() };
      console.log(`sqlite ${size}: get p50 ${fmt(get.p50)} ms, hybrid p50/p95 ${fmt(hybrid.p50)} / ${fmt(hybrid.p95)} ms`);
      const first = perSize[0] as { teamGet?: { p50: number }; teamHybrid?: { p50: number; p95: number } };
      if (first.teamGet && first.teamHybrid)
        out.ratios = {
          getP50TeamOverSqlite: Math.round((first.teamGet.p50 / get.p50) * 10) / 10,
          hybridP95TeamOverSqlite: Math.round((first.teamHybrid.p95 / hybrid.p95) * 10) / 10,
        };
    }

    out.pgvectorVersion = (await admin.query(`SELECT extversion FROM pg_extension WHERE extname = 'vector'`)).rows[0]?.extversion;
    await team.close();
    await d.stop();
    out.totalSeconds = Math.round((now() - tStart) / 1000);
    out.loadAtEnd = load();
  } finally {
    await pg.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(out, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
