/**
 * The extension's side of the dashboard protocol (daemon/src/protocol/webview.ts): validates each message from
 * the webview, forwards allowed daemon requests through the window's daemon client, answers `host/*` requests
 * itself, and replies exactly once per request id with a result or a typed error.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { CairnError, ErrorCodes, wireErrorName, type CairnErrorData } from '../../../daemon/src/protocol/errors';
import { Requests } from '../../../daemon/src/protocol/methods';
import {
  LINK_TYPES,
  MEMORY_KINDS,
  MEMORY_STATUSES,
  SEARCH_MODES,
  type Anchor,
  type ImportResult,
} from '../../../daemon/src/protocol/types';
import {
  HostRequests,
  isWebviewMethod,
  WebviewRequestMessage,
  type HostMethod,
  type ToWebview,
  type WebviewError,
  type WebviewInit,
  type WebviewShow,
} from '../../../daemon/src/protocol/webview';
import { LONG_TIMEOUT_MS } from '../client';
import { parseJsonl } from '../commands';
import type { Ctx } from '../ctx';
import { isRpcError } from '../errors';
import { exportAllPages, importChunks } from './chunks';
import { proposalNamespace, withGitContext } from './git-params';

/** A typed error for the webview from anything a request threw (not connected and timeouts are CairnErrors too). */
export function toWebviewError(e: unknown): WebviewError {
  if (e instanceof CairnError) return { code: e.code, name: e.data.name, message: e.message, data: e.data };
  if (isRpcError(e)) {
    const name = wireErrorName(e) ?? 'Internal';
    const data = (e.data && typeof e.data === 'object' ? e.data : { name }) as Partial<CairnErrorData>;
    return { code: ErrorCodes[name], name, message: e.message, data };
  }
  return { code: ErrorCodes.Internal, name: 'Internal', message: e instanceof Error ? e.message : String(e), data: { name: 'Internal' } };
}

export class DashboardHost {
  private readonly imports = new Map<string, { records: unknown[]; memories: number }>();
  private nextToken = 1;
  /** The view a command opened the panel on: handed to the page with its init (its first request), then forgotten. */
  pendingShow: WebviewShow | undefined;

  constructor(
    private readonly ctx: Ctx,
    private readonly post: (m: ToWebview) => void,
  ) {}

  init(): WebviewInit {
    const show = this.pendingShow;
    this.pendingShow = undefined;
    return {
      ...(show ? { show } : {}),
      projectNamespace: this.ctx.project?.namespace ?? null,
      kinds: [...MEMORY_KINDS],
      statuses: [...MEMORY_STATUSES],
      linkTypes: [...LINK_TYPES],
      searchModes: [...SEARCH_MODES],
      connected: this.ctx.client.state.kind === 'connected',
    };
  }

  /** Handle one message from the webview; never throws. */
  async handle(raw: unknown): Promise<void> {
    const parsed = WebviewRequestMessage.safeParse(raw);
    if (!parsed.success) {
      const id = (raw as { id?: unknown } | null)?.id;
      this.ctx.output.warn(`dashboard: ignored a malformed message (${parsed.error.issues[0]?.message ?? 'invalid'})`);
      if (typeof id === 'number')
        this.post({
          type: 'error',
          id,
          error: toWebviewError(new CairnError('InvalidParams', 'malformed dashboard message', { field: 'message' })),
        });
      return;
    }
    const { id, method, params } = parsed.data;
    try {
      const result = await this.run(id, method, params);
      this.post({ type: 'response', id, result });
    } catch (e) {
      this.post({ type: 'error', id, error: toWebviewError(e) });
    }
  }

  private async run(id: number, method: string, params: unknown): Promise<unknown> {
    if (!isWebviewMethod(method)) throw new CairnError('NotFound', `the dashboard cannot call ${method}`, { field: 'method' });
    if (!Object.prototype.hasOwnProperty.call(HostRequests, method)) {
      const name = method as keyof typeof Requests;
      // Git-aware memory: reads see what the window's checkout sees, writes record where they were made.
      const lands =
        name === 'episodesPropose' ? await proposalNamespace(params, (q) => this.ctx.client.request('eventsExpand', q)) : undefined;
      const withGit = withGitContext(name, params, this.ctx.git, lands);
      return this.ctx.client.request(name, withGit as never, name === 'overview' ? LONG_TIMEOUT_MS : undefined);
    }
    const def = HostRequests[method as HostMethod];
    const p = def.params.safeParse(params ?? {});
    if (!p.success) {
      const issue = p.error.issues[0];
      const field = issue.path.map(String).join('.');
      throw new CairnError('InvalidParams', `${method}: ${field ? field + ': ' : ''}${issue.message}`, { field });
    }
    switch (method as HostMethod) {
      case 'host/init':
        return this.init();
      case 'host/confirm': {
        const q = p.data as { message: string; detail?: string; confirm: string };
        return { confirmed: await this.ctx.ui.confirm(q.message, q.confirm, q.detail) };
      }
      case 'host/openAnchor':
        return this.openAnchor((p.data as { anchor: Anchor }).anchor);
      case 'host/export':
        return this.exportScope(p.data as { scope?: never });
      case 'host/importPreview':
        return this.importPreview(p.data as { name: string; text: string });
      case 'host/importPick':
        return this.importPick();
      case 'host/importApply':
        return this.importApply(id, (p.data as { token: string }).token);
    }
  }

