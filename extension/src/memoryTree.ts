/**
 * The "Memories" tree: a "Needs review" group of proposed memories, then namespaces (nested by their
 * dotted segments) and their memories. A filter in the view title switches to search results grouped by
 * namespace. Data is cached and invalidated by the daemon's `memory/didChange` notifications, so writes
 * from the CLI, agents or other windows show up without a manual refresh.
 */
import * as vscode from 'vscode';
import type { Memory, MemoryKind, NamespaceInfo } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';
import { describeError } from './errors';
import { escapeMarkdown } from '../../daemon/src/text/format';

export type Node =
  | { kind: 'review'; memories: Memory[] }
  | {
      kind: 'namespace';
      path: string;
      label: string;
      own: NamespaceInfo | null;
      children: Map<string, NamespaceNode>;
      preloaded?: Memory[];
    }
  | { kind: 'memory'; memory: Memory; inReview?: boolean }
  | { kind: 'message'; text: string; icon?: string; command?: vscode.Command };
type NamespaceNode = Extract<Node, { kind: 'namespace' }>;

/** Codicon per memory kind. */
export const KIND_ICONS: Record<MemoryKind, string> = {
  fact: 'symbol-constant',
  preference: 'settings-gear',
  decision: 'law',
  procedure: 'list-ordered',
  episode: 'history',
  note: 'note',
};

const PAGE = 500;

