/**
 * Batched writes into a large store that is already there (issue 27): what an import costs at the store's size,
 * without the 20 minutes of building a million memories first. A copy of a store kept by `million.ts --keep` is
 * opened by a daemon (built-in model, remote models off) and its vector index read; then the corpus's last
 * `--records` records (default 20,000) are written again under new keys (`-again`, a sentence added to each value),
 * 500 per `memory/upsertBatch`, and `index/wait` is asked on the last position. Reported: records/s written and with
 * the vector index caught up, and the daemon's CPU per record by thread (the event loop as `main`, the others by
 * thread id: the busiest is the embedding worker), with the load average.
 *
 *   node --import tsx bench/import-into.ts --store DIR [--corpus DIR] [--size 1000000] [--records 20000]
 *       [--cairn path/to/bin/cairn.js] [--json out.json] [--cpu-prof DIR]
 *
 * `--store DIR`: the folder `million.ts --keep DIR` left (its `cairn.db` and the files beside it are copied first, so
 * it is never changed). `--corpus DIR` holds `corpus-<size>.jsonl` (million.ts's default folder unless given).
 * `--cpu-prof DIR`: the daemon's CPU profiles (node --cpu-prof: the event loop's and each worker's) go there.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon, tempDir, ROOT } from '../test/helpers';
import { loadAvg, perThread, threadCpuMs } from './proc';
import { arg, now } from './stats';
import { streamRecords, toUpsert } from './workload';

const storeDir = arg('store', '');
const corpusDir = path.resolve(arg('corpus', path.join(ROOT, 'bench', '.corpus')));
const size = Number(arg('size', '1000000'));
const records = Number(arg('records', '20000'));
const bin = arg('cairn', path.join(ROOT, 'daemon', 'bin', 'cairn.js'));
const jsonOut = arg('json', '');
const cpuProf = arg('cpu-prof', '');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  if (!storeDir || !fs.existsSync(path.join(storeDir, 'cairn.db'))) throw new Error('--store DIR: a folder holding cairn.db');
  const corpus = path.join(corpusDir, `corpus-${size}.jsonl`);
  if (!fs.existsSync(corpus)) throw new Error(`no ${corpus} (million.ts --sizes ${size} writes it)`);
  if (!(records > 0 && records <= size)) throw new Error(`--records must be 1..${size}`);
  const dir = tempDir('cairn-import-into-');
  for (const f of fs.readdirSync(storeDir)) if (f.startsWith('cairn.db')) fs.copyFileSync(path.join(storeDir, f), path.join(dir, f));
  const env = {
    CAIRN_ALLOW_REMOTE_MODELS: '0',
    XDG_DATA_HOME: path.join(dir, 'data'),
    XDG_CACHE_HOME: path.join(dir, 'cache'),
    XDG_CONFIG_HOME: path.join(dir, 'config'),
  };
  const nodeFlags = cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(cpuProf)}`] : [];
  const d = await spawnDaemon({ bin, dir, args: ['--model', 'builtin'], env, nodeFlags });
  try {
    const c = await d.client();
    while ((await c.call(R.status, {})).embeddings?.state !== 'ready') await sleep(100);
    // The vector index is read on first use: wait until a hybrid search has the vector arm (at most 10 min).
    const t00 = now();
    while ((await c.call(R.search, { query: 'warm up', limit: 5 })).degraded && now() - t00 < 600_000) await sleep(100);
    const pid = d.proc.pid!;
    const threads0 = threadCpuMs(pid);
    const t0 = now();
    let batch: ReturnType<typeof toUpsert>[] = [];
    let last = 0;
    let i = 0;
    for (const rec of streamRecords(corpus)) {
      if (i++ < size - records) continue;
      const u = toUpsert(rec);
      batch.push({ ...u, key: `${u.key}-again`, value: `${u.value} Checked again on import.` });
      if (batch.length === 500) {
        last = (await c.call(R.upsertBatch, { items: batch })).position;
        batch = [];
      }
    }
    if (batch.length) last = (await c.call(R.upsertBatch, { items: batch })).position;
    const written = now();
    for (let k = 0; k < 20; k++) if ((await c.call(R.indexWait, { position: last, timeoutMs: 600_000 })).reached) break;
    const caughtUp = now();
    const cpuMsPerRecord = perThread(threads0, threadCpuMs(pid), records);
    const result = {
      size,
      records,
      writtenPerSec: Math.round(records / ((written - t0) / 1000)),
      caughtUpPerSec: Math.round(records / ((caughtUp - t0) / 1000)),
      cpuMsPerRecord,
      load: loadAvg(),
    };
    console.log(JSON.stringify(result));
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify({ bin, store: storeDir, result }, null, 2));
  } finally {
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
