/**
 * The LSP side of the daemon, so any LSP editor gets memory hovers:
 * textDocument/hover answers with the memories anchored to the file (and the
 * line range or symbol) under the cursor — a plain indexed lookup, no
 * embedding on the hover path — and null where nothing is anchored. An
 * anchor shows only while its lines still hold its code (checked against the
 * open document), and says when it was re-located or the code changed.
 * textDocument/didChange with ranges shifts anchors with lines inserted or
 * removed above them (cheap bookkeeping while typing); a document opened,
 * saved or replaced whole re-checks its anchors (anchors/check.ts): moved code
 * is followed; code that is gone marks the anchor stale and sends its memory
 * to review — judged on saved text only (a save, or a document opened as it
 * is on disk), never on edits in progress.
 *
 * A memory tagged `secret` shows its key and a note, never its value or summary (docs/protocol.md#secrets).
 *
 * Hover markdown carries command links the VS Code extension implements:
 * cairn.openMemory, cairn.editMemory, cairn.showHistory, cairn.forgetMemory, each with args [{ id }].
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ResponseError, type MessageConnection } from 'vscode-jsonrpc/node';
import { ErrorCodes } from '../protocol/errors';
import { namespaceProblem } from '../protocol/namespace';
import type { Anchor, Memory, Scope } from '../protocol/types';
import { projectNamespaceFor } from '../project';
import type { Store } from '../store/store';
import { projectRows, recheckAnchors, type AnchorFiles } from '../anchors/check';
import { gitHead } from '../anchors/git';
import { checkAt } from '../text/anchor-locate';
import { escapeMarkdown } from '../text/format';
import { isSecretTagged } from '../text/secrets';

interface Position {
  line: number;
  character: number;
}
interface Range {
  start: Position;
  end: Position;
}
interface ContentChange {
  range?: Range;
  text: string;
}

export const HOVER_MAX_MEMORIES = 5;
/** What a hover shows instead of the value (or summary) of a memory tagged `secret`. */
export const SECRET_HOVER_NOTE = '_secret — value hidden; open it in the dashboard_';
const HOVER_VALUE_CHARS = 400;

export class LspDocuments {
  private roots: string[] = [];
  private docs = new Map<string, string>();
  /** The client's project namespace (initializationOptions.projectNamespace), when it gave one. */
  private project: string | null = null;
  private includeUser = true;
  /** Git-aware memory for hovers (initializationOptions.gitVisibility; on unless the client says false). */
  private gitAware = true;
  private derived = new Map<string, string>();

  constructor(private readonly store: Store) {}

  initialize(params: unknown): void {
    const p = (params ?? {}) as {
      rootUri?: string | null;
      rootPath?: string | null;
      workspaceFolders?: { uri: string }[] | null;
      initializationOptions?: { projectNamespace?: unknown; includeUser?: unknown; gitVisibility?: unknown } | null;
    };
    const folders = Array.isArray(p.workspaceFolders) ? p.workspaceFolders : [];
    const uris = [
      ...folders.map((f) => (f && typeof f === 'object' ? f.uri : undefined)),
      ...(typeof p.rootUri === 'string' ? [p.rootUri] : []),
    ].filter((u): u is string => typeof u === 'string');
    const roots = uris.map(uriToPath).filter((x): x is string => !!x);
    if (typeof p.rootPath === 'string') roots.push(p.rootPath);
    this.roots = [...new Set(roots)];
    const opts = p.initializationOptions && typeof p.initializationOptions === 'object' ? p.initializationOptions : {};
    this.project = typeof opts.projectNamespace === 'string' && !namespaceProblem(opts.projectNamespace) ? opts.projectNamespace : null;
    this.includeUser = opts.includeUser !== false;
    this.gitAware = opts.gitVisibility !== false;
  }

  /**
   * The scope a document's hovers and anchor tracking work in: the client's project namespace when it
   * gave one, else the project namespace of the workspace folder holding the document (else of the
   * document's own folder) — the same rule as the extension and `cairn mcp` — plus `user`. Another
   * project's memory anchored to the same relative path is never shown nor moved.
   */
  scopeFor(uri: string): Scope | null {
    const abs = uriToPath(uri);
    if (!abs) return null;
    if (this.project) return { root: this.project, includeUser: this.includeUser };
    const folder =
      this.roots.find((r) => {
        const rel = path.relative(r, abs);
        return !rel.startsWith('..') && !path.isAbsolute(rel);
      }) ?? path.dirname(abs);
    let ns = this.derived.get(folder);
    if (!ns) {
      ns = projectNamespaceFor(folder).namespace;
      if (this.derived.size > 1000) this.derived.clear();
      this.derived.set(folder, ns);
    }
    return { root: ns, includeUser: this.includeUser };
  }

