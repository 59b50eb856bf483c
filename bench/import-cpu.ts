/**
 * CPU per record of the batched import path in one process, without a socket or the embedding model (issue 27):
 * `memory/upsertBatch` through the daemon's request core (validation, the chunked transactions, full text), 500
 * records per call, on the side-by-side corpus. What a loaded machine moves least: process CPU (all threads) and the
 * event loop's share. Run with `node --cpu-prof` for where it goes.
 *
 *   node --import tsx bench/import-cpu.ts [--size 10000] [--corpus DIR] [--per 500]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { tempCore, ROOT } from '../test/helpers';
import { arg, now } from './stats';
import { toUpsert, type CorpusRecord } from './workload';

const size = Number(arg('size', '10000'));
const per = Number(arg('per', '500'));
const corpusDir = path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus')));

const lines = fs
  .readFileSync(path.join(corpusDir, `corpus-${size}.jsonl`), 'utf8')
  .split('\n')
  .filter(Boolean);
// Requests as a client sends them (JSON text), parsed again per call as the daemon does.
const bodies: string[] = [];
for (let i = 0; i < lines.length; i += per)
  bodies.push(
    JSON.stringify({
      items: lines.slice(i, i + per).map((l) => toUpsert(JSON.parse(l) as CorpusRecord)),
    }),
  );

async function main() {
  const { core, store, close } = tempCore();
  try {
    const c0 = process.cpuUsage();
    const t0 = now();
    for (const b of bodies) await core.call(R.upsertBatch, JSON.parse(b));
    store.catchUpFullText();
    const ms = now() - t0;
    const c = process.cpuUsage(c0);
    console.log(
      JSON.stringify({
        records: size,
        perSec: Math.round(size / (ms / 1000)),
        cpuMsPerRecord: Math.round(((c.user + c.system) / 1000 / size) * 1000) / 1000,
        userMsPerRecord: Math.round((c.user / 1000 / size) * 1000) / 1000,
        systemMsPerRecord: Math.round((c.system / 1000 / size) * 1000) / 1000,
      }),
    );
  } finally {
    close();
  }
}
void main();
