/**
 * Registers Cairn's MCP server (`cairn mcp`, docs/mcp.md) with VS Code's agent mode through
 * `vscode.lm.registerMcpServerDefinitionProvider` (final API in VS Code 1.101; declared in package.json's
 * `contributes.mcpServerDefinitionProviders`). The server definition runs the same Node.js and daemon
 * script the extension uses, on the same store and socket, rooted at the workspace's project namespace,
 * with the same review mode — so an MCP agent sees what the tools, @cairn and the Memories view see.
 *
 * Feature-detected: an editor without the API (or that refuses it as a proposal, as a stable VS Code 1.100
 * may) gets nothing registered and no error; the registration state says why. VS Code 1.100 had the API
 * as the `mcpConfigurationProvider` proposal reading `contributes.modelContextServerCollections`, which
 * package.json also declares, so the code-server 1.100 development host used by the e2e tests registers it.
 */
import * as vscode from 'vscode';
import { findDaemonScript, findNode } from '../bootstrap';
import type { Ctx } from '../ctx';
import type { AgentService } from './service';

export const MCP_PROVIDER_ID = 'cairn.mcp';

/** A stdio server definition, independent of the (1.101+) vscode types. */
export interface McpServerSpec {
  label: string;
  command: string;
  args: string[];
  env: Record<string, string>;
  cwd?: string;
  version: string;
}

export type McpRegistration = { state: 'registered' } | { state: 'unsupported'; reason: string } | { state: 'failed'; reason: string };

/** The parts of the VS Code 1.101 MCP API used here (absent from @types/vscode 1.100). */
interface McpApi {
  registerMcpServerDefinitionProvider(
    id: string,
    provider: {
      onDidChangeMcpServerDefinitions?: vscode.Event<void>;
      provideMcpServerDefinitions(token: vscode.CancellationToken): vscode.ProviderResult<unknown[]>;
      resolveMcpServerDefinition?(server: unknown, token: vscode.CancellationToken): vscode.ProviderResult<unknown>;
    },
  ): vscode.Disposable;
}
type McpStdioServerDefinitionCtor = new (
  label: string,
  command: string,
  args?: string[],
  env?: Record<string, string | number | null>,
  version?: string,
) => {
  cwd?: vscode.Uri;
};

/** `node <daemon>/bin/cairn.js mcp --db <store> --socket <socket> [--root <project namespace>] [--task <active task with a branch>]`. */
export async function mcpServerSpec(ctx: Ctx, agents: AgentService): Promise<McpServerSpec> {
  const { node } = await findNode(ctx.config.nodePath);
  const script = findDaemonScript(ctx.config.daemonPath, ctx.extension.extensionPath);
  const target = ctx.client.target;
  const args = [script, 'mcp', '--db', target.db, '--socket', target.socket];
  if (ctx.project) args.push('--root', ctx.project.namespace);
  // The active task's burner branch (docs/branches.md): an MCP agent's memory writes stay on it, as the tools' do.
  const task = await agents.activeTaskBranch().catch(() => undefined);
  if (task) args.push('--task', task.task);
  // The settings a daemon started by `cairn mcp` needs (model, model path...), as the extension passes them.
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(ctx.config.daemonEnv({}))) if (v !== undefined && k.startsWith('CAIRN_')) env[k] = v;
  env.CAIRN_NODE = node;
  env.CAIRN_DAEMON = script;
  env.CAIRN_REVIEW_AGENT_WRITES = agents.reviewAgentWrites ? '1' : '0';
  env.CAIRN_AGENTS_ALLOW_SECRETS = agents.allowSecrets ? '1' : '0';
  // Episode capture (docs/episodes.md): the session records its tool calls only while the user turned it on.
  env.CAIRN_EPISODES_CAPTURE = ctx.config.get('cairn.episodes.capture') === true ? '1' : '0';
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
  return {
    label: 'Cairn memory',
    command: node,
    args,
    env,
    ...(folder?.scheme === 'file' ? { cwd: folder.fsPath } : {}),
    version: String(ctx.extension.extension.packageJSON?.version ?? '0'),
  };
}

/** The definitions VS Code gets from the provider (McpStdioServerDefinition objects), or [] when Cairn cannot run. */
export async function provideDefinitions(ctx: Ctx, agents: AgentService): Promise<unknown[]> {
  const Ctor = (vscode as unknown as { McpStdioServerDefinition?: McpStdioServerDefinitionCtor }).McpStdioServerDefinition;
  if (typeof Ctor !== 'function') return [];
  try {
    const s = await mcpServerSpec(ctx, agents);
    const def = new Ctor(s.label, s.command, s.args, s.env, s.version);
    if (s.cwd) def.cwd = vscode.Uri.file(s.cwd);
    return [def];
  } catch (e) {
    ctx.output.warn(`MCP server definition unavailable: ${String((e as Error)?.message ?? e)}`);
    return [];
  }
}

/**
 * Register the provider where the editor has the API. VS Code 1.101+ reads the provider id from
 * `contributes.mcpServerDefinitionProviders`; 1.100 had the same API as a proposal reading
 * `contributes.modelContextServerCollections` (package.json declares both). An editor that refuses the
 * proposal counts as unsupported.
 */
export function registerMcpServer(ctx: Ctx, agents: AgentService, push: (...d: vscode.Disposable[]) => void): McpRegistration {
  const lm = vscode.lm as unknown as Partial<McpApi> | undefined;
  const Ctor = (vscode as unknown as { McpStdioServerDefinition?: McpStdioServerDefinitionCtor }).McpStdioServerDefinition;
  if (typeof lm?.registerMcpServerDefinitionProvider !== 'function' || typeof Ctor !== 'function') {
    const reason = `this editor (VS Code ${vscode.version}) has no MCP server definition API; it needs VS Code 1.101 or later. Use docs/mcp.md to add "cairn mcp" by hand.`;
    ctx.output.info(`MCP server not registered: ${reason}`);
    return { state: 'unsupported', reason };
  }
  const changed = new vscode.EventEmitter<void>();
  try {
    const registration = lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, {
      onDidChangeMcpServerDefinitions: changed.event,
      provideMcpServerDefinitions: () => provideDefinitions(ctx, agents),
    });
    push(
      registration,
      changed,
      agents.onDidChangeActiveTask(() => changed.fire()),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (
          ['cairn.store.path', 'cairn.daemon', 'cairn.scope', 'cairn.review', 'cairn.embeddings', 'cairn.episodes'].some((k) =>
            e.affectsConfiguration(k),
          )
        )
          changed.fire();
      }),
    );
    ctx.output.info('registered the Cairn MCP server definition provider');
    return { state: 'registered' };
  } catch (e) {
    changed.dispose();
    const reason = String((e as Error)?.message ?? e);
    if (/proposal/i.test(reason)) {
      ctx.output.info(`MCP server not registered: this editor (VS Code ${vscode.version}) offers the API only as a proposal (${reason})`);
      return { state: 'unsupported', reason };
    }
    ctx.output.warn(`could not register the MCP server definition provider: ${reason}`);
    return { state: 'failed', reason };
  }
}
