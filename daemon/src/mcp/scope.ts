/**
 * The scope an MCP session works in.
 *
 * Root: `--root`, else $CAIRN_SCOPE_ROOT, else `project.<slug>` of the working
 * directory's repository — the same rule as the VS Code extension's
 * `cairn.scope.projectNamespace` default: the repository name in the git remote
 * URL (`origin` first), read from .git/config without running git, else the
 * folder name (of the repository's top level when inside one).
 *
 * Every read is limited to the root's subtree plus the `user` tree; every write
 * goes under one of them. Another project's memories are invisible to the agent.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem, slugify } from '../protocol/namespace';
import type { Scope } from '../protocol/types';

export const USER_ROOT = 'user';

export interface McpScope {
  /** The namespace subtree this session reads and writes (also the default namespace of new memories). */
  root: string;
  /** Where the root came from. */
  source: 'option' | 'env' | 'git-remote' | 'folder';
  /** The folder a derived root was derived from (the client's first root, else the working directory). */
  dir?: string;
}

/** Remote URLs in a git config file, `origin` first. */
export function remoteUrls(gitConfig: string): string[] {
  const urls: { name: string; url: string }[] = [];
  let remote: string | null = null;
  for (const raw of gitConfig.split(/\r?\n/)) {
    const line = raw.trim();
    const section = /^\[\s*([^\s\]]+)(?:\s+"([^"]*)")?\s*\]$/.exec(line);
    if (section) {
      remote = section[1].toLowerCase() === 'remote' ? (section[2] ?? '') : null;
      continue;
    }
    if (remote === null) continue;
    const kv = /^url\s*=\s*(.+)$/i.exec(line);
    if (kv) urls.push({ name: remote, url: kv[1].trim().replace(/^"(.*)"$/, '$1') });
  }
  urls.sort((a, b) => (a.name === 'origin' ? -1 : b.name === 'origin' ? 1 : 0));
  return urls.map((u) => u.url);
}

/** Repository name from a remote URL: `git@github.com:acme/Web-App.git` -> `Web-App`. */
export function repoNameFromUrl(url: string): string | null {
  const m = /([^/:\\]+?)(?:\.git)?$/.exec(url.replace(/[\\/]+$/, ''));
  return m && m[1] ? m[1] : null;
}

/** The git config of the working tree at `dir` (handles `.git` files of worktrees and submodules). */
function gitConfigOf(dir: string): string | null {
  const dotGit = path.join(dir, '.git');
  let st: fs.Stats;
  try {
    st = fs.statSync(dotGit);
  } catch {
    return null;
  }
  if (st.isDirectory()) return path.join(dotGit, 'config');
  try {
    const m = /^gitdir:\s*(.+)$/m.exec(fs.readFileSync(dotGit, 'utf8'));
    if (!m) return null;
    const gitDir = path.resolve(dir, m[1].trim());
    const common = path.join(gitDir, 'commondir');
    const base = fs.existsSync(common) ? path.resolve(gitDir, fs.readFileSync(common, 'utf8').trim()) : gitDir;
    return path.join(base, 'config');
  } catch {
    return null;
  }
}

/** The nearest directory at or above `cwd` holding `.git`, or null. */
export function repoTop(cwd: string): string | null {
  let dir = path.resolve(cwd);
  for (;;) {
    if (fs.existsSync(path.join(dir, '.git'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** `project.<slug>` for a working directory. */
export function projectNamespaceFor(cwd: string): { namespace: string; source: 'git-remote' | 'folder' } {
  const top = repoTop(cwd);
  if (top) {
    const cfg = gitConfigOf(top);
    if (cfg) {
      try {
        for (const url of remoteUrls(fs.readFileSync(cfg, 'utf8'))) {
          const name = repoNameFromUrl(url);
          if (name) return { namespace: `project.${slugify(name)}`, source: 'git-remote' };
        }
      } catch {
        // unreadable config: use the folder name
      }
    }
  }
  return { namespace: `project.${slugify(path.basename(top ?? path.resolve(cwd)) || 'workspace')}`, source: 'folder' };
}

/** True when the scope was given (--root, CAIRN_SCOPE_ROOT) rather than derived from a folder. */
export function isExplicit(scope: McpScope): boolean {
  return scope.source === 'option' || scope.source === 'env';
}

/**
 * Resolve the session's scope; throws InvalidNamespace for a malformed --root / CAIRN_SCOPE_ROOT.
 * Without either, derives it from `cwd` (the server later re-derives it from the client's workspace roots when it has some).
 */
export function resolveMcpScope(o: { root?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): McpScope {
  const env = o.env ?? process.env;
  const explicit = o.root ? { root: o.root, source: 'option' as const, field: '--root' } : env.CAIRN_SCOPE_ROOT ? { root: env.CAIRN_SCOPE_ROOT, source: 'env' as const, field: 'CAIRN_SCOPE_ROOT' } : null;
  if (explicit) {
    const problem = namespaceProblem(explicit.root);
    if (problem) throw new CairnError('InvalidNamespace', `${explicit.field}: ${problem}`, { field: explicit.field });
    return { root: explicit.root, source: explicit.source };
  }
  const dir = path.resolve(o.cwd ?? process.cwd());
  const p = projectNamespaceFor(dir);
  return { root: p.namespace, source: p.source, dir };
}

/** True when a namespace lies inside the session scope (its root's subtree or the `user` tree). */
export function inScope(scope: McpScope, namespace: string): boolean {
  return isUnder(namespace, scope.root) || isUnder(namespace, USER_ROOT);
}

/** The default read scope: the root's subtree plus `user`. */
export function defaultScope(scope: McpScope): Scope {
  return { root: scope.root, includeUser: true };
}

/** Check a namespace argument: grammar first (InvalidNamespace), then the session boundary (InvalidParams). */
export function checkNamespace(scope: McpScope, namespace: string, field: string): void {
  const problem = namespaceProblem(namespace);
  if (problem) throw new CairnError('InvalidNamespace', problem, { field });
  if (!inScope(scope, namespace)) {
    throw new CairnError('InvalidParams', `namespace "${namespace}" is outside this session's scope (${scope.root} and ${USER_ROOT}); start the server with --root or CAIRN_SCOPE_ROOT to work elsewhere`, { field });
  }
}

/** A requested scope narrowed to the session boundary: every root/namespace must lie inside it. */
export function boundedScope(scope: McpScope, requested: Scope | undefined, field = 'scope'): Scope {
  if (!requested || (requested.root === undefined && requested.namespaces === undefined)) {
    return { ...defaultScope(scope), ...(requested?.includeUser !== undefined ? { includeUser: requested.includeUser } : {}) };
  }
  if (requested.root !== undefined) checkNamespace(scope, requested.root, `${field}.root`);
  requested.namespaces?.forEach((n, i) => checkNamespace(scope, n, `${field}.namespaces[${i}]`));
  return requested;
}
