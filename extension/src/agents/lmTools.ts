/**
 * Language-model tools (`vscode.lm.registerTool`): cairn_search, cairn_remember, cairn_recall and
 * cairn_forget, declared in package.json's `contributes.languageModelTools` (generated from toolDefs.ts by
 * scripts/sync-agents.mjs). Each runs the MCP server's handler for the same tool in this window's scope
 * (the project namespace subtree + `user`), so results read the same as over MCP.
 *
 * - Writes are recorded with source and actor `agent:<tool name>`, and are `proposed` while
 *   cairn.review.agentWrites is on (the default): the user approves them in the Memories view.
 * - cairn_forget asks for confirmation (prepareInvocation) naming the memory and its value.
 * - Failures come back as a tool result the model can read, naming the Cairn error code
 *   (`Cairn error InvalidNamespace (1006) in field "namespace": ...`), never as an exception.
 * - Memories tagged `secret` (in any spelling) never reach the model: the tools run with
 *   `allowSecrets` from cairn.agents.allowSecrets (machine scope, off by default), so search and list
 *   leave them out and recall, forget, link and neighbors treat them as not found — including the
 *   forget confirmation, which would otherwise show the value.
 * - The active task's "Don't inject memories" toggle governs injection, not explicit tool calls: the
 *   tools still answer, and the result tells the model that injection is off for the task.
 */
import * as vscode from 'vscode';
import { errorText } from '../../../daemon/src/mcp/format';
import { CairnError } from '../../../daemon/src/protocol/errors';
import type { Memory } from '../../../daemon/src/protocol/types';
import { RESULT_CHARS } from './capture';
import type { AgentService } from './service';
import { AGENT_TOOL_NAMES, type AgentToolName } from './toolDefs';
import { oneLine } from '../../../daemon/src/text/format';

export interface ToolRun {
  text: string;
  ok: boolean;
  /** The Cairn error code name of a failed call. */
  error?: string;
  structured?: Record<string, unknown>;
}

/** Run a tool for a model: never throws; the text is what the model reads. With capture on, the call and its result become events. */
export async function runForModel(agents: AgentService, name: AgentToolName, input: unknown): Promise<ToolRun> {
  const r = await runTool(agents, name, input);
  const actor = `agent:${name}`;
  agents.capture.record([
    { kind: 'tool_call', text: `${name} ${JSON.stringify(input ?? {})}`, actor, context: { tool: name } },
    { kind: 'tool_result', text: (r.ok ? r.text : `error: ${r.text}`).slice(0, RESULT_CHARS), actor, context: { tool: name } },
  ]);
  return r;
}

async function runTool(agents: AgentService, name: AgentToolName, input: unknown): Promise<ToolRun> {
  try {
    const out = await agents.runTool(name, input, `agent:${name}`);
    let text = out.text;
    if (name === 'cairn_search' || name === 'cairn_recall') {
      const note = await agents.dontInjectNote();
      if (note) text += `\n\n${note}`;
    }
    return { text, ok: true, structured: out.structured };
  } catch (e) {
    if (e instanceof CairnError) return { text: errorText(e), ok: false, error: e.data.name };
    const message = e instanceof Error ? e.message : String(e);
    return { text: `Cairn is unavailable: ${message}`, ok: false, error: e instanceof Error ? e.name : 'Error' };
  }
}

export class CairnLanguageModelTool implements vscode.LanguageModelTool<Record<string, unknown>> {
  constructor(
    readonly name: AgentToolName,
    private readonly agents: AgentService,
  ) {}

  async prepareInvocation(
    options: vscode.LanguageModelToolInvocationPrepareOptions<Record<string, unknown>>,
  ): Promise<vscode.PreparedToolInvocation> {
    const input = options.input ?? {};
    const str = (k: string) => (typeof input[k] === 'string' ? (input[k] as string) : undefined);
    switch (this.name) {
      case 'cairn_search':
        return { invocationMessage: `Searching Cairn memories for "${oneLine(str('query') ?? '', 60)}"` };
      case 'cairn_recall':
        return { invocationMessage: `Reading Cairn memory ${str('key') ?? str('id') ?? ''}` };
      case 'cairn_remember': {
        const ns = str('namespace') ?? this.agents.root;
        return {
          invocationMessage: `Saving Cairn memory ${ns}/${str('key') ?? ''}${this.agents.reviewAgentWrites ? ' (proposed, for your review)' : ''}`,
        };
      }
      case 'cairn_forget': {
        // Name the memory in the confirmation. When it cannot be found there is nothing to confirm: the call
        // itself then reports NotFound (or the other error) to the model.
        let m: Memory | undefined;
        try {
          const { reason: _r, ...target } = input;
          m = (await this.agents.runTool('cairn_recall', target, `agent:${this.name}`)).structured?.memory as Memory | undefined;
        } catch {
          m = undefined;
        }
        if (!m) return { invocationMessage: `Forgetting Cairn memory ${str('key') ?? str('id') ?? ''}` };
        const md = new vscode.MarkdownString();
        md.appendMarkdown(
          `Forget **${m.namespace}/${m.key}**? Cairn deletes it and refuses this value in \`${m.namespace}\` from now on.\n\n`,
        );
        md.appendCodeblock(m.value.length > 500 ? m.value.slice(0, 500) + '…' : m.value, 'text');
        if (str('reason')) md.appendMarkdown(`\nReason given: ${str('reason')}`);
        return {
          invocationMessage: `Forgetting Cairn memory ${m.namespace}/${m.key}`,
          confirmationMessages: { title: 'Forget a Cairn memory?', message: md },
        };
      }
    }
  }

  async invoke(
    options: vscode.LanguageModelToolInvocationOptions<Record<string, unknown>>,
    _token?: vscode.CancellationToken,
  ): Promise<vscode.LanguageModelToolResult> {
    const r = await runForModel(this.agents, this.name, options.input);
    this.agents.ctx.output.info(`lm tool ${this.name}: ${r.ok ? 'ok' : `failed (${r.error})`}`);
    return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(r.text)]);
  }
}

/** Register every agent tool; returns them by name (tests call their prepare/invoke directly too). */
export function registerLanguageModelTools(
  agents: AgentService,
  push: (...d: vscode.Disposable[]) => void,
): Map<AgentToolName, CairnLanguageModelTool> {
  const tools = new Map<AgentToolName, CairnLanguageModelTool>();
  if (typeof vscode.lm?.registerTool !== 'function') {
    agents.ctx.output.warn('this editor has no language-model tools API (vscode.lm.registerTool); Cairn tools are not registered');
    return tools;
  }
  for (const name of AGENT_TOOL_NAMES) {
    const tool = new CairnLanguageModelTool(name, agents);
    try {
      push(vscode.lm.registerTool(name, tool));
      tools.set(name, tool);
    } catch (e) {
      agents.ctx.output.error(`could not register the language-model tool ${name}: ${String((e as Error)?.message ?? e)}`);
    }
  }
  return tools;
}
