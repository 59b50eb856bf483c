/**
 * CPU per record of the batched import in one process, without a socket (issue 27): `memory/upsertBatch` through
 * the daemon's request core (validation, the chunked transactions, full text), 500 records per call, on the
 * side-by-side corpus, and (unless `--model none`) the vector indexer on the built-in model in its worker thread,
 * as a daemon runs it, until both indexes hold everything. What a loaded machine moves least: process CPU (all
 * threads), per record, and per thread (`main`: the event loop; `embed`: the embedding worker; `other`: V8's helper
 * threads, the checkpoint worker and the rest). WAL checkpoints run in the background worker, as in a daemon. Run with `node --cpu-prof` for where it goes (each thread writes a profile).
 *
 * `--dup-bands BITSxBANDS` (e.g. 16x16): the vector index keeps LSH buckets for the duplicate checks (VectorTables.dupBands,
 * off by default; `--dup-flips 0|1` their multi-probe depth).
 *
 *   node --import tsx bench/import-cpu.ts [--size 10000] [--corpus DIR] [--per 500] [--model builtin|none] [--rounds 1] [--dup-bands 16x16]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadModel } from '../daemon/src/index/attach';
import { Indexer } from '../daemon/src/index/indexer';
import { Requests as R } from '../daemon/src/protocol/methods';
import { tempCore, ROOT } from '../test/helpers';
import { threadCpuMs } from './proc';
import { arg, now } from './stats';
import { toUpsert, type CorpusRecord } from './workload';

const size = Number(arg('size', '10000'));
const per = Number(arg('per', '500'));
const model = arg('model', 'builtin');
const rounds = Number(arg('rounds', '1'));
const dupBands = arg('dup-bands', '');
const dupFlips = Number(arg('dup-flips', '1'));
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

/** CPU ms of each of this process's threads (bench/proc.ts), keyed by thread id (the event loop's as `main`). */
const threads = (): Map<string, number> => new Map(Object.entries(threadCpuMs(process.pid)));
const round3 = (x: number) => Math.round(x * 1000) / 1000;

async function once() {
  const { core, store, close } = tempCore();
  let indexer: Indexer | null = null;
  let embedTid: string | undefined;
  try {
    store.checkpointInBackground(); // as the daemon does: WAL checkpoints in a worker, not inside this thread's commits
    if (dupBands) {
      const [bits, bands] = dupBands.split('x').map(Number);
      store.vectors.dupBands = { bits, bands };
      store.vectors.dupFlips = dupFlips;
    }
    if (model !== 'none') {
      indexer = new Indexer(store, () => {});
      const before = new Set(threads().keys());
      await indexer.use(await loadModel({ model, allowRemote: false }, () => {}));
      store.onChange(() => indexer!.kick());
      // The embedding worker: the thread that appeared with the model.
      embedTid = [...threads().keys()].find((t) => !before.has(t));
    }
    const mainTid = 'main';
    const t0threads = threads();
    const c0 = process.cpuUsage();
    const t0 = now();
    let position = 0;
    for (const b of bodies) position = (await core.call(R.upsertBatch, JSON.parse(b))).position;
    const writtenMs = now() - t0;
    if (indexer) {
      const r = await indexer.waitFor(position, 600_000);
      if (!r.reached) throw new Error(`vector index at ${r.watermark}, not ${position}`);
    }
    store.catchUpFullText();
    const ms = now() - t0;
    const c = process.cpuUsage(c0);
    const t1threads = threads();
    const byThread = { main: 0, embed: 0, other: 0 };
    for (const [t, v] of t1threads) {
      const d = v - (t0threads.get(t) ?? 0);
      if (t === mainTid) byThread.main += d;
      else if (t === embedTid) byThread.embed += d;
      else byThread.other += d;
    }
    return {
      records: size,
      model,
      dupBands: dupBands || null,
      perSecWritten: Math.round(size / (writtenMs / 1000)),
      perSec: Math.round(size / (ms / 1000)),
      cpuMsPerRecord: round3((c.user + c.system) / 1000 / size),
      userMsPerRecord: round3(c.user / 1000 / size),
      systemMsPerRecord: round3(c.system / 1000 / size),
      threadCpuMsPerRecord: Object.fromEntries(Object.entries(byThread).map(([k, v]) => [k, round3(v / size)])),
      load: (await import('node:os')).loadavg().map((x) => Math.round(x * 100) / 100),
    };
  } finally {
    await indexer?.stop();
    close();
  }
}

async function main() {
  for (let i = 0; i < rounds; i++) console.log(JSON.stringify(await once()));
}
void main();
