/**
 * Every command, as a table of factories `(ctx) => handler`. main.ts registers them.
 *
 * Conventions: a command that needs a memory accepts a tree node, a memory, or a memory id (hover links
 * pass ids) and otherwise asks with the memory picker; dismissing a prompt cancels quietly; every failure
 * is reported with a sentence naming what failed (never silently). Handlers return what they did, which
 * the extension-host tests check.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { namespaceProblem } from '../../daemon/src/protocol/namespace';
import { LINK_TYPES, type Anchor, type LinkType, type Memory, type MemoryKind } from '../../daemon/src/protocol/types';
import { LONG_TIMEOUT_MS } from './client';
import { exportAllPages, importInChunks } from './dashboard/chunks';
import type { Ctx } from './ctx';
import { keptFields, memoryUri, showView, STATUS_URI, viewUri } from './documents';
import { Cancelled, cairnErrorName, describeError } from './errors';
import { DEFAULT_KIND, EDIT_IN_EDITOR, kindItems, parseTags, stepTitle, VALUE_PROMPT_MORE } from './add-memory-steps';
import { anchorPathOf } from './hover';
import { fingerprint } from '../../daemon/src/text/anchor-locate';
import type { Node } from './memoryTree';
import { pickMemory, type PickOptions } from './search';
import { statusMenu } from './statusBar';

type Handler = (...args: any[]) => Promise<unknown>; // eslint-disable-line @typescript-eslint/no-explicit-any
type Factory = (ctx: Ctx) => Handler;

/** Thrown when the user dismissed a prompt: the command stops without an error message. */

function cancelIfUndefined<T>(v: T | undefined): T {
  if (v === undefined) throw new Cancelled();
  return v;
}

/** The memory a command acts on: from its argument (tree node, memory, id) or the picker. */
async function target(ctx: Ctx, arg: unknown, pick: PickOptions): Promise<Memory> {
  if (typeof arg === 'string') return ctx.client.request('get', { id: arg, includeDeleted: true });
  if (arg && typeof arg === 'object') {
    const node = arg as Partial<Node & { memory: Memory }>;
    if (node.kind === 'memory' && node.memory) return node.memory;
    const m = arg as Partial<Memory>;
    if (typeof m.id === 'string' && typeof m.namespace === 'string' && typeof m.version === 'number') return m as Memory;
    if (typeof m.id === 'string') return ctx.client.request('get', { id: m.id, includeDeleted: true });
  }
  return cancelIfUndefined(await pickMemory(ctx, pick));
}

const label = (m: Pick<Memory, 'namespace' | 'key'>) => `${m.namespace} / ${m.key}`;

async function addMemory(
  ctx: Ctx,
  a: { namespace?: string; key?: string; value?: string; kind?: MemoryKind; tags?: string[] } = {},
): Promise<Memory> {
  const namespace = (
    a.namespace ??
    cancelIfUndefined(
      await ctx.ui.inputBox({
        title: stepTitle('namespace'),
        value: ctx.defaultNamespace,
        prompt: 'Dotted namespace, e.g. project.web or user',
        validateInput: (v) => namespaceProblem(v.trim()),
      }),
    )
  ).trim();
  const problem = namespaceProblem(namespace);
  if (problem) throw new Error(`Invalid namespace "${namespace}": ${problem}.`);
  const key = (
    a.key ??
    cancelIfUndefined(
      await ctx.ui.inputBox({
        title: stepTitle('key'),
        prompt: 'A short unique key, e.g. db-choice',
        validateInput: (v) => (v.trim() ? null : 'The key cannot be empty'),
      }),
    )
  ).trim();
  if (!key) throw new Error('The key cannot be empty.');
  const value =
    a.value ??
    cancelIfUndefined(
      await ctx.ui.inputBox({
        title: stepTitle('value'),
        prompt: `What should Cairn remember? ${VALUE_PROMPT_MORE}`,
        validateInput: (v) => (v.trim() ? null : 'The value cannot be empty'),
      }),
    );
  if (!value.trim()) throw new Error('The value cannot be empty.');
  const kind =
    a.kind ??
    cancelIfUndefined(
      await ctx.ui.quickPick(kindItems(), { title: stepTitle('kind'), placeHolder: `Kind of memory (Enter: ${DEFAULT_KIND})` }),
    ).label;
  const tags = a.tags ?? parseTags(await ctx.ui.inputBox({ title: stepTitle('tags'), prompt: 'Comma-separated tags' }));
  try {
    const res = await ctx.client.request('upsert', {
      namespace,
      key,
      value,
      kind,
      tags,
      source: 'vscode',
      actor: 'vscode',
      ifVersion: 0,
      ...ctx.git.write(namespace),
    });
    // The input box holds one line: "Edit in Editor" continues in a full editor (saving it writes the memory).
    void ctx.ui.info(`Cairn remembered ${label(res.memory)}.`, EDIT_IN_EDITOR).then(async (a) => {
      if (a === EDIT_IN_EDITOR) await vscode.commands.executeCommand('cairn.editMemory', res.memory);
    });
    return res.memory;
  } catch (e) {
    if (cairnErrorName(e) === 'VersionConflict') {
      throw new Error(`A memory "${key}" already exists in ${namespace}. Use "Edit Memory" to change it.`);
    }
    throw e;
  }
}

