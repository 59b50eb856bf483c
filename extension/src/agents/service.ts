/**
 * What the agent features share: the workspace scope, agent tasks and this window's active task, the
 * injection block, and the agent tools (run with the MCP server's own handlers, see toolDefs.ts).
 * The Agent Tasks view, the language-model tools, @cairn and the extension API all go through here, so
 * the "Don't inject memories" checkbox, `setDontInject` from the API and the tests share one code path.
 *
 * Reading of the per-task toggle: it controls *injection* — memories put into a prompt without the model
 * asking (@cairn's block, `injectionBlock`). A model that calls a tool explicitly (cairn_search,
 * cairn_recall) still gets results, and the result tells it that the active task has injection off.
 */
import * as vscode from 'vscode';
import type { z } from 'zod';
import type { McpScope } from '../../../daemon/src/mcp/scope';
import type { CairnTool, TaskBranch, ToolContext, ToolOutput } from '../../../daemon/src/mcp/tools';
import { CairnError, toCairnError as toProtocolCairnError, wireErrorName } from '../../../daemon/src/protocol/errors';
import {
  Notifications,
  Requests,
  type ParamsOf,
  type RequestDef,
  type RequestName,
  type ResultOf,
} from '../../../daemon/src/protocol/methods';
import type { InjectBlockResult, Memory, Scope, SearchHit, Task, TaskDidChangeParams } from '../../../daemon/src/protocol/types';
import type { Ctx } from '../ctx';
import type {
  CairnChangeEvent,
  CairnInjectionOptions,
  CairnMemoryTarget,
  CairnRememberInput,
  CairnSearchOptions,
  CairnTaskOptions,
} from './api';
import { EditorCapture } from './capture';
import { AGENT_TOOLS, type AgentToolName } from './toolDefs';
import { checkParamsShape } from '../../../daemon/src/protocol/shape';
import { USER_ROOT } from '../../../daemon/src/protocol/namespace';

const ACTIVE_TASK_KEY = 'cairn.agents.activeTaskId';

/** A daemon error as the protocol's CairnError (same code, name, field); anything else unchanged. */
export function toCairnError(e: unknown): unknown {
  return e instanceof CairnError || wireErrorName(e) ? toProtocolCairnError(e) : e;
}

/** `fn` run at most once, its promise shared. */
function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let p: Promise<T> | undefined;
  return () => (p ??= fn());
}

const requestNames = new Map<unknown, RequestName>(Object.entries(Requests).map(([k, v]) => [v, k as RequestName]));

export class AgentService implements vscode.Disposable {
  private readonly taskEmitter = new vscode.EventEmitter<TaskDidChangeParams | undefined>();
  private readonly changeEmitter = new vscode.EventEmitter<CairnChangeEvent>();
  private readonly activeEmitter = new vscode.EventEmitter<string | undefined>();
  /** A task was created, updated or deleted (undefined: reload everything). */
  readonly onDidChangeTasks = this.taskEmitter.event;
  /** Memory writes, task changes and active-task changes (the API's onDidChange). */
  readonly onDidChange = this.changeEmitter.event;
  readonly onDidChangeActiveTask = this.activeEmitter.event;
  private readonly disposables: vscode.Disposable[] = [this.taskEmitter, this.changeEmitter, this.activeEmitter];
  /** How task notifications reach us (see hookTaskNotifications). */
  taskNotifications: 'client-event' | 'connection' | 'none' = 'none';
  /** Episode capture of @cairn's turns and the tools' calls (cairn.episodes.capture). */
  readonly capture: EditorCapture;

