/**
 * Re-checking anchors against files: the one place that applies text/anchor-locate.ts to stored anchors and writes
 * what it finds. Used by LSP documents (opened, saved, replaced: server/lsp.ts), `anchors/check` (a workspace folder
 * on disk, after a commit or checkout) and injection (the just-in-time citation check, retrieval/inject.ts).
 *
 * Per anchor: a file renamed since the anchor's commit is followed (git); then the lines are located. Found where they
 * were: nothing to write. Moved, changed but similar, or found by symbol: the anchor takes the new lines and records
 * `relocated` (positional bookkeeping: no new version, clients hear op `anchor`). Gone: the anchor is marked stale with
 * the reason and the memory goes to review (store.staleAnchors: a new version by `system:anchors`, status proposed).
 * An anchor with no fingerprint yet gets one from the file as it is (and the HEAD commit), unless its lines are past
 * the end of the file (stale).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Anchor, AnchorChange, AnchorsCheckResult } from '../protocol/types';
import type { AnchoredRow, Store } from '../store/store';
import { FileText, fingerprint, locate } from '../text/anchor-locate';
import { followRenames, gitHead, gitRenamesSince } from './git';
import { pace, type RequestContext } from '../server/limits';

/** Files as one checker sees them. */
export interface AnchorFiles {
  /** The text of the file an anchor path names: null when it does not exist, undefined when this source cannot tell. */
  read(anchorPath: string): string | null | undefined;
  /** The commit to record with a new fingerprint of this path, or null. */
  head(anchorPath: string): string | null;
  /** The anchor path a file recorded at `commit` has now, when git saw it renamed since; else null. */
  renamed(anchorPath: string, commit: string): string | null;
  /**
   * The text is an editor's, not saved yet: anchors are re-located, but code that is gone is left for the save to
   * judge (the hover already hides an anchor whose lines no longer hold its code).
   */
  unsaved?: boolean;
}

/** Files larger than this are not read for anchor checks (left as they are). */
export const MAX_CHECK_BYTES = 8 * 1024 * 1024;
const MAX_CHANGES = 200;

const place = (a: Pick<Anchor, 'path' | 'startLine' | 'endLine'>): string =>
  a.startLine === undefined
    ? a.path
    : `${a.path}:${a.startLine}${a.endLine !== undefined && a.endLine !== a.startLine ? `-${a.endLine}` : ''}`;

/**
 * Memories of the `user` tree are not re-checked against a workspace's files on their own: their relative paths may
 * name files of any project. (An explicit `anchors/check` with a scope that covers them does check them.)
 */
export function projectRows(rows: AnchoredRow[]): AnchoredRow[] {
  return rows.filter((r) => !inUserTree(r.namespace));
}

export function inUserTree(namespace: string): boolean {
  return namespace === 'user' || namespace.startsWith('user.');
}

