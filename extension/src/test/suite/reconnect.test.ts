/** Daemon death, reconnection, deliberate restarts, and how commands fail while disconnected. Runs last. */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import { readDaemonInfo } from '../../bootstrap';
import { cli, ctx, stubUi, treeMemories, uniq, waitFor } from './helpers';

suite('daemon lifecycle', () => {
  test('after the daemon is killed, the extension restarts it, reconnects and tells the user', async function () {
    this.timeout(90_000);
    const c = await ctx();
    await c.client.whenConnected(60_000);
    const before = readDaemonInfo(c.client.target.db);
    assert.ok(before);
    const cap = stubUi(c);
    try {
      process.kill(before.pid, 'SIGKILL');
      await waitFor(
        'a new daemon',
        () => {
          const s = c.client.state;
          return s.kind === 'connected' && s.pid !== null && s.pid !== before.pid;
        },
        60_000,
      );
      assert.ok(
        cap.warn.some((w) => /lost the connection/.test(w)),
        JSON.stringify(cap.warn),
      );
      await waitFor('the reconnect message', () => cap.info.some((i) => /reconnected/.test(i)));
    } finally {
      cap.restore();
    }
    // Still fully working: a CLI write reaches the tree through the new connection's notifications.
    const key = uniq('after-restart');
    await cli(c, 'add', 'e2e.reconnect', key, 'Written after the daemon came back');
    await waitFor('tree updated after reconnect', async () => (await treeMemories(c)).some((m) => m.key === key), 20_000);
  });

  test('Restart Daemon: a new daemon process, same store', async function () {
    this.timeout(60_000);
    const c = await ctx();
    const before = readDaemonInfo(c.client.target.db)!;
    const cap = stubUi(c);
    try {
      await vscode.commands.executeCommand('cairn.restartDaemon');
      assert.deepEqual(cap.error, []);
      assert.ok(cap.info.some((i) => /restarted/.test(i)));
      assert.deepEqual(cap.warn, [], 'a deliberate restart is not reported as a crash');
    } finally {
      cap.restore();
    }
    const after = readDaemonInfo(c.client.target.db)!;
    assert.notEqual(after.pid, before.pid);
    assert.equal(c.client.state.kind, 'connected');
  });

  test('while no daemon can start, commands fail at once with a clear message; Restart Daemon recovers', async function () {
    this.timeout(90_000);
    const c = await ctx();
    const cfg = vscode.workspace.getConfiguration('cairn');
    const cap = stubUi(c);
    try {
      await cfg.update('daemon.path', '/nonexistent/cairn.js', vscode.ConfigurationTarget.Global);
      // Restart Daemon's failure path: the daemon stops and no new one can start.
      await vscode.commands.executeCommand('cairn.restartDaemon');
      assert.ok(
        cap.error.some((e) => /Restart Daemon failed.*daemon script not found/s.test(e)),
        JSON.stringify(cap.error),
      );
      assert.equal(c.client.state.kind, 'error');
      assert.equal(c.statusBar.item.text, '$(error) Cairn');
      cap.error.length = 0;
      // Each command answers with an error instead of waiting for a daemon (a hang would hit the suite's timeout).
      for (const id of ['cairn.showStatus', 'cairn.rebuildIndex', 'cairn.openMemory']) {
        await vscode.commands.executeCommand(id, id === 'cairn.openMemory' ? 'some-id' : undefined);
      }
      assert.equal(cap.error.length, 3, JSON.stringify(cap.error));
      for (const e of cap.error) assert.match(e, /not connected to its daemon/);
    } finally {
      await cfg.update('daemon.path', undefined, vscode.ConfigurationTarget.Global);
    }
    try {
      cap.error.length = 0;
      await vscode.commands.executeCommand('cairn.restartDaemon');
      assert.deepEqual(cap.error, []);
      assert.equal(c.client.state.kind, 'connected');
    } finally {
      cap.restore();
    }
  });
});
