/**
 * Editor documents backed by the daemon.
 *
 * - `cairn-memory:/<namespace>/<key>`: a memory's value as an editable file. Saving writes it with
 *   `ifVersion` = the version that was read, so a concurrent change (CLI, agent, another window) fails the
 *   save with a VersionConflict message instead of being overwritten silently. "Revert" reloads the latest.
 * - `cairn-view:/memory/<id>/<key>`, `/history/<id>/<key> (history)`, `/status/...`: read-only markdown views
 *   (memory details, history with diffs, daemon status), refreshed when the store changes.
 */
import * as vscode from 'vscode';
import { describeFree } from '../../daemon/src/protocol/store-space';
import { HISTORY_OPS } from '../../daemon/src/protocol/types';
import type { DidChangeParams, HistoryEntry, Memory, StoreStatusResult } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';
import { fieldChanges, lineDiff } from './diff';
import { cairnErrorName, describeError, errorData } from './errors';
import { anchorLabel } from './memoryTree';

export const MEMORY_SCHEME = 'cairn-memory';
export const VIEW_SCHEME = 'cairn-view';

export function memoryUri(m: Pick<Memory, 'namespace' | 'key'>): vscode.Uri {
  return vscode.Uri.from({ scheme: MEMORY_SCHEME, path: `/${m.namespace}/${encodeURIComponent(m.key)}` });
}

export function parseMemoryUri(uri: vscode.Uri): { namespace: string; key: string } {
  const m = /^\/([^/]+)\/([^/]+)$/.exec(uri.path);
  if (!m) throw vscode.FileSystemError.FileNotFound(uri);
  return { namespace: m[1], key: decodeURIComponent(m[2]) };
}

/** The fields an edit keeps from the stored memory, so saving the value never resets kind, tags or anchors. */
export function keptFields(m: Memory) {
  return {
    kind: m.kind,
    tags: m.tags,
    importance: m.importance,
    confidence: m.confidence,
    anchors: m.anchors,
    properties: m.properties,
  };
}

/** Whether the editor URI `uri` shows the memory `namespace`/`key` (an unparsable URI counts as a match). */
function names(uri: string, namespace: string, key: string): boolean {
  try {
    const opened = parseMemoryUri(vscode.Uri.parse(uri));
    return opened.namespace === namespace && opened.key === key;
  } catch {
    return true;
  }
}

export class MemoryFileSystem implements vscode.FileSystemProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.emitter.event;
  /** Version each open document was read at: the `ifVersion` of its next save. */
  private readonly versions = new Map<string, { version: number; memory: Memory; stale?: boolean }>();
  /** The last save that hit a version conflict (for the user's next step and for tests). */
  lastConflict: { uri: string; yourVersion: number; currentVersion: unknown } | undefined;

  constructor(private readonly ctx: Ctx) {}

  /**
   * Memories changed somewhere: forget what clean (or closed) editors read, so their next stat shows the
   * new version and VS Code reloads them. A dirty editor keeps its version: saving it then fails with a
   * VersionConflict instead of overwriting the other writer. A change that names its memory touches only that
   * memory's editor: reloading every clean editor on every write elsewhere would race the user's first keystroke
   * (VS Code's reload can land after typing started) for no reason.
   */
  changed(change?: Pick<DidChangeParams, 'namespace' | 'key'>): void {
    const events: vscode.FileChangeEvent[] = [];
    for (const [key, seen] of [...this.versions.entries()]) {
      if (change?.namespace && change.key && !names(key, change.namespace, change.key)) continue;
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === key);
      if (!doc) {
        this.versions.delete(key);
        continue;
      }
      if (doc.isDirty) continue;
      // Kept, marked stale: a clean editor's next stat reads the store (so VS Code reloads it), but if the
      // user starts typing before that reload lands, the base of their edit is still the version they saw.
      seen.stale = true;
      events.push({ type: vscode.FileChangeType.Changed, uri: doc.uri });
    }
    if (events.length) this.emitter.fire(events);
  }

  private isDirty(uri: vscode.Uri): boolean {
    return vscode.workspace.textDocuments.some((d) => d.uri.toString() === uri.toString() && d.isDirty);
  }

  private async load(uri: vscode.Uri): Promise<Memory> {
    const { namespace, key } = parseMemoryUri(uri);
    try {
      return await this.ctx.client.request('get', { namespace, key });
    } catch (e) {
      if (cairnErrorName(e) === 'NotFound') throw vscode.FileSystemError.FileNotFound(uri);
      throw vscode.FileSystemError.Unavailable(describeError('Reading memory', e));
    }
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    // For a document this window has read, describe the version it read: VS Code's own "modified since"
    // check then stays out of the way and the daemon's ifVersion check decides conflicts, with one
    // consistent message. changed() marks the entry of clean editors stale so they reload.
    const seen = this.versions.get(uri.toString());
    const m = seen && (!seen.stale || this.isDirty(uri)) ? seen.memory : await this.load(uri);
    return {
      type: vscode.FileType.File,
      ctime: Date.parse(m.createdAt) || 0,
      mtime: (Date.parse(m.updatedAt) || 0) + m.version, // version: two writes in one millisecond still differ
      size: Buffer.byteLength(m.value),
    };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const m = await this.load(uri);
    // A dirty editor's text was edited against the version it read first: a later read (VS Code may read a
    // file again after a change event, even when it keeps the dirty text) must not move that base forward,
    // or saving would overwrite the other writer's change instead of failing with a conflict.
    if (!(this.versions.has(uri.toString()) && this.isDirty(uri))) {
      this.versions.set(uri.toString(), { version: m.version, memory: m });
    }
    return Buffer.from(m.value, 'utf8');
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const { namespace, key } = parseMemoryUri(uri);
    const seen = this.versions.get(uri.toString());
    if (!seen) throw vscode.FileSystemError.NoPermissions('Open the memory before saving it.');
    const value = Buffer.from(content).toString('utf8');
    try {
      const res = await this.ctx.client.request('upsert', {
        namespace,
        key,
        value,
        ...keptFields(seen.memory),
        status: seen.memory.status === 'proposed' ? 'proposed' : 'active',
        ifVersion: seen.version,
        actor: 'vscode',
        reason: 'edited in the editor',
        ...this.ctx.git.write(namespace),
      });
      this.versions.set(uri.toString(), { version: res.memory.version, memory: res.memory });
      this.lastConflict = undefined;
    } catch (e) {
      if (cairnErrorName(e) === 'VersionConflict') {
        this.lastConflict = { uri: uri.toString(), yourVersion: seen.version, currentVersion: errorData(e).currentVersion };
        throw vscode.FileSystemError.Unavailable(
          `Conflict: "${key}" changed since you opened it (you edited version ${seen.version}, the store has version ${String(errorData(e).currentVersion ?? '?')}). Your edit was not saved. Copy your text, use "Revert File" to load the latest value, and edit again.`,
        );
      }
      throw vscode.FileSystemError.Unavailable(describeError('Saving memory', e));
    }
  }

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }
  readDirectory(): [string, vscode.FileType][] {
    return [];
  }
  createDirectory(): void {
    throw vscode.FileSystemError.NoPermissions('Memories have no folders');
  }
  delete(): void {
    throw vscode.FileSystemError.NoPermissions('Use "Cairn: Delete Memory"');
  }
  rename(): void {
    throw vscode.FileSystemError.NoPermissions('Memories cannot be renamed here');
  }
}

