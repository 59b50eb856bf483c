/**
 * What `store/status` costs on a large store (issue 27: its counts joined every memory with its namespace, 1.1–1.8 s
 * at 100k on the event loop). Builds a store of --n memories from the shared corpus (or reuses --db), then times
 * the status answer cold (first call after the store opens) and warm.
 *
 *   node --import tsx bench/status-counts.ts [--n 100000] [--db PATH] [--runs 20]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { Core } from '../daemon/src/server/core';
import { Store } from '../daemon/src/store/store';
import { tempDir } from '../test/helpers';
import { memoryAt } from './corpus';
import { arg, fmt, now, summarize } from './stats';

async function main() {
  const n = Number(arg('n', '100000'));
  const runs = Number(arg('runs', '20'));
  const db = arg('db', '') || path.join(tempDir('cairn-status-'), 'cairn.db');
  if (!fs.existsSync(db)) {
    const s = new Store(db);
    const core = new Core(s);
    for (let i = 0; i < n; i += 500)
      await core.call(R.upsertBatch, { items: Array.from({ length: Math.min(500, n - i) }, (_, j) => memoryAt(i + j)) });
    s.close();
  }
  const s = new Store(db);
  const core = new Core(s);
  let t = now();
  const first = core.status();
  const cold = now() - t;
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    t = now();
    core.status();
    ms.push(now() - t);
  }
  const w = summarize(ms);
  process.stdout.write(
    `store ${db}: ${first.counts.memories} memories\nstatus cold ${fmt(cold)} ms; warm p50 ${fmt(w.p50)} ms, p95 ${fmt(w.p95)} ms\n`,
  );
  s.close();
}
void main();
