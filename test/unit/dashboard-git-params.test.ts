/**
 * The git context the extension adds to what the dashboard sends (extension/src/dashboard/git-params.ts), as the
 * window's commands send it: reads carry the checkout (not on a memory branch), a memory/upsert records the git
 * branch and commit the window's GitWatch gives for its namespace, a new memory branch follows the git branch
 * checked out (cairn.branches.followGit); what the dashboard set itself is kept. The upsert against a real core.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isUnder } from '../../daemon/src/protocol/namespace';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { EpisodeProposeParams, EventExpandParams, UpsertParams } from '../../daemon/src/protocol/types';
import { proposalNamespace, withGitContext, type GitParamsSource } from '../../extension/src/dashboard/git-params';
import { tempCore } from '../helpers';

const NS = 'project.app';
const HEAD = 'c0ffee'.padEnd(40, '0');
/** A window on branch feature/x of /repo, its project namespace project.app (GitWatch's rules: writes there only). */
const git: GitParamsSource = {
  read: () => ({ git: { repo: '/repo', head: HEAD, branch: 'feature/x', namespace: NS } }),
  write: (namespace) => (isUnder(namespace, NS) ? { git: { branch: 'feature/x', commit: HEAD } } : {}),
  follow: () => ({ gitBranch: 'feature/x', gitRepo: '/repo' }),
};
const none: GitParamsSource = { read: () => ({}), write: () => ({}), follow: () => ({}) };

describe('dashboard requests carry the git context', () => {
  it('a memory written from the dashboard records the git branch and commit (project namespace only)', async () => {
    const c = tempCore();
    try {
      const params = withGitContext('upsert', { namespace: `${NS}.web`, key: 'k', value: 'v', actor: 'dashboard' }, git) as UpsertParams;
      assert.deepEqual(params.git, { branch: 'feature/x', commit: HEAD });
      const m = (await c.core.call(R.upsert, params)).memory;
      assert.deepEqual(m.git, { branch: 'feature/x', commit: HEAD });
      assert.deepEqual((await c.core.call(R.get, { id: m.id })).git, { branch: 'feature/x', commit: HEAD });
      // outside the project namespace, and outside a repository, nothing is recorded
      const user = withGitContext('upsert', { namespace: 'user', key: 'k', value: 'v' }, git) as UpsertParams;
      assert.equal(user.git, undefined);
      assert.equal((await c.core.call(R.upsert, user)).memory.git, undefined);
      assert.equal((withGitContext('upsert', { namespace: NS, key: 'k2', value: 'v' }, none) as UpsertParams).git, undefined);
    } finally {
      c.close();
    }
  });

  it('a memory proposed from events records the git branch and commit where it lands (project namespace only)', async () => {
    const c = tempCore();
    try {
      const ep = (await c.core.call(R.episodesStart, { namespace: `${NS}.web`, title: 's' })).episode;
      const [ev] = (await c.core.call(R.eventsAppend, { episodeId: ep.id, events: [{ kind: 'user', text: 'x' }] })).results;
      const expand = (q: EventExpandParams) => c.core.call(R.eventsExpand, q);
      // The dashboard names no namespace: the proposal lands in its first event's session's, read from the daemon.
      const draft = { events: [ev.position], key: 'k', value: 'v', actor: 'dashboard' };
      const lands = await proposalNamespace(draft, expand);
      assert.equal(lands, `${NS}.web`);
      const params = withGitContext('episodesPropose', draft, git, lands) as EpisodeProposeParams;
      assert.deepEqual(params.git, { branch: 'feature/x', commit: HEAD });
      const m = (await c.core.call(R.episodesPropose, params)).memory;
      assert.deepEqual(m.git, { branch: 'feature/x', commit: HEAD });
      assert.deepEqual((await c.core.call(R.get, { id: m.id })).git, { branch: 'feature/x', commit: HEAD });
      // A namespace the dashboard names itself decides: outside the project namespace nothing is recorded.
      assert.equal(await proposalNamespace({ ...draft, namespace: 'user' }, expand), undefined);
      assert.equal((withGitContext('episodesPropose', { ...draft, namespace: 'user' }, git, lands) as EpisodeProposeParams).git, undefined);
      // An event that cannot be read leaves the proposal as it is (the daemon answers its own error).
      assert.equal(await proposalNamespace({ ...draft, events: [999] }, expand), undefined);
      assert.deepEqual(withGitContext('episodesPropose', draft, git, undefined), draft);
      assert.equal(await proposalNamespace([1], expand), undefined);
    } finally {
      c.close();
    }
  });

  it('lists and searches see the checkout unless on a memory branch; a new branch follows git; the rest is unchanged', () => {
    assert.deepEqual(withGitContext('search', { query: 'q' }, git), { query: 'q', ...git.read() });
    assert.deepEqual(withGitContext('list', {}, git), git.read());
    assert.deepEqual(withGitContext('list', { branch: 'b' }, git), { branch: 'b' }, 'a memory branch is read as it is');
    assert.deepEqual(withGitContext('branchCreate', { name: 'b', root: NS }, git), {
      name: 'b',
      root: NS,
      gitBranch: 'feature/x',
      gitRepo: '/repo',
    });
    assert.deepEqual(withGitContext('branchCreate', { name: 'b', root: NS }, none), { name: 'b', root: NS });
    // what the dashboard set itself wins
    const own = { branch: 'main', commit: 'a'.repeat(40) };
    assert.deepEqual(withGitContext('upsert', { namespace: NS, key: 'k', value: 'v', git: own }, git), {
      namespace: NS,
      key: 'k',
      value: 'v',
      git: own,
    });
    assert.deepEqual(withGitContext('branchCreate', { name: 'b', root: NS, gitBranch: 'other' }, git), {
      name: 'b',
      root: NS,
      gitBranch: 'other',
    });
    for (const m of ['get', 'delete', 'forget', 'restore', 'branchMerge', 'history'])
      assert.deepEqual(withGitContext(m, { id: 'x' }, git), { id: 'x' }, m);
    // params that are not an object go to the daemon as they are (it answers InvalidParams)
    for (const p of [undefined, null, 'x', [1]]) assert.equal(withGitContext('upsert', p, git), p);
  });
});