export class ViewDocuments implements vscode.TextDocumentContentProvider {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly open = new Set<string>();

  constructor(private readonly ctx: Ctx) {}

  changed(): void {
    for (const u of this.open) this.emitter.fire(vscode.Uri.parse(u));
  }

  async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
    this.open.add(uri.toString());
    const [, kind, rest] = /^\/([^/]+)\/?(.*)$/.exec(uri.path) ?? [];
    const id = decodeURIComponent((rest ?? '').split('/')[0]);
    try {
      if (kind === 'memory') return await this.memoryDoc(id);
      if (kind === 'history') return await this.historyDoc(id);
      if (kind === 'status') return renderStatus(await this.ctx.client.request('status', {}), this.ctx);
      return `Unknown Cairn view ${uri.toString()}`;
    } catch (e) {
      return `# Cairn\n\n${describeError('Loading this view', e)}\n`;
    }
  }

  private async memoryDoc(id: string): Promise<string> {
    const m = await this.ctx.client.request('get', { id, includeDeleted: true });
    const links = await this.ctx.client.request('neighbors', { id, direction: 'both' }).catch(() => ({ neighbors: [] }));
    return renderMemory(m, links.neighbors);
  }

  private async historyDoc(id: string): Promise<string> {
    const m = await this.ctx.client.request('get', { id, includeDeleted: true });
    const h = await this.ctx.client.request('history', { id, limit: 200 });
    return renderHistory(m, h.entries, h.capped);
  }
}

export function viewUri(kind: 'memory' | 'history', id: string, label: string): vscode.Uri {
  // The last segment is only the tab title ("key", "key (history)"); the id selects the memory.
  return vscode.Uri.from({ scheme: VIEW_SCHEME, path: `/${kind}/${encodeURIComponent(id)}/${label.replace(/[/\\]/g, '_')}` });
}
export const STATUS_URI = vscode.Uri.from({ scheme: VIEW_SCHEME, path: '/status/Cairn daemon status' });

/** Open a read-only Cairn view as markdown. */
export async function showView(uri: vscode.Uri): Promise<vscode.TextDocument> {
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== 'markdown') doc = await vscode.languages.setTextDocumentLanguage(doc, 'markdown');
  await vscode.window.showTextDocument(doc, { preview: true });
  return doc;
}

