/**
 * Git-aware memory from the CLI (--direct) run inside a real git repository: `cairn add .` records the checkout's
 * branch and commit, `get`, `search` and `list` carry the checkout and hide an unmerged branch's memories, a merge
 * shows them, `cairn branch merged` marks a branch merged, and CAIRN_GIT_VISIBILITY=0 turns it all off; a memory
 * branch made with CAIRN_BRANCHES_FOLLOW_GIT=1 follows the git branch and `cairn branch sync` merges it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GIT_ENV } from '../git-fixture';
import { CAIRN_BIN, tempDir } from '../helpers';

describe('git-aware memory from the CLI (--direct)', () => {
  let dir: string;
  let repo: string;
  let env: NodeJS.ProcessEnv;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, encoding: 'utf8', env: { ...process.env, ...GIT_ENV } }).trim();
  const cli = (extra: NodeJS.ProcessEnv, ...args: string[]) => {
    const r = spawnSync(process.execPath, [CAIRN_BIN, ...args, '--direct'], {
      cwd: repo,
      encoding: 'utf8',
      env: { ...process.env, ...GIT_ENV, ...env, ...extra },
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const keys = (extra: NodeJS.ProcessEnv = {}) => {
    const r = cli(extra, 'list', '--root', '.', '--no-user', '--json');
    assert.equal(r.code, 0, r.err);
    return (JSON.parse(r.out) as { items: { key: string }[] }).items.map((m) => m.key).sort();
  };
  const commit = (file: string) => {
    fs.appendFileSync(path.join(repo, file), `${file}\n`);
    git('add', file);
    git('commit', '-q', '-m', file);
  };

  before(() => {
    dir = tempDir();
    repo = path.join(dir, 'shop');
    fs.mkdirSync(repo);
    env = { CAIRN_DB: path.join(dir, 'cli.db'), XDG_RUNTIME_DIR: dir, CAIRN_GIT_VISIBILITY: '', CAIRN_GIT_BASE: '' };
    git('init', '-q', '-b', 'main');
    commit('a.txt');
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('records writes to the project namespace, hides an unmerged branch, and shows it once merged', () => {
    assert.equal(cli({}, 'add', '.', 'base-note', 'the shop uses postgres').code, 0);
    git('checkout', '-q', '-b', 'feat');
    commit('f.txt');
    const head = git('rev-parse', 'HEAD');
    assert.equal(cli({}, 'add', '.', 'feat-note', 'the shop moves to sqlite').code, 0);
    assert.equal(cli({}, 'add', 'user', 'pref', 'tabs').code, 0);
    const got = JSON.parse(cli({}, 'get', '.', 'feat-note', '--json').out) as { git: { branch: string; commit: string } };
    assert.deepEqual(got.git, { branch: 'feat', commit: head });
    assert.match(cli({}, 'get', '.', 'feat-note').out, new RegExp(`git: +feat @ ${head.slice(0, 12)}`));
    assert.equal(
      (JSON.parse(cli({}, 'get', 'user', 'pref', '--json').out) as { git?: unknown }).git,
      undefined,
      'user memories are not recorded',
    );
    assert.deepEqual(keys(), ['base-note', 'feat-note']);

    git('checkout', '-q', 'main');
    assert.deepEqual(keys(), ['base-note']);
    const search = cli({}, 'search', 'shop', '--mode', 'fts', '--json');
    assert.deepEqual(
      (JSON.parse(search.out) as { hits: { memory: { key: string } }[] }).hits.map((h) => h.memory.key),
      ['base-note'],
    );
    const hidden = cli({}, 'get', '.', 'feat-note');
    assert.equal(hidden.code, 1);
    assert.match(hidden.err, /written on git branch feat, which is not merged into HEAD/);
    assert.deepEqual(keys({ CAIRN_GIT_VISIBILITY: '0' }), ['base-note', 'feat-note'], 'turned off, nothing is hidden');

    git('merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    assert.deepEqual(keys(), ['base-note', 'feat-note']);
  });

  it('cairn branch merged marks an abandoned-looking branch merged, and --undo takes it back', () => {
    git('checkout', '-q', '-b', 'lost');
    commit('l.txt');
    assert.equal(cli({}, 'add', '.', 'lost-note', 'kept after a squash elsewhere').code, 0);
    git('checkout', '-q', 'main');
    git('branch', '-q', '-D', 'lost');
    assert.ok(!keys().includes('lost-note'));
    const marked = cli({}, 'branch', 'merged', 'lost');
    assert.equal(marked.code, 0, marked.err);
    assert.match(marked.out, /git branch lost marked merged/);
    assert.ok(keys().includes('lost-note'));
    assert.match(cli({}, 'branch', 'merged', 'lost', '--undo').out, /no longer marked merged/);
    assert.ok(!keys().includes('lost-note'));
    assert.equal(cli({}, 'branch', 'merged').code, 2, 'a branch name is required');
  });

  it('CAIRN_BRANCHES_FOLLOW_GIT=1: cairn branch create follows the git branch, and cairn branch sync merges it', () => {
    const follow = { CAIRN_BRANCHES_FOLLOW_GIT: '1' };
    const notes = () => cli({}, 'list', '--root', 'notes', '--no-user', '--json');
    git('checkout', '-q', '-b', 'topic');
    const unbound = cli({}, 'branch', 'create', 'plain-mem', 'notes');
    assert.equal(unbound.code, 0, unbound.err);
    assert.doesNotMatch(unbound.out, /following/, 'off by default');
    const made = cli(follow, 'branch', 'create', 'topic-mem', 'notes');
    assert.equal(made.code, 0, made.err);
    assert.match(made.out, /following git branch topic/);
    assert.equal(cli({}, 'add', 'notes', 'topic-note', 'written for the topic', '--branch', 'topic-mem').code, 0);
    commit('t.txt');
    assert.match(cli({}, 'branch', 'list').out, /topic-mem .*follows git topic/);
    git('checkout', '-q', 'main');
    assert.match(cli({}, 'branch', 'sync').out, /no followed git branch is merged/);
    git('merge', '-q', '--no-ff', '-m', 'merge topic', 'topic');
    const synced = cli({}, 'branch', 'sync');
    assert.equal(synced.code, 0, synced.err);
    assert.match(synced.out, /git branch topic merged: merged branch topic-mem \(1 change\(s\)\)/);
    assert.deepEqual(
      (JSON.parse(notes().out) as { items: { key: string }[] }).items.map((m) => m.key),
      ['topic-note'],
    );
    assert.deepEqual(
      cli({}, 'branch', 'list')
        .out.split('\n')
        .filter((l) => l)
        .map((l) => l.split(' ')[0]),
      ['plain-mem'],
      'the followed branch is done, the other stays',
    );
    git('checkout', '-q', 'topic');
    assert.match(cli({}, 'branch', 'sync').out, /not on the base branch/);
    git('checkout', '-q', 'main');
  });
});
