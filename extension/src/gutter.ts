/**
 * Gutter marks on the lines memories are anchored to (`cairn.hover.gutter`, default on), in the visible editors of
 * files: only anchors that are not stale and whose lines still hold the anchored code in the editor's text (the check
 * the daemon's hovers make, text/anchor-locate.ts), so a mark never sits on lines the memory is not about. Refreshed
 * when editors change, a document is saved or edited, memories change, or the setting does.
 */
import * as vscode from 'vscode';
import type { Anchor } from '../../daemon/src/protocol/types';
import { checkAt, FileText } from '../../daemon/src/text/anchor-locate';
import type { Ctx } from './ctx';
import { anchorPathOf } from './hover';

/** The lines (0-based, inclusive) of a document's anchors that still match, from the memories anchored to it. */
export function anchoredRanges(anchors: Anchor[], path: string, text: string): [number, number][] {
  const file = new FileText(text);
  const out: [number, number][] = [];
  for (const a of anchors) {
    if (a.path !== path || a.stale || a.startLine === undefined) continue;
    if (checkAt(a, file) === 'mismatch') continue;
    out.push([a.startLine - 1, (a.endLine ?? a.startLine) - 1]);
  }
  return out;
}

export function registerGutter(c: Ctx): void {
  const deco = vscode.window.createTextEditorDecorationType({
    gutterIconPath: vscode.Uri.joinPath(c.extension.extensionUri, 'media', 'anchor-gutter.svg'),
    gutterIconSize: 'contain',
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.infoForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Left,
  });
  let timer: NodeJS.Timeout | undefined;
  const later = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => void refresh(), 300);
  };
  const refresh = async () => {
    const on = c.config.get('cairn.hover.gutter');
    for (const editor of vscode.window.visibleTextEditors) {
      const doc = editor.document;
      if (!on || doc.uri.scheme !== 'file') {
        editor.setDecorations(deco, []);
        continue;
      }
      const path = anchorPathOf(doc.uri);
      const ns = c.project?.namespace;
      try {
        const r = await c.client.request('list', {
          ...(ns ? { scope: { root: ns, includeUser: c.config.includeUser } } : {}),
          filter: { field: 'anchors.path', op: 'eq', value: path },
          limit: 200,
          ...c.git.read(),
        });
        const ranges = anchoredRanges(
          r.items.flatMap((m) => m.anchors),
          path,
          doc.getText(),
        );
        editor.setDecorations(
          deco,
          ranges.map(([s, e]) => new vscode.Range(s, 0, Math.min(e, doc.lineCount - 1), 0)),
        );
      } catch {
        editor.setDecorations(deco, []); // not connected: no marks rather than stale ones
      }
    }
  };
  c.push(
    deco,
    { dispose: () => timer && clearTimeout(timer) },
    vscode.window.onDidChangeVisibleTextEditors(later),
    vscode.workspace.onDidSaveTextDocument(later),
    vscode.workspace.onDidChangeTextDocument((e) => {
      if (vscode.window.visibleTextEditors.some((v) => v.document === e.document)) later();
    }),
    c.client.onDidChangeMemories(later),
    c.git.onDidChange(later), // another branch checked out: its memories' anchors
    c.client.onDidConnect(later),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('cairn.hover.gutter') || e.affectsConfiguration('cairn.scope')) later();
    }),
  );
  later();
}