/** The innermost document symbol containing `pos`, if the language has a symbol provider. */
async function symbolAt(doc: vscode.TextDocument, pos: vscode.Position): Promise<string | undefined> {
  const symbols = await Promise.race([
    vscode.commands.executeCommand<vscode.DocumentSymbol[] | undefined>('vscode.executeDocumentSymbolProvider', doc.uri).then(
      (s) => s,
      () => undefined,
    ),
    new Promise<undefined>((r) => setTimeout(() => r(undefined), 1500)),
  ]);
  let best: string | undefined;
  const walk = (list: vscode.DocumentSymbol[] | undefined) => {
    for (const s of list ?? []) {
      if (s.range?.contains(pos)) {
        best = s.name;
        walk(s.children);
      }
    }
  };
  walk(symbols);
  return best;
}

async function rememberSelection(ctx: Ctx, a: { key?: string; value?: string } = {}): Promise<Memory> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || editor.document.uri.scheme !== 'file') throw new Error('Open a file and select the code to remember first.');
  const doc = editor.document;
  const sel = editor.selection;
  const startLine = sel.start.line + 1;
  // A selection ending at column 0 of a line does not include that line.
  const endLine = Math.max(startLine, sel.end.character === 0 && sel.end.line > sel.start.line ? sel.end.line : sel.end.line + 1);
  const text = sel.isEmpty ? doc.lineAt(sel.start.line).text : doc.getText(sel);
  const symbol = await symbolAt(doc, sel.start);
  // The lines' fingerprint, from the editor's text as it is now: the daemon follows the code with it.
  const fp = fingerprint(doc.getText(), startLine, endLine);
  const anchor: Anchor = { path: anchorPathOf(doc.uri), startLine, endLine, ...(symbol ? { symbol } : {}), ...(fp ?? {}) };
  const suggested = `${symbol ?? path.basename(doc.uri.fsPath)}:${startLine}${endLine !== startLine ? `-${endLine}` : ''}`;
  const value =
    a.value ??
    cancelIfUndefined(
      await ctx.ui.inputBox({
        title: `Remember ${anchor.path}:${startLine}-${endLine}`,
        prompt: 'What should Cairn remember about this code?',
        value: text.trim().slice(0, 2000),
        validateInput: (v) => (v.trim() ? null : 'The memory cannot be empty'),
      }),
    );
  if (!value.trim()) throw new Error('The memory cannot be empty.');
  const key =
    a.key ??
    cancelIfUndefined(
      await ctx.ui.inputBox({ title: 'Key', value: suggested, validateInput: (v) => (v.trim() ? null : 'The key cannot be empty') }),
    );
  const res = await ctx.client.request('upsert', {
    namespace: ctx.defaultNamespace,
    key: key.trim(),
    value,
    kind: 'note',
    anchors: [anchor],
    source: 'vscode',
    actor: 'vscode',
    ...ctx.git.write(ctx.defaultNamespace),
  });
  void ctx.ui.info(`Cairn remembered ${label(res.memory)} (anchored to ${anchor.path}:${startLine}-${endLine}).`);
  return res.memory;
}

