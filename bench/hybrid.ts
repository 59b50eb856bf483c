/**
 * Hybrid retrieval latency and scale (issue 3), end to end over the daemon's
 * socket with the built-in model: hybrid search p50/p95 at 10k and 100k
 * memories (query embedding included), embedding throughput, and search p95
 * while the daemon is busy embedding a bulk import and while it re-embeds
 * everything (index/rebuild).
 *
 *   node --import tsx bench/hybrid.ts [--sizes 10000,100000] [--json out.json]
 *                                     [--model builtin|ID] [--model-path DIR] [--skip-load-tests]
 *
 * --model Xenova/all-MiniLM-L6-v2 --model-path .models runs it on the transformer model made by
 * scripts/models/fetch-teacher.sh (bench/minilm.sh does exactly that). --skip-load-tests leaves
 * out the 20k bulk import and the re-embed (too slow for a transformer model on 2 cores).
 */
import * as path from 'node:path';
import * as fs from 'node:fs';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon } from '../test/helpers';
import { memoryAt, queryAt } from './corpus';
import { arg, fmt, now, summarize } from './stats';

const sizes = arg('sizes', '10000,100000').split(',').map(Number);
const jsonOut = arg('json', '');
const model = arg('model', 'builtin');
const modelPath = arg('model-path', '');
const skipLoadTests = process.argv.includes('--skip-load-tests');

/** index/wait in rounds (a transformer model may need longer than one wait allows). */
async function waitIndexed(c: Awaited<ReturnType<Awaited<ReturnType<typeof spawnDaemon>>['client']>>, position: number): Promise<void> {
  for (let round = 0; round < 20; round++) if ((await c.call(R.indexWait, { position, timeoutMs: 600_000 })).reached) return;
  throw new Error(`index did not reach ${position}`);
}

async function main() {
  const d = await spawnDaemon({
    args: ['--model', model],
    env: { CAIRN_ALLOW_REMOTE_MODELS: '0', ...(modelPath ? { CAIRN_MODEL_PATH: path.resolve(modelPath) } : {}) },
  });
  const c = await d.client();
  const out: Record<string, unknown> = {};
  let next = 0;
  const load = async (n: number) => {
    let pos = 0;
    for (let done = 0; done < n; done += 2000)
      pos = (await c.call(R.upsertBatch, { items: Array.from({ length: Math.min(2000, n - done) }, () => memoryAt(next++)) })).position;
    return pos;
  };
  const latency = async (mode: 'hybrid' | 'fts', scoped: boolean, n = 400, offset = 0) => {
    const ms: number[] = [];
    for (let i = 0; i < n; i++) {
      const q = queryAt(offset + i);
      const t = now();
      await c.call(R.search, { query: q.query, mode, limit: 10, ...(scoped ? { scope: { root: q.project } } : {}) });
      ms.push(now() - t);
    }
    return summarize(ms);
  };
  try {
    for (let i = 0; i < 3000 && (await c.call(R.status, {})).embeddings.state !== 'ready'; i++)
      await new Promise((r) => setTimeout(r, 100));
    const info = (await c.call(R.status, {})).embeddings;
    out.model = { model: info.model, dimension: info.dimension, fallbackReason: info.fallbackReason };
    console.log(`model ${info.model} (${info.dimension}-d)${info.fallbackReason ? `; FELL BACK: ${info.fallbackReason}` : ''}`);
    // embedding throughput: time for the index to catch up with a 10k bulk write
    const t0 = now();
    const pos = await load(sizes[0]);
    const tWrite = now() - t0;
    await waitIndexed(c, pos);
    const tAll = now() - t0;
    out.embedding = {
      memories: sizes[0],
      writeMs: Math.round(tWrite),
      writeAndEmbedMs: Math.round(tAll),
      memoriesPerSec: Math.round(sizes[0] / (tAll / 1000)),
    };
    console.log(
      `embedded ${sizes[0]} memories (bulk write + index catch-up) in ${fmt(tAll / 1000)} s: ${fmt(sizes[0] / (tAll / 1000), 0)} memories/s`,
    );

    for (const size of sizes) {
      if (next < size) {
        const p = await load(size - next);
        await waitIndexed(c, p);
      }
      await latency('hybrid', true, 50, 5000); // warm-up
      const hs = await latency('hybrid', true);
      const hg = await latency('hybrid', false);
      const fs_ = await latency('fts', true);
      out[`hybrid_${size}`] = { projectScope: hs, wholeStore: hg, ftsProjectScope: fs_ };
      console.log(
        `${size} memories: hybrid project scope p50 ${fmt(hs.p50)} p95 ${fmt(hs.p95)} ms; whole store p50 ${fmt(hg.p50)} p95 ${fmt(hg.p95)} ms; fts (same queries) p95 ${fmt(fs_.p95)} ms`,
      );
    }

    if (skipLoadTests) return;
    // search while the indexer embeds a 20k bulk import (hybrid keeps serving), then idle at the same size
    const bulkPos = await load(20000);
    const busy = await latency('hybrid', true, 300, 9000);
    const st = await c.call(R.status, {});
    await waitIndexed(c, bulkPos);
    const idle = await latency('hybrid', true, 300, 9000);
    out.duringBulkEmbed = { idle, busy, ratioP95: busy.p95 / idle.p95, pendingWhenMeasured: st.embeddings.pending };
    console.log(
      `while embedding a 20k bulk import: hybrid p95 ${fmt(busy.p95)} ms vs ${fmt(idle.p95)} ms idle at the same size (${fmt(busy.p95 / idle.p95)}x; ${st.embeddings.pending} still pending after the measurement)`,
    );

    // search during a full re-embed (index/rebuild): degraded to full text, must stay fast
    await c.call(R.indexRebuild, {});
    const during = await latency('hybrid', true, 300, 9000);
    const st2 = await c.call(R.status, {});
    out.duringRebuild = { during, idleHybrid: idle, ratioP95: during.p95 / idle.p95, state: st2.embeddings.state };
    console.log(
      `during index/rebuild (${st2.embeddings.state}, search degraded to full text): p95 ${fmt(during.p95)} ms vs idle hybrid ${fmt(idle.p95)} ms (${fmt(during.p95 / idle.p95)}x)`,
    );
  } finally {
    await d.stop();
    if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(out, null, 2));
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
