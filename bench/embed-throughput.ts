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
 * Options: --threads N (onnxruntime intra-op threads; 0 = onnxruntime's own defaults),
 * --worker-batch N (texts per model call in the worker), --dtype q8|fp32.
 *
 * --matrix (a transformer model in `modelPath`): the speed diagnosis of bench/README.md
 * ("Transformer speed"), in one run so the figures compare on a loaded machine:
 *   1. plain onnxruntime-node on the same ONNX files (no worker, no transformers.js model class;
 *      the same tokenizer), fp32 and q8, onnxruntime's default threads (one spinning thread per
 *      core) vs 2 and 1 threads without spinning, model batches of 1 / 8 / 32 length-sorted texts:
 *      memories per wall second and per CPU-second, tokenizer time, padded tokens per text;
 *   2. the Embedder (worker, transformers.js pipeline, the production path) with the settings it
 *      had before (onnxruntime defaults, model batch 32) and with today's defaults (1 thread, no
 *      spinning, model batch 8), plus fp32 and 2 threads, at caller batches 1 / 64 (the indexer's
 *      chunk) / 256 and query latency.
 * Per-CPU-second figures count every thread of this process (getrusage), so they are the honest
 * comparison when other processes share the cores.
 */
import * as fs from 'node:fs';
import { Embedder } from '../daemon/src/embed';
import { arg, summarize } from './stats';

const positional = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && !(all[i - 1] ?? '').startsWith('--'));
const [model = 'builtin', countArg = '20000', modelPath] = positional;
const jsonOut = arg('json', '');
const threadsArg = arg('threads', '');
const workerBatchArg = arg('worker-batch', '');
const dtypeArg = arg('dtype', '');
const matrix = process.argv.includes('--matrix');
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

const cpuSeconds = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1e6;
const round1 = (x: number) => Math.round(x * 10) / 10;

/** Plain onnxruntime-node on the model's ONNX file: tokenize (same tokenizer), run, mean-pool. */
async function plainOrt(dir: string, file: string, threads: number, spin: boolean, batches: number[]) {
  const ort = require('onnxruntime-node') as typeof import('onnxruntime-node');

  const { AutoTokenizer, env } = require('@huggingface/transformers');
  env.localModelPath = dir + '/';
  env.allowRemoteModels = false;
  const tok = await AutoTokenizer.from_pretrained(model);
  const flag = spin ? '1' : '0';
  const opts = {
    ...(threads ? { intraOpNumThreads: threads, interOpNumThreads: 1 } : {}),
    ...(spin ? {} : { extra: { session: { intra_op: { allow_spinning: flag }, inter_op: { allow_spinning: flag } } } }),
  };
  const session = await ort.InferenceSession.create(`${dir}/${model}/onnx/${file}`, opts);
  const sorted = [...memories].sort((a, b) => a.length - b.length);
  const out: Record<string, unknown> = {};
  for (const batch of batches) {
    let tokMs = 0;
    let tokens = 0;
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let k = 0; k < N; k += batch) {
      const t = performance.now();
      const enc = tok(sorted.slice(k, k + batch), { padding: true, truncation: true, max_length: 256 });
      tokMs += performance.now() - t;
      const feeds: Record<string, import('onnxruntime-node').Tensor> = {};
      for (const name of session.inputNames) feeds[name] = new ort.Tensor('int64', enc[name].data, enc[name].dims);
      tokens += enc.input_ids.dims[0] * enc.input_ids.dims[1];
      const res = await session.run(feeds);
      const h = res[session.outputNames[0]];
      const [B, L, H] = h.dims as number[];
      const data = h.data as Float32Array;
      const mask = enc.attention_mask.data as BigInt64Array;
      for (let b = 0; b < B; b++) {
        const v = new Float32Array(H);
        for (let l = 0; l < L; l++) if (mask[b * L + l]) for (let j = 0; j < H; j++) v[j] += data[(b * L + l) * H + j];
      }
    }
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(process.cpuUsage(c0));
    out[`batch${batch}`] = {
      perSecond: round1(N / wall),
      perCpuSecond: round1(N / cpu),
      tokenizeMsPerText: Math.round((tokMs / N) * 100) / 100,
      paddedTokensPerText: round1(tokens / N),
    };
    console.log(
      `  plain ORT ${file.padEnd(20)} ${(threads ? `${threads} thread${threads > 1 ? 's' : ''}` : 'ORT default').padEnd(11)} ${spin ? 'spin' : 'no spin'}  batch ${String(batch).padStart(2)}: ${round1(N / wall)} /s wall, ${round1(N / cpu)} per CPU-s (tokenizer ${((tokMs / N) * 1000).toFixed(0)} µs/text, ${round1(tokens / N)} padded tokens/text)`,
    );
  }
  await session.release();
  return out;
}

