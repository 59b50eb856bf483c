/**
 * Memory hovers. The daemon answers `textDocument/hover` itself (any LSP editor gets the same text) with
 * markdown that carries command links (cairn.openMemory / editMemory / forgetMemory, args `[{ id }]`);
 * the language client marks exactly those commands trusted (client.ts). This middleware turns hovers off
 * when `cairn.hover.enabled` is false (without asking the daemon) and measures their latency.
 */
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import * as vscode from 'vscode';
import type { Ctx } from './ctx';

export interface HoverStats {
  count: number;
  totalMs: number;
  lastMs: number;
}

/** Commands hover markdown may run. */
export const HOVER_COMMANDS = ['cairn.openMemory', 'cairn.editMemory', 'cairn.forgetMemory', 'cairn.showHistory'];

/** Workspace-relative ('/'-separated) path of a file, or its absolute path outside every folder. */
export function anchorPathOf(uri: vscode.Uri): string {
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  if (folder) {
    const rel = path.relative(folder.uri.fsPath, uri.fsPath);
    if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) return rel.split(path.sep).join('/');
  }
  return uri.fsPath.split(path.sep).join('/');
}

export async function decorateHover(
  ctx: Ctx,
  document: vscode.TextDocument,
  _position: vscode.Position,
  _token: vscode.CancellationToken,
  next: () => Promise<vscode.Hover | null | undefined>,
): Promise<vscode.Hover | null | undefined> {
  if (!ctx.config.hoverEnabled || document.uri.scheme !== 'file') return undefined;
  const t0 = performance.now();
  const hover = await next();
  const ms = performance.now() - t0;
  ctx.hoverStats.count++;
  ctx.hoverStats.totalMs += ms;
  ctx.hoverStats.lastMs = ms;
  return hover ?? undefined;
}