  private async openAnchor(anchor: Anchor): Promise<{ opened: boolean }> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const uri = path.isAbsolute(anchor.path) ? vscode.Uri.file(anchor.path) : folder ? vscode.Uri.joinPath(folder, anchor.path) : undefined;
    if (!uri) throw new CairnError('NotFound', `no workspace folder to resolve ${anchor.path}`, { field: 'anchor.path' });
    let doc: vscode.TextDocument;
    try {
      doc = await vscode.workspace.openTextDocument(uri);
    } catch {
      throw new CairnError('NotFound', `cannot open ${anchor.path}`, { field: 'anchor.path' });
    }
    const start = Math.max(0, (anchor.startLine ?? 1) - 1);
    const end = Math.max(start, (anchor.endLine ?? anchor.startLine ?? 1) - 1);
    const range = new vscode.Range(start, 0, end, doc.lineAt(Math.min(end, doc.lineCount - 1)).text.length);
    // Beside the dashboard: the code never replaces the panel (and with it the user's view of an unsaved edit).
    await vscode.window.showTextDocument(doc, { selection: range, viewColumn: vscode.ViewColumn.Beside, preview: true });
    return { opened: true };
  }

  private async exportScope(p: { scope?: never }): Promise<{ file: string | null; records: number }> {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const uri = await this.ctx.ui.saveDialog({
      title: 'Export Cairn memories (JSON Lines)',
      ...(folder ? { defaultUri: vscode.Uri.joinPath(folder, `cairn-export-${new Date().toISOString().slice(0, 10)}.jsonl`) } : {}),
      filters: { 'JSON Lines': ['jsonl'] },
    });
    if (!uri) return { file: null, records: 0 };
    const res = {
      records: await exportAllPages((cursor) =>
        this.ctx.client.request(
          'exportPage',
          cursor === undefined ? { ...(p.scope ? { scope: p.scope } : {}), includeHistory: true } : { cursor },
          LONG_TIMEOUT_MS,
        ),
      ),
    };
    await vscode.workspace.fs.writeFile(uri, Buffer.from(res.records.map((r) => JSON.stringify(r)).join('\n') + '\n', 'utf8'));
    return { file: uri.fsPath, records: res.records.length };
  }

  private async importPick() {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    const [uri] =
      (await this.ctx.ui.openDialog({
        title: 'Import Cairn memories (JSON Lines)',
        canSelectMany: false,
        openLabel: 'Preview import',
        filters: { 'JSON Lines': ['jsonl', 'json'], 'All files': ['*'] },
        ...(folder ? { defaultUri: folder } : {}),
      })) ?? [];
    if (!uri) return null;
    let text: string;
    try {
      text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
    } catch (e) {
      throw new CairnError('NotFound', `cannot read ${uri.fsPath}: ${(e as Error).message}`, { field: 'file' });
    }
    return this.importPreview({ name: path.basename(uri.fsPath), text });
  }

  private async importPreview(p: { name: string; text: string }) {
    let records: unknown[];
    try {
      records = parseJsonl(p.text);
    } catch (e) {
      throw new CairnError('InvalidParams', `${p.name}: ${(e as Error).message}`, { field: 'file' });
    }
    if (!records.length) throw new CairnError('InvalidParams', `${p.name} holds no records`, { field: 'file' });
    const preview = await this.ctx.client.request('importPreview', { records }, LONG_TIMEOUT_MS);
    const token = `import-${this.nextToken++}`;
    const memories = Object.values(preview.counts).reduce((a, b) => a + b, 0);
    this.imports.clear(); // one pending import per panel
    this.imports.set(token, { records, memories });
    return { token, name: p.name, lines: records.length, preview };
  }

  private async importApply(id: number, token: string) {
    const pending = this.imports.get(token);
    if (!pending) throw new CairnError('NotFound', 'that import preview is gone; preview the file again', { field: 'token' });
    this.imports.delete(token);
    const total: ImportResult = { memories: 0, history: 0, links: 0, skipped: 0, position: 0, episodes: 0, events: 0 };
    const chunks = importChunks(pending.records);
    let done = 0;
    this.post({ type: 'progress', id, done, total: pending.memories });
    for (const chunk of chunks) {
      const r = await this.ctx.client.request('importRecords', { records: chunk, actor: 'dashboard-import' }, LONG_TIMEOUT_MS);
      total.memories += r.memories;
      total.history += r.history;
      total.links += r.links;
      total.skipped += r.skipped;
      total.episodes! += r.episodes ?? 0;
      total.events! += r.events ?? 0;
      total.position = Math.max(total.position, r.position);
      done += chunk.filter((c) => (c as { type?: string })?.type === 'memory').length;
      this.post({ type: 'progress', id, done, total: pending.memories });
    }
    return total;
  }
}
