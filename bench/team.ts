/**
 * Team memory on PostgreSQL + pgvector (issue 12), beside the SQLite store:
 *  - load N memories (default 100k) through each store's write path (batches; the
 *    team store embeds on write with the built-in model);
 *  - scoped hybrid search p50/p95 from one daemon (in process: Core -> router ->
 *    store; query embedding included), team store vs SQLite store;
 *  - three daemons writing at once for a fixed time (three PgBackend instances,
 *    each with its own connection pool, as three daemons would have): total
 *    writes/s, VersionConflicts on a contended key set, p50/p95 per write;
 *    SQLite: three concurrent writers into one daemon's store (one daemon per store);
 *    the team writers run twice in the same run, over the `locked` write path (the
 *    transaction with row locks, ~10 round trips) and the `fast` one (two round trips),
 *    so the before/after ratio comes from one run on the same machine load;
 *  - round trips per upsert on each path, counted at the PostgreSQL client.
 * The PostgreSQL server is started here (scripts/pg/server.sh) on loopback.
 *
 *   node --import tsx bench/team.ts [--size 100000] [--seconds 20] [--queries 300] [--json out.json]
 *   (npm run bench:team writes bench/results/team.json)
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { attachEmbeddings } from '../daemon/src/index/attach';
import type { Indexer } from '../daemon/src/index/indexer';
import { CairnError } from '../daemon/src/protocol/errors';
import { Requests as R } from '../daemon/src/protocol/methods';
import type { UpsertParams } from '../daemon/src/protocol/types';
import { Daemon } from '../daemon/src/server/daemon';
import { PgBackend } from '../daemon/src/store/pg/backend';
import { pg as pgLib } from '../daemon/src/store/pg/db';
import { attachTeam } from '../daemon/src/team/attach';
import { tempDir } from '../test/helpers';
import { startPg } from '../test/team/pg-server';
import { memoryAt, queryAt } from './corpus';
import { arg, fmt, now, summarize } from './stats';

process.env.CAIRN_ALLOW_REMOTE_MODELS = '0';
const size = Number(arg('size', '100000'));
const seconds = Number(arg('seconds', '20'));
const queries = Number(arg('queries', '300'));
const jsonOut = arg('json', '');

const toTeam = (m: UpsertParams): UpsertParams => ({ ...m, namespace: m.namespace.replace(/^(project|user)\b/, 'team.$1') });

async function main() {
  const pg = await startPg();
  const dir = tempDir('cairn-bench-team-');
  const out: Record<string, unknown> = { size, seconds, queries, startedAt: new Date().toISOString() };
  const tStart = now();
  // Count round trips: every statement goes through pg.Client#query (the pool's too).
  let statements = 0;
  const clientQuery = pgLib.Client.prototype.query;
  pgLib.Client.prototype.query = function (this: unknown, ...a: unknown[]) {
    statements++;
    return (clientQuery as (...x: unknown[]) => unknown).apply(this, a);
  } as typeof clientQuery;
  try {
    const db = await pg.createDatabase('bench');
    await pg.createRole('alice');
    await pg.grant(db, 'alice', 'team', 'write');
    const url = pg.url('alice', db);
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

    // ---- load
    const BATCH = 1000;
    const loadStore = async (label: string, map: (m: UpsertParams) => UpsertParams) => {
      const t0 = now();
      let pos = 0;
      for (let done = 0; done < size; done += BATCH) {
        const items = Array.from({ length: Math.min(BATCH, size - done) }, (_, k) => map(memoryAt(done + k)));
        pos = (await core.call(R.upsertBatch, { items })).position;
        if ((done / BATCH) % 10 === 0) process.stderr.write(`\r${label}: ${done + items.length}/${size}   `);
      }
      const ms = now() - t0;
      process.stderr.write('\n');
      return { pos, perSec: Math.round((size / ms) * 1000), ms };
    };
    const teamLoad = await loadStore('team load', toTeam);
    const localLoad = await loadStore('sqlite load', (m) => m);
    const waitT0 = now();
    await core.call(R.indexWait, { position: localLoad.pos, timeoutMs: 600_000 });
    out.load = {
      teamPerSec: teamLoad.perSec,
      sqlitePerSec: localLoad.perSec,
      sqliteIndexCatchUpMs: Math.round(now() - waitT0),
      note: 'team: rows, history, change log and vectors in one pass; sqlite: rows first, vectors follow (catch-up shown)',
    };
    console.log(
      `load ${size}: team ${teamLoad.perSec}/s (embedded on write), sqlite ${localLoad.perSec}/s (+${fmt((now() - waitT0) / 1000, 1)} s vector catch-up)`,
    );

    // ---- scoped hybrid search from one daemon
    const lat = async (team: boolean, mode: 'hybrid' | 'fts') => {
      const ms: number[] = [];
      for (let i = 0; i < queries; i++) {
        const q = queryAt(i);
        const root = team ? q.project.replace(/^project/, 'team.project') : q.project;
        const t = now();
        await core.call(R.search, { query: q.query, mode, limit: 10, scope: { root, includeUser: false } });
        ms.push(now() - t);
      }
      return summarize(ms);
    };
    await lat(true, 'hybrid'); // warm caches on both sides
    await lat(false, 'hybrid');
    const search = {
      teamHybrid: await lat(true, 'hybrid'),
      sqliteHybrid: await lat(false, 'hybrid'),
      teamFts: await lat(true, 'fts'),
      sqliteFts: await lat(false, 'fts'),
    };
    out.search = search;
    for (const [k, v] of Object.entries(search)) console.log(`scoped ${k}: p50 ${fmt(v.p50)} ms, p95 ${fmt(v.p95)} ms`);

    // ---- three writers at once
    const HOT = 5; // contended keys: read-modify-write with ifVersion (few, so writers do collide)
    const writersRun = async (
      label: string,
      write: (w: number, p: UpsertParams) => Promise<unknown>,
      read: (w: number, ns: string, key: string) => Promise<{ value: string; version: number }>,
    ) => {
      const ms: number[] = [];
      let conflicts = 0;
      let writes = 0;
      const until = now() + seconds * 1000;
      await Promise.all(
        [0, 1, 2].map(async (w) => {
          for (let i = 0; now() < until; i++) {
            const hot = i % 4 === 0;
            const t = now();
            try {
              if (hot) {
                const key = `hot-${(i * 7 + w) % HOT}`;
                let cur: { value: string; version: number } | null = null;
                try {
                  cur = await read(w, 'team.bench.writers', key);
                } catch (e) {
                  if (!(e instanceof CairnError) || e.codeName !== 'NotFound') throw e;
                }
                await write(w, {
                  namespace: 'team.bench.writers',
                  key,
                  value: `count ${cur ? Number(cur.value.split(' ')[1]) + 1 : 1}`,
                  ifVersion: cur?.version ?? 0,
                });
              } else {
                await write(w, {
                  namespace: `team.bench.writers.w${w}`,
                  key: `k-${i}`,
                  value: `Writer ${w} note ${i}: the ${i % 13} cache is warmed by job ${i % 31}`,
                });
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
      const s = summarize(ms);
      const r = { writesPerSec: Math.round(writes / seconds), conflicts, p50: s.p50, p95: s.p95 };
      console.log(`3 writers, ${label}: ${r.writesPerSec} writes/s, ${conflicts} conflicts, p50 ${fmt(r.p50)} ms, p95 ${fmt(r.p95)} ms`);
      return r;
    };
    const backends = await Promise.all(
      [0, 1, 2].map(async () => {
        const b = await new PgBackend({ url, poolSize: 4 }).open();
        b.embedder = indexer.embedder;
        return b;
      }),
    );
    // Round trips per upsert (creates, then updates of the same keys), each path.
    const roundTrips: Record<string, { create: number; update: number }> = {};
    for (const path of ['locked', 'fast'] as const) {
      const b = backends[0];
      b.writePath = path;
      const n = 100;
      let s0 = statements;
      for (let i = 0; i < n; i++) await b.upsert({ namespace: `team.bench.rt.${path}`, key: `k${i}`, value: `round trip ${i}` });
      const create = (statements - s0) / n;
      s0 = statements;
      for (let i = 0; i < n; i++) await b.upsert({ namespace: `team.bench.rt.${path}`, key: `k${i}`, value: `round trip ${i}, changed` });
      roundTrips[path] = { create, update: (statements - s0) / n };
      console.log(
        `round trips per upsert, ${path}: create ${fmt(create, 1)}, update ${fmt(roundTrips[path].update, 1)} (the vector's own statement included when it is separate)`,
      );
    }
    out.roundTripsPerUpsert = roundTrips;
    const teamRun = async (path: 'locked' | 'fast') => {
      for (const b of backends) b.writePath = path;
      return writersRun(
        `team, ${path} write path (3 daemons)`,
        (w, p) => backends[w].upsert({ ...p, namespace: p.namespace.replace(/^team\.bench/, `team.bench.${path}`) }),
        (w, ns, key) => backends[w].get({ namespace: ns.replace(/^team\.bench/, `team.bench.${path}`), key }),
      );
    };
    const teamLocked = await teamRun('locked');
    const teamW = await teamRun('fast');
    const localW = await writersRun(
      'sqlite (3 clients of 1 daemon)',
      (_w, p) => core.call(R.upsert, { ...p, namespace: p.namespace.replace(/^team\./, 'project.') }),
      (_w, ns, key) => core.call(R.get, { namespace: ns.replace(/^team\./, 'project.'), key }),
    );
    out.writers = {
      team: teamW,
      teamLockedPath: teamLocked,
      sqlite: localW,
      fastVsLocked: Math.round((teamW.writesPerSec / Math.max(1, teamLocked.writesPerSec)) * 100) / 100,
    };
    for (const b of backends) await b.close();
    out.teamStatus = await team.backend.status();
    await team.close();
    await d.stop();
    out.totalSeconds = Math.round((now() - tStart) / 1000);
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
