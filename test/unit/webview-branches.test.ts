/**
 * The dashboard's Branches tab logic (webview/src/branches.ts) against a real daemon core: a decision per conflict,
 * no resolutions (Merge off) until every conflict has one, and the resolutions it makes merged by branch/merge.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCodes, type CairnErrorData } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import type { BranchChange } from '../../daemon/src/protocol/types';
import { WEBVIEW_DAEMON_REQUESTS } from '../../daemon/src/protocol/webview';
import {
  branchLine,
  changeOrigin,
  diffSummary,
  discardBranchQuestion,
  gitConflictsText,
  keptDecisions,
  mergedStart,
  mergeResolutions,
  undecided,
  type Decisions,
} from '../../webview/src/branches';
import { describeProblem } from '../../webview/src/errors';
import { restoreState, TABS } from '../../webview/src/state';
import { tempCore } from '../helpers';

const NS = 'project.app';

/** A branch `b` of project.app with: a conflict on `db` (changed on both sides), a conflict on `gone` (deleted on the
 * branch, changed on the base), a plain change on `style` and an added `new`. */
async function scenario(c: ReturnType<typeof tempCore>) {
  const up = (key: string, value: string, branch?: string) =>
    c.core.call(R.upsert, { namespace: NS, key, value, kind: 'decision', tags: ['t'], ...(branch ? { branch } : {}) });
  await up('db', 'we use postgres');
  await up('gone', 'old note');
  await up('style', 'tabs');
  await c.core.call(R.branchCreate, { name: 'b', root: NS });
  await up('db', 'we moved to sqlite', 'b');
  await c.core.call(R.delete, { namespace: NS, key: 'gone', branch: 'b' });
  await up('style', 'spaces', 'b');
  await up('new', 'added on the branch', 'b');
  await up('db', 'we use postgres 16'); // the base moves on: conflicts
  await up('gone', 'old note, kept up to date');
  return (await c.core.call(R.branchDiff, { name: 'b' })).changes;
}

const find = (changes: BranchChange[], key: string) => changes.find((c) => c.key === key)!;

