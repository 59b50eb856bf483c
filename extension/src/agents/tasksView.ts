/**
 * The "Agent Tasks" view: agent tasks from `tasks/list`, newest first, each with a checkbox meaning
 * "Don't inject memories" (checking it calls `tasks/update` at once), and under each task the memories
 * that were injected into it (from `inject/log`; click opens the memory). The active task — the one
 * @cairn and the language-model tools use in this window — is marked. Reloads on `tasks/didChange` and
 * `memory/didChange`.
 */
import * as vscode from 'vscode';
import type { InjectLogEntry, Memory, Task } from '../../../daemon/src/protocol/types';
import type { Ctx } from '../ctx';
import { describeError } from '../errors';
import { KIND_ICONS, memoryTooltip } from '../memoryTree';
import type { AgentService } from './service';

export const TASKS_VIEW_ID = 'cairn.tasks';

export type TaskNode =
  | { kind: 'task'; task: Task; active: boolean }
  | { kind: 'injected'; taskId: string; memoryId: string; memory: Memory | null; count: number; lastAt: string }
  | { kind: 'message'; text: string; icon?: string; taskId?: string };

/** Memories injected into a task, most recent first: [memoryId, times, last time]. */
export function injectedMemories(entries: InjectLogEntry[]): { memoryId: string; count: number; lastAt: string }[] {
  const by = new Map<string, { memoryId: string; count: number; lastAt: string }>();
  for (const e of entries) {
    for (const id of e.memoryIds) {
      const cur = by.get(id);
      if (cur) {
        cur.count++;
        if (e.at > cur.lastAt) cur.lastAt = e.at;
      } else by.set(id, { memoryId: id, count: 1, lastAt: e.at });
    }
  }
  return [...by.values()].sort((a, b) => (a.lastAt < b.lastAt ? 1 : a.lastAt > b.lastAt ? -1 : 0));
}

