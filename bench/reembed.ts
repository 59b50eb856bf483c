/**
 * Search while the store is re-embedded into another model (issue 9): a store indexed with the
 * built-in model is reopened with `--model` (default all-MiniLM-L6-v2 from `--model-path`), which
 * re-embeds every memory in the background; meanwhile hybrid search degrades to full text and must
 * stay within 2x of idle hybrid search on the built-in model (same queries, same store).
 *
 *   node --import tsx bench/reembed.ts [--size 10000] [--model Xenova/all-MiniLM-L6-v2] [--model-path .models] [--json FILE]
 *
 * Also reports how far the re-embed got while the queries ran, the daemon's CPU-seconds for it
 * (memories re-embedded per CPU-second) and its RSS.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon, tempDir } from '../test/helpers';
import { memoryAt, queryAt } from './corpus';
import { arg, fmt, now, summarize } from './stats';

const size = Number(arg('size', '10000'));
const model = arg('model', 'Xenova/all-MiniLM-L6-v2');
const modelPath = path.resolve(arg('model-path', '.models'));
const jsonOut = arg('json', '');

function proc(pid: number | undefined) {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return {
    rssMiB: Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]) / 102.4) / 10,
    cpuSeconds: (Number(f[11]) + Number(f[12])) / 100,
  };
}

type Client = Awaited<ReturnType<Awaited<ReturnType<typeof spawnDaemon>>['client']>>;
async function latency(c: Client, n: number) {
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const q = queryAt(9000 + i);
    const t = now();
    await c.call(R.search, { query: q.query, mode: 'hybrid', limit: 10, scope: { root: q.project } });
    ms.push(now() - t);
  }
  return summarize(ms);
}
async function waitState(c: Client, want: (s: string) => boolean) {
  for (let i = 0; i < 6000; i++) {
    const st = await c.call(R.status, {});
    if (want(st.embeddings.state)) return st;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('timed out waiting for the model state');
}

async function main() {
  const dir = tempDir();
  const out: Record<string, unknown> = { size, model };
  try {
    const a = await spawnDaemon({ dir, args: ['--model', 'builtin'], env: { CAIRN_ALLOW_REMOTE_MODELS: '0' } });
    const ca = await a.client();
    let pos = 0;
    for (let done = 0; done < size; done += 2000)
      pos = (await ca.call(R.upsertBatch, { items: Array.from({ length: Math.min(2000, size - done) }, (_, i) => memoryAt(done + i)) }))
        .position;
    await ca.call(R.indexWait, { position: pos, timeoutMs: 600_000 });
    await latency(ca, 50);
    const idle = await latency(ca, 300);
    await a.stop();
    console.log(`${size} memories, built-in model, idle hybrid: p50 ${fmt(idle.p50)} p95 ${fmt(idle.p95)} ms`);

    const b = await spawnDaemon({ dir, args: ['--model', model], env: { CAIRN_ALLOW_REMOTE_MODELS: '0', CAIRN_MODEL_PATH: modelPath } });
    const cb = await b.client();
    const st = await waitState(cb, (s) => s !== 'loading');
    if (st.embeddings.model !== model) throw new Error(`the daemon runs ${st.embeddings.model}: ${st.embeddings.fallbackReason}`);
    const p0 = proc(b.proc.pid);
    const t0 = now();
    const during = await latency(cb, 300);
    const st2 = await cb.call(R.status, {});
    const p1 = proc(b.proc.pid);
    out.idleBuiltinHybrid = idle;
    out.duringReembed = during;
    out.ratioP95 = during.p95 / idle.p95;
    out.stateWhileMeasured = { start: st.embeddings.state, end: st2.embeddings.state, backfill: st2.embeddings };
    out.daemon = {
      rssMiB: p1.rssMiB,
      cpuSecondsWhileMeasured: Math.round((p1.cpuSeconds - p0.cpuSeconds) * 10) / 10,
      wallMs: Math.round(now() - t0),
    };
    console.log(
      `during the re-embed into ${model} (state ${st.embeddings.state} -> ${st2.embeddings.state}): hybrid (degraded to full text) p50 ${fmt(during.p50)} p95 ${fmt(during.p95)} ms, ${fmt(during.p95 / idle.p95)}x idle p95; daemon RSS ${p1.rssMiB} MiB`,
    );
    console.log(`re-embed progress at the end: ${JSON.stringify(st2.embeddings)}`);
    await b.stop();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(out, null, 2));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
