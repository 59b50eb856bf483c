/**
 * Entry point: wires the pieces together and nothing else.
 * (ctx.ts owns lifetime, client.ts the daemon connection, commands.ts the commands, one file per view.)
 */
import * as vscode from 'vscode';
import { registerAgents, type AgentsExports } from './agents';
import { registerAnchors } from './anchors';
import { branchCommands } from './branches';
import { GitWatch } from './git';
import { registerGutter } from './gutter';
import { registerCommands } from './commands';
import { Ctx } from './ctx';
import { registerDashboard } from './dashboard';
import { MEMORY_SCHEME, MemoryFileSystem, VIEW_SCHEME, ViewDocuments } from './documents';
import { MemoryTree } from './memoryTree';
import { StatusBar } from './statusBar';
import { teamMismatch } from '../../daemon/src/team/roots';

let ctx: Ctx | undefined;

/** What activate() returns: the whole context, for the extension-host tests. */
export interface CairnApi {
  ctx: Ctx;
}

export function activate(context: vscode.ExtensionContext): CairnApi & AgentsExports {
  const c = (ctx = new Ctx(context));
  c.memoryFs = new MemoryFileSystem(c);
  c.views = new ViewDocuments(c);
  c.push(
    vscode.workspace.registerFileSystemProvider(MEMORY_SCHEME, c.memoryFs, { isCaseSensitive: true }),
    vscode.workspace.registerTextDocumentContentProvider(VIEW_SCHEME, c.views),
  );
  c.git = new GitWatch(c);
  c.tree = new MemoryTree(c);
  c.statusBar = new StatusBar(c);
  c.push(c.git, c.tree, c.statusBar);
  registerCommands(c);
  registerCommands(c, branchCommands);
  registerDashboard(c);
  registerAnchors(c);
  registerGutter(c);

  c.push(
    c.client.onDidChangeMemories((change) => {
      c.memoryFs.changed(change);
      c.views.changed();
    }),
    c.client.onDidConnect(() => {
      c.metrics.mark('connected');
      void checkTeam(c);
    }),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('cairn')) return;
      reportSettingProblems(c);
      if (e.affectsConfiguration('cairn.store.path'))
        void c.client.start(); // a different store means a different daemon
      else if (
        c.client.state.kind === 'error' &&
        (e.affectsConfiguration('cairn.daemon.path') || e.affectsConfiguration('cairn.daemon.nodePath'))
      ) {
        void c.client.start(); // the fix for a daemon that could not start
      }
      if (e.affectsConfiguration('cairn.scope.projectNamespace')) c.tree.refresh();
      if (e.affectsConfiguration('cairn.team')) void checkTeam(c);
    }),
  );
  reportSettingProblems(c);
  c.metrics.mark('activated');
  void c.client.start();
  return { ctx: c, ...registerAgents(c) }; // + the agent features and the public extension API (agents/api.ts)
}

/**
 * The daemon this window uses may not serve the cairn.team.* settings (the CLI or another window started
 * it, or the settings changed since): say why and offer a restart, which starts it with them.
 */
async function checkTeam(c: Ctx): Promise<void> {
  let why: string | null;
  try {
    const status = await c.client.request('status', {});
    why = teamMismatch({ url: c.config.get('cairn.team.url'), roots: c.config.get('cairn.team.roots') }, status.team);
  } catch {
    return; // not connected: checked again on the next connect
  }
  if (!why) return;
  c.output.warn(`team memory: ${why}`);
  if (await c.ui.warn(`Cairn: ${why}. Restart the daemon with the team settings?`, 'Restart Daemon')) await c.client.restartDaemon();
}

function reportSettingProblems(c: Ctx): void {
  const problems = c.config.validate();
  for (const p of problems) c.output.warn(`setting ${p.key}: ${p.message}`);
  if (problems.length) {
    void c.ui
      .warn(
        `Cairn: ${problems.length === 1 ? 'a setting is' : `${problems.length} settings are`} invalid: ${problems.map((p) => `${p.key} (${p.message})`).join('; ')}`,
        'Open Settings',
      )
      .then((a) => {
        if (a) void vscode.commands.executeCommand('workbench.action.openSettings', 'cairn.');
      });
  }
}

export async function deactivate(): Promise<void> {
  // Leaves the daemon running: other windows, the CLI and agents share it.
  await ctx?.dispose();
  ctx = undefined;
}
