/**
 * The dashboard's Branches tab logic (webview/src/branches.ts) against a real daemon core: the "New branch" form
 * (the protocol's name rule before sending, branch/create's typed errors at their field), a decision per conflict,
 * no resolutions (Merge off) until every conflict has one, and the resolutions it makes merged by branch/merge.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCodes, type CairnErrorData } from '../../daemon/src/protocol/errors';
import { Requests as R } from '../../daemon/src/protocol/methods';
import { BranchName, type BranchChange } from '../../daemon/src/protocol/types';
import { WEBVIEW_DAEMON_REQUESTS, type WebviewError } from '../../daemon/src/protocol/webview';
import {
  branchLine,
  changeOrigin,
  diffSummary,
  discardBranchQuestion,
  gitConflictsText,
  keptDecisions,
  mergedStart,
  mergeResolutions,
  newBranchErrorField,
  newBranchForm,
  newBranchParams,
  newBranchProblems,
  pickStart,
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
    for (const m of ['branchList', 'branchCreate', 'branchDiff', 'branchMerge', 'branchDiscard'])
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

/** The error a daemon call fails with, as the extension hands it to the webview. */
async function failure(p: Promise<unknown>): Promise<WebviewError> {
  const e = await p.then(
    () => assert.fail('the call succeeded'),
    (x: Error & { data: CairnErrorData }) => x,
  );
  return { code: ErrorCodes[e.data.name], name: e.data.name, message: e.message, data: e.data };
}