export function renderMemory(m: Memory, neighbors: { memory: Memory; type: string; direction: string }[]): string {
  const lines = [
    `# ${m.namespace} / ${m.key}`,
    '',
    `> ${m.kind} · ${m.deletedAt ? 'deleted' : m.status} · version ${m.version} · source ${m.source} · updated ${m.updatedAt}`,
    '',
    m.value,
    '',
  ];
  if (m.summary) lines.push('## Summary', '', m.summary, '');
  lines.push('## Details', '');
  lines.push(`- id: ${m.id}`);
  if (m.tags.length) lines.push(`- tags: ${m.tags.join(', ')}`);
  lines.push(`- importance: ${m.importance}, confidence: ${m.confidence}`);
  lines.push(`- created: ${m.createdAt}`, `- updated: ${m.updatedAt}`);
  if (m.expiresAt) lines.push(`- expires: ${m.expiresAt}`);
  if (m.validFrom || m.validTo) lines.push(`- valid: ${m.validFrom ?? '…'} to ${m.validTo ?? '…'}`);
  if (m.deletedAt) lines.push(`- deleted: ${m.deletedAt}${m.deletedBy ? ` by ${m.deletedBy}` : ''}`);
  if (m.supersededBy) lines.push(`- superseded by: ${m.supersededBy}`);
  for (const a of m.anchors) lines.push(`- anchor: ${anchorLabel(a)}`);
  for (const [k, v] of Object.entries(m.properties)) lines.push(`- ${k}: ${JSON.stringify(v)}`);
  if (neighbors.length) {
    lines.push('', '## Links', '');
    for (const n of neighbors) lines.push(`- ${n.direction === 'out' ? '→' : '←'} ${n.type}: ${n.memory.namespace} / ${n.memory.key}`);
  }
  return lines.join('\n') + '\n';
}

const TRACKED_FIELDS = [
  'namespace',
  'key',
  'kind',
  'tags',
  'status',
  'importance',
  'confidence',
  'anchors',
  'properties',
  'expiresAt',
  'supersededBy',
];

export function renderHistory(m: Memory, entries: HistoryEntry[], capped: boolean): string {
  const lines = [`# History of ${m.namespace} / ${m.key}`, '', `${entries.length} recorded operation(s), newest first. id ${m.id}`, ''];
  for (const e of entries) {
    if (!(HISTORY_OPS as readonly string[]).includes(e.op)) continue;
    lines.push(`## v${e.version} · ${e.op} · ${e.at} · by ${e.actor}`, '');
    if (e.reason) lines.push(`> ${e.reason}`, '');
    const before = e.previous?.value;
    const after = e.state?.value;
    if (before === undefined && after !== undefined) lines.push('```diff', ...after.split('\n').map((l) => `+ ${l}`), '```', '');
    else if (before !== undefined && after !== undefined && before !== after) lines.push('```diff', ...lineDiff(before, after), '```', '');
    const changes = fieldChanges(e.previous as Record<string, unknown> | null, e.state as Record<string, unknown> | null, TRACKED_FIELDS);
    for (const c of changes) lines.push(`- ${c}`);
    if (changes.length) lines.push('');
  }
  if (capped) lines.push("_Older entries were trimmed by the store's history cap._");
  return lines.join('\n') + '\n';
}

export function renderStatus(s: StoreStatusResult, ctx: Ctx): string {
  const state = ctx.client.state;
  const lines = [
    '# Cairn daemon status',
    '',
    `- connection: ${state.kind}${state.kind === 'connected' ? ` (${state.socket})` : ''}`,
    `- daemon: ${s.daemon ? `pid ${s.daemon.pid}, version ${s.daemon.version}, ${s.daemon.clients} client(s), up ${Math.round(s.daemon.uptimeMs / 1000)} s` : 'unknown'}`,
    `- store: ${s.path} (${(s.sizeBytes / 1024).toFixed(0)} KiB${describeFree(s.free)}, schema ${s.schemaVersion}, position ${s.position})`,
    `- memories: ${s.counts.active} active, ${s.counts.proposed} proposed, ${s.counts.superseded} superseded, ${s.counts.deleted} deleted, in ${s.counts.namespaces} namespace(s)`,
    `- history: ${s.counts.history} rows${s.historyCap ? ` (cap ${s.historyCap})` : ''}; links: ${s.counts.links}; rejected values: ${s.counts.rejectedValues}`,
    `- embeddings: ${s.embeddings.state}, model ${s.embeddings.model ?? 'none'}${s.embeddings.configuredModel && s.embeddings.configuredModel !== s.embeddings.model ? ` (configured: ${s.embeddings.configuredModel})` : ''}, ${s.embeddings.vectors} vectors, ${s.embeddings.pending} pending`,
  ];
  if (s.embeddings.fallbackReason) lines.push(`- fallback: ${s.embeddings.fallbackReason}`);
  for (const i of s.indexes) lines.push(`- index ${i.name}: watermark ${i.watermark}, ${i.behind} behind`);
  lines.push(`- project namespace: ${ctx.project ? `${ctx.project.namespace} (from ${ctx.project.source})` : 'none (no folder open)'}`);
  lines.push('', '```json', JSON.stringify(s, null, 2), '```');
  return lines.join('\n') + '\n';
}
