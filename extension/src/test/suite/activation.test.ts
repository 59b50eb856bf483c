import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { daemonInfoPath } from '../../../../daemon/src/paths';
import { api, harnessEnv, record, treeMemories, waitFor } from './helpers';

suite('activation', () => {
  test('activates, starts (or finds) the daemon and populates the tree', async function () {
    this.timeout(90_000);
    // Open the Cairn view the way a user does; the extension activates on start-up (or on this view).
    await vscode.commands.executeCommand('workbench.view.extension.cairn');
    const { ctx } = await api();
    await ctx.client.whenConnected(60_000);
    const connected = await ctx.metrics.when('connected');
    const populated = await ctx.metrics.when('treePopulated').catch(() => -1);
    record('activation.connectedMs', connected);
    record('activation.treePopulatedMs', populated);
    assert.equal(ctx.client.state.kind, 'connected');
  });

  test('the daemon is a separate Node process; no native module loads in the extension host', async () => {
    const { ctx } = await api();
    const s = ctx.client.state;
    assert.equal(s.kind, 'connected');
    const info = JSON.parse(fs.readFileSync(daemonInfoPath(ctx.client.target.db), 'utf8')) as { pid: number; socket: string };
    assert.notEqual(info.pid, process.pid);
    assert.equal(s.kind === 'connected' && s.pid, info.pid);
    const loaded = Object.keys(require.cache).filter((k) => /better-sqlite3|sqlite-vec|onnxruntime|sharp/.test(k));
    assert.deepEqual(loaded, [], 'native modules loaded in the extension host');
    assert.equal(ctx.client.target.db, harnessEnv('CAIRN_E2E_EXPECT_DB'), 'uses the default store');
  });

  test('project namespace derived from the workspace git remote', async () => {
    const { ctx } = await api();
    assert.ok(ctx.project, 'a folder is open');
    assert.equal(ctx.project.namespace, harnessEnv('CAIRN_E2E_EXPECT_PROJECT'));
    assert.match(ctx.project.namespace, /^project\.[a-z0-9][a-z0-9_-]*$/);
  });

  test('status bar shows the connected state', async () => {
    const { ctx } = await api();
    assert.equal(ctx.statusBar.item.text, '$(database) Cairn');
    assert.equal(ctx.statusBar.item.command, 'cairn.statusMenu');
  });

  test('memories the CLI wrote before the editor started are in the tree', async () => {
    const { ctx } = await api();
    const seeded = harnessEnv('CAIRN_E2E_SEEDED_KEY');
    await waitFor('seeded memory in the tree', async () => (await treeMemories(ctx)).some((m) => m.key === seeded));
  });
});