describe('dashboard branches: decisions and merge', () => {
  it('Merge stays off until every conflict has a decision; an empty merged value is no decision', async () => {
    const c = tempCore();
    try {
      const changes = await scenario(c);
      assert.deepEqual(
        changes
          .filter((x) => x.conflict)
          .map((x) => x.key)
          .sort(),
        ['db', 'gone'],
      );
      assert.equal(mergeResolutions(changes, {}), null);
      assert.deepEqual(
        undecided(changes, {})
          .map((x) => x.key)
          .sort(),
        ['db', 'gone'],
      );
      const half: Decisions = { [`${NS}/db`]: { take: 'branch' } };
      assert.equal(mergeResolutions(changes, half), null);
      assert.deepEqual(
        undecided(changes, half).map((x) => x.key),
        ['gone'],
      );
      const blank: Decisions = { ...half, [`${NS}/gone`]: { take: 'edit', value: '  ' } };
      assert.equal(mergeResolutions(changes, blank), null, 'an empty merged value does not decide');
      const all: Decisions = { ...half, [`${NS}/gone`]: { take: 'base' } };
      assert.deepEqual(mergeResolutions(changes, all), [
        { namespace: NS, key: 'db', take: 'branch' },
        { namespace: NS, key: 'gone', take: 'base' },
      ]);
      assert.deepEqual(undecided(changes, all), []);
    } finally {
      c.close();
    }
  });

  it('the resolutions made are what branch/merge takes: branch, base and an edited value land on the base', async () => {
    const c = tempCore();
    try {
      const changes = await scenario(c);
      // without decisions the daemon refuses too, and writes nothing
      const refused = await c.core.call(R.branchMerge, { name: 'b' });
      assert.equal(refused.merged, false);
      assert.equal(refused.conflicts.length, 2);
      assert.equal(mergedStart(find(changes, 'db')), 'we moved to sqlite', 'an edit starts from the branch value');
      assert.equal(mergedStart(find(changes, 'gone')), 'old note, kept up to date', 'or the base value when the branch deleted it');
      const resolutions = mergeResolutions(changes, {
        [`${NS}/db`]: { take: 'edit', value: 'sqlite locally, postgres 16 in the team store' },
        [`${NS}/gone`]: { take: 'branch' },
      });
      assert.ok(resolutions);
      const r = await c.core.call(R.branchMerge, { name: 'b', actor: 'dashboard', resolutions });
      assert.equal(r.merged, true);
      assert.equal(r.applied, 4);
      const db = await c.core.call(R.get, { namespace: NS, key: 'db' });
      assert.equal(db.value, 'sqlite locally, postgres 16 in the team store');
      assert.equal(db.kind, 'decision', 'the edited value keeps the metadata of the side it started from');
      assert.deepEqual(db.tags, ['t']);
      assert.equal((await c.core.call(R.get, { namespace: NS, key: 'style' })).value, 'spaces');
      assert.equal((await c.core.call(R.get, { namespace: NS, key: 'new' })).value, 'added on the branch');
      await assert.rejects(
        c.core.call(R.get, { namespace: NS, key: 'gone' }),
        (e: { data: CairnErrorData }) => e.data.name === 'Deleted' || e.data.name === 'NotFound',
      );
      const h = await c.core.call(R.history, { id: db.id });
      const last = h.entries.find((x) => x.version === db.version);
      assert.equal(last?.actor, 'dashboard');
      assert.equal(last?.reason, 'merge of branch b');
    } finally {
      c.close();
    }
  });

  it('a reloaded diff keeps the decisions still about one of its conflicts', async () => {
    const c = tempCore();
    try {
      const changes = await scenario(c);
      const kept = keptDecisions(changes, { [`${NS}/db`]: { take: 'base' }, [`${NS}/style`]: { take: 'base' }, 'x/y': { take: 'branch' } });
      assert.deepEqual(kept, { [`${NS}/db`]: { take: 'base' } });
    } finally {
      c.close();
    }
  });

  it('words: the diff summary, each change origin, the branch line, the git conflicts message, the discard question', async () => {
    const c = tempCore();
    try {
      const changes = await scenario(c);
      assert.equal(diffSummary(changes), '4 changes: 1 added, 2 changed, 1 deleted; 2 conflicts to decide.');
      assert.equal(diffSummary([]), 'No changes: the branch has written nothing that differs from the base.');
      assert.equal(changeOrigin(find(changes, 'new')), 'new on the branch');
      assert.equal(changeOrigin(find(changes, 'db')), 'from base version 1');
      const [b] = (await c.core.call(R.branchList, {})).branches;
      assert.match(branchLine(b), /^of project\.app · 4 writes · by /);
      assert.equal(gitConflictsText(b), null);
      assert.equal(
        gitConflictsText({ gitBranch: 'feature/x', gitConflicts: 2 }),
        'Git branch feature/x merged, memory merge has 2 conflicts: decide them and merge.',
      );
      const q = discardBranchQuestion(b);
      assert.equal(q.message, 'Discard memory branch "b"?');
      assert.match(q.detail ?? '', /4 writes under project\.app.*cannot be undone/);
      assert.equal(q.confirm, 'Discard branch');
    } finally {
      c.close();
    }
  });

  it('the webview may call the branch methods, has a Branches tab, and names an unknown branch in words', async () => {
    for (const m of ['branchList', 'branchDiff', 'branchMerge', 'branchDiscard'])
      assert.ok((WEBVIEW_DAEMON_REQUESTS as readonly string[]).includes(m), m);
    assert.ok((TABS as readonly string[]).includes('branches'));
    assert.equal(restoreState({ tab: 'branches', branch: 'b' }).branch, 'b');
    assert.equal(restoreState({ tab: 'branches', branch: 7 }).branch, null);
    const c = tempCore();
    try {
      const e = await c.core.call(R.branchDiff, { name: 'nope' }).then(
        () => assert.fail('no such branch'),
        (x: Error & { data: CairnErrorData }) => x,
      );
      const p = describeProblem({ code: ErrorCodes[e.data.name], name: e.data.name, message: e.message, data: e.data });
      assert.equal(p.text, 'That memory branch is not open any more; it may have been merged or discarded.');
    } finally {
      c.close();
    }
  });
});