/** Re-check the anchors of these rows (only those on paths `only` admits, when given) and write what changed. */
export function recheckAnchors(
  store: Store,
  rows: AnchoredRow[],
  files: AnchorFiles,
  only?: (p: string) => boolean,
  /** Files already read (a check done in chunks shares them), and the result to add to. */
  texts = new Map<string, FileText | null | undefined>(),
  result: AnchorsCheckResult = { checked: 0, matched: 0, relocated: 0, stale: 0, fingerprinted: 0, changes: [] },
): AnchorsCheckResult {
  const fileOf = (p: string): FileText | null | undefined => {
    if (!texts.has(p)) {
      const t = files.read(p);
      texts.set(p, typeof t === 'string' ? new FileText(t) : t);
    }
    return texts.get(p);
  };
  const note = (row: AnchoredRow, c: Omit<AnchorChange, 'id' | 'namespace' | 'key'>) => {
    if (result.changes.length < MAX_CHANGES) result.changes.push({ id: row.id, namespace: row.namespace, key: row.key, ...c });
  };
  const now = new Date().toISOString();

  for (const row of rows) {
    let changed = false;
    const reasons: string[] = [];
    const next = row.anchors.map((a): Anchor => {
      if (a.stale || (only && !only(a.path))) return a;
      let file = fileOf(a.path);
      if (file === undefined) return a;
      result.checked++;
      let cur = a;
      let renamedFrom: string | null = null;
      if (file === null && a.commit) {
        const moved = files.renamed(a.path, a.commit);
        const there = moved ? fileOf(moved) : undefined;
        if (moved && there) {
          renamedFrom = place(a);
          cur = { ...a, path: moved };
          file = there;
        }
      }
      if (!file) {
        // Only a file the daemon has seen (the anchor has a fingerprint) is known to be gone; of an anchor never
        // fingerprinted nothing is known (its path may belong to another checkout).
        if (!a.hash) {
          result.checked--;
          return a;
        }
        const reason = `the file ${a.path} is gone`;
        reasons.push(reason);
        result.stale++;
        changed = true;
        note(row, { path: a.path, status: 'stale', from: place(a), reason });
        return { ...a, stale: true, staleReason: reason };
      }
      const found = locate(cur, file);
      switch (found.status) {
        case 'present':
        case 'exact': {
          if (renamedFrom) {
            result.relocated++;
            changed = true;
            note(row, { path: cur.path, status: 'renamed', from: renamedFrom, to: place(cur) });
            return { ...cur, relocated: { how: 'renamed', from: renamedFrom, at: now } };
          }
          result.matched++;
          const lines = found.status === 'exact' ? { startLine: found.startLine, endLine: found.endLine } : {};
          const resized = found.status === 'exact' && (found.startLine !== cur.startLine || found.endLine !== cur.endLine);
          if (cur.relocated?.how === 'similar' || resized) {
            // the code is back as it was anchored (or edits while typing stretched the range)
            changed = true;
            const { relocated, ...rest } = cur;
            return { ...(relocated?.how === 'similar' ? rest : cur), ...lines };
          }
          return cur;
        }
        case 'unknown': {
          const fp = cur.startLine !== undefined ? fingerprint(file, cur.startLine, cur.endLine ?? cur.startLine) : null;
          if (!fp) {
            const reason = `${place(cur)} is past the end of the file (${file.lineCount} lines)`;
            reasons.push(reason);
            result.stale++;
            changed = true;
            note(row, { path: cur.path, status: 'stale', from: place(cur), reason });
            return { ...cur, stale: true, staleReason: reason };
          }
          const commit = files.head(cur.path);
          result.fingerprinted++;
          changed = true;
          note(row, { path: cur.path, status: 'fingerprinted', from: place(cur) });
          return { ...cur, ...fp, ...(commit ? { commit } : {}) };
        }
        case 'stale': {
          if (files.unsaved) return a;
          const reason = `${place(cur)}: ${found.reason}`;
          reasons.push(reason);
          result.stale++;
          changed = true;
          note(row, { path: cur.path, status: 'stale', from: renamedFrom ?? place(cur), reason });
          return { ...cur, stale: true, staleReason: reason.slice(0, 300) };
        }
        default: {
          const moved = { ...cur, startLine: found.startLine, endLine: found.endLine };
          const how = renamedFrom ? 'renamed' : found.status;
          const samePlace = !renamedFrom && found.startLine === cur.startLine && found.endLine === (cur.endLine ?? cur.startLine);
          if (samePlace && cur.relocated?.how === how) {
            result.matched++;
            return cur;
          }
          result.relocated++;
          changed = true;
          const from = renamedFrom ?? place(cur);
          note(row, { path: cur.path, status: how, from, to: place(moved) });
          const similarity = 'similarity' in found ? found.similarity : undefined;
          return { ...moved, relocated: { how, from, at: now, ...(similarity !== undefined ? { similarity } : {}) } };
        }
      }
    });
    if (!changed) continue;
    if (reasons.length > 0) store.staleAnchors(row.rowid, next, `the code it describes changed: ${reasons.join('; ')}`.slice(0, 2000));
    else store.updateAnchors(row.rowid, next);
  }
  return result;
}

