/**
 * The memory quick pick: live results from the daemon as you type (hybrid search, or full-text when the
 * daemon reports it fell back), newest-first recent memories for an empty query. Used by "Search
 * Memories" and by every command that needs a memory when run from the palette.
 */
import * as vscode from 'vscode';
import type { Filter, Include, Memory, SearchMode } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';
import { describeError } from './errors';
import { KIND_ICONS } from './memoryTree';

export interface PickOptions {
  title: string;
  placeholder?: string;
  initialQuery?: string;
  include?: Include;
  filter?: Filter;
  /** Keep only hits that pass this test (e.g. deleted ones for Restore). */
  accept?: (m: Memory) => boolean;
}

interface MemoryItem extends vscode.QuickPickItem {
  memory?: Memory;
}

const scopeButton = (projectOnly: boolean): vscode.QuickInputButton => ({
  iconPath: new vscode.ThemeIcon(projectOnly ? 'folder-active' : 'globe'),
  tooltip: projectOnly
    ? 'Searching this project and user memories: click to search all namespaces'
    : 'Searching all namespaces: click to search only this project and user memories',
});
const modeButton = (mode: SearchMode): vscode.QuickInputButton => ({
  iconPath: new vscode.ThemeIcon(mode === 'hybrid' ? 'sparkle' : 'whole-word'),
  tooltip: mode === 'hybrid' ? 'Hybrid search (full-text + vectors): click for full-text only' : 'Full-text search: click for hybrid',
});

export function toItem(m: Memory, snippet?: string): MemoryItem {
  return {
    label: `$(${m.deletedAt ? 'trash' : (KIND_ICONS[m.kind] ?? 'note')}) ${m.key}`,
    description: [m.namespace, m.tags.map((t) => `#${t}`).join(' '), m.status !== 'active' ? m.status : '', m.deletedAt ? 'deleted' : '']
      .filter(Boolean)
      .join('  '),
    detail: (snippet ?? m.value).replace(/\s+/g, ' ').slice(0, 200),
    alwaysShow: true, // results are ranked by the daemon: keep VS Code from re-filtering them by label
    memory: m,
  };
}

/** Show the picker; resolves with the chosen memory, or undefined when dismissed. */
export function pickMemory(ctx: Ctx, o: PickOptions): Promise<Memory | undefined> {
  const qp = vscode.window.createQuickPick<MemoryItem>();
  qp.title = o.title;
  qp.placeholder = o.placeholder ?? 'Type to search memories';
  qp.matchOnDescription = false;
  qp.matchOnDetail = false;
  let projectOnly = false;
  let mode: SearchMode = 'hybrid';
  const hasProject = !!ctx.project;
  const buttons = () => [...(hasProject ? [scopeButton(projectOnly)] : []), modeButton(mode)];
  qp.buttons = buttons();
  let seq = 0;
  let timer: NodeJS.Timeout | undefined;
  let started: string | undefined; // query of the newest run
  let shown: string | undefined; // query whose results are on screen
  let pendingAccept = false; // Enter pressed before the results of the typed query arrived
  let chosen: Memory | undefined;

  const accept = (top = false) => {
    // Deferred (top): the selection VS Code reported belongs to the previous list; take the new top hit.
    const item = top ? qp.items[0] : (qp.selectedItems[0] ?? qp.activeItems[0] ?? qp.items[0]);
    if (item?.memory) {
      chosen = item.memory;
      qp.hide();
    }
  };

  const run = async (query: string) => {
    const mine = ++seq;
    started = query;
    qp.busy = true;
    try {
      const scope = projectOnly && ctx.project ? { root: ctx.project.namespace, includeUser: ctx.config.includeUser } : undefined;
      let items: MemoryItem[];
      let note = '';
      if (!query.trim()) {
        const res = await ctx.client.request('list', { scope, filter: o.filter, include: o.include, limit: 50, ...ctx.git.read() });
        items = res.items.filter((m) => !o.accept || o.accept(m)).map((m) => toItem(m));
        note = 'recent';
      } else {
        const res = await ctx.client.request('search', {
          query,
          scope,
          filter: o.filter,
          include: o.include,
          limit: 50,
          mode,
          ...ctx.git.read(),
        });
        items = res.hits.filter((h) => !o.accept || o.accept(h.memory)).map((h) => toItem(h.memory, h.snippet));
        note = res.degraded ? `full-text: ${res.degraded}` : res.mode;
      }
      ctx.output.debug(`search "${query}": ${items.length} result(s) (${note})`);
      if (mine !== seq) return; // a newer query is in flight
      qp.items = items.length ? items : [{ label: query ? `No memories match "${query}"` : 'No memories yet', alwaysShow: true }];
      qp.title = `${o.title} (${note})`;
      shown = query;
      ctx.events.fire({ type: 'search', data: { query, count: items.length } });
    } catch (e) {
      ctx.output.warn(describeError('Search', e));
      if (mine !== seq) return;
      qp.items = [{ label: '$(error) Search failed', detail: describeError('Search', e), alwaysShow: true }];
      shown = query;
      ctx.events.fire({ type: 'search', data: { query, error: describeError('Search', e) } });
    } finally {
      if (mine === seq) {
        qp.busy = false;
        if (pendingAccept && shown === qp.value) {
          pendingAccept = false;
          accept(true);
        }
      }
    }
  };

  return new Promise<Memory | undefined>((resolve) => {
    qp.onDidChangeValue((v) => {
      clearTimeout(timer);
      if (v === started) return; // the echo of a value this picker set itself
      qp.busy = true;
      timer = setTimeout(() => void run(v), 120);
    });
    qp.onDidTriggerButton((b) => {
      if (b.tooltip?.startsWith('Searching')) projectOnly = !projectOnly;
      else mode = mode === 'hybrid' ? 'fts' : 'hybrid';
      qp.buttons = buttons();
      void run(qp.value);
    });
    qp.onDidAccept(() => {
      // Enter right after typing means the top result of what was typed, not of the previous query.
      if (qp.busy || shown !== qp.value) pendingAccept = true;
      else accept();
    });
    qp.onDidHide(() => {
      clearTimeout(timer);
      qp.dispose();
      resolve(chosen);
    });
    qp.value = o.initialQuery ?? '';
    qp.show();
    void run(qp.value);
  });
}
