import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { Node } from '../../memoryTree';
import { cli, ctx, stubUi, treeMemories, treeNodes, uniq, waitFor } from './helpers';

suite('memory tree', () => {
  suiteSetup(async () => (await ctx()).client.whenConnected(60_000));

  test('a write from the CLI appears without a manual refresh (memory/didChange)', async () => {
    const c = await ctx();
    await treeNodes(c); // the view has loaded once; from here only notifications may refresh it
    const key = uniq('cli');
    await cli(
      c,
      'add',
      'e2e.tree.cli',
      key,
      'Written from the command line while the editor was open',
      '--kind',
      'decision',
      '--tags',
      'alpha,beta',
    );
    const m = await waitFor('the CLI memory in the tree', async () => (await treeMemories(c)).find((x) => x.key === key), 15_000);
    assert.equal(m.namespace, 'e2e.tree.cli');
  });

  test('namespaces nest by segment; items show kind icon, tags and a tooltip', async () => {
    const c = await ctx();
    const key = uniq('shape');
    await cli(c, 'add', 'e2e.tree.shape', key, 'Shape of a tree item', '--kind', 'fact', '--tags', 'one,two');
    await waitFor('memory', async () => (await treeMemories(c)).some((m) => m.key === key));
    const roots = await c.tree.getChildren();
    const e2e = roots.find((n) => n.kind === 'namespace' && n.label === 'e2e') as Extract<Node, { kind: 'namespace' }>;
    assert.ok(e2e, 'top-level "e2e" namespace node');
    const tree = (await c.tree.getChildren(e2e)).find((n) => n.kind === 'namespace' && n.label === 'tree')!;
    const shape = (await c.tree.getChildren(tree)).find((n) => n.kind === 'namespace' && n.label === 'shape')!;
    const node = (await c.tree.getChildren(shape)).find((n) => n.kind === 'memory' && n.memory.key === key)!;
    const item = c.tree.getTreeItem(node);
    assert.equal(item.label, key);
    assert.equal((item.iconPath as vscode.ThemeIcon).id, 'symbol-constant');
    assert.match(String(item.description), /#one #two/);
    const tip = (item.tooltip as vscode.MarkdownString).value;
    for (const s of ['Shape of a tree item', 'Version', 'Source', 'Created', 'Updated']) assert.ok(tip.includes(s), `tooltip has ${s}`);
    assert.equal(item.contextValue, 'memory.active');
    assert.equal(item.command?.command, 'cairn.openMemory');
  });

  test('"Needs review" lists proposed memories; approve and reject', async () => {
    const c = await ctx();
    const good = uniq('proposal-good');
    const bad = uniq('proposal-bad');
    for (const [key, value] of [
      [good, 'An agent proposed this and it is right'],
      [bad, 'An agent proposed this and it is wrong'],
    ]) {
      await c.client.request('upsert', { namespace: 'e2e.review', key, value, status: 'proposed', actor: 'agent:e2e', source: 'agent' });
    }
    const review = await waitFor('review group with both', async () => {
      const r = (await c.tree.getChildren()).find((n) => n.kind === 'review');
      return r && r.kind === 'review' && [good, bad].every((k) => r.memories.some((m) => m.key === k)) ? r : undefined;
    });
    const items = (await c.tree.getChildren(review)).filter((n) => n.kind === 'memory');
    const goodNode = items.find((n) => n.kind === 'memory' && n.memory.key === good)!;
    assert.equal(c.tree.getTreeItem(goodNode).contextValue, 'memory.proposed');
    const cap = stubUi(c);
    try {
      const approved = (await vscode.commands.executeCommand('cairn.approveMemory', goodNode)) as { status: string } | undefined;
      assert.equal(approved?.status, 'active', cap.error.join('\n'));
      const badNode = items.find((n) => n.kind === 'memory' && n.memory.key === bad)!;
      await vscode.commands.executeCommand('cairn.rejectMemory', badNode);
      assert.deepEqual(cap.error, []);
    } finally {
      cap.restore();
    }
    await waitFor('review group emptied of both', async () => {
      const r = (await c.tree.getChildren()).find((n) => n.kind === 'review');
      return !r || (r.kind === 'review' && !r.memories.some((m) => m.key === good || m.key === bad));
    });
    assert.ok(
      (await treeMemories(c)).some((m) => m.key === good && m.status === 'active'),
      'approved memory listed under its namespace',
    );
    await assert.rejects(
      c.client.request('upsert', {
        namespace: 'e2e.review',
        key: uniq('again'),
        value: 'An agent proposed this and it is wrong',
        status: 'proposed',
        actor: 'agent:e2e',
      }),
      (e: { data?: { name?: string } }) => e.data?.name === 'RejectedValue',
    );
  });

  test('filter box: search results grouped by namespace, then cleared', async () => {
    const c = await ctx();
    const key = uniq('filterable');
    await cli(c, 'add', 'e2e.filter', key, 'The zanzibar deployment runbook lives in the wiki');
    await waitFor('memory', async () => (await treeMemories(c)).some((m) => m.key === key));
    await vscode.commands.executeCommand('cairn.filterMemories', 'zanzibar');
    try {
      const roots = await c.tree.getChildren();
      assert.equal(c.tree.view.description, 'filter: zanzibar');
      const ns = roots.find((n) => n.kind === 'namespace' && n.path === 'e2e.filter');
      assert.ok(ns, `filter results: ${JSON.stringify(roots.map((r) => r.kind))}`);
      const mems = await c.tree.getChildren(ns);
      assert.ok(mems.some((n) => n.kind === 'memory' && n.memory.key === key));
      assert.ok(!roots.some((n) => n.kind === 'namespace' && n.path === 'e2e.tree.shape'), 'non-matching namespaces hidden');
    } finally {
      await vscode.commands.executeCommand('cairn.clearFilter');
    }
    assert.equal(c.tree.filterText, '');
  });

  test('deleted memories: hidden, shown on request, restorable', async () => {
    const c = await ctx();
    const key = uniq('deleted');
    await cli(c, 'add', 'e2e.deleted', key, 'Soon deleted');
    const m = await waitFor('memory', async () => (await treeMemories(c)).find((x) => x.key === key));
    const cap = stubUi(c);
    try {
      await vscode.commands.executeCommand('cairn.deleteMemory', m.id);
      await waitFor('gone from the tree', async () => !(await treeMemories(c)).some((x) => x.key === key));
      await vscode.commands.executeCommand('cairn.showDeleted');
      const shown = await waitFor('shown as deleted', async () =>
        (await treeNodes(c)).find((n) => n.kind === 'memory' && n.memory.key === key),
      );
      assert.equal(c.tree.getTreeItem(shown).contextValue, 'memory.deleted');
      await vscode.commands.executeCommand('cairn.restoreMemory', shown);
      await vscode.commands.executeCommand('cairn.hideDeleted');
      await waitFor('back in the tree', async () => (await treeMemories(c)).some((x) => x.key === key && !x.deletedAt));
      assert.deepEqual(cap.error, []);
    } finally {
      cap.restore();
      await vscode.commands.executeCommand('cairn.hideDeleted');
    }
  });
});
