/**
 * Read-your-writes at start-up: writes made while the embedding model is still loading are found by a vector
 * search once `index/wait` says they are reached, and the writes say that their duplicate check was skipped.
 *
 * The model load is held deterministically: the configured model folder's config.json is a named pipe, so
 * the loader blocks reading it until the test writes to it (garbage: the load fails and the daemon falls back
 * to the built-in model, as it does offline).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Requests } from '../../daemon/src/protocol/methods';
import { spawnDaemon, tempDir } from '../helpers';

describe('read-your-writes while the model loads', { skip: process.platform === 'win32' && 'named pipes' }, () => {
  it('index/wait waits for the vector index; a vector search then finds the writes', async () => {
    const dir = tempDir('cairn-startup-');
    const model = path.join(dir, 'slow-model');
    fs.mkdirSync(model);
    const fifo = path.join(model, 'config.json');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
    let release: ChildProcess | null = null;
    const d = await spawnDaemon({ dir, args: [], env: { CAIRN_MODEL: model, XDG_CACHE_HOME: path.join(dir, 'cache') } });
    try {
      const c = await d.client();
      assert.equal((await c.call(Requests.status, {})).embeddings.state, 'loading', 'the model is held loading');
      const values = [
        'The deploy pipeline runs on every merge to main',
        'Database migrations run before the new release starts',
        'Feature flags live in the config service',
      ];
      const writes = [];
      for (const [i, value] of values.entries())
        writes.push(await c.call(Requests.upsert, { namespace: 'project.boot', key: `k${i}`, value }));
      assert.match(writes[0].duplicatesSkipped ?? '', /still loading/, 'the write says its duplicate check was skipped');
      const last = writes[writes.length - 1].position;

      const waiting = c.call(Requests.indexWait, { position: last, timeoutMs: 120_000 });
      let answered = false;
      void waiting.then(() => (answered = true));
      // Still loading: index/wait has not answered from the full-text index.
      assert.equal((await c.call(Requests.status, {})).embeddings.state, 'loading');
      assert.equal(answered, false, 'index/wait does not answer while the model loads');

      release = spawn('sh', ['-c', 'printf "not json" > "$1"', 'sh', fifo], { stdio: 'ignore' });
      const w = await waiting;
      assert.deepEqual({ reached: w.reached, index: w.index }, { reached: true, index: 'vector' }, JSON.stringify(w));
      const r = await c.call(Requests.search, { query: 'deploy pipeline merge', mode: 'vector', scope: { root: 'project.boot' } });
      assert.equal(r.degraded, undefined, JSON.stringify(r));
      assert.deepEqual(new Set(r.hits.map((h) => h.memory.key)), new Set(['k0', 'k1', 'k2']));
      assert.equal(r.hits[0].memory.key, 'k0');
    } finally {
      release?.kill();
      await d.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a short index/wait during loading answers reached: false with the reason', async () => {
    const dir = tempDir('cairn-startup-');
    const model = path.join(dir, 'slow-model');
    fs.mkdirSync(model);
    const fifo = path.join(model, 'config.json');
    assert.equal(spawnSync('mkfifo', [fifo]).status, 0, 'mkfifo');
    const d = await spawnDaemon({ dir, args: [], env: { CAIRN_MODEL: model, XDG_CACHE_HOME: path.join(dir, 'cache') } });
    const release = () => spawn('sh', ['-c', 'printf "not json" > "$1"', 'sh', fifo], { stdio: 'ignore' });
    let r: ChildProcess | null = null;
    try {
      const c = await d.client();
      const w1 = await c.call(Requests.upsert, { namespace: 'project.boot', key: 'a', value: 'alpha' });
      const w = await c.call(Requests.indexWait, { position: w1.position, timeoutMs: 200 });
      assert.equal(w.reached, false);
      assert.match(w.reason ?? '', /still loading/);
      r = release();
    } finally {
      r?.kill();
      await d.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
