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
 * scripts/models/fetch-teacher.sh (bench/models.sh does exactly that). --skip-load-tests leaves
 * out the 20k bulk import and the re-embed.
 *
 * Also reported: the daemon process's RSS (VmRSS, and its peak VmHWM; the embedding worker is a
 * thread of it) and its CPU-seconds (utime + stime) for the bulk import and each catch-up, so the
 * figures can be read on a loaded machine.
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

/** RSS, peak RSS (MiB) and CPU-seconds so far of a process (Linux /proc; nulls elsewhere). */
function procStats(pid: number | undefined): { rssMiB: number | null; peakRssMiB: number | null; cpuSeconds: number | null } {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN);
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = 100; // USER_HZ on Linux
    return {
      rssMiB: Math.round(kb('VmRSS') / 102.4) / 10,
      peakRssMiB: Math.round(kb('VmHWM') / 102.4) / 10,
      cpuSeconds: Math.round(((Number(f[11]) + Number(f[12])) / ticks) * 10) / 10,
    };
  } catch {
    return { rssMiB: null, peakRssMiB: null, cpuSeconds: null };
  }
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
    out.daemonAfterModelLoad = procStats(d.proc.pid);
    // embedding throughput: time for the index to catch up with a 10k bulk write
    const cpu0 = procStats(d.proc.pid).cpuSeconds ?? 0;
    const t0 = now();
    const pos = await load(sizes[0]);
    const tWrite = now() - t0;
    await waitIndexed(c, pos);
    const tAll = now() - t0;
    const afterImport = procStats(d.proc.pid);
    const importCpu = (afterImport.cpuSeconds ?? 0) - cpu0;
    out.embedding = {
      memories: sizes[0],
      writeMs: Math.round(tWrite),
      writeAndEmbedMs: Math.round(tAll),
      memoriesPerSec: Math.round(sizes[0] / (tAll / 1000)),
      daemonCpuSeconds: Math.round(importCpu * 10) / 10,
      memoriesPerDaemonCpuSecond: Math.round(sizes[0] / importCpu),
      daemon: afterImport,
      loadavg: require('node:os').loadavg(),
    };
    console.log(
      `daemon: ${importCpu.toFixed(1)} CPU-s for the import (${Math.round(sizes[0] / importCpu)} memories per CPU-second), RSS ${afterImport.rssMiB} MiB, peak ${afterImport.peakRssMiB} MiB`,
    );
    console.log(
      `embedded ${sizes[0]} memories (bulk write + index catch-up) in ${fmt(tAll / 1000)} s: ${fmt(sizes[0] / (tAll / 1000), 0)} memories/s`,
    );

    for (const size of sizes) {
      if (next < size) {
        const c1 = procStats(d.proc.pid).cpuSeconds ?? 0;
        const t1 = now();
        const n = size - next;
        const p = await load(n);
        await waitIndexed(c, p);
        const st = procStats(d.proc.pid);
        out[`catchUp_${size}`] = {
          memories: n,
          ms: Math.round(now() - t1),
          daemonCpuSeconds: Math.round(((st.cpuSeconds ?? 0) - c1) * 10) / 10,
          daemon: st,
        };
        console.log(
          `imported ${n} more memories until indexed in ${fmt((now() - t1) / 1000, 0)} s (${fmt((st.cpuSeconds ?? 0) - c1, 0)} daemon CPU-s); RSS ${st.rssMiB} MiB`,
        );
      }
      await latency('hybrid', true, 50, 5000); // warm-up
      const hs = await latency('hybrid', true);
      const hg = await latency('hybrid', false);
      const fs_ = await latency('fts', true);
      out[`hybrid_${size}`] = { projectScope: hs, wholeStore: hg, ftsProjectScope: fs_, daemon: procStats(d.proc.pid) };
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
    out.duringRebuild = {
      during,
      idleHybrid: idle,
      ratioP95: during.p95 / idle.p95,
      state: st2.embeddings.state,
      daemon: procStats(d.proc.pid),
    };
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
