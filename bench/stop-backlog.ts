/**
 * How long a daemon with a vector backlog takes to stop on SIGTERM (issue 27: 250k vectors to go took over 3 minutes).
 * Builds a store of --n memories, lets a daemon embed them all, stops it, writes --n more without a daemon, starts
 * one again (the indexing pass now has --n memories to embed and check) and sends SIGTERM after --wait ms.
 *
 *   node --import tsx bench/stop-backlog.ts [--n 100000] [--wait 3000]
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Requests as R } from '../daemon/src/protocol/methods';
import { Core } from '../daemon/src/server/core';
import { Store } from '../daemon/src/store/store';
import { spawnDaemon, tempDir } from '../test/helpers';
import { memoryAt } from './corpus';
import { arg } from './stats';

async function write(db: string, from: number, n: number) {
  const s = new Store(db);
  const core = new Core(s);
  for (let i = from; i < from + n; i += 500)
    await core.call(R.upsertBatch, { items: Array.from({ length: Math.min(500, from + n - i) }, (_, j) => memoryAt(i + j)) });
  s.close();
}

async function main() {
  const n = Number(arg('n', '100000'));
  const wait = Number(arg('wait', '3000'));
  const dir = tempDir('cairn-stop-backlog-');
  const db = path.join(dir, 'cairn.db');
  const env = { CAIRN_MODEL: 'builtin', CAIRN_ALLOW_REMOTE_MODELS: '0' };
  await write(db, 0, n);
  let d = await spawnDaemon({ dir, args: [], env });
  let c = await d.client();
  for (;;) {
    if ((await c.call(R.status, {})).embeddings.state === 'ready') break;
    await new Promise((r) => setTimeout(r, 500));
  }
  await d.stop();
  await write(db, n, n);
  d = await spawnDaemon({ dir, args: [], env });
  c = await d.client();
  for (;;) {
    const s = await c.call(R.status, {});
    if (s.embeddings.state === 'ready') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  await new Promise((r) => setTimeout(r, wait));
  const before = (await c.call(R.status, {})).embeddings;
  const t0 = Date.now();
  d.proc.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => d.proc.once('exit', (x) => r(x)));
  process.stdout.write(`${before.vectors} vectors, ${before.pending} pending at SIGTERM; exited ${code} after ${Date.now() - t0} ms\n`);
  fs.rmSync(dir, { recursive: true, force: true });
}
void main();
