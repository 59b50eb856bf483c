/** The worker thread: off the event loop, crash handling, restart, close, worker discovery. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { threadId } from 'node:worker_threads';
import { Embedder, builtinModelPath, resolveWorkerPath } from '../../daemon/src/embed';
import { quantize } from '../../daemon/src/store/quantize';

const builtinDimension = () => JSON.parse(fs.readFileSync(path.join(builtinModelPath(), 'config.json'), 'utf8')).cairn.dimension as number;

const cache = path.join(os.tmpdir(), 'cairn-embed-worker-test-cache');
const start = (extra: Parameters<typeof Embedder.start>[0] = {}) =>
  Embedder.start({ model: 'builtin', allowRemote: false, cacheDir: cache, ...extra });
const texts = (n: number) =>
  Array.from(
    { length: n },
    (_, i) => `memory ${i}: the daemon keeps an sqlite index of notes written by coding agents, ${'with more words '.repeat(i % 20)}`,
  );

describe('embedding worker', () => {
  it("computes each vector's SimHash next to it, identical to the daemon-side quantize()", async () => {
    const e = await start();
    try {
      const input = [...texts(40), '', 'zzzz qqqq xxxx']; // the empty text embeds to the zero vector
      const { vectors, sigs } = await e.embedWithSignatures(input);
      assert.equal(vectors.length, input.length);
      assert.equal(sigs.length, input.length);
      const plain = await e.embed(input);
      for (let i = 0; i < input.length; i++) {
        assert.deepEqual([...vectors[i]], [...plain[i]], `vector ${i} is the one embed() returns`);
        assert.deepEqual([...sigs[i]], [...quantize(vectors[i]).sig], `signature ${i}`);
        assert.deepEqual([...quantize(vectors[i], sigs[i]).sig], [...quantize(vectors[i]).sig]);
      }
      assert.ok(
        sigs.slice(0, 40).every((s) => s.some((w) => w !== 0)),
        'non-zero vectors have signatures',
      );
      assert.deepEqual(await e.embedWithSignatures([]), { vectors: [], sigs: [] });
    } finally {
      await e.close();
    }
  });

  it('runs off the main thread: the event loop stays responsive during a long embed', async () => {
    const e = await start();
    try {
      assert.notEqual(e.threadId, threadId);
      assert.ok(e.threadId > 0);
      // State, not a moment: count the main thread's timer callbacks while the worker embeds. A job on the main
      // thread would let none run until it finished; the job doubles until it takes long enough to tell.
      let input = texts(8000);
      let took = 0;
      let ticks = 0;
      for (let round = 0; round < 5; round++) {
        ticks = 0;
        const timer = setInterval(() => ticks++, 5);
        const t0 = performance.now();
        const out = await e.embed(input);
        took = performance.now() - t0;
        clearInterval(timer);
        assert.equal(out.length, input.length);
        if (took >= 200) break;
        input = input.concat(input);
      }
      assert.ok(took >= 200, `embedding took only ${took.toFixed(0)} ms; the check needs a longer job`);
      assert.ok(ticks >= 3, `the event loop ran ${ticks} timer callbacks during a ${took.toFixed(0)} ms embed`);
    } finally {
      await e.close();
    }
  });

  it('a crash rejects pending calls with a clear error; restart() brings it back', async () => {
    const crashes: Error[] = [];
    const logs: string[] = [];
    const e = await start({ onCrash: (err) => crashes.push(err), log: (m) => logs.push(m) });
    try {
      const pending = [e.embed(texts(4000)), e.embed(['second call'])];
      e.simulateCrash(70);
      for (const p of pending) await assert.rejects(p, /embedding worker exited unexpectedly \(exit code 70\)/);
      assert.equal(e.alive, false);
      assert.equal(crashes.length, 1);
      assert.ok(logs.some((l) => /exited unexpectedly/.test(l)));
      await assert.rejects(e.embed(['after the crash']), /crashed .*call restart\(\)/);

      const info = await e.restart();
      assert.equal(e.alive, true);
      assert.equal(info.dimension, builtinDimension());
      const [v] = await e.embed(['back to work']);
      assert.ok(Math.abs(Math.hypot(...v) - 1) < 1e-4);
    } finally {
      await e.close();
    }
  });

  it('close() rejects calls still queued and later calls', async () => {
    const e = await start();
    const queued = e.embed(texts(6000));
    await e.close();
    await assert.rejects(queued, /Embedder closed/);
    await assert.rejects(e.embed(['x']), /Embedder closed/);
    assert.equal(e.alive, false);
    await e.close(); // idempotent
  });

  it('does not keep the process alive while idle', async () => {
    // Checked indirectly: the worker is unref'ed once ready; a forgotten Embedder would otherwise
    // hang `node --test`. Here we only check an idle embedder answers after a pause.
    const e = await start();
    try {
      await new Promise((r) => setTimeout(r, 50));
      assert.equal((await e.embed(['still there']))[0].length, builtinDimension());
    } finally {
      await e.close();
    }
  });

  it('finds worker.ts next to the sources; a bad workerPath fails start()', async () => {
    const found = resolveWorkerPath();
    assert.ok(fs.existsSync(found));
    assert.match(found, /(embed-worker\.js|worker\.ts|worker\.js)$/);
    await assert.rejects(start({ workerPath: path.join(os.tmpdir(), 'no-such-worker.js') }), /embedding worker/);
  });

  it('the bundled worker (daemon/dist/embed-worker.js) loads the model, when built', async (t) => {
    const bundled = path.join(__dirname, '..', '..', 'daemon', 'dist', 'embed-worker.js');
    if (!fs.existsSync(bundled)) {
      t.skip('daemon not built (cd daemon && node build.mjs)');
      return;
    }
    const e = await start({ workerPath: bundled });
    try {
      assert.equal(e.info.dimension, builtinDimension());
      assert.equal((await e.embed(['bundled worker']))[0].length, builtinDimension());
    } finally {
      await e.close();
    }
  });
});