/**
 * Files under a workspace folder on disk: relative anchor paths start at `root`; absolute ones are read when they lie
 * inside it. Git facts come from the repository holding `root`, asked once per checker.
 */
export function diskFiles(root: string): AnchorFiles {
  const abs = (p: string): string | null => {
    const full = path.isAbsolute(p) ? path.normalize(p) : path.join(root, p);
    const rel = path.relative(root, full);
    return rel.startsWith('..') || path.isAbsolute(rel) ? null : full;
  };
  const back = (original: string, full: string): string =>
    path.isAbsolute(original) ? full.split(path.sep).join('/') : path.relative(root, full).split(path.sep).join('/');
  let repo: { top: string; head: string } | null | undefined;
  const repoOf = () => (repo === undefined ? (repo = gitHead(root)) : repo);
  const renames = new Map<string, Map<string, string>>();
  let real: string | undefined;
  const realRoot = () => {
    if (real === undefined) {
      try {
        real = fs.realpathSync(root);
      } catch {
        real = root;
      }
    }
    return real;
  };
  return {
    read(p) {
      const full = abs(p);
      if (!full) return undefined;
      try {
        const st = fs.statSync(full);
        if (!st.isFile()) return null;
        if (st.size > MAX_CHECK_BYTES) return undefined;
        return fs.readFileSync(full, 'utf8');
      } catch (e) {
        return (e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR' ? null : undefined;
      }
    },
    head: () => repoOf()?.head ?? null,
    renamed(p, commit) {
      const r = repoOf();
      const full = abs(p);
      if (!r || !full) return null;
      let map = renames.get(commit);
      if (!map) renames.set(commit, (map = gitRenamesSince(r.top, commit)));
      // git names files under its real top folder; the root may be spelled through a symbolic link
      const real = realRoot();
      const now = followRenames(map, path.join(real, path.relative(root, full)));
      if (!now) return null;
      const inRoot = path.join(root, path.relative(real, now));
      return abs(inRoot) ? back(p, inRoot) : null;
    },
  };
}

/** Rows re-checked between two yields to the event loop. */
const CHUNK_ROWS = 100;

/**
 * Memories in `scope` anchored to these paths (or to any path), re-checked against the files under `root`, in chunks
 * that let the daemon answer other requests in between (and stop at the request's time limit, what was done kept).
 */
export async function checkUnder(
  store: Store,
  root: string,
  scope: Parameters<Store['anchorsByPath']>[1],
  paths?: string[],
  ctx?: RequestContext,
): Promise<AnchorsCheckResult> {
  const wanted = paths?.map((p) => (path.isAbsolute(p) ? p : p.split(path.sep).join('/')));
  // rows sorted by their first anchor's path, so a chunk mostly reads files the one before read
  const rows = store
    .anchorsByPath(wanted ?? null, scope)
    .sort((a, b) => (a.anchors[0]?.path ?? '').localeCompare(b.anchors[0]?.path ?? ''));
  const files = diskFiles(root);
  const texts = new Map<string, FileText | null | undefined>();
  const result: AnchorsCheckResult = { checked: 0, matched: 0, relocated: 0, stale: 0, fingerprinted: 0, changes: [] };
  for (let i = 0; i < rows.length; i += CHUNK_ROWS) {
    if (i > 0) {
      await pace(ctx, { checked: result.checked });
      if (texts.size > 256) texts.clear();
    }
    // read again after a yield: a write in between must not be overwritten with the anchors read before it
    const chunk = rows.slice(i, i + CHUNK_ROWS);
    const fresh = i === 0 ? chunk : chunk.map((r) => store.anchorsOf(r.id)).filter((r): r is AnchoredRow => r !== null);
    recheckAnchors(store, fresh, files, wanted ? (p) => wanted.includes(p) : undefined, texts, result);
  }
  return result;
}