/** The Embedder (production path) with the given options: caller batches, then query latency. */
async function embedderRun(label: string, opts: { threads?: number; batchSize?: number; dtype?: string }, callerBatches: number[]) {
  const e = await Embedder.start({ model, modelPath, allowRemote: false, log: (m) => console.error(m), ...opts });
  const out: Record<string, unknown> = { options: opts, dtype: e.info.dtype };
  await e.embed(memories.slice(0, 32));
  for (const batch of callerBatches) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let k = 0; k < N; k += batch) await e.embed(memories.slice(k, k + batch));
    const wall = (performance.now() - t0) / 1000;
    const cpu = cpuSeconds(process.cpuUsage(c0));
    out[`batch${batch}`] = { perSecond: round1(N / wall), perCpuSecond: round1(N / cpu) };
    console.log(
      `  Embedder ${label.padEnd(44)} caller batch ${String(batch).padStart(3)}: ${round1(N / wall)} /s wall, ${round1(N / cpu)} per CPU-s`,
    );
  }
  const ms: number[] = [];
  for (let i = 0; i < 100; i++) {
    const t = performance.now();
    await e.embed([`how do we ${WORDS[i % WORDS.length]} the ${WORDS[(i * 7) % WORDS.length]} ${WORDS[(i * 13) % WORDS.length]}`], {
      priority: true,
    });
    ms.push(performance.now() - t);
  }
  const lat = summarize(ms);
  out.queryLatencyMs = { p50: round1(lat.p50), p95: round1(lat.p95) };
  console.log(`  Embedder ${label.padEnd(44)} query p50 ${lat.p50.toFixed(1)} ms, p95 ${lat.p95.toFixed(1)} ms`);
  await e.close();
  return out;
}

async function runMatrix() {
  if (!modelPath) throw new Error('--matrix needs the models folder (third argument)');
  const os = await import('node:os');
  const report: Record<string, unknown> = {
    model,
    count: N,
    cpus: os.cpus().length,
    loadavgStart: os.loadavg(),
    plainOrt: {},
    embedder: {},
  };
  console.log(
    `${model}, ${N} memories per measurement; load average ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  for (const file of ['model.onnx', 'model_quantized.onnx'])
    for (const [threads, spin] of [
      [0, true],
      [2, false],
      [1, false],
    ] as const)
      (report.plainOrt as Record<string, unknown>)[`${file}/${threads ? `threads${threads}` : 'ortDefault'}${spin ? '' : '/nospin'}`] =
        await plainOrt(modelPath, file, threads, spin, [1, 8, 32]);
  const configs: Array<[string, { threads?: number; batchSize?: number; dtype?: string }]> = [
    ['before (q8, ORT default threads, model batch 32)', { threads: 0, batchSize: 32, dtype: 'q8' }],
    ['after (defaults: q8, 1 thread no spin, batch 8)', {}],
    ['after, 2 threads no spin', { threads: 2 }],
    ['after, fp32', { dtype: 'fp32' }],
  ];
  for (const [label, opts] of configs) (report.embedder as Record<string, unknown>)[label] = await embedderRun(label, opts, [1, 64, 256]);
  report.loadavgEnd = os.loadavg();
  console.log(
    `load average at the end ${os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ')}`,
  );
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(report, null, 2));
}

(async () => {
  if (matrix) return runMatrix();
  const rssBefore = process.memoryUsage().rss;
  const e = await Embedder.start({
    model,
    modelPath,
    allowRemote: false,
    log: (m) => console.error(m),
    ...(threadsArg ? { threads: Number(threadsArg) } : {}),
    ...(workerBatchArg ? { batchSize: Number(workerBatchArg) } : {}),
    ...(dtypeArg ? { dtype: dtypeArg } : {}),
  });
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
