/**
 * Memory hovers. The daemon answers `textDocument/hover` itself (any LSP editor gets the same text); in
 * VS Code this middleware adds command links (open, edit, forget) for each memory anchored under the
 * cursor, and turns hovers off when `cairn.hover.enabled` is false. The anchor lookup runs in parallel
 * with the hover request, so the links cost no extra round trip.
 */
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import type { Memory } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';

export interface HoverStats {
  count: number;
  totalMs: number;
  lastMs: number;
}

const LINK_COMMANDS = ['cairn.openMemory', 'cairn.editMemory', 'cairn.forgetMemory', 'cairn.showHistory'];

/** Workspace-relative ('/'-separated) path of a file, or its absolute path outside every folder. */
export function anchorPathOf(uri: vscode.Uri): string {
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  if (folder) {
    const rel = path.relative(folder.uri.fsPath, uri.fsPath);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  return uri.fsPath.split(path.sep).join('/');
}

/** Live memories with an anchor on `line` (1-based) of the file. */
export async function memoriesAnchoredAt(ctx: Ctx, uri: vscode.Uri, line: number): Promise<Memory[]> {
  const rel = anchorPathOf(uri);
  const abs = uri.fsPath.split(path.sep).join('/');
  const paths = [...new Set([rel, abs])];
  const res = await ctx.client.request(
    'list',
    {
      filter: paths.length === 1 ? { field: 'anchors.path', op: 'eq', value: paths[0] } : { or: paths.map((p) => ({ field: 'anchors.path' as const, op: 'eq' as const, value: p })) },
      limit: 100,
    },
    5000,
  );
  return res.items.filter((m) =>
    m.anchors.some((a) => paths.includes(a.path) && (a.startLine === undefined || (line >= a.startLine && line <= (a.endLine ?? a.startLine)))),
  );
}

export function commandLink(label: string, command: string, ...args: unknown[]): string {
  return `[${label}](command:${command}?${encodeURIComponent(JSON.stringify(args))} "${label}")`;
}

export async function decorateHover(
  ctx: Ctx,
  document: vscode.TextDocument,
  position: vscode.Position,
  token: vscode.CancellationToken,
  next: () => Promise<vscode.Hover | null | undefined>,
): Promise<vscode.Hover | null | undefined> {
  if (!ctx.config.hoverEnabled || document.uri.scheme !== 'file') return undefined;
  const t0 = performance.now();
  const anchored = memoriesAnchoredAt(ctx, document.uri, position.line + 1).catch(() => [] as Memory[]);
  const hover = await next();
  const memories = hover ? await anchored : [];
  const ms = performance.now() - t0;
  ctx.hoverStats.count++;
  ctx.hoverStats.totalMs += ms;
  ctx.hoverStats.lastMs = ms;
  if (!hover || token.isCancellationRequested) return hover ?? undefined;
  if (!memories.length) return hover;
  const md = new vscode.MarkdownString(undefined, true);
  md.isTrusted = { enabledCommands: LINK_COMMANDS };
  for (const c of hover.contents) {
    if (c instanceof vscode.MarkdownString) md.appendMarkdown(c.value);
    else if (typeof c === 'string') md.appendMarkdown(c);
    else md.appendCodeblock(c.value, c.language);
    md.appendMarkdown('\n\n');
  }
  md.appendMarkdown('---\n\n');
  for (const m of memories) {
    md.appendMarkdown(
      `$(bookmark) \`${m.key}\` — ${commandLink('Open', 'cairn.openMemory', m.id)} · ${commandLink('Edit', 'cairn.editMemory', m.id)} · ${commandLink('History', 'cairn.showHistory', m.id)} · ${commandLink('Forget', 'cairn.forgetMemory', m.id)}\n\n`,
    );
  }
  return new vscode.Hover(md, hover.range);
}
