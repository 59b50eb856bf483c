/**
 * Memory branches that follow a git branch (issue 26, docs/branches.md#following-a-git-branch), through the daemon's
 * Core over real git repositories: a memory branch bound to a git branch (branch/create `gitBranch`) is merged into
 * the base when a reader's checkout on the base shows the git branch merged (merge commit, squash), by branch/sync or
 * by any read carrying the checkout; never while unmerged; with conflicts it is not merged and says so.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { followGitFor } from '../../daemon/src/git/checkout';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { GitContext } from '../../daemon/src/protocol/types';
import { commit, sh } from '../git-fixture';
import { rejectsWith, tempCore, tempDir } from '../helpers';

type C = ReturnType<typeof tempCore>;
const NS = 'project.repo';

describe('memory branches that follow git', () => {
  let c: C;
  let repo: string;
  const here = (): GitContext => ({
    repo,
    head: sh(repo, 'rev-parse', 'HEAD'),
    branch: sh(repo, 'symbolic-ref', '--quiet', '--short', 'HEAD'),
    namespace: NS,
  });
  const value = async (key: string) => {
    const r = await c.core.call(R.list, { scope: { root: NS, includeUser: false } });
    return r.items.find((m) => m.key === key)?.value ?? null;
  };
  /** A git branch `feat` with one commit and a memory branch `mem` following it with one write. */
  const featWithMemory = async (key = 'k', v = 'written on feat') => {
    sh(repo, 'checkout', '-q', '-b', 'feat');
    const b = await c.core.call(R.branchCreate, { name: 'mem', root: NS, gitBranch: 'feat', gitRepo: repo });
    assert.equal(b.gitBranch, 'feat');
    await c.core.call(R.upsert, { namespace: NS, key, value: v, branch: 'mem' });
    commit(repo, 'f.txt', 'feature work');
    sh(repo, 'checkout', '-q', 'main');
  };
  const openNames = async () => (await c.core.call(R.branchList, {})).branches.map((b) => b.name);

  beforeEach(() => {
    c = tempCore();
    repo = tempDir();
    sh(repo, 'init', '-q', '-b', 'main');
    commit(repo, 'base.txt', 'first');
  });
  afterEach(() => {
    c.close();
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it('merges the memory branch when its git branch is merged by a merge commit; history says why', async () => {
    await featWithMemory();
    commit(repo, 'main.txt', 'main moves on'); // so the merge is a real merge commit
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    const r = await c.core.call(R.branchSync, here());
    assert.deepEqual(r, { onBase: true, merged: [{ name: 'mem', gitBranch: 'feat', applied: 1 }], conflicted: [] });
    assert.equal(await value('k'), 'written on feat');
    assert.deepEqual(await openNames(), [], 'the memory branch is done');
    const all = (await c.core.call(R.branchList, { all: true })).branches;
    assert.equal(all[0].status, 'merged');
    assert.equal(all[0].closedBy, 'git');
    const m = (await c.core.call(R.list, { scope: { root: NS, includeUser: false } })).items[0];
    const h = await c.core.call(R.history, { id: m.id });
    const last = h.entries.reduce((a, e) => (e.version > a.version ? e : a));
    assert.equal(last.actor, 'git');
    assert.match(String(last.reason), /git branch feat merged/);
    // Synced again: nothing left to do.
    assert.deepEqual((await c.core.call(R.branchSync, here())).merged, []);
  });

  it('merges a git branch bound after its commits, with no commit since', async () => {
    sh(repo, 'checkout', '-q', '-b', 'feat');
    commit(repo, 'f.txt', 'work before the binding');
    await c.core.call(R.branchCreate, {
      name: 'mem',
      root: NS,
      gitBranch: 'feat',
      gitRepo: repo,
      gitCommit: sh(repo, 'rev-parse', 'HEAD'),
    });
    await c.core.call(R.upsert, { namespace: NS, key: 'k', value: 'late note', branch: 'mem' });
    sh(repo, 'checkout', '-q', 'main');
    assert.deepEqual((await c.core.call(R.branchSync, here())).merged, []);
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    assert.deepEqual((await c.core.call(R.branchSync, here())).merged, [{ name: 'mem', gitBranch: 'feat', applied: 1 }]);
    assert.equal(await value('k'), 'late note');
  });

  it('merges on a squash merge, and any read carrying the checkout does it', async () => {
    await featWithMemory();
    sh(repo, 'merge', '-q', '--squash', 'feat');
    sh(repo, 'commit', '-q', '-m', 'squashed feat');
    assert.equal(await value('k'), null, 'not merged before a reader looks');
    await c.core.call(R.search, { query: 'feat', mode: 'fts', scope: { root: NS, includeUser: false }, git: here() });
    assert.equal(await value('k'), 'written on feat');
    assert.deepEqual(await openNames(), []);
  });

  it('leaves the memory branch alone while the git branch is unmerged, and from a checkout of another branch', async () => {
    await featWithMemory();
    commit(repo, 'main.txt', 'unrelated');
    assert.deepEqual(await c.core.call(R.branchSync, here()), { onBase: true, merged: [], conflicted: [] });
    sh(repo, 'checkout', '-q', 'feat');
    assert.deepEqual(await c.core.call(R.branchSync, here()), { onBase: false, merged: [], conflicted: [] }, 'on feat itself');
    // A git branch bound before any commit of its own is not "merged" just because its tip is on main.
    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'branch', 'fresh');
    await c.core.call(R.branchCreate, { name: 'mem2', root: NS, gitBranch: 'fresh', gitRepo: repo });
    await c.core.call(R.list, { scope: { root: NS, includeUser: false }, git: here() });
    assert.deepEqual((await c.core.call(R.branchSync, here())).merged, []);
    assert.deepEqual((await openNames()).sort(), ['mem', 'mem2']);
    assert.equal(await value('k'), null);
  });

  it('does not merge on conflicts, and says so in the sync answer and branch/list', async () => {
    await c.core.call(R.upsert, { namespace: NS, key: 'k', value: 'base version' });
    await featWithMemory('k', 'branch version');
    await c.core.call(R.upsert, { namespace: NS, key: 'k', value: 'base changed meanwhile' });
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    const r = await c.core.call(R.branchSync, here());
    assert.deepEqual(r, { onBase: true, merged: [], conflicted: [{ name: 'mem', gitBranch: 'feat', conflicts: 1 }] });
    assert.equal(await value('k'), 'base changed meanwhile', 'nothing merged');
    const b = (await c.core.call(R.branchList, {})).branches[0];
    assert.equal(b.name, 'mem');
    assert.equal(b.gitConflicts, 1);
    // Resolved by hand: branch/merge with a decision closes it.
    const m = await c.core.call(R.branchMerge, { name: 'mem', resolutions: [{ namespace: NS, key: 'k', take: 'branch' }] });
    assert.equal(m.merged, true);
    assert.equal(await value('k'), 'branch version');
  });

  it('leaves a branch that follows no git branch untouched', async () => {
    await c.core.call(R.branchCreate, { name: 'plain', root: NS });
    await c.core.call(R.upsert, { namespace: NS, key: 'p', value: 'plain branch note', branch: 'plain' });
    sh(repo, 'checkout', '-q', '-b', 'plain');
    commit(repo, 'p.txt', 'work');
    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge plain', 'plain');
    assert.deepEqual(await c.core.call(R.branchSync, here()), { onBase: true, merged: [], conflicted: [] });
    assert.deepEqual(await openNames(), ['plain']);
    assert.equal(await value('p'), null);
  });

  it('binds task branches to a git branch', async () => {
    sh(repo, 'checkout', '-q', '-b', 'feat');
    const t = await c.core.call(R.tasksCreate, { title: 't', scope: { root: NS }, branch: true, gitBranch: 'feat', gitRepo: repo });
    const b = (await c.core.call(R.branchList, {})).branches.find((x) => x.taskId === t.id)!;
    assert.equal(b.gitBranch, 'feat');
    await c.core.call(R.upsert, { namespace: NS, key: 't', value: 'task note', branch: b.name });
    commit(repo, 'f.txt', 'x');
    sh(repo, 'checkout', '-q', 'main');
    sh(repo, 'merge', '-q', '--no-ff', '-m', 'merge feat', 'feat');
    assert.equal((await c.core.call(R.branchSync, here())).merged[0].name, b.name);
    assert.equal(await value('t'), 'task note');
  });

  it('binds a new branch to the checked-out git branch only with cairn.branches.followGit (CAIRN_BRANCHES_FOLLOW_GIT)', async () => {
    sh(repo, 'checkout', '-q', '-b', 'feat');
    assert.equal(followGitFor(repo, {}), undefined, 'off by default');
    assert.equal(followGitFor(repo, { CAIRN_BRANCHES_FOLLOW_GIT: '0' }), undefined);
    const f = followGitFor(repo, { CAIRN_BRANCHES_FOLLOW_GIT: '1' });
    assert.deepEqual(f, { gitBranch: 'feat', gitRepo: sh(repo, 'rev-parse', '--show-toplevel'), gitCommit: sh(repo, 'rev-parse', 'HEAD') });
    sh(repo, 'checkout', '-q', '--detach');
    assert.equal(followGitFor(repo, { CAIRN_BRANCHES_FOLLOW_GIT: '1' }), undefined, 'detached: nothing to follow');
    const outside = tempDir();
    assert.equal(followGitFor(outside, { CAIRN_BRANCHES_FOLLOW_GIT: '1' }), undefined, 'outside a repository');
    fs.rmSync(outside, { recursive: true, force: true });
    const b = await c.core.call(R.branchCreate, { name: 'cli', root: NS, ...f });
    assert.equal(b.gitBranch, 'feat');
  });

  it('answers bad input with typed errors and keeps serving', async () => {
    await rejectsWith(c.core.call(R.branchCreate, { name: 'x', root: NS, gitRepo: repo }), 'InvalidParams', 'gitRepo');
    await rejectsWith(c.core.call(R.branchCreate, { name: 'x', root: NS, gitBranch: 'bad name' }), 'InvalidParams', 'gitBranch');
    await c.core.call(R.branchCreate, { name: 'x', root: NS, gitBranch: 'feat' });
    await rejectsWith(c.core.call(R.branchCreate, { name: 'y', root: NS, gitBranch: 'feat' }), 'InvalidState', 'gitBranch');
    await rejectsWith(c.core.call(R.tasksCreate, { title: 't', gitBranch: 'feat' }), 'InvalidParams', 'gitBranch');
    const head = sh(repo, 'rev-parse', 'HEAD');
    await rejectsWith(c.core.call(R.branchSync, { repo: tempDir(), head }), 'InvalidParams', 'repo');
    await rejectsWith(c.core.call(R.branchSync, { repo, head: 'f'.repeat(40) }), 'InvalidParams', 'head');
    await rejectsWith(c.core.call(R.branchSync, { repo, head: 'nope' } as never), 'InvalidParams', 'head');
    // A read with a bad checkout is not failed by the follow check.
    assert.deepEqual((await c.core.call(R.list, { scope: { root: NS }, git: { repo, head: 'f'.repeat(40), branch: 'main' } })).items, []);
    assert.equal((await c.core.call(R.branchSync, { repo, head })).onBase, true, 'without branch: HEAD is main tip');
  });
});
