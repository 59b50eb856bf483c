/**
 * Every command: its happy path and one failure path. Prompts are answered through the ui seam
 * (helpers.stubUi); Search Memories drives the real quick pick.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Link, Memory, StoreStatusResult } from '../../../../daemon/src/protocol/types';
import type { Ctx } from '../../ctx';
import { cli, ctx, stubUi, treeMemories, uniq, waitFor, type Captured } from './helpers';

const NS = 'e2e.commands';

async function add(c: Ctx, key: string, value: string, extra: Record<string, unknown> = {}): Promise<Memory> {
  return (await c.client.request('upsert', { namespace: NS, key, value, actor: 'e2e', ...extra })).memory;
}

/** Run a command with stubbed prompts; returns its result and the captured messages. */
async function run<T = unknown>(
  c: Ctx,
  id: string,
  args: unknown[],
  answers: Parameters<typeof stubUi>[1] = {},
): Promise<{ result: T; cap: Captured }> {
  const cap = stubUi(c, answers);
  try {
    const result = (await vscode.commands.executeCommand(id, ...args)) as T;
    return { result, cap };
  } finally {
    cap.restore();
  }
}

function assertFailed(cap: Captured, pattern: RegExp): void {
  assert.equal(cap.error.length, 1, `expected one error message, got ${JSON.stringify(cap.error)}`);
  assert.match(cap.error[0], pattern);
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-cmd-'));

suite('commands', () => {
  let c: Ctx;
  suiteSetup(async () => {
    c = await ctx();
    await c.client.whenConnected(60_000);
  });
  suiteTeardown(async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('every contributed command is registered', async () => {
    const all = new Set(await vscode.commands.getCommands(true));
    const declared = (c.extension.extension.packageJSON.contributes.commands as { command: string }[]).map((x) => x.command);
    assert.ok(declared.length >= 20);
    for (const id of declared) assert.ok(all.has(id), `${id} registered`);
  });

  test('Add Memory: prompts for namespace, key, value, kind and tags', async () => {
    const key = uniq('added');
    const { result, cap } = await run<Memory>(c, 'cairn.addMemory', [], {
      inputs: [NS, key, 'Use pnpm, not npm, in this repo', 'tooling, js'],
      picks: ['preference'],
    });
    assert.deepEqual(cap.error, []);
    assert.equal(result.key, key);
    assert.equal(result.kind, 'preference');
    assert.deepEqual([...result.tags].sort(), ['js', 'tooling']);
    assert.match(cap.info[0], /remembered/);
    await waitFor('added memory in the tree', async () => (await treeMemories(c)).some((m) => m.key === key));
  });

  test('Add Memory fails clearly: invalid namespace, existing key', async () => {
    const bad = await run(c, 'cairn.addMemory', [{ namespace: 'Bad Namespace', key: 'k', value: 'v', kind: 'note', tags: [] }]);
    assertFailed(bad.cap, /Invalid namespace "Bad Namespace"/);
    const key = uniq('dup');
    await add(c, key, 'first');
    const dup = await run(c, 'cairn.addMemory', [{ namespace: NS, key, value: 'second', kind: 'note', tags: [] }]);
    assertFailed(dup.cap, /already exists/);
  });

  test('Remember Selection fails clearly without an editor', async () => {
    await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    const { result, cap } = await run(c, 'cairn.rememberSelection', [{ key: 'x', value: 'y' }]);
    assert.equal(result, undefined);
    assertFailed(cap, /Open a file and select/);
  });

  test('Search Memories: live results in the quick pick, opens the chosen memory', async function () {
    this.timeout(60_000);
    const key = uniq('searchable');
    await add(c, key, 'The quokka service caches tokens for ten minutes');
    const searched = new Promise<void>((resolve) => {
      const d = c.events.event((e) => {
        const data = e.data as { query?: string; count?: number };
        if (e.type === 'search' && data.query === 'quokka tokens' && (data.count ?? 0) > 0) {
          d.dispose();
          resolve();
        }
      });
    });
    const picked = vscode.commands.executeCommand<Memory | undefined>('cairn.searchMemories', 'quokka tokens');
    await searched;
    await vscode.commands.executeCommand('workbench.action.acceptSelectedQuickOpenItem');
    const m = await picked;
    assert.equal(m?.key, key);
    await waitFor('memory document open', () => vscode.window.activeTextEditor?.document.getText().includes('quokka service'));
  });

  test('Search Memories fails visibly: an over-long query shows the daemon error in the picker', async function () {
    this.timeout(30_000);
    const failed = new Promise<string>((resolve) => {
      const d = c.events.event((e) => {
        const data = e.data as { error?: string };
        if (e.type === 'search' && data.error) {
          d.dispose();
          resolve(data.error);
        }
      });
    });
    const picked = vscode.commands.executeCommand('cairn.searchMemories', 'x'.repeat(5000));
    assert.match(await failed, /Search failed/);
    await vscode.commands.executeCommand('workbench.action.closeQuickOpen');
    assert.equal(await picked, undefined);
  });

  test('Open Memory: details document; fails clearly for an unknown id', async () => {
    const m = await add(c, uniq('open'), 'Open me');
    const { result } = await run<vscode.TextDocument>(c, 'cairn.openMemory', [m.id]);
    assert.ok(result.getText().includes('Open me'));
    assert.ok(result.getText().includes(`version ${m.version}`));
    const bad = await run(c, 'cairn.openMemory', ['no-such-id']);
    assertFailed(bad.cap, /no such memory|NotFound/i);
  });

  test('Edit Memory: saves with ifVersion', async () => {
    const m = await add(c, uniq('edit'), 'Before the edit', { tags: ['keep'], kind: 'decision' });
    const { result: doc } = await run<vscode.TextDocument>(c, 'cairn.editMemory', [{ id: m.id }]);
    assert.equal(doc.getText(), 'Before the edit');
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(0, 0, doc.lineCount, 0), 'After the edit');
    assert.ok(await vscode.workspace.applyEdit(edit));
    assert.ok(await doc.save(), 'saved');
    const stored = await c.client.request('get', { id: m.id });
    assert.equal(stored.value, 'After the edit');
    assert.equal(stored.version, m.version + 1);
    assert.deepEqual(stored.tags, ['keep'], 'editing the value keeps the tags');
    assert.equal(stored.kind, 'decision');
  });

  test('Edit Memory: an unmodified editor follows a change made elsewhere', async () => {
    const key = uniq('follow');
    const m = await add(c, key, 'Version one');
    const { result: doc } = await run<vscode.TextDocument>(c, 'cairn.editMemory', [m.id]);
    await cli(c, 'add', NS, key, 'Version two, from the CLI');
    await waitFor('the editor to reload', () => doc.getText() === 'Version two, from the CLI');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  });

  test('Edit Memory: a concurrent change surfaces as a conflict, nothing is overwritten', async () => {
    // code-server (a web build of VS Code) saves after a 1 s delay by default, so a slow CLI call below would let
    // auto-save store the edit before the other write: this test is about a user who has not saved yet.
    const files = (): vscode.WorkspaceConfiguration => vscode.workspace.getConfiguration('files');
    const autoSave = files().inspect('autoSave')?.globalValue;
    await files().update('autoSave', 'off', vscode.ConfigurationTarget.Global);
    await waitFor('auto-save off', () => files().get('autoSave') === 'off');
    try {
      await concurrentEditConflict();
    } finally {
      await files().update('autoSave', autoSave, vscode.ConfigurationTarget.Global);
    }
  });

  async function concurrentEditConflict(): Promise<void> {
    const key = uniq('conflict');
    const announced = (): Promise<void> =>
      new Promise<void>((resolve) => {
        const d = c.client.onDidChangeMemories((p) => {
          if (p.key === key) {
            d.dispose();
            resolve();
          }
        });
      });
    // The editor opens after the first write's announcement: a late announcement would make VS Code re-read a clean
    // editor while the edit below is being typed, which is not the race this test is about.
    const created = announced();
    const m = await add(c, key, 'Original');
    await created;
    const { result: doc } = await run<vscode.TextDocument>(c, 'cairn.editMemory', [m.id]);
    const edit = new vscode.WorkspaceEdit();
    edit.replace(doc.uri, new vscode.Range(0, 0, doc.lineCount, 0), 'My editor change');
    await vscode.workspace.applyEdit(edit);
    assert.ok(doc.isDirty);
    const notified = announced();
    await cli(c, 'add', NS, key, 'Changed from the CLI meanwhile');
    await notified;
    const saved = await doc.save();
    assert.equal(saved, false, 'the save must fail');
    // VS Code can report the failed save before its write attempt has settled: wait for the conflict, not a moment.
    await waitFor('the conflict to be recorded', () => c.memoryFs.lastConflict?.uri === doc.uri.toString());
    assert.equal(c.memoryFs.lastConflict?.yourVersion, m.version);
    assert.equal((await c.client.request('get', { id: m.id })).value, 'Changed from the CLI meanwhile');
    await vscode.commands.executeCommand('workbench.action.files.revert');
    assert.equal(doc.getText(), 'Changed from the CLI meanwhile', 'revert loads the latest value');
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
  }

  test('Delete / Restore: happy paths and clear failures', async () => {
    const m = await add(c, uniq('del'), 'Delete me');
    const del = await run<Memory>(c, 'cairn.deleteMemory', [m.id]);
    assert.ok(del.result.deletedAt);
    const again = await run(c, 'cairn.deleteMemory', ['no-such-id']);
    assertFailed(again.cap, /no such memory|NotFound/i);
    const res = await run<Memory>(c, 'cairn.restoreMemory', [m.id]);
    assert.equal(res.result.deletedAt, null);
    const live = await run(c, 'cairn.restoreMemory', [m.id]);
    assertFailed(live.cap, /Restore Memory failed/);
  });

  test('Forget Memory: deletes and rejects the value; unknown id fails clearly; cancel is quiet', async () => {
    const m = await add(c, uniq('forget'), 'Forget this value');
    const cancelled = await run(c, 'cairn.forgetMemory', [m.id], { confirm: false });
    assert.equal(cancelled.result, undefined);
    assert.deepEqual(cancelled.cap.error, []);
    const { result, cap } = await run<Memory>(c, 'cairn.forgetMemory', [m.id], { confirm: true });
    assert.deepEqual(cap.error, []);
    assert.ok(result.deletedAt);
    await assert.rejects(
      add(c, uniq('forget-again'), 'Forget this value'),
      (e: { data?: { name?: string } }) => e.data?.name === 'RejectedValue',
    );
    const bad = await run(c, 'cairn.forgetMemory', ['no-such-id'], { confirm: true });
    assertFailed(bad.cap, /no such memory|NotFound/i);
  });

  test('Show History: versions with diffs; unknown id fails clearly', async () => {
    const key = uniq('history');
    const m = await add(c, key, 'line one\nline two');
    await add(c, key, 'line one\nline 2\nline three', { tags: ['t'] });
    const { result: doc } = await run<vscode.TextDocument>(c, 'cairn.showHistory', [m.id]);
    const text = doc.getText();
    assert.match(text, /## v2 · update/);
    assert.match(text, /## v1 · create/);
    assert.ok(text.includes('- line two') && text.includes('+ line 2') && text.includes('+ line three'), text);
    assert.ok(text.includes('tags: [] → ["t"]'), text);
    const bad = await run(c, 'cairn.showHistory', ['no-such-id']);
    assertFailed(bad.cap, /no such memory|NotFound/i);
  });

  test('Copy Memory Value: clipboard; unknown id fails clearly', async () => {
    const m = await add(c, uniq('copy'), 'Copy me to the clipboard');
    await run(c, 'cairn.copyMemory', [m.id]);
    assert.equal(await vscode.env.clipboard.readText(), 'Copy me to the clipboard');
    const bad = await run(c, 'cairn.copyMemory', ['no-such-id']);
    assertFailed(bad.cap, /no such memory|NotFound/i);
  });

  test('Link Memory: typed edge; linking a memory to itself fails clearly', async () => {
    const a = await add(c, uniq('link-a'), 'Link source');
    const b = await add(c, uniq('link-b'), 'Link target');
    const { result } = await run<Link>(c, 'cairn.linkMemory', [a.id, b.id], { picks: ['depends_on'] });
    assert.equal(result.type, 'depends_on');
    const n = await c.client.request('neighbors', { id: a.id });
    assert.ok(n.neighbors.some((x) => x.memory.id === b.id && x.type === 'depends_on'));
    const self = await run(c, 'cairn.linkMemory', [a.id, a.id, 'relates_to']);
    assertFailed(self.cap, /Link Memory.*failed/);
  });

  test('Approve / Reject fail clearly for a memory that is not proposed', async () => {
    const m = await add(c, uniq('active'), 'Already active');
    assertFailed((await run(c, 'cairn.approveMemory', [m.id])).cap, /not waiting for review/);
    assertFailed((await run(c, 'cairn.rejectMemory', [m.id])).cap, /not waiting for review/);
  });

  test('Show Daemon Status: a status document', async () => {
    const { result, cap } = await run<StoreStatusResult>(c, 'cairn.showStatus', []);
    assert.deepEqual(cap.error, []);
    assert.equal(result.path, c.client.target.db);
    assert.ok(result.counts.memories > 0);
    await waitFor('status document', () => vscode.window.activeTextEditor?.document.getText().includes('Cairn daemon status'));
  });

  test('Export / Import: round trip with progress; unwritable and malformed files fail clearly', async function () {
    this.timeout(60_000);
    const file = path.join(tmp, 'export.jsonl');
    const exp = await run<{ records: number }>(c, 'cairn.exportMemories', [{ uri: file }]);
    assert.deepEqual(exp.cap.error, []);
    assert.ok(exp.result.records > 3);
    const lines = fs.readFileSync(file, 'utf8').trim().split('\n');
    assert.equal(lines.length, exp.result.records);
    assert.equal(JSON.parse(lines[0]).type, 'header');

    const blocker = path.join(tmp, 'a-file');
    fs.writeFileSync(blocker, 'not a folder');
    const unwritable = await run(c, 'cairn.exportMemories', [{ uri: path.join(blocker, 'sub', 'x.jsonl') }]);
    assertFailed(unwritable.cap, /Export Memories failed: Cannot write/);

    const imp = await run<{ memories: number; skipped: number }>(c, 'cairn.importMemories', [{ uri: file }]);
    assert.deepEqual(imp.cap.error, []);
    assert.ok(imp.result.memories + imp.result.skipped > 0);
    assert.match(imp.cap.info[0], /Imported \d+ memories/);

    const broken = path.join(tmp, 'broken.jsonl');
    fs.writeFileSync(broken, '{"type":"header"}\n{not json\n');
    assertFailed((await run(c, 'cairn.importMemories', [{ uri: broken }])).cap, /line 2 is not valid JSON/);
  });

  test('Rebuild Index: re-embeds with progress in the status bar; an invalid model name fails clearly', async function () {
    this.timeout(90_000);
    // Right after start-up the daemon refuses to re-index while the model loads ("still loading").
    await waitFor('the embedding model', async () => (await c.client.request('status', {})).embeddings.state === 'ready', 30_000, 250);
    const texts: string[] = [];
    let ready!: () => void;
    const done = new Promise<void>((r) => (ready = r));
    // The status bar subscribed at activation, so it has rendered each event before this listener runs.
    const sub = c.client.onIndexProgress((p) => {
      texts.push(c.statusBar.item.text);
      if (p.state === 'ready') ready();
    });
    try {
      const { result, cap } = await run<{ queued: number }>(c, 'cairn.rebuildIndex', []);
      assert.deepEqual(cap.error, []);
      assert.ok(result.queued > 0);
      assert.match(cap.info[0], /re-embedding \d+ memories/);
      await Promise.race([
        done,
        new Promise((_, rej) => setTimeout(() => rej(new Error(`no index/progress "ready" (saw ${JSON.stringify(texts)})`)), 45_000)),
      ]);
    } finally {
      sub.dispose();
    }
    assert.ok(
      texts.some((t) => /Cairn \d+%/.test(t)),
      `status bar showed progress: ${JSON.stringify(texts)}`,
    );
    assert.equal(c.statusBar.item.text, '$(database) Cairn');
    const bad = await run(c, 'cairn.rebuildIndex', [{ model: 'x'.repeat(600) }]);
    assertFailed(bad.cap, /Rebuild Index failed/);
  });

  test('view commands: filter, clear, refresh, show/hide deleted, menu, log', async () => {
    await vscode.commands.executeCommand('cairn.filterMemories', 'quokka');
    assert.equal(c.tree.filterText, 'quokka');
    await vscode.commands.executeCommand('cairn.clearFilter');
    assert.equal(c.tree.filterText, '');
    await vscode.commands.executeCommand('cairn.refresh');
    await vscode.commands.executeCommand('cairn.showDeleted');
    assert.equal(c.tree.deletedShown, true);
    await vscode.commands.executeCommand('cairn.hideDeleted');
    assert.equal(c.tree.deletedShown, false);
    const menu = await run(c, 'cairn.statusMenu', [], { picks: [] });
    assert.deepEqual(menu.cap.error, []);
    await vscode.commands.executeCommand('cairn.showLog');
  });
});
