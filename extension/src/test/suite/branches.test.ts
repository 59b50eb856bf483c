/**
 * Memory branch commands (docs/branches.md, docs/editor.md#memory-branches): "Cairn: Create Memory Branch" (name and
 * root asked, the root defaulting to the project namespace; with cairn.branches.followGit, bound to the git branch
 * checked out), "Cairn: Review Memory Branches" (the dashboard on its Branches tab) and "Cairn: Discard Memory Branch"
 * (asks first). Runs after the git suite: the workspace is a real repository by then (made here when it is not).
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Branch, BranchDiscardResult } from '../../../../daemon/src/protocol/types';
import type { ToWebview } from '../../../../daemon/src/protocol/webview';
import type { Ctx } from '../../ctx';
import type { DashboardPanel } from '../../dashboard';
import { DashboardHost } from '../../dashboard/host';
import { cli, ctx, stubUi, uniq, waitFor } from './helpers';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'e2e',
  GIT_AUTHOR_EMAIL: 'e2e@example.com',
  GIT_COMMITTER_NAME: 'e2e',
  GIT_COMMITTER_EMAIL: 'e2e@example.com',
};

/** A branch name the protocol accepts, unique per run (no `:` or upper-case surprises). */
const branchName = (p: string) => uniq(p).replace(/[^A-Za-z0-9._/-]/g, '-');

