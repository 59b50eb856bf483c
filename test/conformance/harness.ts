/**
 * The conformance harness: the same tests run against both stores through the
 * same Core request path a client uses.
 *  - sqlite: a daemon on a temporary SQLite store;
 *  - postgres: a daemon whose `team` root is routed to a real PostgreSQL +
 *    pgvector database (started by the test), connected as a member role that
 *    was granted admin on `team` (so row-level security is on for every query).
 * Tests write under `team.*`; everything outside it (the `user` tree) stays
 * local in both, exactly as for a user.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe } from 'node:test';
import { attachEmbeddings } from '../../daemon/src/index/attach';
import type { Indexer } from '../../daemon/src/index/indexer';
import { Daemon } from '../../daemon/src/server/daemon';
import type { Core } from '../../daemon/src/server/core';
import { attachTeam, type AttachedTeam } from '../../daemon/src/team/attach';
import { tempDir } from '../helpers';
import { startPg, type PgServer } from '../team/pg-server';

process.env.CAIRN_ALLOW_REMOTE_MODELS = '0';

export interface Backend {
  name: 'sqlite' | 'postgres';
  core: Core;
  daemon: Daemon;
  team: AttachedTeam | null;
  indexer: Indexer | null;
  /** The actor history records for a claimed actor (PostgreSQL records the login role). */
  actor(claimed: string): string;
  /** Move the clock of the store that serves `team.*`. */
  setNow(ms: number | null): void;
  /** Wait until vectors of everything written so far are searchable. */
  settle(position: number): Promise<void>;
}

export interface HarnessOptions {
  embeddings?: boolean;
}

async function makeDaemon(
  dir: string,
  o: HarnessOptions,
  teamUrl: string | null,
): Promise<{ d: Daemon; team: AttachedTeam | null; indexer: Indexer | null }> {
  let team: AttachedTeam | null = null;
  let indexer: Indexer | null = null;
  const d = await Daemon.start({
    db: path.join(dir, 'c.db'),
    socket: null,
    sweepEveryMs: 0,
    log: () => {},
    setup: async (dd) => {
      if (o.embeddings) indexer = await attachEmbeddings(dd, { model: 'builtin', allowRemote: false });
      if (teamUrl) team = attachTeam(dd.core, { url: teamUrl, roots: ['team'] }, (c) => dd.broadcast(c));
    },
  });
  if (team && !(await (team as AttachedTeam).ready)) throw new Error('team database did not open');
  const ix = indexer as Indexer | null;
  if (ix) for (let i = 0; i < 400 && ix.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 50));
  if (ix && ix.state !== 'ready') throw new Error(`model did not load: ${ix.lastError}`);
  return { d, team, indexer };
}

let server: Promise<PgServer> | null = null;
/** One PostgreSQL server per test file, started on first use. */
export function pgServer(): Promise<PgServer> {
  if (!server) server = startPg();
  return server;
}

/** Define the same suite for both stores. `get()` returns the current backend inside tests. */
let stopRegistered = false;
export function forEachBackend(title: string, o: HarnessOptions, body: (get: () => Backend) => void): void {
  if (!stopRegistered) {
    stopRegistered = true;
    after(async () => {
      if (server) await (await server).stop();
    });
  }
  for (const name of ['sqlite', 'postgres'] as const) {
    describe(`${title} [${name}]`, () => {
      let b: Backend;
      let dir: string;
      before(async () => {
        dir = tempDir();
        let url: string | null = null;
        if (name === 'postgres') {
          const pg = await pgServer();
          const db = await pg.createDatabase();
          await pg.createRole('alice');
          await pg.grant(db, 'alice', 'team', 'admin');
          url = pg.url('alice', db);
        }
        const { d, team, indexer } = await makeDaemon(dir, o, url);
        b = {
          name,
          core: d.core,
          daemon: d,
          team,
          indexer,
          actor: (claimed) => (name === 'postgres' ? 'alice' : claimed),
          setNow: (ms) => {
            const fn = ms === null ? () => Date.now() : () => ms;
            d.store.now = fn;
            if (team) team.backend.now = fn;
          },
          settle: async (position) => {
            if (name === 'sqlite' && indexer) await indexer.waitFor(position, 20000);
          },
        };
      });
      after(async () => {
        await b?.team?.close();
        await b?.daemon.stop();
        fs.rmSync(dir, { recursive: true, force: true });
      });
      body(() => b);
    });
  }
}
