/** The Cairn dashboard: the "Cairn: Open Dashboard" command and the serializer that restores the panel after a reload. */
import * as vscode from 'vscode';
import type { Ctx } from '../ctx';
import { DASHBOARD_VIEW_TYPE, DashboardPanel } from './panel';

export { DashboardPanel } from './panel';

export function registerDashboard(ctx: Ctx): void {
  ctx.push(
    // Returns the panel (extension-host tests use it; the palette ignores it).
    vscode.commands.registerCommand('cairn.openDashboard', () => DashboardPanel.show(ctx)),
    vscode.window.registerWebviewPanelSerializer(DASHBOARD_VIEW_TYPE, {
      async deserializeWebviewPanel(panel: vscode.WebviewPanel) {
        DashboardPanel.revive(ctx, panel);
      },
    }),
    { dispose: () => DashboardPanel.open?.dispose() },
  );
}
