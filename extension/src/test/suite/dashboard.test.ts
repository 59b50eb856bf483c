import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ToWebview } from '../../../../daemon/src/protocol/webview';
import { DashboardPanel } from '../../dashboard';
import { DASHBOARD_VIEW_TYPE } from '../../dashboard/panel';
import { DashboardHost } from '../../dashboard/host';
import { cli, ctx, stubUi, uniq, waitFor } from './helpers';

/** A host whose replies are collected, and a way to send it one request and get the reply. */
function harness(c: Awaited<ReturnType<typeof ctx>>) {
  const posted: ToWebview[] = [];
  const host = new DashboardHost(c, (m) => posted.push(m));
  let id = 1000;
  const call = async (method: string, params: unknown) => {
    const mine = ++id;
    await host.handle({ type: 'request', id: mine, method, params });
    const replies = posted.filter((m) => (m.type === 'response' || m.type === 'error') && m.id === mine);
    assert.equal(replies.length, 1, `exactly one reply to ${method}`);
    return replies[0] as Extract<ToWebview, { type: 'response' | 'error' }>;
  };
  return { posted, host, call };
}

suite('dashboard', () => {
  suiteSetup(async () => (await ctx()).client.whenConnected(60_000));

  test('"Cairn: Open Dashboard" opens one panel under a strict CSP with a nonce and local scripts only', async () => {
    const c = await ctx();
    // (the command returns the extension's own panel object; this bundle has its own copy of the class)
    const p = await vscode.commands.executeCommand<DashboardPanel>('cairn.openDashboard');
    assert.equal(p.panel.viewType, DASHBOARD_VIEW_TYPE);
    assert.equal(await vscode.commands.executeCommand<DashboardPanel>('cairn.openDashboard'), p, 'a second open reveals the same panel');
    const html = p.panel.webview.html;
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1] ?? '';
    const nonce = /script-src 'nonce-([^']+)'/.exec(csp)?.[1];
    assert.ok(nonce && nonce.length >= 16, `script-src is a nonce: ${csp}`);
    assert.match(csp, /default-src 'none'/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:\/\/(?!.*vscode)/);
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    assert.equal(scripts.length, 1);
    assert.ok(
      scripts.every((s) => s[1].includes(`nonce="${nonce}"`) && s[2].trim() === ''),
      'every script carries the nonce and none is inline',
    );
    assert.doesNotMatch(html.replace(/<meta http-equiv[^>]+>/, ''), /https?:\/\/(?!.*vscode-(resource|cdn))/, 'no remote resources');
    for (const f of ['dashboard.js', 'graph.js', 'dashboard.css'])
      assert.ok(fs.existsSync(path.join(DashboardPanel.root(c).fsPath, f)), `${f} is built`);
    p.dispose();
    const fresh = await vscode.commands.executeCommand<DashboardPanel>('cairn.openDashboard');
    assert.notEqual(fresh, p, 'after closing, a new panel opens');
    fresh.dispose();
  });

  test('a panel restored after a reload gets the dashboard again (WebviewPanelSerializer)', async () => {
    const c = await ctx();
    const panel = vscode.window.createWebviewPanel(DASHBOARD_VIEW_TYPE, 'Cairn Dashboard', vscode.ViewColumn.Active, {});
    const p = DashboardPanel.revive(c, panel);
    assert.equal(DashboardPanel.open, p);
    assert.ok(p.panel.webview.options.enableScripts);
    assert.match(p.panel.webview.html, /cairn-dashboard-root/);
    p.dispose();
  });

  test('forwards allowed requests to the daemon and answers with typed errors', async () => {
    const c = await ctx();
    const { call } = harness(c);
    const key = uniq('dash');
    await cli(c, 'add', 'e2e.dash', key, 'Dashboard forwarding check: pelican ledger', '--kind', 'fact');
    const found = await waitFor('search through the host', async () => {
      const r = await call('search', { query: 'pelican ledger', mode: 'fts', scope: { root: 'e2e.dash' } });
      return r.type === 'response' && (r.result as { hits: { memory: { key: string } }[] }).hits.some((h) => h.memory.key === key)
        ? r
        : undefined;
    });
    assert.equal(found.type, 'response');
    const init = await call('host/init', {});
    assert.equal(init.type, 'response');
    assert.equal((init.result as { projectNamespace: string | null }).projectNamespace, c.project?.namespace ?? null);

    const forbidden = await call('purge', { namespace: 'e2e.dash', key });
    assert.equal(forbidden.type, 'error');
    assert.deepEqual(forbidden.type === 'error' && [forbidden.error.name, forbidden.error.data.field], ['NotFound', 'method']);
    const invalid = await call('upsert', { namespace: 'e2e.dash', key, value: 'x', validFrom: 'tomorrow' });
    assert.deepEqual(invalid.type === 'error' && [invalid.error.name, invalid.error.code, invalid.error.data.field], [
      'InvalidParams',
      1001,
      'validFrom',
    ]);
    const stale = await call('upsert', { namespace: 'e2e.dash', key, value: 'x', ifVersion: 99 });
    assert.deepEqual(stale.type === 'error' && stale.error.name, 'VersionConflict');
    const badHost = await call('host/openAnchor', { anchor: {} });
    assert.deepEqual(badHost.type === 'error' && [badHost.error.name, badHost.error.data.field], ['InvalidParams', 'anchor.path']);
  });

  test('host/confirm asks in the editor and answers what the user chose; a bad question is a typed error', async () => {
    const c = await ctx();
    const { call } = harness(c);
    const q = { message: 'Forget "k"?', detail: 'Cairn deletes ns/k and refuses this value.', confirm: 'Forget' };
    for (const answer of [true, false]) {
      const cap = stubUi(c, { confirm: answer });
      try {
        const r = await call('host/confirm', q);
        assert.deepEqual(r.type === 'response' && r.result, { confirmed: answer });
      } finally {
        cap.restore();
      }
    }
    const bad = await call('host/confirm', { message: '', confirm: 'Go' });
    assert.deepEqual(bad.type === 'error' && [bad.error.name, bad.error.data.field], ['InvalidParams', 'message']);
  });

  test('an anchor opens beside the dashboard, never in its place', async () => {
    const c = await ctx();
    const { call } = harness(c);
    const p = await vscode.commands.executeCommand<DashboardPanel>('cairn.openDashboard');
    try {
      const column = p.panel.viewColumn;
      const r = await call('host/openAnchor', { anchor: { path: 'src/billing.py', startLine: 3 } });
      assert.equal(r.type, 'response');
      const editor = vscode.window.activeTextEditor;
      assert.ok(editor?.document.uri.path.endsWith('/src/billing.py'), 'the anchored file is open');
      assert.notEqual(editor?.viewColumn, column, 'in another editor group than the dashboard');
      assert.ok(
        vscode.window.tabGroups.all.some((g) => g.activeTab?.input instanceof vscode.TabInputWebview),
        'the dashboard is still the active tab of its group',
      );
    } finally {
      p.dispose();
      await vscode.commands.executeCommand('workbench.action.closeAllEditors');
    }
  });

  test('ignores malformed messages, answering those with an id', async () => {
    const c = await ctx();
    const { posted, host } = harness(c);
    await host.handle('not an object');
    await host.handle({ type: 'request', method: 'search' });
    assert.equal(posted.length, 0);
    await host.handle({ type: 'request', id: 7, method: 'search', params: {}, extra: true });
    assert.equal(posted.length, 1);
    assert.deepEqual(posted[0].type === 'error' && [posted[0].id, posted[0].error.name], [7, 'InvalidParams']);
  });

  test('import: preview counts first, then applied in chunks with progress; bad files get a typed error', async () => {
    const c = await ctx();
    const { posted, call } = harness(c);
    const ns = `e2e.dashimport.${uniq('n').replace(/[^a-z0-9]/g, '')}`;
    await cli(c, 'add', ns, 'kept', 'Already in the store');
    const exported = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-dash-')), 'x.jsonl');
    await cli(c, 'add', ns, 'fresh', 'Only in the file for now');
    await cli(c, 'export', exported, '--root', ns);
    await cli(c, 'delete', ns, 'fresh');
    await cli(c, 'purge', ns, 'fresh');
    const text = fs.readFileSync(exported, 'utf8');
    const prev = await call('host/importPreview', { name: 'x.jsonl', text });
    assert.equal(prev.type, 'response', JSON.stringify(prev));
    const r = prev.result as { token: string; preview: { counts: Record<string, number> } };
    assert.equal(r.preview.counts.new, 1);
    assert.ok(r.preview.counts.unchanged >= 1, 'the memory already stored is unchanged');
    assert.equal(r.preview.counts.refusedDeleted + r.preview.counts.conflicting, 0);
    const applied = await call('host/importApply', { token: r.token });
    assert.equal(applied.type, 'response', JSON.stringify(applied));
    assert.equal((applied.result as { memories: number }).memories, 1);
    const progress = posted.filter((m) => m.type === 'progress');
    assert.ok(progress.length >= 2, 'progress before and after each chunk');
    const last = progress.at(-1) as Extract<ToWebview, { type: 'progress' }>;
    assert.equal(last.done, last.total, 'progress ends at the total');
    assert.ok(last.total >= 2);
    const again = await call('host/importApply', { token: r.token });
    assert.deepEqual(again.type === 'error' && [again.error.name, again.error.data.field], ['NotFound', 'token']);
    const bad = await call('host/importPreview', { name: 'bad.jsonl', text: '{"type":"header"\nnot json' });
    assert.deepEqual(bad.type === 'error' && [bad.error.name, bad.error.data.field], ['InvalidParams', 'file']);
    // the editor's open dialog instead of the browser's file control: picked, cancelled, unreadable
    const saved = c.ui;
    try {
      const answers: (vscode.Uri[] | undefined)[] = [[vscode.Uri.file(exported)], undefined, [vscode.Uri.file(exported + '.missing')]];
      c.ui = { ...saved, openDialog: () => Promise.resolve(answers.shift()) };
      const picked = await call('host/importPick', {});
      assert.equal(picked.type, 'response', JSON.stringify(picked));
      const pr = picked.result as { name: string; preview: { counts: Record<string, number> } };
      assert.equal(pr.name, 'x.jsonl');
      assert.ok(Object.values(pr.preview.counts).reduce((x, y) => x + y, 0) >= 2, 'both memories of the file are previewed');
      const cancelled = await call('host/importPick', {});
      assert.deepEqual(cancelled.type === 'response' && cancelled.result, null);
      const missing = await call('host/importPick', {});
      assert.deepEqual(missing.type === 'error' && [missing.error.name, missing.error.data.field], ['NotFound', 'file']);
    } finally {
      c.ui = saved;
    }
  });

  test('the open panel receives memory/didChange for writes made elsewhere', async () => {
    const c = await ctx();
    const p = await vscode.commands.executeCommand<DashboardPanel>('cairn.openDashboard');
    const seen: ToWebview[] = [];
    const post = p.post.bind(p);
    p.post = (m) => {
      seen.push(m);
      post(m);
    };
    const key = uniq('live');
    await cli(c, 'add', 'e2e.dash', key, 'Written while the dashboard is open');
    await waitFor('didChange for the CLI write', () => seen.some((m) => m.type === 'didChange' && m.change.key === key));
    p.dispose();
  });
});
