/**
 * The status bar item: daemon state (connected / starting / error), embedding index progress while a
 * re-embed runs, a record mark while episode capture (cairn.episodes.capture) is on, and a click that opens
 * the Cairn quick menu.
 */
import * as vscode from 'vscode';
import type { IndexProgressParams } from '../../daemon/src/protocol/types';
import { describeState, type DaemonState } from './client';
import type { Ctx } from './ctx';

export class StatusBar implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;
  private progress: IndexProgressParams | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly ctx: Ctx) {
    this.item = vscode.window.createStatusBarItem('cairn.status', vscode.StatusBarAlignment.Left, 10);
    this.item.name = 'Cairn';
    this.item.command = 'cairn.statusMenu';
    this.disposables.push(
      this.item,
      ctx.client.onDidChangeState((s) => this.render(s)),
      ctx.client.onIndexProgress((p) => {
        this.progress = p.state === 'ready' ? undefined : p;
        this.render(ctx.client.state);
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('cairn.episodes.capture')) this.render(ctx.client.state);
      }),
      ctx.git.onDidChange(() => this.render(ctx.client.state)),
    );
    this.render(ctx.client.state);
    this.item.show();
  }

  render(s: DaemonState): void {
    const tip = new vscode.MarkdownString(`**Cairn** — ${describeState(s)}\n\nClick for the Cairn menu.`);
    this.item.backgroundColor = undefined;
    switch (s.kind) {
      case 'connected':
        if (this.progress && this.progress.total > 0) {
          const pct = Math.floor((100 * this.progress.done) / this.progress.total);
          this.item.text = `$(sync~spin) Cairn ${pct}%`;
          tip.appendMarkdown(`\n\nRe-embedding with ${this.progress.model}: ${this.progress.done}/${this.progress.total}`);
        } else {
          this.item.text = '$(database) Cairn';
        }
        break;
      case 'starting':
      case 'stopped':
        this.item.text = '$(loading~spin) Cairn';
        break;
      case 'error':
        this.item.text = '$(error) Cairn';
        this.item.backgroundColor = new vscode.ThemeColor('statusBarItem.errorBackground');
        break;
    }
    const git = s.kind === 'connected' ? this.ctx.git.checkout : undefined;
    if (git) {
      // Which branch's memory is in view (git-aware memory): unmerged branches' memories are hidden.
      this.item.text += ` $(git-branch) ${git.branch ?? git.head.slice(0, 8)}`;
      tip.appendMarkdown(
        `\n\nMemory of git ${git.branch ? `branch \`${git.branch}\`` : 'detached HEAD'} (${git.head.slice(0, 8)}): memories written on branches not merged here are hidden (\`cairn.git.visibility\`).`,
      );
    }
    if (this.ctx.config.get('cairn.episodes.capture')) {
      // Capture is on: say so whatever the daemon's state (docs/episodes.md#capture).
      this.item.text += ' $(record)';
      tip.appendMarkdown(
        '\n\nEpisode capture is on: @cairn and the Cairn language-model tools record this session as events (`cairn.episodes.capture`).',
      );
    }
    this.item.tooltip = tip;
    void vscode.commands.executeCommand('setContext', 'cairn.state', s.kind);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}

/** The quick menu behind the status bar item. */
export async function statusMenu(ctx: Ctx): Promise<void> {
  const items: (vscode.QuickPickItem & { command: string })[] = [
    { label: '$(dashboard) Open Dashboard', command: 'cairn.openDashboard' },
    { label: '$(search) Search Memories', command: 'cairn.searchMemories' },
    { label: '$(add) Add Memory', command: 'cairn.addMemory' },
    { label: '$(info) Show Daemon Status', command: 'cairn.showStatus', description: describeState(ctx.client.state) },
    { label: '$(debug-restart) Restart Daemon', command: 'cairn.restartDaemon' },
    { label: '$(sync) Rebuild Index', command: 'cairn.rebuildIndex' },
    { label: '$(export) Export Memories', command: 'cairn.exportMemories' },
    { label: '$(cloud-download) Import Memories', command: 'cairn.importMemories' },
    { label: '$(output) Show Log', command: 'cairn.showLog' },
  ];
  const pick = await ctx.ui.quickPick(items, { title: 'Cairn', placeHolder: describeState(ctx.client.state) });
  if (pick) await vscode.commands.executeCommand(pick.command);
}