async function exportMemories(ctx: Ctx, a: { uri?: string | vscode.Uri } = {}): Promise<{ uri: string; records: number }> {
  const uri =
    typeof a.uri === 'string'
      ? vscode.Uri.file(a.uri)
      : (a.uri ??
        cancelIfUndefined(
          await ctx.ui.saveDialog({
            title: 'Export Cairn memories',
            defaultUri: vscode.Uri.file(path.join(os.homedir(), `cairn-export-${new Date().toISOString().slice(0, 10)}.jsonl`)),
            filters: { 'JSON Lines': ['jsonl'] },
          }),
        ));
  // Page by page (store/exportPage): the daemon never holds the whole export, and refuses a one-reply store/export past its limit.
  const res = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Exporting Cairn memories…' },
    async () => ({
      records: await exportAllPages((cursor) =>
        ctx.client.request('exportPage', cursor === undefined ? { includeHistory: true } : { cursor }, LONG_TIMEOUT_MS),
      ),
    }),
  );
  try {
    await vscode.workspace.fs.writeFile(uri, Buffer.from(res.records.map((r) => JSON.stringify(r)).join('\n') + '\n', 'utf8'));
  } catch (e) {
    throw new Error(`Cannot write ${uri.fsPath}: ${(e as Error).message}`);
  }
  void ctx.ui.info(`Exported ${res.records.length} records to ${uri.fsPath}.`);
  return { uri: uri.fsPath, records: res.records.length };
}

export function parseJsonl(text: string): unknown[] {
  const out: unknown[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].trim()) continue;
    try {
      out.push(JSON.parse(lines[i]));
    } catch (e) {
      throw new Error(`line ${i + 1} is not valid JSON (${(e as Error).message}).`);
    }
  }
  return out;
}