export class TasksView implements vscode.TreeDataProvider<TaskNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<TaskNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly loadedEmitter = new vscode.EventEmitter<TaskNode[]>();
  /** Fired each time the task list was (re)loaded from the daemon (tests wait for it). */
  readonly onDidLoad = this.loadedEmitter.event;
  readonly view: vscode.TreeView<TaskNode>;
  private root: Promise<TaskNode[]> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(
    private readonly ctx: Ctx,
    private readonly agents: AgentService,
  ) {
    this.view = vscode.window.createTreeView(TASKS_VIEW_ID, {
      treeDataProvider: this,
      showCollapseAll: true,
      manageCheckboxStateManually: true,
    });
    this.disposables.push(
      this.view,
      this.emitter,
      this.loadedEmitter,
      this.view.onDidChangeCheckboxState((e) => void this.onCheckboxChange(e.items)),
      agents.onDidChangeTasks(() => this.scheduleRefresh()),
      agents.onDidChangeActiveTask(() => this.refresh()),
      ctx.client.onDidChangeMemories(() => this.scheduleRefresh()),
      ctx.client.onDidChangeState((s) => {
        if (s.kind !== 'connected') this.refresh();
      }),
    );
  }

  /**
   * The checkbox handler (also what tests call): a checked task gets "Don't inject memories" on, at once.
   * On failure the error is shown and the view reloads, so the checkbox shows the daemon's state again.
   */
  async onCheckboxChange(items: readonly (readonly [TaskNode, vscode.TreeItemCheckboxState])[]): Promise<Task[]> {
    const done: Task[] = [];
    for (const [node, state] of items) {
      if (node.kind !== 'task') continue;
      const dontInject = state === vscode.TreeItemCheckboxState.Checked;
      if (node.task.dontInject === dontInject) continue;
      try {
        done.push(await this.agents.setDontInject(node.task.id, dontInject));
      } catch (e) {
        const message = describeError(`Turning "Don't inject memories" ${dontInject ? 'on' : 'off'} for "${node.task.title}"`, e);
        this.ctx.output.error(message);
        void this.ctx.ui.error(`Cairn: ${message}`);
      }
    }
    this.refresh();
    return done;
  }

  private scheduleRefresh(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.refresh(), 150);
  }

  refresh(): void {
    clearTimeout(this.timer);
    this.root = undefined;
    this.emitter.fire(undefined);
  }

  /** The loaded task nodes (loading them when needed). */
  tasks(): Promise<TaskNode[]> {
    return (this.root ??= this.loadRoot());
  }

  getChildren(node?: TaskNode): Promise<TaskNode[]> | TaskNode[] {
    if (!node) return this.tasks();
    if (node.kind === 'task') return this.loadInjected(node.task);
    return [];
  }

  getParent(): undefined {
    return undefined;
  }

  private async loadRoot(): Promise<TaskNode[]> {
    let nodes: TaskNode[];
    if (this.ctx.client.state.kind !== 'connected') {
      nodes = [{ kind: 'message', text: 'Not connected to the Cairn daemon', icon: 'debug-disconnect' }];
    } else {
      try {
        const tasks = await this.agents.listTasks();
        const active = this.agents.activeTaskId();
        nodes = tasks.map((task) => ({ kind: 'task', task, active: task.id === active }) as TaskNode);
        this.view.description = tasks.length ? `${tasks.length}` : undefined;
      } catch (e) {
        nodes = [{ kind: 'message', text: describeError('Loading agent tasks', e), icon: 'error' }];
      }
    }
    this.loadedEmitter.fire(nodes);
    return nodes;
  }

  private async loadInjected(task: Task): Promise<TaskNode[]> {
    try {
      const log = await this.agents.request('injectLog', { taskId: task.id, limit: 500 });
      const used = injectedMemories(log.entries).slice(0, 100);
      if (!used.length) {
        const skipped = log.entries.filter((e) => e.skipped === 'disabled').length;
        return [
          {
            kind: 'message',
            taskId: task.id,
            icon: 'info',
            text: skipped
              ? `No memories injected (${skipped} prompt${skipped === 1 ? '' : 's'} skipped: "Don't inject" was on)`
              : 'No memories injected yet',
          },
        ];
      }
      const memories = await Promise.all(
        used.map((u) =>
          this.agents.request('get', { id: u.memoryId, includeDeleted: true }).then(
            (m) => m,
            () => null,
          ),
        ),
      );
      return used.map((u, i) => ({ kind: 'injected', taskId: task.id, ...u, memory: memories[i] }) as TaskNode);
    } catch (e) {
      return [{ kind: 'message', taskId: task.id, text: describeError('Loading the injection log', e), icon: 'error' }];
    }
  }

  getTreeItem(node: TaskNode): vscode.TreeItem {
    switch (node.kind) {
      case 'task': {
        const t = node.task;
        const item = new vscode.TreeItem(t.title, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `task:${t.id}`;
        item.checkboxState = {
          state: t.dontInject ? vscode.TreeItemCheckboxState.Checked : vscode.TreeItemCheckboxState.Unchecked,
          tooltip: "Don't inject memories into this task's prompts",
        };
        item.description = [node.active ? 'active' : '', t.dontInject ? "don't inject" : '', t.status !== 'open' ? t.status : '']
          .filter(Boolean)
          .join(' · ');
        item.iconPath = new vscode.ThemeIcon(node.active ? 'star-full' : 'checklist');
        item.contextValue = node.active ? 'cairnTask.active' : 'cairnTask';
        const md = new vscode.MarkdownString(undefined, true);
        md.appendMarkdown(`**${t.title}**${node.active ? ' (active task)' : ''}\n\n`);
        md.appendMarkdown(`- **Don't inject memories:** ${t.dontInject ? 'on — @cairn and injectionBlock add no memories' : 'off'}\n`);
        md.appendMarkdown(
          `- **Scope:** ${scopeLabel(t.scope)}\n- **Status:** ${t.status}\n- **Created:** ${t.createdAt}\n- **Id:** ${t.id}`,
        );
        item.tooltip = md;
        return item;
      }
      case 'injected': {
        const m = node.memory;
        const item = new vscode.TreeItem(m ? m.key : node.memoryId, vscode.TreeItemCollapsibleState.None);
        item.id = `inj:${node.taskId}:${node.memoryId}`;
        item.description = [m?.namespace ?? '(purged)', node.count > 1 ? `×${node.count}` : '', m?.deletedAt ? '(deleted)' : '']
          .filter(Boolean)
          .join('  ');
        item.iconPath = new vscode.ThemeIcon(m ? (m.deletedAt ? 'trash' : (KIND_ICONS[m.kind] ?? 'note')) : 'question');
        if (m) {
          const tip = memoryTooltip(m);
          tip.appendMarkdown(`\n\n_Injected ${node.count} time${node.count === 1 ? '' : 's'}, last ${node.lastAt}_`);
          item.tooltip = tip;
          item.command = { command: 'cairn.openMemory', title: 'Open Memory', arguments: [m.id] };
        }
        item.contextValue = 'cairnInjectedMemory';
        return item;
      }
      case 'message': {
        const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
        if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon);
        item.contextValue = 'cairnTaskMessage';
        return item;
      }
    }
  }

  dispose(): void {
    clearTimeout(this.timer);
    for (const d of this.disposables.splice(0).reverse()) d.dispose();
  }
}

export function scopeLabel(s: Task['scope']): string {
  const parts = [...(s.root ? [`${s.root} (and below)`] : []), ...(s.namespaces ?? [])];
  if (!parts.length) return 'all namespaces';
  if (s.includeUser !== false && s.root !== 'user') parts.push('user');
  return parts.join(' + ');
}
