/**
 * The CLI reaches the store's shared daemon (starting it like `cairn mcp` does), opens the store directly only
 * on request or when no daemon can start (and says search is full-text only), never behind a stdio-only
 * daemon's back; and a daemon learns of writes other processes make (`--direct`), so it broadcasts and embeds
 * every write.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { readDaemonInfo, runningDaemon } from '../../daemon/src/client/daemon-info';
import { Requests } from '../../daemon/src/protocol/methods';
import { Store } from '../../daemon/src/store/store';
import { alive, CAIRN_BIN, cleanupAfter, spawnDaemon, tempDir } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv, input?: string): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [CAIRN_BIN, ...args], { env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (err += d));
    if (input !== undefined) p.stdin.end(input);
    else p.stdin.end();
    p.on('close', (code) => resolve({ code, out, err }));
  });
}

const { pids: started, dirs } = cleanupAfter(after);
function sandbox(): { dir: string; db: string; env: NodeJS.ProcessEnv } {
  const dir = tempDir('cairn-clid-');
  dirs.push(dir);
  const run = path.join(dir, 'run');
  fs.mkdirSync(run, { mode: 0o700 });
  return {
    dir,
    db: path.join(dir, 'store', 'cairn.db'),
    env: { CAIRN_DB: path.join(dir, 'store', 'cairn.db'), XDG_RUNTIME_DIR: run, CAIRN_MODEL: 'builtin' },
  };
}

describe('cli and the shared daemon', () => {
  it('without a daemon, the CLI starts the shared one and uses it: hybrid search is not degraded', async () => {
    const { db, env } = sandbox();
    const add = await cli(['add', 'project.cli', 'retry', 'The HTTP client retries three times with backoff', '--json'], env);
    assert.equal(add.code, 0, add.err);
    assert.match(add.err, /started the Cairn daemon \(pid \d+\)/);
    const info = readDaemonInfo(db);
    assert.ok(info && alive(info.pid), 'a daemon now serves the store');
    started.push(info.pid);
    const pos = JSON.parse(add.out).position;
    const wait = await cli(['wait', String(pos), '--timeout', '60000', '--json'], env);
    assert.equal(wait.code, 0, wait.out + wait.err);
    assert.equal(JSON.parse(wait.out).index, 'vector');
    const st = JSON.parse((await cli(['status', '--json'], env)).out);
    assert.equal(st.via, 'daemon');
    assert.equal(st.daemon.pid, info.pid);
    const s = JSON.parse((await cli(['search', 'retries', 'backoff', '--json'], env)).out);
    assert.equal(s.degraded, undefined, 'the daemon embeds: search is hybrid');
    assert.equal(s.hits[0].memory.key, 'retry');
    // A second command reuses it instead of starting another.
    const again = await cli(['get', 'project.cli', 'retry'], env);
    assert.equal(again.code, 0, again.err);
    assert.doesNotMatch(again.err, /started/);
  });

  it('cairn status never starts a daemon: without one it reads the store directly and says none runs', async () => {
    const { db, env } = sandbox();
    const human = await cli(['status'], env);
    assert.equal(human.code, 0, human.err);
    assert.match(human.out, /via direct/);
    assert.match(human.out, /daemon: +not running/);
    const st = await cli(['status', '--json'], env);
    assert.equal(st.code, 0, st.err);
    assert.equal(JSON.parse(st.out).via, 'direct');
    assert.doesNotMatch(st.err + human.err, /started the Cairn daemon/);
    // No live daemon (a record a dead daemon left under a reused inode of the store file may remain: not this one's).
    assert.equal(runningDaemon(db), null, 'no daemon was started by asking for status');
    // with a daemon running, status goes through it
    const add = await cli(['add', 'project.cli', 'k', 'v'], env);
    assert.equal(add.code, 0, add.err);
    const info = readDaemonInfo(db);
    assert.ok(info && alive(info.pid));
    started.push(info.pid);
    const via = JSON.parse((await cli(['status', '--json'], env)).out);
    assert.equal(via.via, 'daemon');
    assert.equal(via.daemon.pid, info.pid);
  });

  it('when no daemon can start, the CLI opens the store directly and says search is full-text only', async () => {
    const { dir, env } = sandbox();
    const broken = path.join(dir, 'broken.js');
    fs.writeFileSync(broken, 'process.exit(7);\n');
    const e = { ...env, CAIRN_DAEMON: broken };
    const add = await cli(['add', 'project.cli', 'k', 'a value about caching'], e);
    assert.equal(add.code, 0, add.err);
    assert.match(add.err, /no Cairn daemon could be started .*full-text only/);
    assert.match(add.out, /duplicate check skipped/);
    const s = await cli(['search', 'caching'], e);
    assert.match(s.out, /fts only: the store was opened directly/);
  });

  it('a stdio-only daemon: the CLI does not open the store behind its back (Unavailable)', async () => {
    const { db, env } = sandbox();
    fs.mkdirSync(path.dirname(db), { recursive: true });
    const d = spawn(process.execPath, [CAIRN_BIN, 'daemon', '--stdio', '--db', db, '--no-embeddings'], {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    try {
      let err = '';
      d.stderr.on('data', (x) => (err += x));
      for (let i = 0; i < 400 && !runningDaemon(db); i++) await new Promise((r) => setTimeout(r, 25));
      assert.ok(runningDaemon(db), `the stdio daemon wrote its info: ${err}`);
      const add = await cli(['add', 'project.cli', 'k', 'v'], env);
      assert.equal(add.code, 1, add.out);
      assert.match(add.err, /stdio only[\s\S]*Unavailable 1013/);
    } finally {
      d.stdin.end();
      await new Promise((r) => d.once('exit', r));
    }
    const store = new Store(db, { readonly: true });
    try {
      assert.equal(store.position(), 0, 'nothing was written to the store');
    } finally {
      store.close();
    }
  });
});

describe('a daemon learns of writes other processes make', () => {
  it('a --direct write reaches the daemon’s clients as memory/didChange and is embedded', async () => {
    const d = await spawnDaemon({ args: [], env: { CAIRN_MODEL: 'builtin' } });
    try {
      const c = await d.client();
      const seen: { key: string | null; position: number }[] = [];
      c.onDidChange((x) => seen.push({ key: x.key, position: x.position }));
      const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: d.dir };
      const add = await cli(['add', 'project.ext', 'written-directly', 'a note about the deploy pipeline', '--direct', '--json'], env);
      assert.equal(add.code, 0, add.err);
      const pos = JSON.parse(add.out).position as number;
      // index/wait resolves only once the daemon embedded the write it did not make itself.
      const w = await c.call(Requests.indexWait, { position: pos, timeoutMs: 60_000 });
      assert.equal(w.reached, true, JSON.stringify(w));
      assert.equal(w.index, 'vector');
      const hits = await c.call(Requests.search, { query: 'deploy pipeline', mode: 'vector' });
      assert.ok(
        hits.hits.some((h) => h.memory.key === 'written-directly'),
        JSON.stringify(hits),
      );
      for (let i = 0; i < 200 && !seen.some((s) => s.key === 'written-directly'); i++) await new Promise((r) => setTimeout(r, 25));
      assert.deepEqual(
        seen.find((s) => s.key === 'written-directly'),
        { key: 'written-directly', position: pos },
      );
      const st = await c.call(Requests.status, {});
      assert.ok(
        st.indexes.every((i) => i.behind === 0),
        JSON.stringify(st.indexes),
      );
    } finally {
      await d.stop();
    }
  });
});
