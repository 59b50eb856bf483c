/**
 * The one dashboard panel of a window: creates (or reveals) the webview, serves its HTML under a strict
 * Content-Security-Policy with a fresh nonce, connects it to a DashboardHost and forwards memory/didChange and
 * the connection state. The webview keeps its own UI state (vscode.setState); VS Code hands it back to the
 * serializer after a reload, and to the page itself when the panel is shown again.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { ToWebview, WebviewShow } from '../../../daemon/src/protocol/webview';
import type { Ctx } from '../ctx';
import { DashboardHost } from './host';

export const DASHBOARD_VIEW_TYPE = 'cairn.dashboard';

export function dashboardHtml(webview: vscode.Webview, root: vscode.Uri, nonce: string): string {
  const js = webview.asWebviewUri(vscode.Uri.joinPath(root, 'dashboard.js'));
  const graph = webview.asWebviewUri(vscode.Uri.joinPath(root, 'graph.js'));
  const css = webview.asWebviewUri(vscode.Uri.joinPath(root, 'dashboard.css'));
  const csp = [
    "default-src 'none'",
    `style-src ${webview.cspSource}`,
    `img-src ${webview.cspSource} data:`,
    `font-src ${webview.cspSource}`,
    `script-src 'nonce-${nonce}'`,
  ].join('; ');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${css}">
<title>Cairn Dashboard</title>
</head>
<body>
<div id="cairn-dashboard-root" data-graph-src="${graph}"></div>
<script nonce="${nonce}" src="${js}"></script>
</body>
</html>`;
}

export class DashboardPanel implements vscode.Disposable {
  private static current: DashboardPanel | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  readonly host: DashboardHost;

  /** Show the window's dashboard, creating it when there is none; with `view`, on that view. */
  static show(ctx: Ctx, view?: WebviewShow): DashboardPanel {
    const open = DashboardPanel.current;
    if (open) {
      // A hidden page is loaded again when revealed and asks for init; a page on screen takes a message.
      if (view && open.panel.visible) open.post({ type: 'show', show: view });
      else if (view) open.host.pendingShow = view;
      open.panel.reveal();
      return open;
    }
    const panel = vscode.window.createWebviewPanel(
      DASHBOARD_VIEW_TYPE,
      'Cairn Dashboard',
      vscode.ViewColumn.Active,
      DashboardPanel.options(ctx),
    );
    const created = new DashboardPanel(ctx, panel);
    created.host.pendingShow = view;
    return created;
  }

  /** The panel VS Code restored after a reload (WebviewPanelSerializer). */
  static revive(ctx: Ctx, panel: vscode.WebviewPanel): DashboardPanel {
    DashboardPanel.current?.dispose();
    panel.webview.options = DashboardPanel.options(ctx);
    return new DashboardPanel(ctx, panel);
  }

  static get open(): DashboardPanel | undefined {
    return DashboardPanel.current;
  }

  static root(ctx: Ctx): vscode.Uri {
    return vscode.Uri.joinPath(ctx.extension.extensionUri, 'out', 'webview');
  }

  private static options(ctx: Ctx): vscode.WebviewPanelOptions & vscode.WebviewOptions {
    return { enableScripts: true, retainContextWhenHidden: false, localResourceRoots: [DashboardPanel.root(ctx)], enableFindWidget: true };
  }

  private constructor(
    private readonly ctx: Ctx,
    readonly panel: vscode.WebviewPanel,
  ) {
    DashboardPanel.current = this;
    panel.iconPath = vscode.Uri.joinPath(ctx.extension.extensionUri, 'media', 'cairn.svg');
    this.host = new DashboardHost(ctx, (m) => this.post(m));
    panel.webview.html = dashboardHtml(panel.webview, DashboardPanel.root(ctx), randomBytes(18).toString('base64'));
    this.disposables.push(
      panel.webview.onDidReceiveMessage((m) => void this.host.handle(m)),
      ctx.client.onDidChangeMemories((change) => this.post({ type: 'didChange', change })),
      ctx.client.onDidChangeState((s) => this.post({ type: 'connection', connected: s.kind === 'connected', state: s.kind })),
      panel.onDidDispose(() => this.dispose()),
    );
    ctx.events.fire({ type: 'dashboard.opened' });
  }

  post(m: ToWebview): void {
    void this.panel.webview.postMessage(m).then(undefined, () => undefined);
  }

  dispose(): void {
    if (DashboardPanel.current === this) DashboardPanel.current = undefined;
    for (const d of this.disposables.splice(0)) d.dispose();
    this.panel.dispose();
  }
}
