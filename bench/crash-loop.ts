/**
 * Crash loop and concurrency checks at full counts (CI runs short counts in
 * test/integration/reliability.test.ts):
 *
 *   npm run bench:reliability            # or: node --import tsx bench/crash-loop.ts [--cycles 40] [--writers 4] [--json out.json]
 *
 * 1. SIGKILL the daemon --cycles times while --writers clients write over the socket;
 *    then every acknowledged write must be present and integrity checks must pass.
 * 2. --writers socket clients writing 3,000 upserts each through one daemon.
 * 3. --writers processes writing 500 upserts each directly to the store (no daemon).
 * 4. 2 and 4 daemons started at once on one store, --race-trials times each: exactly one serves.
 * 5. Stall: the longest wait of a small request on one connection while another imports, then exports,
 *    --stall-memories memories (a figure, no pass/fail: timing belongs to benchmarks, not tests).
 * Exits 1 when any check fails. A check whose harness throws is reported as failed; the others still run.
 */
import * as fs from 'node:fs';
import { crashLoop, daemonRace, directWriters, socketWriters, stallProbe } from './reliability';
import { arg } from './stats';

async function main() {
  const cycles = Number(arg('cycles', '40'));
  const writers = Number(arg('writers', '4'));
  const trials = Number(arg('race-trials', '15'));
  const out: Record<string, unknown> = {};
  let ok = true;
  const say = (s: string) => process.stdout.write(s + '\n');

  const crash = await crashLoop({ cycles, writers, upMs: [300, 1500], log: (s) => process.stderr.write(s + '\r') });
  process.stderr.write('\n');
  say(
    `crash loop: ${crash.cycles} SIGKILL cycles, ${writers} writers: ${crash.acked} acked writes, ${crash.lost.length} lost, ${crash.inDoubt} in doubt (connection dropped before the reply), integrity ${crash.integrity}, fts ${crash.ftsIntegrity}, read-back after every restart ${crash.perCycle.every((c) => c.readBack)} (${(crash.ms / 1000).toFixed(1)} s)`,
  );
  ok &&= crash.lost.length === 0 && crash.integrity === 'ok' && crash.ftsIntegrity === 'ok' && crash.perCycle.every((c) => c.readBack);
  out.crashLoop = { ...crash, lost: crash.lost.length };

  const sock = await socketWriters({ writers, perWriter: 3000 });
  say(
    `concurrent socket writers: ${writers} x 3000: ${sock.acked} acked, ${sock.lost.length} lost, integrity ${sock.integrity} (${(sock.ms / 1000).toFixed(1)} s)`,
  );
  ok &&= sock.lost.length === 0 && sock.acked === writers * 3000 && sock.integrity === 'ok';
  out.socketWriters = { ...sock, lost: sock.lost.length };

  const direct = await directWriters({ writers, perWriter: 500 });
  say(
    `concurrent direct writers: ${writers} processes x 500: ${direct.acked} acked, ${direct.lost.length} lost, exits ${direct.exitCodes.join(',')}, integrity ${direct.integrity} (${(direct.ms / 1000).toFixed(1)} s)`,
  );
  ok &&= direct.lost.length === 0 && direct.integrity === 'ok';
  out.directWriters = { ...direct, lost: direct.lost.length };

  for (const n of [2, 4]) {
    const race = await daemonRace({ daemons: n, trials }).catch((e: Error) => ({
      trials,
      exactlyOne: 0,
      failures: [`harness: ${e?.stack ?? e}`],
    }));
    say(
      `${n} daemons at once: exactly one served in ${race.exactlyOne}/${race.trials} trials${race.failures.length ? `; ${race.failures.join('; ')}` : ''}`,
    );
    ok &&= race.exactlyOne === race.trials;
    out[`race${n}`] = race;
  }

  const stallMemories = Number(arg('stall-memories', '10000'));
  try {
    const st = await stallProbe({ memories: stallMemories });
    const f = (x: { probes: number; maxMs: number; p99Ms: number }) =>
      `${x.probes} answered, max ${x.maxMs.toFixed(1)} ms, p99 ${x.p99Ms.toFixed(1)} ms`;
    const g = (what: string, x: { probes: number; maxMs: number; p99Ms: number; bigMs: number }) =>
      `${what} (${(x.bigMs / 1000).toFixed(1)} s): ${f(x)}`;
    say(
      `stall: small requests on another connection while, with ${st.memories} memories, ` +
        [
          g('importing in 1,000-record messages', st.duringImport),
          g('importing in one message', st.duringImportOneMessage),
          g('exporting in pages', st.duringExportPages),
          g('exporting in one reply', st.duringExport),
        ].join('; ') +
        `; idle: ${f(st.idle)}`,
    );
    out.stall = st;
  } catch (e) {
    say(`stall probe failed: ${(e as Error)?.stack ?? e}`);
    ok = false;
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(out, null, 2));
  say(ok ? 'all reliability checks passed' : 'RELIABILITY CHECKS FAILED');
  process.exitCode = ok ? 0 : 1;
}

process.on('unhandledRejection', (e) => {
  process.stdout.write(`unhandled rejection in the harness: ${(e as Error)?.stack ?? e}\n`);
  process.exitCode = 1;
});
void main();