  register(connection: MessageConnection): void {
    connection.onNotification(
      'workspace/didChangeWorkspaceFolders',
      (p: { event?: { added?: { uri: string }[]; removed?: { uri: string }[] } }) => {
        if (
          !p?.event ||
          (p.event.added !== undefined && !Array.isArray(p.event.added)) ||
          (p.event.removed !== undefined && !Array.isArray(p.event.removed))
        )
          return;
        if (![...(p.event.added ?? []), ...(p.event.removed ?? [])].every((f) => f && typeof f.uri === 'string')) return;
        const removed = new Set((p.event?.removed ?? []).map((f) => uriToPath(f.uri)));
        this.roots = [
          ...this.roots.filter((r) => !removed.has(r)),
          ...(p.event?.added ?? []).map((f) => uriToPath(f.uri)).filter((x): x is string => !!x),
        ];
      },
    );
    connection.onNotification('textDocument/didOpen', (p: { textDocument: { uri: string; text: string } }) => {
      if (typeof p?.textDocument?.uri !== 'string' || typeof p.textDocument.text !== 'string') return;
      this.docs.set(p.textDocument.uri, p.textDocument.text);
      this.safe(() => this.recheck(p.textDocument.uri, p.textDocument.text, !sameAsDisk(p.textDocument.uri, p.textDocument.text)));
    });
    connection.onNotification('textDocument/didChange', (p: { textDocument: { uri: string }; contentChanges: ContentChange[] }) => {
      if (typeof p?.textDocument?.uri !== 'string' || !Array.isArray(p.contentChanges)) return;
      if (!p.contentChanges.every((c) => c && typeof c.text === 'string' && (c.range === undefined || validRange(c.range)))) return;
      let text = this.docs.get(p.textDocument.uri) ?? '';
      let whole = false;
      for (const c of p.contentChanges ?? []) {
        if (!c.range) {
          text = c.text;
          whole = true;
          continue;
        }
        const ranged = c as ContentChange & { range: Range };
        this.safe(() => this.shiftAnchors(p.textDocument.uri, ranged));
        text = applyChange(text, c);
      }
      this.docs.set(p.textDocument.uri, text);
      if (whole) this.safe(() => this.recheck(p.textDocument.uri, text, true));
    });
    connection.onNotification('textDocument/didSave', (p: { textDocument: { uri: string }; text?: unknown }) => {
      if (typeof p?.textDocument?.uri !== 'string') return;
      const text = typeof p.text === 'string' ? p.text : this.docs.get(p.textDocument.uri);
      if (typeof p.text === 'string') this.docs.set(p.textDocument.uri, p.text);
      if (text !== undefined) this.safe(() => this.recheck(p.textDocument.uri, text));
    });
    connection.onNotification('textDocument/didClose', (p: { textDocument: { uri: string } }) => {
      if (typeof p?.textDocument?.uri === 'string') this.docs.delete(p.textDocument.uri);
    });
    connection.onNotification('workspace/didChangeConfiguration', () => {});
    connection.onNotification('$/setTrace', () => {});
    connection.onRequest('textDocument/hover', (p: { textDocument: { uri: string }; position: Position }) => {
      const ok =
        p &&
        typeof p === 'object' &&
        p.textDocument &&
        typeof p.textDocument.uri === 'string' &&
        p.position &&
        Number.isInteger(p.position.line) &&
        p.position.line >= 0 &&
        Number.isInteger(p.position.character) &&
        p.position.character >= 0;
      if (!ok)
        throw new ResponseError(
          ErrorCodes.InvalidParams,
          'textDocument/hover: params must be {textDocument: {uri}, position: {line, character}}',
          { name: 'InvalidParams', field: 'textDocument' },
        );
      return this.hoverAll(p.textDocument.uri, p.position);
    });
  }

  private safe(fn: () => void): void {
    try {
      fn();
    } catch {
      /* anchor tracking is best effort; it must never break a notification stream */
    }
  }

  /** Anchor paths a document can be stored under: absolute, and relative to each workspace root. */
  private candidates(uri: string): string[] {
    const abs = uriToPath(uri);
    if (!abs) return [];
    const out = [abs];
    for (const r of this.roots) {
      const rel = path.relative(r, abs);
      if (rel && !rel.startsWith('..') && !path.isAbsolute(rel)) out.push(rel.split(path.sep).join('/'));
    }
    return out;
  }

  /**
   * Memories anchored to these paths in the team store (set by the daemon when team memory is
   * attached; it answers [] when the scope covers no team root).
   */
  teamAnchors: ((paths: string[], scope: Scope) => Promise<{ memory: Memory; anchor: Anchor }[]>) | null = null;

