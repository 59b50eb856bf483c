/**
 * Git-aware memory in the real editor (docs/editor.md#git-aware-memory): the workspace becomes a real git repository,
 * code-server's built-in git extension reports its checkout, and switching branches with git changes what the
 * Memories view shows, what the status bar names and what a hover on an anchored line says, with no reload: a memory
 * written on a feature branch is in the tree and the hover there, gone on main, and back on main once the branch is
 * merged. Runs last: it turns the workspace's stub `.git` into a real repository.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Ctx } from '../../ctx';
import { ctx, treeMemories, uniq, waitFor, workspaceFile } from './helpers';

/** The text of every hover at a position (the daemon's Cairn hover among them). */
async function hoverText(uri: vscode.Uri, line0: number): Promise<string> {
  const hovers =
    (await vscode.commands.executeCommand<vscode.Hover[]>('vscode.executeHoverProvider', uri, new vscode.Position(line0, 4))) ?? [];
  return hovers
    .flatMap((h) => h.contents)
    .map((x) => (typeof x === 'string' ? x : x.value))
    .join('\n');
}

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'e2e',
  GIT_AUTHOR_EMAIL: 'e2e@example.com',
  GIT_COMMITTER_NAME: 'e2e',
  GIT_COMMITTER_EMAIL: 'e2e@example.com',
};

suite('git-aware memory', () => {
  let c: Ctx;
  let ws: string;
  const git = (...args: string[]) => execFileSync('git', args, { cwd: ws, encoding: 'utf8', env: GIT_ENV }).trim();
  const commit = (file: string) => {
    fs.appendFileSync(path.join(ws, file), `${file} ${Date.now()}\n`);
    git('add', file);
    git('commit', '-q', '-m', `change ${file}`);
  };
  const onBranch = (name: string) =>
    waitFor(
      `the git extension to report branch ${name}`,
      () => c.git.checkout?.branch === name && c.git.checkout.head === git('rev-parse', 'HEAD'),
      30_000,
    );
  const keysInTree = async () => (await treeMemories(c)).map((m) => m.key);

  suiteSetup(async () => {
    c = await ctx();
    await c.client.whenConnected(60_000);
    ws = vscode.workspace.workspaceFolders![0].uri.fsPath;
  });

  test("code-server's built-in git extension is active in the workspace", async () => {
    const ext = vscode.extensions.getExtension('vscode.git');
    assert.ok(ext, 'vscode.git is installed');
    if (!ext.isActive) await ext.activate();
    assert.ok(ext.isActive);
  });

  test('switching branches changes the tree and the status bar, and a merge brings the branch memories to main', async () => {
    // The harness's stub .git (a remote and HEAD only) becomes a real repository on main.
    git('init', '-q');
    git('symbolic-ref', 'HEAD', 'refs/heads/main');
    commit('src/billing.py');
    await vscode.commands.executeCommand('git.openRepository', ws);
    await onBranch('main');
    const ns = c.project!.namespace;
    const onMain = uniq('git-main');
    const onFeat = uniq('git-feat');
    const write = async (key: string, value: string) =>
      (await c.client.request('upsert', { namespace: ns, key, value, actor: 'e2e', ...c.git.write(ns) })).memory;
    const m = await write(onMain, 'Written on main: visible on every branch');
    assert.deepEqual(m.git, { branch: 'main', commit: git('rev-parse', 'HEAD') });
    await waitFor('the status bar to name main', () => c.statusBar.item.text.includes('$(git-branch) main'));

    git('checkout', '-q', '-b', 'feature/e2e');
    commit('src/feature.py');
    await onBranch('feature/e2e');
    await waitFor('the status bar to name the feature branch', () => c.statusBar.item.text.includes('$(git-branch) feature/e2e'));
    await write(onFeat, 'Written on the feature branch: hidden on main until merged');
    await waitFor('both memories in the tree on the feature branch', async () => {
      const keys = await keysInTree();
      return keys.includes(onMain) && keys.includes(onFeat);
    });

    git('checkout', '-q', 'main');
    await onBranch('main');
    await waitFor('the feature memory gone from the tree on main', async () => {
      const keys = await keysInTree();
      return keys.includes(onMain) && !keys.includes(onFeat);
    });
    assert.ok(c.statusBar.item.text.includes('$(git-branch) main'));
    const node = (await treeMemories(c)).find((x) => x.key === onMain)!;
    assert.deepEqual(node.git?.branch, 'main', 'the tree item carries its branch and commit');

    git('merge', '-q', '--no-ff', '-m', 'merge feature/e2e', 'feature/e2e');
    await onBranch('main');
    await waitFor('the feature memory back in the tree once merged', async () => (await keysInTree()).includes(onFeat));
  });

  test('switching branches changes the hovers: a memory anchored on a feature branch shows there only', async () => {
    assert.equal(git('rev-parse', '--abbrev-ref', 'HEAD'), 'main', 'the previous test left the repository on main');
    const ns = c.project!.namespace;
    const uri = workspaceFile('src/billing.py');
    await vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri));
    const TAX_LINE = 10; // `def tax(amount, rate):`, 0-based; the same on both branches (the feature commits another file)
    git('checkout', '-q', '-b', 'feature/hover');
    commit('src/hover.py');
    await onBranch('feature/hover');
    const key = uniq('git-hover');
    const m = (
      await c.client.request('upsert', {
        namespace: ns,
        key,
        value: 'Tax is computed per line on the feature branch (the walrus ledger rule).',
        anchors: [{ path: 'src/billing.py', startLine: TAX_LINE + 1, endLine: TAX_LINE + 1 }],
        actor: 'e2e',
        ...c.git.write(ns),
      })
    ).memory;
    assert.equal(m.git?.branch, 'feature/hover');
    const shown = () => waitFor('the hover to show the feature memory', async () => (await hoverText(uri, TAX_LINE)).includes(key), 30_000);
    const hidden = () =>
      waitFor('the hover to leave the feature memory out', async () => !(await hoverText(uri, TAX_LINE)).includes(key), 30_000);
    await shown();

    git('checkout', '-q', 'main');
    await onBranch('main');
    await hidden();
    assert.ok(!(await hoverText(uri, TAX_LINE)).includes('walrus ledger'), 'no trace of the feature memory on main');

    git('checkout', '-q', 'feature/hover');
    await onBranch('feature/hover');
    await shown();

    git('checkout', '-q', 'main');
    await onBranch('main');
    await hidden();
  });
});
