/**
 * Foundation benchmark (issue 2): upsert throughput over JSON-RPC on one socket
 * connection (sequential, pipelined, batch API) with history and FTS maintained,
 * and full-text search latency p50/p95 at 10k and 100k memories.
 *
 *   node --import tsx bench/foundation.ts [--sizes 10000,100000] [--json out.json]
 *
 * Runs the built daemon (npm run build first) on a temp store with embeddings off,
 * so only the foundation is measured (bench/hybrid.ts measures vectors).
 */
import * as fs from 'node:fs';
import { Requests as R } from '../daemon/src/protocol/methods';
import { spawnDaemon } from '../test/helpers';
import { memoryAt, queryAt } from './corpus';
import { arg, fmt, now, summarize } from './stats';

const sizes = arg('sizes', '10000,100000').split(',').map(Number);
const jsonOut = arg('json', '');

async function main() {
  const d = await spawnDaemon({ args: ['--no-embeddings'] });
  const c = await d.client();
  const results: Record<string, unknown> = {};
  let next = 0;
  try {
    // 1. single upserts, one at a time (each waits for its reply)
    const seqN = 3000;
    let t0 = now();
    for (let i = 0; i < seqN; i++) await c.call(R.upsert, memoryAt(next++));
    const seqRate = seqN / ((now() - t0) / 1000);
    // 2. single upserts, pipelined (32 in flight on the same connection)
    const pipeN = 6000;
    t0 = now();
    let issued = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (issued < pipeN) {
          issued++;
          await c.call(R.upsert, memoryAt(next++));
        }
      }),
    );
    const pipeRate = pipeN / ((now() - t0) / 1000);
    // 3. batch API
    const batchN = 10000;
    t0 = now();
    for (let done = 0; done < batchN; done += 1000)
      await c.call(R.upsertBatch, { items: Array.from({ length: 1000 }, () => memoryAt(next++)) });
    const batchRate = batchN / ((now() - t0) / 1000);
    results.upserts = {
      sequentialPerSec: Math.round(seqRate),
      pipelined32PerSec: Math.round(pipeRate),
      batch1000PerSec: Math.round(batchRate),
    };
    console.log(
      `upserts/s over one socket: sequential ${fmt(seqRate, 0)}, pipelined(32) ${fmt(pipeRate, 0)}, batch(1000) ${fmt(batchRate, 0)}`,
    );

    for (const size of sizes) {
      while (next < size) {
        const n = Math.min(2000, size - next);
        await c.call(R.upsertBatch, { items: Array.from({ length: n }, () => memoryAt(next++)) });
      }
      const st = await c.call(R.status, {});
      const lat = async (scoped: boolean) => {
        const ms: number[] = [];
        for (let i = 0; i < 40; i++) await c.call(R.search, { query: queryAt(i).query, mode: 'fts' }); // warm-up
        for (let i = 0; i < 500; i++) {
          const q = queryAt(1000 + i);
          const t = now();
          await c.call(R.search, { query: q.query, mode: 'fts', limit: 10, ...(scoped ? { scope: { root: q.project } } : {}) });
          ms.push(now() - t);
        }
        return summarize(ms);
      };
      const scoped = await lat(true);
      const global = await lat(false);
      results[`fts_${size}`] = { memories: st.counts.active, scoped, global, dbBytes: st.sizeBytes };
      console.log(
        `FTS search at ${size} memories (${(st.sizeBytes / 1048576).toFixed(0)} MiB): project scope p50 ${fmt(scoped.p50)} ms p95 ${fmt(scoped.p95)} ms; whole store p50 ${fmt(global.p50)} ms p95 ${fmt(global.p95)} ms`,
      );
    }
  } finally {
    await d.stop();
  }
  if (jsonOut) fs.writeFileSync(jsonOut, JSON.stringify(results, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
