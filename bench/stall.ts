/**
 * Stall probe alone (issue 10: one request must not stall the others for more than ~100 ms): while one connection
 * imports (in 1,000-record messages, then in one message) and exports (in pages, then in one reply), another
 * sends small requests one after another; prints the longest and 99th-percentile wait of those.
 *
 *   node --import tsx bench/stall.ts [--memories 10000] [--rounds 1] [--bin other/bin/cairn.js] [--json out.json]
 *
 * `--bin` runs another build's daemon (e.g. the previous commit's) for a before/after in one run; `--rounds N`
 * repeats and reports each round (the machine's load varies). bench/crash-loop.ts runs the same probe.
 */
import * as fs from 'node:fs';
import { stallProbe, type StallResult } from './reliability';
import { arg } from './stats';

async function main() {
  const memories = Number(arg('memories', '10000'));
  const rounds = Number(arg('rounds', '1'));
  const bin = arg('bin', '') || undefined;
  const all: StallResult[] = [];
  for (let r = 0; r < rounds; r++) {
    const st = await stallProbe({ memories, bin });
    all.push(st);
    const f = (what: string, x: { probes: number; maxMs: number; p99Ms: number; bigMs?: number }) =>
      `${what}${x.bigMs !== undefined ? ` (${(x.bigMs / 1000).toFixed(1)} s)` : ''}: ${x.probes} answered, max ${x.maxMs.toFixed(1)} ms, p99 ${x.p99Ms.toFixed(1)} ms`;
    process.stdout.write(
      `round ${r + 1}, ${memories} memories${bin ? ` (${bin})` : ''}\n  ` +
        [
          f('import, 1,000-record messages', st.duringImport),
          f('import, one message', st.duringImportOneMessage),
          f('export, pages', st.duringExportPages),
          f('export, one reply', st.duringExport),
          f('idle', st.idle),
        ].join('\n  ') +
        '\n',
    );
  }
  const json = arg('json', '');
  if (json) fs.writeFileSync(json, JSON.stringify(all, null, 2));
}

void main();
