/**
 * Wiring team memory into a Core (and, through a daemon, into its clients):
 * read `cairn.team.url` / `cairn.team.roots` (flags or CAIRN_TEAM_URL /
 * CAIRN_TEAM_ROOTS), open the team database without blocking start-up, route
 * team namespaces there, embed team memories with the daemon's model, and turn
 * the database's change notifications into `memory/didChange` (store: team).
 *
 * An unreachable database never stops the daemon: team requests fail with
 * `Unavailable` until it answers again. Until the database first opens, the
 * opener (opener.ts) tries again with back-off and on every team request; after
 * that the pool reconnects per request and the change feed by itself.
 */
import type { DidChangeParams } from '../protocol/types';
import { Settings, readEnv, processEnv, type Env } from '../protocol/settings';
import type { Core } from '../server/core';
import { pendingIndexBuilds } from '../store/pg/index-builds';
import { PgBackend } from '../store/pg/backend';
import { redactUrl } from '../store/pg/db';
import { TeamOpener } from './opener';
import { parseRoots, TeamRouter, type VectorSource } from './router';

export interface TeamOptions {
  url?: string;
  roots?: string | string[];
  connectTimeoutMs?: number;
  log?: (m: string) => void;
}

/** The team settings from options, then the environment; null when no team database is configured. */
export function teamConfig(o: TeamOptions = {}, env: Env = processEnv()): { url: string; roots: string[] } | null {
  const url = o.url ?? readEnv('CAIRN_TEAM_URL', env) ?? '';
  if (!url) return null;
  return { url, roots: parseRoots(o.roots ?? readEnv('CAIRN_TEAM_ROOTS', env) ?? (Settings['cairn.team.roots'].default as string)) };
}

export interface AttachedTeam {
  router: TeamRouter;
  backend: PgBackend;
  opener: TeamOpener;
  /** Resolves when the first open attempt ended (true: the schema checked out); later attempts follow with back-off. */
  ready: Promise<boolean>;
  close(): Promise<void>;
}

/**
 * Attach team memory to `core`. `broadcast` receives every team change (for
 * memory/didChange). Returns at once; the database is opened in the background.
 */
export function attachTeam(core: Core, o: TeamOptions & { url: string }, broadcast?: (c: DidChangeParams) => void): AttachedTeam {
  const log = o.log ?? (() => {});
  const backend = new PgBackend({ url: o.url, connectTimeoutMs: o.connectTimeoutMs ?? 3000, log });
  const router = new TeamRouter(backend, parseRoots(o.roots), log);
  router.vectors = (core.hooks.vectors as VectorSource | undefined) ?? undefined;
  core.team = router;
  // Keep following the daemon's vector arm (it is attached after us, or replaced on a model switch).
  Object.defineProperty(router, 'vectors', { get: () => core.hooks.vectors as VectorSource | undefined, configurable: true });
  const off = broadcast ? backend.onChange((c) => broadcast({ ...c, store: 'team' })) : () => {};
  const opener = new TeamOpener(backend, {
    log,
    onOpen: () => {
      log(`team memory: ${redactUrl(o.url)} as ${backend.user}, roots ${router.roots.join(', ')} (schema v${backend.schemaVersion})`);
      // Said once per open: an index a migration asked for and nobody finished building (index-builds.ts).
      void pendingIndexBuilds(backend.pool).then(
        (names) => {
          if (names.length > 0)
            log(
              `team memory: index builds pending (${names.join(', ')}): searches read more of the table until they finish; ` +
                'the database owner finishes them with `cairn team init` (writes go on meanwhile)',
            );
        },
        () => undefined, // a lost connection is the opener's to report
      );
    },
  });
  router.opener = opener;
  const ready = opener.tryOpen();
  return {
    router,
    backend,
    opener,
    ready,
    close: async () => {
      opener.close();
      router.exports.closeAll();
      off();
      if (core.team === router) core.team = undefined;
      await backend.close();
    },
  };
}