  constructor(readonly ctx: Ctx) {
    this.capture = new EditorCapture({
      enabled: () => ctx.config.get('cairn.episodes.capture') === true,
      root: () => this.root,
      activeTaskId: () => this.activeTaskId(),
      git: (namespace) => ctx.git.write(namespace).git,
      request: (name, params) => this.request(name, params),
      log: (level, message) => ctx.output[level](message),
      sessionId: vscode.env.sessionId,
      workspaceName: () => vscode.workspace.name,
    });
    this.disposables.push(
      ctx.client.onDidChangeMemories((change) => this.changeEmitter.fire({ kind: 'memory', change })),
      ctx.client.onDidConnect(() => {
        void this.syncInjectAuto();
        void this.capture.flush();
        this.taskEmitter.fire(undefined);
      }),
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('cairn.injection.auto')) void this.syncInjectAuto();
      }),
    );
    this.hookTaskNotifications();
    void vscode.commands.executeCommand('setContext', 'cairn.hasActiveTask', !!this.activeTaskId());
  }

  /**
   * `tasks/didChange` comes on the daemon connection, which client.ts owns. Use its event when it has one;
   * otherwise register the handler on its language client after each (re)connection. Either way every task
   * change made through this service also fires locally, so the view is right even without notifications.
   */
  private hookTaskNotifications(): void {
    const client = this.ctx.client as unknown as {
      onDidChangeTasks?: vscode.Event<TaskDidChangeParams>;
      lc?: { onNotification(method: string, handler: (p: TaskDidChangeParams) => void): vscode.Disposable };
    };
    if (typeof client.onDidChangeTasks === 'function') {
      this.taskNotifications = 'client-event';
      this.disposables.push(client.onDidChangeTasks((p) => this.taskChanged(p)));
      return;
    }
    let attachedTo: unknown;
    let registration: vscode.Disposable | undefined;
    const attach = () => {
      const lc = client.lc;
      if (!lc || lc === attachedTo || typeof lc.onNotification !== 'function') return;
      try {
        registration?.dispose();
      } catch {
        // the old connection is gone
      }
      registration = lc.onNotification(Notifications.tasksDidChange.method, (p) => this.taskChanged(p));
      attachedTo = lc;
      this.taskNotifications = 'connection';
    };
    attach();
    this.disposables.push(this.ctx.client.onDidConnect(attach), { dispose: () => registration?.dispose() });
  }

  private taskChanged(change: TaskDidChangeParams): void {
    this.taskEmitter.fire(change);
    this.changeEmitter.fire({ kind: 'task', change });
    if (change.op === 'delete' && change.id === this.activeTaskId()) void this.setActiveTask(undefined);
  }

  /** Push `cairn.injection.auto` to the daemon when the user set it (the store-wide switch, store/configure). */
  private async syncInjectAuto(): Promise<void> {
    if (!this.ctx.config.isSet('cairn.injection.auto') || this.ctx.client.state.kind !== 'connected') return;
    try {
      await this.ctx.client.request('configure', { injectAuto: this.ctx.config.get('cairn.injection.auto') });
    } catch (e) {
      this.ctx.output.warn(`could not apply cairn.injection.auto: ${String((e as Error)?.message ?? e)}`);
    }
  }

  /** A daemon request whose Cairn errors reject as CairnError. */
  async request<K extends RequestName>(name: K, params: ParamsOf<K>): Promise<ResultOf<K>> {
    try {
      return await this.ctx.client.request(name, params);
    } catch (e) {
      throw toCairnError(e);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Scope
  // ---------------------------------------------------------------------------------------------
  /** The namespace subtree agents in this window read and write: the project namespace, else `user`. */
  get root(): string {
    return this.ctx.project?.namespace ?? USER_ROOT;
  }

  /** Project subtree + `user` (unless cairn.scope.includeUser is off). */
  workspaceScope(): Scope {
    const root = this.root;
    return root === USER_ROOT ? { root } : { root, includeUser: this.ctx.config.includeUser };
  }

  private mcpScope(): McpScope {
    const p = this.ctx.project;
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    return {
      root: this.root,
      source: !p ? 'folder' : p.source === 'setting' ? 'option' : p.source,
      ...(folder?.scheme === 'file' ? { dir: folder.fsPath } : {}),
    };
  }

  get reviewAgentWrites(): boolean {
    return this.ctx.config.get('cairn.review.agentWrites');
  }

  /** cairn.agents.allowSecrets: memories tagged `secret` reach agents (off by default). */
  get allowSecrets(): boolean {
    return this.ctx.config.get('cairn.agents.allowSecrets') === true;
  }

  // ---------------------------------------------------------------------------------------------
  // Tools (the MCP server's handlers, in this window's scope)
  // ---------------------------------------------------------------------------------------------
  /**
   * Run an agent tool: input validated with its zod schema, scope bounded to the workspace, writes recorded
   * as `actor` (`agent:<name>`), proposed while review is on. Throws CairnError on a Cairn failure.
   */
  async runTool(name: AgentToolName, input: unknown, actor: string, o: { onTaskBranch?: boolean } = {}): Promise<ToolOutput> {
    const tool = AGENT_TOOLS[name] as unknown as CairnTool;
    // As `cairn mcp`: the shape limits (a filter nested thousands deep is InvalidFilter) before zod sees the input.
    checkParamsShape(input);
    const parsed = tool.input.safeParse(input ?? {});
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const field = issue?.path.join('.') || undefined;
      throw new CairnError('InvalidParams', `${issue?.message ?? 'invalid input'}${field ? ` (${field})` : ''}`, field ? { field } : {});
    }
    let args = parsed.data as Record<string, unknown>;
    if (name === 'cairn_search' && args.scope === undefined && !this.ctx.config.includeUser)
      args = { ...args, scope: { includeUser: false } };
    const context: ToolContext = {
      call: (async (def: RequestDef<z.ZodType, z.ZodType>, params: unknown) => {
        const req = requestNames.get(def);
        if (!req) throw new Error(`unknown request ${def.method}`);
        return this.request(req, params as never);
      }) as ToolContext['call'],
      scope: this.mcpScope(),
      actor: () => actor,
      reviewAgentWrites: this.reviewAgentWrites,
      allowSecrets: this.allowSecrets,
      // Git-aware memory, as the window's commands: reads see what the checkout sees, writes record branch and commit.
      git: { read: () => this.ctx.git.read().git, write: (namespace) => this.ctx.git.write(namespace).git },
      // The active task's burner branch (docs/branches.md): reads see it, writes under its root go there. Asked once per call.
      ...(o.onTaskBranch === false ? {} : { taskBranch: once(() => this.activeTaskBranch()) }),
    };
    return tool.run(args as never, context);
  }

  /** The active task's open memory branch and the subtree it covers, if it has one. */
  async activeTaskBranch(): Promise<TaskBranch | undefined> {
    const t = await this.activeTask();
    return t?.branch && t.scope.root !== undefined ? { task: t.id, name: t.branch, root: t.scope.root } : undefined;
  }

  async search(query: string, o: CairnSearchOptions = {}): Promise<SearchHit[]> {
    const out = await this.runTool(
      'cairn_search',
      {
        query,
        ...(o.limit !== undefined ? { limit: o.limit } : {}),
        ...(o.mode ? { mode: o.mode } : {}),
        ...(o.scope ? { scope: o.scope } : {}),
        ...(o.includeProposed ? { includeProposed: true } : {}),
      },
      'agent:extension',
    );
    return (out.structured as { hits: SearchHit[] }).hits;
  }

  async recall(t: CairnMemoryTarget): Promise<Memory> {
    return ((await this.runTool('cairn_recall', t, 'agent:extension')).structured as { memory: Memory }).memory;
  }

  async remember(i: CairnRememberInput): Promise<Memory> {
    const { source, ...rest } = i;
    const out = await this.runTool('cairn_remember', rest, `agent:${(source || 'extension').slice(0, 190)}`);
    return (out.structured as { memory: Memory }).memory;
  }

  /** `onTaskBranch: false` (the user's own /forget in chat): forgotten on the base even while the active task has a branch. */
  async forget(t: CairnMemoryTarget, reason?: string, actor = 'agent:extension', o: { onTaskBranch?: boolean } = {}): Promise<Memory> {
    const out = await this.runTool('cairn_forget', { ...t, ...(reason ? { reason } : {}) }, actor, o);
    return (out.structured as { memory: Memory }).memory;
  }

  // ---------------------------------------------------------------------------------------------
  // Tasks
  // ---------------------------------------------------------------------------------------------
  async listTasks(): Promise<Task[]> {
    return (await this.request('tasksList', { limit: 200 })).tasks;
  }

  getTask(id: string): Promise<Task> {
    return this.request('tasksGet', { id });
  }

  async createTask(title: string, o: CairnTaskOptions = {}): Promise<Task> {
    const task = await this.request('tasksCreate', {
      title,
      scope: o.scope ?? this.workspaceScope(),
      ...(o.dontInject ? { dontInject: true } : {}),
      ...(o.branch ? { branch: true, ...this.ctx.git?.follow() } : {}),
    });
    this.taskEmitter.fire({ id: task.id, op: 'create', task });
    if (o.activate) await this.setActiveTask(task.id);
    return task;
  }

  /** The toggle behind the Agent Tasks checkbox: updates the daemon at once. */
  async setDontInject(id: string, dontInject: boolean): Promise<Task> {
    const task = await this.request('tasksUpdate', { id, dontInject });
    this.ctx.output.info(`task ${task.title} (${id}): don't inject ${dontInject ? 'on' : 'off'}`);
    this.taskEmitter.fire({ id, op: 'update', task });
    return task;
  }

  async deleteTask(id: string): Promise<void> {
    await this.request('tasksDelete', { id });
    this.taskEmitter.fire({ id, op: 'delete', task: null });
    if (this.activeTaskId() === id) await this.setActiveTask(undefined);
  }

  activeTaskId(): string | undefined {
    return this.ctx.extension.workspaceState.get<string>(ACTIVE_TASK_KEY) || undefined;
  }

  async setActiveTask(id: string | undefined): Promise<void> {
    if (this.activeTaskId() === id) return;
    await this.ctx.extension.workspaceState.update(ACTIVE_TASK_KEY, id);
    await vscode.commands.executeCommand('setContext', 'cairn.hasActiveTask', !!id);
    this.activeEmitter.fire(id);
    this.changeEmitter.fire({ kind: 'activeTask', taskId: id ?? null });
  }

  /** The active task, or undefined (a stale id — the task was deleted elsewhere — is cleared). */
  async activeTask(): Promise<Task | undefined> {
    const id = this.activeTaskId();
    if (!id) return undefined;
    try {
      return await this.getTask(id);
    } catch (e) {
      if (e instanceof CairnError && e.data.name === 'NotFound') {
        await this.setActiveTask(undefined);
        return undefined;
      }
      throw e;
    }
  }

  /** A sentence for the model when the active task has injection off (tool results say so), else ''. */
  async dontInjectNote(): Promise<string> {
    try {
      const t = await this.activeTask();
      return t?.dontInject
        ? `Note: the active task "${t.title}" has "Don't inject memories" on, so Cairn adds no memories to its prompts by itself; this result is here only because you called the tool.`
        : '';
    } catch {
      return '';
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Injection
  // ---------------------------------------------------------------------------------------------
  injectionBlock(taskId: string | undefined, prompt: string, o: CairnInjectionOptions = {}): Promise<InjectBlockResult> {
    const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.round(v)));
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    return this.request('injectBlock', {
      prompt,
      k: clamp(o.k ?? this.ctx.config.get('cairn.injection.k'), 1, 50),
      budgetChars: clamp(o.budgetChars ?? this.ctx.config.get('cairn.injection.budgetChars'), 200, 100_000),
      ...(this.ctx.config.get('cairn.injection.events') > 0 ? { events: clamp(this.ctx.config.get('cairn.injection.events'), 0, 20) } : {}),
      trigger: o.trigger ?? 'explicit',
      ...(this.allowSecrets ? { allowSecrets: true } : {}),
      ...(taskId ? { taskId } : { scope: this.workspaceScope() }),
      ...(folder?.scheme === 'file' ? { root: folder.fsPath } : {}), // re-check cited code on disk first
      ...this.ctx.git.read(), // memories of unmerged git branches stay out (git-aware memory)
    });
  }

  dispose(): void {
    for (const d of this.disposables.splice(0).reverse()) {
      try {
        d.dispose();
      } catch {
        // keep going
      }
    }
  }
}