  /**
   * Which memories the git checkout holding `dir` hides (git-aware memory, set by the daemon): hovers leave them out
   * before the hover's own cut.
   */
  gitHidden: ((dir: string, scope: Scope) => Promise<((memoryId: string) => boolean) | null>) | null = null;

  /** hover() with the team store's anchored memories too; a team store that can't answer leaves the local ones. */
  async hoverAll(uri: string, pos: Position): Promise<{ contents: { kind: 'markdown'; value: string } } | null> {
    const scope = this.scopeFor(uri);
    const paths = this.candidates(uri);
    const team = this.teamAnchors && scope && paths.length ? await this.teamAnchors(paths, scope).catch(() => []) : [];
    const abs = uriToPath(uri);
    const hide =
      this.gitAware && this.gitHidden && scope && abs && paths.length
        ? await this.gitHidden(path.dirname(abs), scope).catch(() => null)
        : null;
    return this.hover(uri, pos, team, hide);
  }

  hover(
    uri: string,
    pos: Position,
    more: { memory: Memory; anchor: Anchor }[] = [],
    hide: ((memoryId: string) => boolean) | null = null,
  ): { contents: { kind: 'markdown'; value: string } } | null {
    const paths = this.candidates(uri);
    if (paths.length === 0) return null;
    const line = pos.line + 1;
    const word = wordAt(this.docs.get(uri), pos);
    const scope = this.scopeFor(uri);
    if (!scope) return null;
    const doc = this.docs.get(uri);
    const checked = new Map<Anchor, ReturnType<typeof checkAt>>();
    const matches = [...this.store.anchoredAt(paths, scope), ...more].filter(({ memory, anchor: a }) => {
      if (a.stale || hide?.(memory.id)) return false;
      if (a.startLine !== undefined) {
        if (line < a.startLine || line > (a.endLine ?? a.startLine)) return false;
        // Only an anchor whose lines still hold its code shows (edits not yet saved, or not yet re-checked).
        const state = doc === undefined ? 'unknown' : checkAt(a, doc);
        checked.set(a, state);
        return state !== 'mismatch';
      }
      if (a.symbol !== undefined) return word !== null && (word === a.symbol || a.symbol.endsWith('.' + word));
      return line === 1; // a whole-file anchor shows on the first line only
    });
    if (matches.length === 0) return null;
    const seen = new Set<string>();
    const parts: string[] = [];
    for (const { memory: m, anchor } of matches) {
      if (seen.has(m.id) || seen.size >= HOVER_MAX_MEMORIES) continue;
      seen.add(m.id);
      const args = encodeURIComponent(JSON.stringify([{ id: m.id }]));
      const text = m.summary ?? m.value;
      // A hover is seen by whoever watches the screen and by screen-reading agents: a secret memory shows no text.
      const body = isSecretTagged(m.tags)
        ? SECRET_HOVER_NOTE
        : escapeMarkdown(text.length > HOVER_VALUE_CHARS ? text.slice(0, HOVER_VALUE_CHARS) + '…' : text);
      const note = anchorNote(anchor, checked.get(anchor));
      parts.push(
        `**Cairn** · \`${m.namespace}\` · **${escapeMarkdown(m.key)}** _(${m.kind}, v${m.version})_\n\n${body}\n\n` +
          (note ? `_${escapeMarkdown(note)}_\n\n` : '') +
          `[Open](command:cairn.openMemory?${args}) · [Edit](command:cairn.editMemory?${args}) · [History](command:cairn.showHistory?${args}) · [Forget](command:cairn.forgetMemory?${args})`,
      );
    }
    return { contents: { kind: 'markdown', value: parts.join('\n\n---\n\n') } };
  }

  private shiftAnchors(uri: string, c: ContentChange & { range: Range }): void {
    const paths = this.candidates(uri);
    if (paths.length === 0) return;
    const startLine = c.range.start.line + 1;
    const endLine = c.range.end.line + 1;
    const added = (c.text.match(/\n/g) ?? []).length;
    const delta = added - (endLine - startLine);
    const scope = this.scopeFor(uri);
    if (!scope) return;
    for (const { rowid, anchors } of this.store.anchorsByPath(paths, scope)) {
      let changed = false;
      const next = anchors.map((a) => {
        if (!paths.includes(a.path) || a.startLine === undefined || a.stale) return a;
        const s = a.startLine;
        const e = a.endLine ?? a.startLine;
        // Lines strictly below the edited region move with it.
        if (s > endLine || (s === endLine && c.range.end.character === 0 && c.range.end.line > c.range.start.line)) {
          if (delta === 0) return a;
          changed = true;
          return { ...a, startLine: s + delta, ...(a.endLine !== undefined ? { endLine: e + delta } : {}) };
        }
        if (e < startLine) return a;
        // The edit touches the anchor: it keeps its lines (the hover checks they still hold its code); the verdict on
        // code deleted or rewritten comes when the document is saved (recheck), so a cut-and-paste is followed.
        if (delta !== 0 && a.endLine !== undefined) {
          changed = true;
          return { ...a, endLine: Math.max(s, e + delta) };
        }
        return a;
      });
      if (changed) this.store.updateAnchors(rowid, next);
    }
  }

