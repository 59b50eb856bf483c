/**
 * After a bulk import the indexer gives the memory the process freed back to the system (Store.releaseFreedMemory:
 * cairn_malloc_trim, daemon/native/malloc_trim.c), once every RELEASE_FREED_AFTER indexed changes and only when its
 * backlog is drained, never per write.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { attachEmbeddings } from '../../daemon/src/index/attach';
import type { Indexer } from '../../daemon/src/index/indexer';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { Daemon } from '../../daemon/src/server/daemon';
import { hasRankingExtension } from '../../daemon/src/store/db';
import { tempDir } from '../helpers';

process.env.CAIRN_ALLOW_REMOTE_MODELS = '0';

describe('freed memory given back after indexing a backlog', () => {
  const dir = tempDir();
  const logs: string[] = [];
  const calls: (boolean | null)[] = [];
  let d: Daemon;
  let indexer!: Indexer;
  let written = 0;

  before(async () => {
    d = await Daemon.start({
      db: path.join(dir, 'r.db'),
      socket: null,
      sweepEveryMs: 0,
      log: (m) => logs.push(m),
      setup: async (dd) => {
        indexer = await attachEmbeddings(dd, { model: 'builtin', allowRemote: false });
      },
    });
    for (const deadline = Date.now() + 120_000; indexer.state !== 'ready' && Date.now() < deadline;)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(indexer.state, 'ready', `model did not load: ${indexer.lastError}`);
    indexer.releaseFreedAfter = 200;
    const release = d.store.releaseFreedMemory.bind(d.store);
    d.store.releaseFreedMemory = () => {
      const r = release();
      calls.push(r);
      return r;
    };
  });
  after(async () => {
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** `n` memories in one batch, then the vector index waited for (the pass has drained when index/wait answers). */
  async function writeIndexed(n: number): Promise<void> {
    const items = Array.from({ length: n }, () => ({
      namespace: 'project.rf',
      key: `k${written}`,
      value: `entry ${written++} of the import: the release step runs once the backlog is drained`,
    }));
    const r = await d.core.call(R.upsertBatch, { items });
    const w = await d.core.call(R.indexWait, { position: r.position, timeoutMs: 60_000 });
    assert.equal(w.reached, true, w.reason);
  }

  it('the store can give freed memory back: the extension registers cairn_malloc_trim', () => {
    assert.ok(hasRankingExtension(d.store.db), 'the native extension is built and loaded (npm run build)');
    // glibc answers whether it gave any back; either way the call ran (null would mean it cannot).
    assert.equal(typeof d.store.releaseFreedMemory(), 'boolean');
    calls.length = 0;
  });

  it('runs once per RELEASE_FREED_AFTER indexed changes, after the backlog is drained', async () => {
    await writeIndexed(150);
    assert.deepEqual(calls, [], 'below the threshold: not given back');
    await writeIndexed(150);
    assert.equal(calls.length, 1, 'past the threshold: given back once the backlog was drained');
    assert.equal(typeof calls[0], 'boolean');
    assert.ok(logs.some((l) => /gave freed memory back to the system after indexing/.test(l)));
    await writeIndexed(100);
    assert.equal(calls.length, 1, 'the count starts again from the release');
    await writeIndexed(150);
    assert.equal(calls.length, 2);
  });
});