async function importMemories(ctx: Ctx, a: { uri?: string | vscode.Uri } = {}) {
  const uri =
    typeof a.uri === 'string'
      ? vscode.Uri.file(a.uri)
      : (a.uri ??
        cancelIfUndefined(
          await ctx.ui.openDialog({
            title: 'Import Cairn memories',
            canSelectMany: false,
            filters: { 'JSON Lines': ['jsonl'], 'All files': ['*'] },
          }),
        )[0]);
  if (!uri) throw new Cancelled();
  let text: string;
  try {
    text = Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
  } catch (e) {
    throw new Error(`Cannot read ${uri.fsPath}: ${(e as Error).message}`);
  }
  let records: unknown[];
  try {
    records = parseJsonl(text);
  } catch (e) {
    throw new Error(`${path.basename(uri.fsPath)} is not a Cairn export: ${(e as Error).message}`);
  }
  if (!records.length) throw new Error(`${path.basename(uri.fsPath)} is empty.`);
  const res = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Importing ${records.length} records from ${path.basename(uri.fsPath)}…` },
    async (progress) => {
      // In chunks of whole memories (each one store/import call and transaction), as the dashboard and the CLI import:
      // one message holding a large file would pass the daemon's message limit.
      return importInChunks(
        records,
        (chunk) => ctx.client.request('importRecords', { records: chunk, actor: 'vscode' }, LONG_TIMEOUT_MS),
        (done, total) => progress.report({ message: `part ${done} of ${total} written` }),
      );
    },
  );
  void ctx.ui.info(`Imported ${res.memories} memories, ${res.history} history entries and ${res.links} links (${res.skipped} skipped).`);
  return res;
}

async function forget(ctx: Ctx, m: Memory, reason: string): Promise<Memory> {
  const res = await ctx.client.request('forget', { id: m.id, actor: 'vscode', reason });
  return res.memory;
}

export const commands: Record<string, Factory> = {
  'cairn.addMemory': (ctx) => (a?: Parameters<typeof addMemory>[1]) => addMemory(ctx, a ?? {}),

  'cairn.rememberSelection': (ctx) => (a?: { key?: string; value?: string }) =>
    rememberSelection(ctx, a && typeof a === 'object' && !(a instanceof vscode.Uri) ? a : {}),

  'cairn.searchMemories': (ctx) => async (query?: string) => {
    const m = await pickMemory(ctx, {
      title: 'Search Memories',
      initialQuery: typeof query === 'string' ? query : '',
      include: { proposed: true },
    });
    if (m) await vscode.commands.executeCommand('cairn.openMemory', m.id);
    return m;
  },

  'cairn.forgetMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, { title: 'Forget which memory?', include: { proposed: true } });
    const ok = await ctx.ui.confirm(
      `Forget "${m.key}"?`,
      'Forget',
      `Cairn deletes ${label(m)} and refuses to store this value in ${m.namespace} again (agents cannot re-learn it).`,
    );
    if (!ok) throw new Cancelled();
    const res = await forget(ctx, m, 'forgotten from VS Code');
    void ctx.ui.info(`Cairn forgot ${label(m)}.`);
    return res;
  },

  'cairn.showHistory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, {
      title: 'Show the history of which memory?',
      include: { deleted: true, proposed: true, superseded: true },
    });
    await ctx.client.request('history', { id: m.id, limit: 1 }); // fail here, with a message, rather than in the document
    return showView(viewUri('history', m.id, `${m.key} (history)`));
  },

  'cairn.showStatus': (ctx) => async () => {
    const status = await ctx.client.request('status', {});
    ctx.views.changed();
    await showView(STATUS_URI);
    return status;
  },

  'cairn.restartDaemon': (ctx) => async () => {
    await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: 'Restarting the Cairn daemon…' }, () =>
      ctx.client.restartDaemon(),
    );
    const s = ctx.client.state;
    void ctx.ui.info(`Cairn daemon restarted${s.kind === 'connected' && s.pid ? ` (pid ${s.pid})` : ''}.`);
    return s;
  },

  'cairn.exportMemories': (ctx) => (a?: { uri?: string }) => exportMemories(ctx, a && !(a instanceof vscode.Uri) ? a : {}),
  'cairn.importMemories': (ctx) => (a?: { uri?: string }) => importMemories(ctx, a && !(a instanceof vscode.Uri) ? a : {}),

  'cairn.rebuildIndex': (ctx) => async (a?: { model?: string }) => {
    const res = await ctx.client.request('indexRebuild', a?.model ? { model: a.model } : {}, LONG_TIMEOUT_MS);
    void ctx.ui.info(
      `Cairn is re-embedding ${res.queued} memories${res.model ? ` with ${res.model}` : ''}; progress shows in the status bar.`,
    );
    return res;
  },

  'cairn.openMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, { title: 'Open which memory?', include: { proposed: true } });
    return showView(viewUri('memory', m.id, m.key));
  },

  'cairn.editMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, { title: 'Edit which memory?', include: { proposed: true } });
    if (m.deletedAt) throw new Error(`${label(m)} is deleted; restore it before editing.`);
    const doc = await vscode.workspace.openTextDocument(memoryUri(m));
    await vscode.window.showTextDocument(doc, { preview: false });
    return doc;
  },

  'cairn.deleteMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, { title: 'Delete which memory?', include: { proposed: true } });
    const res = await ctx.client.request('delete', { id: m.id, actor: 'vscode', reason: 'deleted from VS Code' });
    void ctx.ui.info(`Deleted ${label(m)}.`, 'Undo').then(async (a) => {
      if (a === 'Undo') await vscode.commands.executeCommand('cairn.restoreMemory', m.id);
    });
    return res.memory;
  },

  'cairn.restoreMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, { title: 'Restore which deleted memory?', include: { deleted: true }, accept: (x) => !!x.deletedAt });
    const res = await ctx.client.request('restore', { id: m.id, actor: 'vscode' });
    void ctx.ui.info(`Restored ${label(m)}.`);
    return res.memory;
  },

  'cairn.copyMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, { title: 'Copy which memory?', include: { proposed: true } });
    await vscode.env.clipboard.writeText(m.value);
    void ctx.ui.info(`Copied the value of ${label(m)}.`);
    return m.value;
  },

  'cairn.linkMemory': (ctx) => async (arg?: unknown, toArg?: unknown, typeArg?: LinkType) => {
    const from = await target(ctx, arg, { title: 'Link which memory?' });
    const to = await target(ctx, toArg, { title: `Link ${from.key} to which memory?`, accept: (x) => x.id !== from.id });
    const type =
      typeArg ??
      (cancelIfUndefined(
        await ctx.ui.quickPick(
          LINK_TYPES.map((t) => ({ label: t })),
          { title: `${from.key} … ${to.key}: link type` },
        ),
      ).label as LinkType);
    const res = await ctx.client.request('link', { from: from.id, to: to.id, type, actor: 'vscode' });
    void ctx.ui.info(`Linked ${from.key} —${type}→ ${to.key}.`);
    return res.link;
  },

  'cairn.approveMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, {
      title: 'Approve which proposed memory?',
      include: { proposed: true },
      filter: { field: 'status', op: 'eq', value: 'proposed' },
    });
    if (m.status !== 'proposed') throw new Error(`${label(m)} is not waiting for review (status: ${m.status}).`);
    const res = await ctx.client.request('upsert', {
      namespace: m.namespace,
      key: m.key,
      value: m.value,
      ...keptFields(m),
      status: 'active',
      ifVersion: m.version,
      actor: 'vscode',
      reason: 'approved in review',
      ...ctx.git.write(m.namespace),
    });
    void ctx.ui.info(`Approved ${label(m)}.`);
    return res.memory;
  },

  'cairn.rejectMemory': (ctx) => async (arg?: unknown) => {
    const m = await target(ctx, arg, {
      title: 'Reject which proposed memory?',
      include: { proposed: true },
      filter: { field: 'status', op: 'eq', value: 'proposed' },
    });
    if (m.status !== 'proposed') throw new Error(`${label(m)} is not waiting for review (status: ${m.status}); use Forget Memory instead.`);
    const res = await forget(ctx, m, 'rejected in review');
    void ctx.ui.info(`Rejected ${label(m)}; agents will not propose this value again.`);
    return res;
  },

  'cairn.filterMemories': (ctx) => async (text?: string) => {
    const v =
      typeof text === 'string'
        ? text
        : cancelIfUndefined(
            await ctx.ui.inputBox({
              title: 'Filter memories',
              prompt: 'Search text (empty clears the filter)',
              value: ctx.tree.filterText,
            }),
          );
    await ctx.tree.setFilter(v);
    return v;
  },
  'cairn.clearFilter': (ctx) => async () => ctx.tree.setFilter(''),
  'cairn.refresh': (ctx) => async () => ctx.tree.refresh(),
  'cairn.showDeleted': (ctx) => async () => ctx.tree.setShowDeleted(true),
  'cairn.hideDeleted': (ctx) => async () => ctx.tree.setShowDeleted(false),
  'cairn.statusMenu': (ctx) => () => statusMenu(ctx),
  'cairn.showLog': (ctx) => async () => ctx.output.show(true),
};

/** Human titles for failure messages, from package.json's command titles. */
function titleOf(ctx: Ctx, id: string): string {
  const cmds = (ctx.extension.extension.packageJSON?.contributes?.commands ?? []) as { command: string; title: string }[];
  return cmds.find((c) => c.command === id)?.title ?? id;
}

/** Register a table of commands (this file's, or another feature's such as branches.ts) with the same error reporting. */
export function registerCommands(ctx: Ctx, table: Record<string, Factory> = commands): void {
  for (const [id, factory] of Object.entries(table)) {
    const handler = factory(ctx);
    ctx.push(
      vscode.commands.registerCommand(id, async (...args: unknown[]) => {
        try {
          return await handler(...args);
        } catch (e) {
          if (e instanceof Cancelled) return undefined;
          const message = describeError(titleOf(ctx, id), e);
          ctx.output.error(message);
          void ctx.ui.error(`Cairn: ${message}`);
          return undefined;
        }
      }),
    );
  }
}