  /**
   * Re-check the document's anchors against its whole text (opened, saved or replaced). `unsaved`: text the editor has
   * not saved (a whole-text change, a document opened with edits): anchors move with their code, but the verdict on
   * code that is gone waits for the save, so a cut-and-paste in progress never sends a memory to review.
   */
  private recheck(uri: string, text: string, unsaved = false): void {
    const paths = this.candidates(uri);
    const scope = this.scopeFor(uri);
    if (paths.length === 0 || !scope) return;
    const rows = projectRows(this.store.anchorsByPath(paths, scope));
    if (rows.length === 0) return;
    const abs = uriToPath(uri)!;
    const files: AnchorFiles = {
      read: (p) => (paths.includes(p) ? text : undefined),
      head: () => this.headOf(path.dirname(abs)),
      renamed: () => null,
      unsaved,
    };
    recheckAnchors(this.store, rows, files, (p) => paths.includes(p));
  }

  private heads = new Map<string, { at: number; head: string | null }>();
  /** The HEAD commit of the repository holding a folder (asked of git at most every 10 s per folder). */
  private headOf(dir: string): string | null {
    const hit = this.heads.get(dir);
    if (hit && Date.now() - hit.at < 10_000) return hit.head;
    const head = gitHead(dir)?.head ?? null;
    if (this.heads.size > 100) this.heads.clear();
    this.heads.set(dir, { at: Date.now(), head });
    return head;
  }
}

/** What a hover says about an anchor that was re-located or whose code changed, or null. */
export function anchorNote(a: Anchor, state?: ReturnType<typeof checkAt>): string | null {
  const pct = (x: number | undefined) => (x === undefined ? '' : ` (${Math.round(x * 100)}% similar)`);
  if (state === 'similar' || (state !== 'exact' && a.relocated?.how === 'similar'))
    return `The code changed since this was anchored${pct(state === 'similar' ? undefined : a.relocated?.similarity)}.`;
  if (!a.relocated) return null;
  if (a.relocated.how === 'renamed') return `Anchor followed a rename, from ${a.relocated.from}.`;
  if (a.relocated.how === 'symbol') return `Anchor re-located by its symbol, from ${a.relocated.from}${pct(a.relocated.similarity)}.`;
  return `Anchor re-located, from ${a.relocated.from}.`;
}

/** Whether a document's text is what its file holds on disk (an unreadable file counts as the same: nothing to wait for). */
function sameAsDisk(uri: string, text: string): boolean {
  const abs = uriToPath(uri);
  if (!abs) return true;
  try {
    return fs.readFileSync(abs, 'utf8') === text;
  } catch {
    return true;
  }
}

function validRange(r: unknown): r is Range {
  const pos = (x: unknown) =>
    !!x &&
    typeof x === 'object' &&
    Number.isInteger((x as Position).line) &&
    (x as Position).line >= 0 &&
    Number.isInteger((x as Position).character) &&
    (x as Position).character >= 0;
  return !!r && typeof r === 'object' && pos((r as Range).start) && pos((r as Range).end);
}

export function uriToPath(uri: string): string | null {
  try {
    if (uri.startsWith('file:')) return fileURLToPath(uri);
    if (uri.startsWith('/')) return uri;
    return null;
  } catch {
    return null;
  }
}

function wordAt(text: string | undefined, pos: Position): string | null {
  if (text === undefined) return null;
  const line = text.split('\n')[pos.line];
  if (line === undefined) return null;
  const re = /[\p{L}\p{N}_$]+/gu;
  for (const m of line.matchAll(re)) {
    if (pos.character >= m.index! && pos.character <= m.index! + m[0].length) return m[0];
  }
  return null;
}

function offsetAt(text: string, p: Position): number {
  let off = 0;
  for (let l = 0; l < p.line; l++) {
    const nl = text.indexOf('\n', off);
    if (nl < 0) return text.length;
    off = nl + 1;
  }
  return Math.min(text.length, off + p.character);
}

function applyChange(text: string, c: ContentChange & { range?: Range }): string {
  if (!c.range) return c.text;
  return text.slice(0, offsetAt(text, c.range.start)) + c.text + text.slice(offsetAt(text, c.range.end));
}

export type { Anchor };