describe('dashboard branches: New branch', () => {
  it('starts on the project namespace (else user), from the base, and sends what branch/create takes', async () => {
    assert.deepEqual(newBranchForm(NS), { name: '', root: NS, from: '' });
    assert.equal(newBranchForm(null).root, 'user');
    assert.deepEqual(newBranchParams({ name: ' feature/db ', root: ` ${NS} `, from: '' }), {
      name: 'feature/db',
      root: NS,
      actor: 'dashboard',
    });
    assert.deepEqual(newBranchParams({ name: 'b2', root: NS, from: 'b' }), { name: 'b2', root: NS, from: 'b', actor: 'dashboard' });
    // picking a start branch: a root outside it becomes its root, one inside it stays, the base keeps the root
    const open = [
      { name: 'wide', root: 'project' },
      { name: 'narrow', root: `${NS}.web` },
    ];
    assert.deepEqual(pickStart({ name: 'x', root: NS, from: '' }, 'wide', open), { name: 'x', root: NS, from: 'wide' });
    assert.equal(
      pickStart({ name: 'x', root: 'project.application', from: '' }, 'app', [{ name: 'app', root: NS }]).root,
      NS,
      'a string prefix is not inside',
    );
    assert.deepEqual(pickStart({ name: 'x', root: `${NS}.web`, from: 'narrow' }, '', open), { name: 'x', root: `${NS}.web`, from: '' });
    const c = tempCore();
    try {
      await c.core.call(R.upsert, { namespace: NS, key: 'db', value: 'we use postgres' });
      const b = await c.core.call(R.branchCreate, newBranchParams({ name: 'feature/db', root: NS, from: '' }));
      assert.equal(b.createdBy, 'dashboard');
      await c.core.call(R.upsert, { namespace: NS, key: 'db', value: 'sqlite', branch: 'feature/db' });
      // from: the new branch starts with its parent's writes
      const child = await c.core.call(R.branchCreate, newBranchParams({ name: 'feature/db-2', root: NS, from: 'feature/db' }));
      assert.equal(child.from, 'feature/db');
      assert.equal((await c.core.call(R.get, { namespace: NS, key: 'db', branch: 'feature/db-2' })).value, 'sqlite');
      const names = (await c.core.call(R.branchList, {})).branches.map((x) => x.name).sort();
      assert.deepEqual(names, ['feature/db', 'feature/db-2'], 'the list the tab reloads shows both');
    } finally {
      c.close();
    }
  });

  it("checks the name with the protocol's own rule before sending: what it refuses, the daemon refuses too", async () => {
    const cases = [
      'ok',
      'feature/db-move',
      'v1.2_x',
      'A',
      '',
      ' ',
      '-lead',
      '.hidden',
      '/abs',
      'with space',
      'tab\tname',
      'é',
      'x'.repeat(100),
      'x'.repeat(101),
    ];
    const c = tempCore();
    try {
      for (const name of cases) {
        const problems = newBranchProblems({ name, root: NS, from: '' });
        const local = !!problems.name;
        assert.equal(local, !BranchName.safeParse(name.trim()).success, `the form and the protocol agree on ${JSON.stringify(name)}`);
        if (local) {
          assert.match(problems.name!, /^A branch name (cannot be empty|is at most 100 characters|is letters, digits)/);
          assert.match(problems.name!, /[.]$/);
          // sent anyway, the daemon refuses it with InvalidParams on `name`, and the form shows that at the name
          const e = await failure(c.core.call(R.branchCreate, { name: name.trim(), root: NS }));
          assert.equal(e.name, 'InvalidParams');
          assert.equal(newBranchErrorField(e), 'name');
          assert.match(describeProblem(e).text, /^The branch name (is not valid: a branch name is letters|can be at most 100)/);
        } else await c.core.call(R.branchCreate, newBranchParams({ name, root: NS, from: '' }));
      }
      assert.equal(newBranchProblems({ name: 'ok', root: '  ', from: '' }).root, 'The namespace cannot be empty.');
      assert.deepEqual(newBranchProblems({ name: 'ok', root: NS, from: '' }), {});
    } finally {
      c.close();
    }
  });

  it("shows the daemon's typed error at its field: an existing name, a bad namespace, an unknown or outgrown start", async () => {
    const c = tempCore();
    try {
      await c.core.call(R.branchCreate, newBranchParams({ name: 'b', root: NS, from: '' }));
      const taken = await failure(c.core.call(R.branchCreate, newBranchParams({ name: 'b', root: NS, from: '' })));
      assert.equal(taken.name, 'InvalidState');
      assert.equal(newBranchErrorField(taken), 'name');
      assert.equal(describeProblem(taken).text, 'A memory branch of that name is already open; choose another name.');
      assert.match(describeProblem(taken).details ?? '', /^InvalidState \(\d+\): a branch named b is already open$/);

      const badRoot = await failure(c.core.call(R.branchCreate, newBranchParams({ name: 'c', root: 'Project.App', from: '' })));
      assert.equal(badRoot.name, 'InvalidNamespace');
      assert.equal(newBranchErrorField(badRoot), 'root');
      assert.match(describeProblem(badRoot).text, /^That namespace name is not valid/);

      const noFrom = await failure(c.core.call(R.branchCreate, newBranchParams({ name: 'c', root: NS, from: 'gone' })));
      assert.equal(noFrom.name, 'NotFound');
      assert.equal(newBranchErrorField(noFrom), 'from');
      assert.equal(
        describeProblem(noFrom).text,
        'No open memory branch has that name to start from; it may have been merged or discarded.',
      );

      const outside = await failure(c.core.call(R.branchCreate, newBranchParams({ name: 'c', root: 'project.other', from: 'b' })));
      assert.equal(outside.name, 'InvalidParams');
      assert.equal(newBranchErrorField(outside), 'root');
      assert.equal(describeProblem(outside).text, 'The namespace must lie inside the namespace of the branch it starts from.');

      // nothing of that was created: only b is open
      assert.deepEqual(
        (await c.core.call(R.branchList, {})).branches.map((x) => x.name),
        ['b'],
      );
      // an error about no field of the form is shown under it
      assert.equal(newBranchErrorField({ data: { name: 'Unavailable' } }), null);
      assert.equal(newBranchErrorField({ data: { name: 'InvalidState', field: 'gitBranch' } }), null);
    } finally {
      c.close();
    }
  });
});
