/**
 * Cairn for agents in VS Code: the Agent Tasks view, the language-model tools, the @cairn chat
 * participant, the MCP server definition, and the extension API that `activate()` returns.
 * main.ts calls `registerAgents(ctx)` once and merges the result into its exports.
 */
import * as vscode from 'vscode';
import { CairnError } from '../../../daemon/src/protocol/errors';
import type { Task } from '../../../daemon/src/protocol/types';
import type { Ctx } from '../ctx';
import { Cancelled, describeError } from '../errors';
import { CAIRN_API_VERSION, type CairnExtensionApi } from './api';
import { handleChatRequest, registerChatParticipant, type ChatRequestLike, type ChatStreamLike, type ModelSelector } from './chat';
import { runForModel, registerLanguageModelTools, type CairnLanguageModelTool, type ToolRun } from './lmTools';
import { mcpServerSpec, provideDefinitions, registerMcpServer, type McpRegistration, type McpServerSpec } from './mcp';
import { AgentService } from './service';
import { TasksView, type TaskNode } from './tasksView';
import type { AgentToolName } from './toolDefs';

/** Handles for this extension's own tests (not part of the public API). */
export interface AgentsInternals {
  service: AgentService;
  tasksView: TasksView;
  tools: Map<AgentToolName, CairnLanguageModelTool>;
  participant: vscode.ChatParticipant | undefined;
  mcp: McpRegistration;
  mcpServerSpec(): Promise<McpServerSpec>;
  /** What the provider gives VS Code (McpStdioServerDefinition objects; [] without the API). */
  mcpDefinitions(): Promise<unknown[]>;
  runTool(name: AgentToolName, input: unknown): Promise<ToolRun>;
  /** The @cairn handler, called without the chat UI. */
  chat(request: ChatRequestLike, stream: ChatStreamLike, selectModels?: ModelSelector): ReturnType<typeof handleChatRequest>;
}

export type AgentsExports = CairnExtensionApi & { agents: AgentsInternals };

/** A task command's target: a tree node, a task, a task id, or the user's pick. */
async function taskArg(ctx: Ctx, service: AgentService, arg: unknown, title: string): Promise<Task> {
  if (typeof arg === 'string') {
    try {
      return await service.getTask(arg);
    } catch (e) {
      if (e instanceof CairnError && e.data.name === 'NotFound')
        throw new Error(`there is no agent task ${arg} (it may have been deleted).`);
      throw e;
    }
  }
  if (arg && typeof arg === 'object') {
    const node = arg as Partial<Extract<TaskNode, { kind: 'task' }>>;
    if (node.kind === 'task' && node.task) return node.task;
    const t = arg as Partial<Task>;
    if (typeof t.id === 'string' && typeof t.title === 'string') return t as Task;
    if (typeof t.id === 'string') return service.getTask(t.id);
  }
  const tasks = await service.listTasks();
  if (!tasks.length) throw new Error('There are no agent tasks. Create one with "Cairn: New Agent Task".');
  const active = service.activeTaskId();
  const pick = await ctx.ui.quickPick(
    tasks.map((task) => ({
      label: task.title,
      description: [task.id === active ? 'active' : '', task.dontInject ? "don't inject" : ''].filter(Boolean).join(' · '),
      task,
    })),
    { title },
  );
  if (!pick) throw new Cancelled();
  return pick.task;
}