suite('memory branches', () => {
  let c: Ctx;
  const open = async () => (await c.client.request('branchList', {})).branches;

  suiteSetup(async () => {
    c = await ctx();
    await c.client.whenConnected(60_000);
  });

  test('Create Memory Branch asks a name and a root (the project namespace by default) and creates it', async () => {
    const name = branchName('ui/create');
    const asked: vscode.InputBoxOptions[] = [];
    const cap = stubUi(c, { inputs: [name, undefined] });
    const inputBox = c.ui.inputBox;
    c.ui.inputBox = (o) => {
      asked.push(o);
      return asked.length === 2 ? Promise.resolve(o.value) : inputBox(o); // the root: accept the default
    };
    try {
      const b = await vscode.commands.executeCommand<Branch>('cairn.createBranch');
      assert.ok(b, `created (errors: ${cap.error.join('; ')})`);
      assert.equal(asked.length, 2);
      assert.equal(asked[1].value, c.defaultNamespace, 'the root defaults to the project namespace');
      assert.equal(
        asked[0].validateInput?.('Bad Name!') ? 'refused' : 'accepted',
        'refused',
        'a name the protocol refuses is flagged as typed',
      );
      assert.equal(b.name, name);
      assert.equal(b.root, c.defaultNamespace);
      assert.equal(b.createdBy, 'vscode');
      assert.equal(b.gitBranch, undefined, 'cairn.branches.followGit is off: no git branch bound');
      assert.ok(
        (await open()).some((x) => x.name === name),
        'listed as open',
      );
      assert.match(cap.info.join('\n'), new RegExp(`Created memory branch ${name.replace(/[/.]/g, '\\$&')} of`));
    } finally {
      cap.restore();
    }
  });

  test('Create Memory Branch refuses a bad name or a taken one with a message, creating nothing', async () => {
    const cap = stubUi(c);
    try {
      assert.equal(await vscode.commands.executeCommand('cairn.createBranch', { name: 'has space', root: 'e2e.branches' }), undefined);
      assert.match(cap.error.join('\n'), /Invalid branch name "has space"/);
      const name = branchName('ui/taken');
      await vscode.commands.executeCommand('cairn.createBranch', { name, root: 'e2e.branches' });
      assert.equal(await vscode.commands.executeCommand('cairn.createBranch', { name, root: 'e2e.branches' }), undefined);
      assert.match(cap.error.at(-1) ?? '', /already open/);
      assert.equal((await open()).filter((b) => b.name === name).length, 1);
      assert.ok(!(await open()).some((b) => b.name === 'has space'));
    } finally {
      cap.restore();
    }
  });

  test('with cairn.branches.followGit on, a new branch follows the git branch checked out (as `cairn branch create`)', async function () {
    this.timeout(90_000);
    const ws = vscode.workspace.workspaceFolders![0].uri.fsPath;
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd: ws, encoding: 'utf8', env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
    let head = '';
    try {
      head = git('rev-parse', '--verify', '-q', 'HEAD');
    } catch {
      // not a repository with a commit yet (this suite ran alone): make one, as the git suite does
      git('init', '-q');
      git('symbolic-ref', 'HEAD', 'refs/heads/main');
      fs.appendFileSync(path.join(ws, 'branches-test.txt'), `x ${Date.now()}\n`);
      git('add', 'branches-test.txt');
      git('commit', '-q', '-m', 'branches test');
      await vscode.commands.executeCommand('git.openRepository', ws);
      head = git('rev-parse', 'HEAD');
    }
    if (git('rev-parse', '--abbrev-ref', 'HEAD') === 'HEAD') git('checkout', '-q', '-B', 'branches-test'); // detached: on a branch
    const checkedOut = git('rev-parse', '--abbrev-ref', 'HEAD');
    await waitFor(
      'the git extension to report the checkout',
      () => c.git.checkout?.head === head && c.git.checkout.branch === checkedOut,
      30_000,
    );
    const config = vscode.workspace.getConfiguration('cairn');
    await config.update('branches.followGit', true, vscode.ConfigurationTarget.Workspace);
    const cap = stubUi(c);
    try {
      await waitFor('followGit on', () => c.config.get('cairn.branches.followGit') === true);
      const name = branchName('ui/follow');
      const b = await vscode.commands.executeCommand<Branch>('cairn.createBranch', { name, root: 'e2e.branches' });
      assert.ok(b, `created (errors: ${cap.error.join('; ')})`);
      assert.equal(b.gitBranch, checkedOut);
      assert.match(cap.info.join('\n'), new RegExp(`following git branch ${checkedOut}`));
      const listed = (await open()).find((x) => x.name === name);
      assert.equal(listed?.gitBranch, checkedOut);
      // the CLI sees the same binding
      assert.match(await cli(c, 'branch', 'list'), new RegExp(`${name.replace(/[/.]/g, '\\$&')} .*follows git ${checkedOut}`));
      await c.client.request('branchDiscard', { name });
    } finally {
      cap.restore();
      await config.update('branches.followGit', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('Review Memory Branches opens the dashboard on its Branches tab, with the branch picked', async () => {
    const name = branchName('ui/review');
    await c.client.request('branchCreate', { name, root: 'e2e.branches' });
    const p = await vscode.commands.executeCommand<DashboardPanel>('cairn.reviewBranches', name);
    try {
      // the page asks for init once loaded: the view comes with it, once (a later reload shows what the user left)
      const init = await waitFor('the page to take its init', async () => {
        const seen = p.host.pendingShow;
        return seen === undefined ? true : undefined;
      });
      assert.equal(init, true);
      const posted: ToWebview[] = [];
      const host = new DashboardHost(c, (m) => posted.push(m));
      host.pendingShow = { tab: 'branches', branch: name };
      await host.handle({ type: 'request', id: 1, method: 'host/init', params: {} });
      await host.handle({ type: 'request', id: 2, method: 'host/init', params: {} });
      const inits = posted.map((m) => (m.type === 'response' ? (m.result as { show?: unknown }).show : 'error'));
      assert.deepEqual(inits, [{ tab: 'branches', branch: name }, undefined]);
      // the panel already open: the view goes to the page as a message
      const again = await vscode.commands.executeCommand<DashboardPanel>('cairn.reviewBranches');
      assert.equal(again, p, 'the same panel');
    } finally {
      p.dispose();
      await c.client.request('branchDiscard', { name });
    }
  });

  test('the dashboard host forwards branch requests; an unknown branch is a typed NotFound', async () => {
    const posted: ToWebview[] = [];
    const host = new DashboardHost(c, (m) => posted.push(m));
    const name = branchName('ui/host');
    await c.client.request('branchCreate', { name, root: 'e2e.branches' });
    await c.client.request('upsert', { namespace: 'e2e.branches', key: uniq('k'), value: 'on the branch only', branch: name });
    await host.handle({ type: 'request', id: 1, method: 'branchDiff', params: { name } });
    await host.handle({ type: 'request', id: 2, method: 'branchMerge', params: { name: 'no-such-branch' } });
    await host.handle({ type: 'request', id: 3, method: 'branchMerge', params: { name, actor: 'dashboard' } });
    const [diff, missing, merged] = posted as Extract<ToWebview, { type: 'response' | 'error' }>[];
    assert.equal(diff.type, 'response');
    assert.deepEqual(
      (diff.result as { changes: { change: string }[] }).changes.map((x) => x.change),
      ['added'],
    );
    assert.equal(missing.type, 'error');
    if (missing.type === 'error') {
      assert.equal(missing.error.name, 'NotFound');
      assert.equal(missing.error.data.field, 'name');
    }
    assert.equal(merged.type, 'response');
    assert.equal((merged.result as { merged: boolean; applied: number }).applied, 1);
    assert.ok(!(await open()).some((b) => b.name === name), 'merged: no longer open');
  });

  test('Discard Memory Branch asks first: No keeps it, Discard drops it; an unknown name is reported', async () => {
    const name = branchName('ui/discard');
    await c.client.request('branchCreate', { name, root: 'e2e.branches' });
    let cap = stubUi(c, { picks: [name], confirm: false });
    try {
      assert.equal(await vscode.commands.executeCommand('cairn.discardBranch'), undefined);
      assert.ok(
        (await open()).some((b) => b.name === name),
        'kept when the question is declined',
      );
    } finally {
      cap.restore();
    }
    cap = stubUi(c, { picks: [name], confirm: true });
    try {
      const r = await vscode.commands.executeCommand<BranchDiscardResult>('cairn.discardBranch');
      assert.equal(r?.name, name);
      assert.ok(!(await open()).some((b) => b.name === name), 'discarded');
      assert.match(cap.info.join('\n'), /Discarded memory branch/);
      assert.equal(await vscode.commands.executeCommand('cairn.discardBranch', name), undefined);
      assert.match(cap.error.at(-1) ?? '', /No open memory branch is named/);
    } finally {
      cap.restore();
    }
  });
});
