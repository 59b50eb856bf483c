/** The `cairn` CLI, directly on a store and through a running daemon. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CAIRN_BIN, spawnDaemon, tempDir, type SpawnedDaemon } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv = {}, input?: string) {
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, input });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

describe('cli on a store opened directly (--direct)', () => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const cliDirect = (args: string[], e?: NodeJS.ProcessEnv, input?: string) => cli([...args, '--direct'], e, input);
  before(() => {
    dir = tempDir();
    env = { CAIRN_DB: path.join(dir, 'cli.db'), XDG_RUNTIME_DIR: dir };
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('adds, gets, searches and lists, in human and JSON form', () => {
    const add = cliDirect(
      [
        'add',
        'project.cli',
        'retryPolicy',
        'The HTTP client uses maxRetries of 3',
        '--kind',
        'decision',
        '--tags',
        'http,retry',
        '--anchor',
        'src/http.ts:10-20',
        '--json',
      ],
      env,
    );
    assert.equal(add.code, 0, add.err);
    const r = JSON.parse(add.out);
    assert.equal(r.created, true);
    assert.deepEqual(r.memory.anchors, [{ path: 'src/http.ts', startLine: 10, endLine: 20 }]);
    const get = cliDirect(['get', 'project.cli', 'retryPolicy'], env);
    assert.match(get.out, /project\.cli\/retryPolicy {2}\(decision, v1, active\)/);
    const s = cliDirect(['search', 'max', 'retries', '--json'], env);
    const hits = JSON.parse(s.out).hits;
    assert.equal(hits[0].memory.key, 'retryPolicy');
    assert.match(hits[0].snippet, /«maxRetries»/);
    const human = cliDirect(['search', 'retries'], env);
    assert.match(human.out, /1\. project\.cli\/retryPolicy/);
    assert.match(human.out, /fts only: .*opened directly/, 'without a daemon, hybrid search says it is full-text only');
    assert.match(add.out, /duplicate check skipped|"duplicatesSkipped"/, 'a direct write says it was not checked for duplicates');
    const list = cliDirect(['list'], env);
    assert.match(list.out, /MEMORY\s+KIND/);
  });

  it('reads a value from stdin', () => {
    const r = cliDirect(['add', 'user', 'bio', '-', '--json'], env, 'multi\nline value');
    assert.equal(JSON.parse(r.out).memory.value, 'multi\nline value');
  });

  it('exits 1 with the error code on Cairn errors, 2 on usage errors', () => {
    assert.equal(cliDirect(['delete', 'project.cli', 'retryPolicy', '--reason', 'obsolete'], env).code, 0);
    const again = cliDirect(['add', 'project.cli', 'retryPolicy', 'new'], env);
    assert.equal(again.code, 1);
    assert.match(
      again.err,
      /^error: project\.cli\/retryPolicy was deleted at .* by user; pass --restore to write it again\.\n {2}\(code Deleted 1003, field key\)/,
    );
    assert.equal(cliDirect(['add', 'project.cli', 'retryPolicy', 'new', '--restore'], env).code, 0);
    const badNs = cliDirect(['add', 'Bad NS', 'k', 'v'], env);
    assert.equal(badNs.code, 1);
    assert.match(badNs.err, /InvalidNamespace 1006/);
    assert.equal(cliDirect(['frobnicate'], env).code, 2);
    assert.equal(cliDirect(['add', 'only-two', 'args'], env).code, 2);
    assert.equal(cliDirect(['search', 'x', '--limit', 'many'], env).code, 2);
    const badFilter = cliDirect(['list', '--filter', '{"field":"colour","op":"eq","value":1}'], env);
    assert.equal(badFilter.code, 1);
    assert.match(badFilter.err, /InvalidFilter/);
  });

  it('history, forget, export and import round trip', () => {
    const h = cliDirect(['history', 'project.cli', 'retryPolicy'], env);
    assert.match(h.out, /restore/);
    assert.match(h.out, /delete .* by user — obsolete/);
    assert.equal(cliDirect(['forget', 'user', 'bio'], env).code, 0);
    const file = path.join(dir, 'export.jsonl');
    assert.equal(cliDirect(['export', file], env).code, 0);
    const lines = fs
      .readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(lines[0].type, 'header');
    const env2 = { CAIRN_DB: path.join(dir, 'other.db'), XDG_RUNTIME_DIR: dir };
    const imp = cliDirect(['import', file, '--json'], env2);
    assert.equal(imp.code, 0, imp.err);
    assert.equal(JSON.parse(imp.out).memories, 2);
    const h2 = cliDirect(['history', 'project.cli', 'retryPolicy', '--json'], env2);
    assert.deepEqual(
      JSON.parse(h2.out).entries.map((e: { op: string }) => e.op),
      ['restore', 'delete', 'create'],
    );
    const rej = cliDirect(['add', 'user', 'again', 'multi\nline value'], env2);
    assert.match(rej.err, /RejectedValue/);
    const bad = path.join(dir, 'bad.jsonl');
    fs.writeFileSync(bad, '{"type":"header","format":"cairn-export","version":1,"exportedAt":"x","schemaVersion":2}\nnot json\n');
    const badImp = cliDirect(['import', bad], env2);
    assert.equal(badImp.code, 1);
    assert.match(badImp.err, /line 2 is not JSON/);
  });

  it('a reader that closes the pipe early (cairn status | true) is not an error', () => {
    const r = spawnSync('bash', ['-c', `set -o pipefail; "${process.execPath}" "${CAIRN_BIN}" status --direct | true`], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
    assert.equal(r.status, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /EPIPE|Unhandled/);
  });

  it('status shows the store', () => {
    const s = cliDirect(['status'], env);
    assert.match(s.out, /store: +.*cli\.db/);
    assert.match(s.out, /via direct/);
    assert.match(s.out, /history: .* complete/);
  });
});

describe('cli through a running daemon', () => {
  let d: SpawnedDaemon;
  before(async () => {
    d = await spawnDaemon();
  });
  after(async () => d.stop());

  it('finds the daemon that owns the store and talks to it', async () => {
    const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: d.dir };
    const c = await d.client();
    const seen: string[] = [];
    c.onDidChange((x) => seen.push(x.key ?? ''));
    assert.equal(cli(['add', 'project.d', 'via-daemon', 'written by the CLI'], env).code, 0);
    const st = JSON.parse(cli(['status', '--json'], env).out);
    assert.equal(st.via, 'daemon');
    assert.equal(st.daemon.socket, d.socket);
    for (let i = 0; i < 50 && !seen.includes('via-daemon'); i++) await new Promise((r) => setTimeout(r, 20));
    assert.ok(seen.includes('via-daemon'), 'the write made through the CLI reached other clients');
  });
});