export function registerAgents(ctx: Ctx): AgentsExports {
  const service = new AgentService(ctx);
  const push = (...d: vscode.Disposable[]) => ctx.push(...d);
  push(service);
  const tasksView = new TasksView(ctx, service);
  push(tasksView);
  const tools = registerLanguageModelTools(service, push);
  const participant = registerChatParticipant(service, push);
  const mcp = registerMcpServer(ctx, service, push);

  const commands: Record<string, (...args: unknown[]) => Promise<unknown>> = {
    'cairn.newTask': async (a?: unknown) => {
      const o = (a && typeof a === 'object' ? a : {}) as { title?: string; dontInject?: boolean; activate?: boolean };
      const title = (
        o.title ??
        (await ctx.ui.inputBox({
          title: 'New Agent Task',
          prompt: 'What is the agent working on?',
          validateInput: (v) => (v.trim() ? null : 'The title cannot be empty'),
        }))
      )?.trim();
      if (title === undefined) throw new Cancelled();
      if (!title) throw new Error('The title cannot be empty.');
      const task = await service.createTask(title, { dontInject: o.dontInject, activate: o.activate ?? true });
      void ctx.ui.info(`Cairn: created agent task "${task.title}"${service.activeTaskId() === task.id ? ' (now the active task)' : ''}.`);
      return task;
    },
    'cairn.deleteTask': async (a?: unknown) => {
      const task = await taskArg(ctx, service, a, 'Delete which agent task?');
      const ok = await ctx.ui.confirm(`Delete the agent task "${task.title}"?`, 'Delete', 'Its injection log is kept.');
      if (!ok) throw new Cancelled();
      await service.deleteTask(task.id);
      void ctx.ui.info(`Cairn: deleted agent task "${task.title}".`);
      return task;
    },
    'cairn.setActiveTask': async (a?: unknown) => {
      const task = await taskArg(ctx, service, a, 'Make which agent task active?');
      await service.setActiveTask(task.id);
      return task;
    },
    'cairn.clearActiveTask': async () => {
      await service.setActiveTask(undefined);
      return undefined;
    },
    'cairn.toggleDontInject': async (a?: unknown) => {
      const task = await taskArg(ctx, service, a, 'Toggle "Don\'t inject memories" for which task?');
      const updated = await service.setDontInject(task.id, !task.dontInject);
      void ctx.ui.info(`Cairn: "Don't inject memories" is ${updated.dontInject ? 'on' : 'off'} for "${updated.title}".`);
      return updated;
    },
    'cairn.refreshTasks': async () => tasksView.refresh(),
  };
  const titles = new Map(
    ((ctx.extension.extension.packageJSON?.contributes?.commands ?? []) as { command: string; title: string }[]).map((c) => [
      c.command,
      c.title,
    ]),
  );
  for (const [id, handler] of Object.entries(commands)) {
    push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await handler(...args);
        } catch (e) {
          if (e instanceof Cancelled) return undefined;
          const message = describeError(titles.get(id) ?? id, e);
          ctx.output.error(message);
          void ctx.ui.error(`Cairn: ${message}`);
          return undefined;
        }
      }),
    );
  }

  const none = new vscode.CancellationTokenSource();
  push(none);
  const api: CairnExtensionApi = {
    apiVersion: CAIRN_API_VERSION,
    workspaceScope: () => service.workspaceScope(),
    search: (query, options) => service.search(query, options),
    recall: (target) => service.recall(target),
    remember: (input) => service.remember(input),
    forget: (target, reason) => service.forget(target, reason),
    createTask: (title, options) => service.createTask(title, options),
    listTasks: () => service.listTasks(),
    getTask: (id) => service.getTask(id),
    deleteTask: (id) => service.deleteTask(id),
    setDontInject: (id, on) => service.setDontInject(id, on),
    activeTaskId: () => service.activeTaskId(),
    setActiveTask: (id) => service.setActiveTask(id),
    injectionBlock: (taskId, prompt, options) => service.injectionBlock(taskId, prompt, options),
    onDidChange: service.onDidChange,
  };
  const agents: AgentsInternals = {
    service,
    tasksView,
    tools,
    participant,
    mcp,
    mcpServerSpec: () => mcpServerSpec(ctx, service),
    mcpDefinitions: () => provideDefinitions(ctx, service),
    runTool: (name, input) => runForModel(service, name, input),
    chat: (request, stream, selectModels) => handleChatRequest(service, request, { history: [] }, stream, none.token, selectModels),
  };
  return { ...api, agents };
}

export type { CairnExtensionApi } from './api';
