/**
 * Embedding throughput of the daemon's Embedder (worker thread, real model), in memories/s.
 *
 *   node --import tsx bench/embed-throughput.ts [model=builtin] [count=20000] [modelPath] [--json out.json]
 *
 * Also: query-embedding latency p50/p95 (200 short queries, one at a time, as a search embeds its
 * query) and the process RSS before the worker starts, after the model loads, and after the run
 * (the worker is a thread of this process, so the difference is the worker's and the model's).
 * For a transformer model use a small count (all-MiniLM-L6-v2: ~100 memories/s on 2 cores).
 *
 * For each batch size (1, 32, 256) it embeds `count` synthetic memories (10 to 80 words of
 * coding-agent prose, varied) with one embed() call per batch, awaiting each call before the
 * next (the indexer's pattern), and also with 4 calls in flight for batch size 1 and 32.
 * Remote loading is off: a hub model must already be in the cache or `modelPath`.
 */
import * as fs from 'node:fs';
import { Embedder } from '../daemon/src/embed';
import { arg, summarize } from './stats';

const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !(all[i - 1] ?? '').startsWith('--'));
const [model = 'builtin', countArg = '20000', modelPath] = positional;
const jsonOut = arg('json', '');
const mib = (b: number) => Math.round((b / 2 ** 20) * 10) / 10;
const N = Number(countArg);

const WORDS = (
  'the daemon store index sqlite vector search memory agent session commit branch test build worker thread ' +
  'embedding model query result cache config file path socket client server request response error retry timeout ' +
  'user project namespace review proposed accepted rejected hover editor extension prompt injection budget token ' +
  'getUserById parseConfigFile http_status_code refactor migration schema watcher event loop latency throughput ' +
  'decided because instead always never should must prefer avoid when after before during fails works slow fast'
).split(' ');
let seed = 42;
const rnd = () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x7fffffff;
};
const memories = Array.from({ length: N }, (_, i) => {
  const len = 10 + Math.floor(rnd() * 70);
  return `memory ${i}: ` + Array.from({ length: len }, () => WORDS[Math.floor(rnd() * WORDS.length)]).join(' ') + '.';
});

/** Memories per wall-clock second, and per CPU-second of this process (all threads: the worker is one). */
async function run(e: Embedder, batch: number, inFlight: number): Promise<[number, number]> {
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let next = 0;
  const lane = async () => {
    while (next < N) {
      const start = next;
      next += batch;
      await e.embed(memories.slice(start, Math.min(start + batch, N)));
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  const cpu = process.cpuUsage(cpu0);
  return [N / ((performance.now() - t0) / 1000), N / ((cpu.user + cpu.system) / 1e6)];
}

(async () => {
  const rssBefore = process.memoryUsage().rss;
  const e = await Embedder.start({ model, modelPath, allowRemote: false, log: (m) => console.error(m) });
  const rssLoaded = process.memoryUsage().rss;
  const { info } = e;
  const report: Record<string, unknown> = {
    model: info.model,
    dimension: info.dimension,
    dtype: info.dtype,
    loadMs: info.loadMs,
    count: N,
    rates: {},
  };
  const avgWords = memories.reduce((s, m) => s + m.split(' ').length, 0) / N;
  console.log(`model ${info.model} (${info.dimension}d, dtype ${info.dtype}, pooling ${info.pooling}, loaded in ${info.loadMs} ms)`);
  console.log(`${N} memories, ${avgWords.toFixed(0)} words on average; node ${process.version}; ${require('node:os').cpus().length} cpus`);
  await e.embed(memories.slice(0, 512)); // warm-up
  for (const [batch, inFlight] of [
    [1, 1],
    [1, 4],
    [32, 1],
    [32, 4],
    [256, 1],
  ] as const) {
    const [rate, perCpu] = await run(e, batch, inFlight);
    (report.rates as Record<string, unknown>)[`batch${batch}x${inFlight}`] = {
      perSecond: Math.round(rate),
      perCpuSecond: Math.round(perCpu),
    };
    console.log(
      `batch ${String(batch).padStart(3)}, ${inFlight} in flight: ${Math.round(rate).toLocaleString('en-US').padStart(7)} memories/s (${Math.round(perCpu).toLocaleString('en-US')} per CPU-second)`,
    );
  }
  const queries = Array.from(
    { length: 200 },
    (_, i) => `how do we ${WORDS[i % WORDS.length]} the ${WORDS[(i * 7) % WORDS.length]} ${WORDS[(i * 13) % WORDS.length]}`,
  );
  const ms: number[] = [];
  for (const q of queries) {
    const t = performance.now();
    await e.embed([q], { priority: true });
    ms.push(performance.now() - t);
  }
  const lat = summarize(ms);
  const rssAfter = process.memoryUsage().rss;
  report.queryLatencyMs = { p50: lat.p50, p95: lat.p95 };
  report.rssMiB = {
    beforeWorker: mib(rssBefore),
    modelLoaded: mib(rssLoaded),
    afterRun: mib(rssAfter),
    workerAndModel: mib(rssAfter - rssBefore),
  };
  console.log(`query embedding (one short query at a time): p50 ${lat.p50.toFixed(2)} ms, p95 ${lat.p95.toFixed(2)} ms`);
  console.log(
    `process RSS: ${mib(rssBefore)} MiB before the worker, ${mib(rssLoaded)} MiB with the model loaded, ${mib(rssAfter)} MiB after the run`,
  );
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(report, null, 2));
  await e.close();
})();