export class MemoryTree implements vscode.TreeDataProvider<Node>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<Node | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly loadedEmitter = new vscode.EventEmitter<Node[]>();
  /** Fired each time the root level was (re)loaded from the daemon. */
  readonly onDidLoadRoot = this.loadedEmitter.event;

  private root: Promise<Node[]> | undefined;
  private readonly memories = new Map<string, Promise<Node[]>>();
  private filter = '';
  private showDeleted = false;
  private refreshTimer: NodeJS.Timeout | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  readonly view: vscode.TreeView<Node>;

  constructor(private readonly ctx: Ctx) {
    this.view = vscode.window.createTreeView('cairn.memories', { treeDataProvider: this, showCollapseAll: true });
    this.disposables.push(
      this.view,
      ctx.client.onDidChangeMemories(() => this.scheduleRefresh()),
      ctx.client.onDidConnect(() => this.refresh()),
      // Another branch checked out (or a commit): what is visible changes (git-aware memory).
      ctx.git.onDidChange(() => this.refresh()),
      ctx.client.onDidChangeState((s) => {
        if (s.kind !== 'connected') this.refresh();
      }),
    );
    void this.setContext();
  }

  get filterText(): string {
    return this.filter;
  }
  get deletedShown(): boolean {
    return this.showDeleted;
  }

  async setFilter(text: string): Promise<void> {
    this.filter = text.trim();
    this.view.description = this.filter ? `filter: ${this.filter}` : undefined;
    await this.setContext();
    this.refresh();
  }

  async setShowDeleted(show: boolean): Promise<void> {
    this.showDeleted = show;
    await this.setContext();
    this.refresh();
  }

  private async setContext(): Promise<void> {
    await vscode.commands.executeCommand('setContext', 'cairn.filterActive', !!this.filter);
    await vscode.commands.executeCommand('setContext', 'cairn.showDeleted', this.showDeleted);
  }

  /** Coalesce bursts of change notifications (an import sends thousands) into one reload. */
  private scheduleRefresh(): void {
    clearTimeout(this.refreshTimer);
    this.refreshTimer = setTimeout(() => this.refresh(), 150);
  }

  /** Drop every cached level, start reloading the root at once, and tell the view. */
  refresh(): void {
    clearTimeout(this.refreshTimer);
    this.memories.clear();
    this.root = this.ctx.client.state.kind === 'connected' ? this.loadRoot() : undefined;
    this.emitter.fire(undefined);
  }

  getChildren(node?: Node): Promise<Node[]> | Node[] {
    if (!node) return (this.root ??= this.loadRoot());
    if (node.kind === 'review') return node.memories.map((m) => ({ kind: 'memory', memory: m, inReview: true }) as Node);
    if (node.kind === 'namespace') {
      let p = this.memories.get(node.path);
      if (!p) {
        p = this.loadNamespace(node);
        this.memories.set(node.path, p);
      }
      return p;
    }
    return [];
  }

  getParent(): undefined {
    return undefined;
  }

  private async loadRoot(): Promise<Node[]> {
    const nodes = await this.computeRoot();
    this.ctx.metrics.mark(
      'treePopulated',
      nodes.some((n) => n.kind !== 'message'),
    );
    this.loadedEmitter.fire(nodes);
    return nodes;
  }

  private async computeRoot(): Promise<Node[]> {
    const s = this.ctx.client.state;
    if (s.kind === 'starting' || s.kind === 'stopped')
      return [{ kind: 'message', text: 'Connecting to the Cairn daemon…', icon: 'sync~spin' }];
    if (s.kind === 'error') {
      return [
        {
          kind: 'message',
          text: `Not connected: ${s.message.split('\n')[0]}`,
          icon: 'error',
          command: { command: 'cairn.showLog', title: 'Show Log' },
        },
        {
          kind: 'message',
          text: 'Restart Daemon',
          icon: 'debug-restart',
          command: { command: 'cairn.restartDaemon', title: 'Restart Daemon' },
        },
      ];
    }
    try {
      return this.filter ? await this.searchRoot() : await this.namespaceRoot();
    } catch (e) {
      return [{ kind: 'message', text: describeError('Loading memories', e), icon: 'error' }];
    }
  }

  private async namespaceRoot(): Promise<Node[]> {
    const [{ namespaces }, review] = await Promise.all([
      this.ctx.client.request('namespacesList', {}),
      this.ctx.client.request('list', {
        filter: { field: 'status', op: 'eq', value: 'proposed' },
        include: { proposed: true },
        limit: 200,
        ...this.ctx.git.read(),
      }),
    ]);
    const out: Node[] = [];
    if (review.items.length) out.push({ kind: 'review', memories: review.items });
    const tree = buildNamespaceTree(namespaces.filter((n) => this.showDeleted || n.memoryCount > 0));
    out.push(...tree);
    return out;
  }

  private async searchRoot(): Promise<Node[]> {
    // A filter is text matching: full-text mode, so unrelated memories never show up as "near" hits.
    const res = await this.ctx.client.request('search', {
      query: this.filter,
      mode: 'fts',
      limit: 200,
      include: { deleted: this.showDeleted, proposed: true },
      ...this.ctx.git.read(),
    });
    const byNs = new Map<string, Memory[]>();
    for (const h of res.hits) byNs.set(h.memory.namespace, [...(byNs.get(h.memory.namespace) ?? []), h.memory]);
    const out: Node[] = [...byNs].map(
      ([path, mems]) => ({ kind: 'namespace', path, label: path, own: null, children: new Map(), preloaded: mems }) as Node,
    );
    if (!out.length)
      out.push({
        kind: 'message',
        text: `No memories match "${this.filter}"`,
        icon: 'search-stop',
        command: { command: 'cairn.clearFilter', title: 'Clear Filter' },
      });
    if (res.degraded) out.push({ kind: 'message', text: `Full-text only: ${res.degraded}`, icon: 'warning' });
    return out;
  }

  private async loadNamespace(node: NamespaceNode): Promise<Node[]> {
    const children: Node[] = [...node.children.values()];
    if (node.preloaded) return [...children, ...node.preloaded.map((m) => ({ kind: 'memory', memory: m }) as Node)];
    if (!node.own) return children;
    try {
      const res = await this.ctx.client.request('list', {
        scope: { namespaces: [node.path], includeUser: false },
        filter: { field: 'namespace', op: 'eq', value: node.path },
        include: { deleted: this.showDeleted },
        limit: PAGE,
        ...this.ctx.git.read(),
      });
      const mems = res.items
        .filter((m) => m.status !== 'proposed')
        .sort((a, b) => a.key.localeCompare(b.key))
        .map((m) => ({ kind: 'memory', memory: m }) as Node);
      const more: Node[] = res.nextCursor
        ? [{ kind: 'message', text: `Showing the first ${PAGE}; use Search Memories to find others`, icon: 'info' }]
        : [];
      return [...children, ...mems, ...more];
    } catch (e) {
      return [...children, { kind: 'message', text: describeError('Loading memories', e), icon: 'error' }];
    }
  }

  getTreeItem(node: Node): vscode.TreeItem {
    switch (node.kind) {
      case 'review': {
        const item = new vscode.TreeItem('Needs review', vscode.TreeItemCollapsibleState.Expanded);
        item.id = 'cairn:review';
        item.description = String(node.memories.length);
        item.iconPath = new vscode.ThemeIcon('inbox', new vscode.ThemeColor('list.warningForeground'));
        item.tooltip = 'Memories proposed by agents, waiting for approval';
        item.contextValue = 'review';
        return item;
      }
      case 'namespace': {
        const item = new vscode.TreeItem(node.label, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `${this.filter ? 'f' : 'n'}:${node.path}`;
        item.iconPath = new vscode.ThemeIcon(node.own ? 'folder-library' : 'folder');
        const count = node.preloaded?.length ?? node.own?.memoryCount;
        item.description = count !== undefined ? String(count) : undefined;
        item.tooltip = node.path;
        item.contextValue = 'namespace';
        return item;
      }
      case 'memory':
        return memoryItem(node.memory, node.inReview ?? false);
      case 'message': {
        const item = new vscode.TreeItem(node.text, vscode.TreeItemCollapsibleState.None);
        if (node.icon) item.iconPath = new vscode.ThemeIcon(node.icon);
        item.command = node.command;
        item.contextValue = 'message';
        return item;
      }
    }
  }

  dispose(): void {
    clearTimeout(this.refreshTimer);
    this.emitter.dispose();
    this.loadedEmitter.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

/** Nest namespaces by segment: `project.cairn` and `project.web` under `project`. */
export function buildNamespaceTree(namespaces: NamespaceInfo[]): NamespaceNode[] {
  const roots = new Map<string, NamespaceNode>();
  for (const ns of [...namespaces].sort((a, b) => a.path.localeCompare(b.path))) {
    const segments = ns.path.split('.');
    let level = roots;
    let node: NamespaceNode | undefined;
    for (let i = 0; i < segments.length; i++) {
      const path = segments.slice(0, i + 1).join('.');
      node = level.get(segments[i]);
      if (!node) {
        node = { kind: 'namespace', path, label: segments[i], own: null, children: new Map() };
        level.set(segments[i], node);
      }
      level = node.children;
    }
    if (node) node.own = ns;
  }
  return [...roots.values()];
}

export function memoryContext(m: Memory): string {
  if (m.deletedAt) return 'memory.deleted';
  return `memory.${m.status}`;
}

export function memoryItem(m: Memory, inReview: boolean): vscode.TreeItem {
  const item = new vscode.TreeItem(m.key, vscode.TreeItemCollapsibleState.None);
  item.id = `${inReview ? 'r' : 'm'}:${m.id}`;
  const tags = m.tags.map((t) => `#${t}`).join(' ');
  const flags = [
    m.deletedAt ? 'deleted' : '',
    m.status !== 'active' ? m.status : '',
    m.anchors.some((a) => a.stale) ? 'stale anchor' : '',
  ].filter(Boolean);
  item.description = [inReview ? m.namespace : '', tags, flags.length ? `(${flags.join(', ')})` : ''].filter(Boolean).join('  ');
  const color = m.deletedAt ? 'disabledForeground' : m.status === 'proposed' ? 'list.warningForeground' : undefined;
  item.iconPath = new vscode.ThemeIcon(
    m.deletedAt ? 'trash' : (KIND_ICONS[m.kind] ?? 'note'),
    color ? new vscode.ThemeColor(color) : undefined,
  );
  item.tooltip = memoryTooltip(m);
  item.contextValue = memoryContext(m);
  item.command = { command: 'cairn.openMemory', title: 'Open Memory', arguments: [m.id] };
  return item;
}

export function memoryTooltip(m: Memory): vscode.MarkdownString {
  const md = new vscode.MarkdownString(undefined, true);
  md.appendMarkdown(`**${escapeMarkdown(m.namespace)} / ${escapeMarkdown(m.key)}**  $(${KIND_ICONS[m.kind] ?? 'note'}) ${m.kind}\n\n`);
  const value = m.value.length > 800 ? m.value.slice(0, 800) + '…' : m.value;
  md.appendCodeblock(value, 'text');
  if (m.summary) md.appendMarkdown(`\n**Summary:** ${escapeMarkdown(m.summary)}\n`);
  const rows: [string, string][] = [
    ['Source', m.source],
    ['Version', String(m.version)],
    ['Status', m.deletedAt ? `deleted ${m.deletedAt}${m.deletedBy ? ` by ${m.deletedBy}` : ''}` : m.status],
    ['Created', m.createdAt],
    ['Updated', m.updatedAt],
  ];
  if (m.tags.length) rows.push(['Tags', m.tags.join(', ')]);
  if (m.anchors.length) rows.push(['Anchors', m.anchors.map(anchorLabel).join('; ')]);
  if (m.expiresAt) rows.push(['Expires', m.expiresAt]);
  if (m.git) rows.push(['Git', `${m.git.branch} @ ${m.git.commit.slice(0, 12)}`]);
  md.appendMarkdown('\n' + rows.map(([k, v]) => `- **${k}:** ${escapeMarkdown(v)}`).join('\n'));
  return md;
}

export function anchorLabel(a: Memory['anchors'][number]): string {
  const lines = a.startLine ? `:${a.startLine}${a.endLine && a.endLine !== a.startLine ? `-${a.endLine}` : ''}` : '';
  const state = a.stale
    ? ` [stale: ${a.staleReason ?? 'the code changed'}]`
    : a.relocated
      ? a.relocated.how === 'similar'
        ? ' [code changed since]'
        : ` [re-located from ${a.relocated.from}]`
      : '';
  return `${a.path}${lines}${a.symbol ? ` (${a.symbol})` : ''}${state}`;
}
