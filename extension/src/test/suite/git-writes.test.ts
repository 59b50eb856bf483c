/**
 * Git-aware writes from every write path of the extension (docs/protocol.md#git-aware-memory): the language-model
 * tool cairn_remember, @cairn /remember, the extension API's remember, "Cairn: Add Memory", approving a proposal and
 * the dashboard's memory/upsert each record the git branch and HEAD commit the window's checkout (GitWatch, from the
 * git extension) shows; and the tools' reads see what that checkout sees. Runs after the git suite (the workspace is
 * a real repository by then; made here when it is not) and leaves the repository on the branch it found.
 */
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Memory } from '../../../../daemon/src/protocol/types';
import type { ToWebview } from '../../../../daemon/src/protocol/webview';
import type { AgentsExports } from '../../agents';
import type { Ctx } from '../../ctx';
import { DashboardHost } from '../../dashboard/host';
import type { CairnApi } from '../../main';
import { EXTENSION_ID, stubUi, uniq, waitFor } from './helpers';

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'e2e',
  GIT_AUTHOR_EMAIL: 'e2e@example.com',
  GIT_COMMITTER_NAME: 'e2e',
  GIT_COMMITTER_EMAIL: 'e2e@example.com',
};

async function invoke(name: string, input: object): Promise<string> {
  const r = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined });
  return r.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : JSON.stringify(p))).join('');
}

suite('agents: git-aware writes from every extension write path', () => {
  let x: CairnApi & AgentsExports;
  let c: Ctx;
  let ns: string;
  let ws: string;
  let startBranch: string;
  const feature = uniq('feature/writes').replace(/[^A-Za-z0-9._/-]/g, '-');
  const git = (...args: string[]) =>
    execFileSync('git', args, { cwd: ws, encoding: 'utf8', env: GIT_ENV, stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  const commit = (file: string) => {
    fs.appendFileSync(path.join(ws, file), `${file} ${Date.now()}\n`);
    git('add', file);
    git('commit', '-q', '-m', `change ${file}`);
    return git('rev-parse', 'HEAD');
  };
  const onBranch = (name: string) =>
    waitFor(
      `the git extension to report branch ${name}`,
      () => c.git.checkout?.branch === name && c.git.checkout.head === git('rev-parse', 'HEAD'),
      30_000,
    );
  const get = (key: string) => c.client.request('get', { namespace: ns, key });

  suiteSetup(async function () {
    this.timeout(90_000);
    const ext = vscode.extensions.getExtension<CairnApi & AgentsExports>(EXTENSION_ID)!;
    x = ext.isActive ? ext.exports : await ext.activate();
    c = x.ctx;
    await c.client.whenConnected(60_000);
    ns = c.project!.namespace;
    ws = vscode.workspace.workspaceFolders![0].uri.fsPath;
    try {
      git('rev-parse', '--verify', '-q', 'HEAD');
    } catch {
      // not a repository with a commit yet (this suite ran alone): make one, as the git suite does
      git('init', '-q');
      git('symbolic-ref', 'HEAD', 'refs/heads/main');
      commit('git-writes.txt');
      await vscode.commands.executeCommand('git.openRepository', ws);
    }
    startBranch = git('rev-parse', '--abbrev-ref', 'HEAD');
    if (startBranch === 'HEAD') {
      startBranch = uniq('git-writes-base').replace(/[^A-Za-z0-9._/-]/g, '-');
      git('checkout', '-q', '-b', startBranch);
    }
    git('checkout', '-q', '-b', feature);
    commit('git-writes.txt');
    await onBranch(feature);
  });

  suiteTeardown(async () => {
    if (ws && startBranch && git('rev-parse', '--abbrev-ref', 'HEAD') !== startBranch) git('checkout', '-q', startBranch);
  });

  test('cairn_remember, @cairn /remember, the API, Add Memory, Approve and the dashboard record the branch and commit', async function () {
    this.timeout(60_000);
    const where = { branch: feature, commit: git('rev-parse', 'HEAD') };
    const written: Record<string, Memory> = {};

    const lm = uniq('git-lm');
    assert.match(await invoke('cairn_remember', { key: lm, value: 'The LM tool wrote this on the feature branch.' }), /Saved new memory/);
    written['the language-model tool'] = await get(lm);

    const chat = uniq('git-chat');
    await x.agents.chat(
      { prompt: `${chat}: @cairn remembered this on the feature branch.`, command: 'remember' },
      { markdown: () => {}, progress: () => {}, reference: () => {}, button: () => {} },
    );
    written['@cairn /remember'] = await get(chat);

    written['the API'] = await x.remember({ key: uniq('git-api'), value: 'The API remembered this on the feature branch.', source: 'e2e' });

    const cap = stubUi(c);
    try {
      written['Add Memory'] = await vscode.commands.executeCommand<Memory>('cairn.addMemory', {
        namespace: ns,
        key: uniq('git-add'),
        value: 'Add Memory wrote this on the feature branch.',
        kind: 'note',
        tags: [],
      });
      assert.ok(written['Add Memory'], `added (errors: ${cap.error.join('; ')})`);
      // an agent's proposal from before the checkout, approved here: the approval is a write on this branch
      const proposed = (
        await c.client.request('upsert', { namespace: ns, key: uniq('git-approve'), value: 'Proposed elsewhere.', status: 'proposed' })
      ).memory;
      assert.equal(proposed.git, undefined);
      written['Approve'] = await vscode.commands.executeCommand<Memory>('cairn.approveMemory', proposed);
    } finally {
      cap.restore();
    }

    const posted: ToWebview[] = [];
    const host = new DashboardHost(c, (m) => posted.push(m));
    await host.handle({
      type: 'request',
      id: 1,
      method: 'upsert',
      params: { namespace: ns, key: uniq('git-dashboard'), value: 'The dashboard wrote this.', ifVersion: 0, actor: 'dashboard' },
    });
    const reply = posted.find((m) => m.type === 'response' || m.type === 'error');
    assert.equal(reply?.type, 'response', JSON.stringify(reply));
    written['the dashboard'] = (reply as { result: { memory: Memory } }).result.memory;

    for (const [path, m] of Object.entries(written)) assert.deepEqual(m.git, where, `${path} records the git branch and commit`);
    // history keeps it per version: the stored version says where it was written
    assert.deepEqual((await get(lm)).git, where);
  });

  test('the language-model tools search what the checkout sees: a memory of an unmerged branch is hidden off it', async function () {
    this.timeout(90_000);
    const key = uniq('git-lm-read');
    await invoke('cairn_remember', { key, value: 'The marmot ferry timetable lives on the feature branch only.' });
    const search = () => invoke('cairn_search', { query: 'marmot ferry timetable', includeProposed: true });
    await waitFor('the tool search to find it on the feature branch', async () => (await search()).includes(key), 30_000);
    git('checkout', '-q', startBranch);
    await onBranch(startBranch);
    await waitFor('the tool search to leave it out off the branch', async () => !(await search()).includes(key), 30_000);
    git('checkout', '-q', feature);
    await onBranch(feature);
    await waitFor('back on the branch, the tool search finds it again', async () => (await search()).includes(key), 30_000);
  });
});
