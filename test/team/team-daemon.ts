/** A daemon (real socket, own SQLite store) with team memory attached, for the team tests. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { StreamClient } from '../../daemon/src/client/socket-client';
import { Notifications } from '../../daemon/src/protocol/methods';
import type { DidChangeParams } from '../../daemon/src/protocol/types';
import { Daemon } from '../../daemon/src/server/daemon';
import { attachTeam, type AttachedTeam } from '../../daemon/src/team/attach';
import { tempDir } from '../helpers';

export interface TeamDaemon {
  d: Daemon;
  team: AttachedTeam;
  client: StreamClient;
  /** Every memory/didChange this daemon's client received. */
  changes: DidChangeParams[];
  /** Resolves when a change matching `pred` arrives (rejects after `ms`). */
  waitChange(pred: (c: DidChangeParams) => boolean, ms?: number): Promise<DidChangeParams>;
  logs: string[];
  stop(): Promise<void>;
}

export async function teamDaemon(
  url: string,
  o: { roots?: string[]; connectTimeoutMs?: number; waitReady?: boolean } = {},
): Promise<TeamDaemon> {
  const dir = tempDir('cairn-team-');
  const logs: string[] = [];
  let team!: AttachedTeam;
  const socket = path.join(dir, 'd.sock');
  const d = await Daemon.start({
    db: path.join(dir, 'c.db'),
    socket,
    sweepEveryMs: 0,
    log: (m) => logs.push(m),
    setup: async (dd) => {
      team = attachTeam(
        dd.core,
        { url, roots: o.roots ?? ['team'], connectTimeoutMs: o.connectTimeoutMs ?? 2000, log: (m) => logs.push(m) },
        (c) => dd.broadcast(c),
      );
    },
  });
  if (o.waitReady !== false) await team.ready;
  const client = await StreamClient.connect(socket);
  const changes: DidChangeParams[] = [];
  const waiters: { pred: (c: DidChangeParams) => boolean; resolve: (c: DidChangeParams) => void }[] = [];
  client.onNotification(Notifications.didChange, (c) => {
    changes.push(c);
    for (const w of [...waiters])
      if (w.pred(c)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(c);
      }
  });
  if (o.waitReady !== false) await Promise.race([team.backend.listening(), new Promise((r) => setTimeout(r, 10000))]);
  return {
    d,
    team,
    client,
    changes,
    logs,
    waitChange(pred, ms = 15000) {
      const seen = changes.find(pred);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve, reject) => {
        const w = { pred, resolve: (c: DidChangeParams) => (clearTimeout(t), resolve(c)) };
        const t = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1);
          reject(new Error(`no matching memory/didChange within ${ms} ms; got ${JSON.stringify(changes)}`));
        }, ms);
        waiters.push(w);
      });
    },
    async stop() {
      await client.close().catch(() => undefined);
      await team.close();
      await d.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
