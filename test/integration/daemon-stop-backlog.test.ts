/**
 * A daemon stopped (SIGTERM) while it still has a vector backlog stops without working through it (issue 27: 250k
 * vectors to go took over 3 minutes to stop): it exits cleanly with the backlog still pending, and the next start
 * embeds the rest, so every memory gets its vector. State only: no timed assertion (the in-flight work is one
 * bounded batch, indexer.ts).
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Core } from '../../daemon/src/server/core';
import { Store } from '../../daemon/src/store/store';
import { spawnDaemon, tempDir, until } from '../helpers';

const MEMORIES = 10_000;

/** Vectors stored in the file (the daemon is not running). */
function vectorCount(db: string): number {
  const s = new Store(db);
  try {
    const [model] = s.vectors.models();
    return model ? s.vectors.count(model) : 0;
  } finally {
    s.close();
  }
}

describe('a daemon with a vector backlog stops on SIGTERM', () => {
  it('exits with the backlog still pending; after a restart every memory gets its vector', async () => {
    const dir = tempDir();
    const db = path.join(dir, 'cairn.db');
    {
      // The memories are written without a daemon: the one started next has all of them to embed.
      const s = new Store(db);
      const core = new Core(s);
      for (let i = 0; i < MEMORIES; i += 1000)
        await core.call(R.upsertBatch, {
          items: Array.from({ length: 1000 }, (_, j) => ({
            namespace: `project.p${(i + j) % 7}`,
            key: `note-${i + j}`,
            value: `note ${i + j}: the service ${(i + j) % 13} retries its calls with a backoff of ${(i + j) % 5} seconds`,
          })),
        });
      s.close();
    }
    const env = { CAIRN_MODEL: 'builtin', CAIRN_ALLOW_REMOTE_MODELS: '0' };
    const d = await spawnDaemon({ dir, args: [], env });
    try {
      const c = await d.client();
      await until('the daemon embeds its backlog', () => /embedding \d+ memories/.test(d.stderr()));
      const s = await c.call(R.status, {});
      assert.ok(s.embeddings.pending > 0, `a backlog at SIGTERM: ${JSON.stringify(s.embeddings)}`);
      const exited = new Promise<number | null>((r) => d.proc.once('exit', (code) => r(code)));
      d.proc.kill('SIGTERM');
      assert.equal(await exited, 0, d.stderr());
      assert.match(d.stderr(), /stopped/);
      const atStop = vectorCount(db);
      assert.ok(atStop < MEMORIES, `the stop did not work through the backlog (${atStop} of ${MEMORIES} embedded)`);
    } finally {
      await d.stop();
    }

    const again = await spawnDaemon({ dir, args: [], env });
    try {
      const c = await again.client();
      const s = await c.call(R.status, {});
      const w = await c.call(R.indexWait, { position: s.position, timeoutMs: 300_000 });
      assert.ok(w.reached, JSON.stringify(w));
      const after = await c.call(R.status, {});
      assert.equal(after.embeddings.vectors, MEMORIES);
      assert.equal(after.embeddings.pending, 0);
    } finally {
      await again.stop();
    }
    assert.equal(vectorCount(db), MEMORIES, 'every memory has its vector');
  });
});
