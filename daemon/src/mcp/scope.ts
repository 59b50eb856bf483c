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
import * as path from 'node:path';
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem, USER_ROOT } from '../protocol/namespace';
import { readEnv } from '../protocol/settings';
import type { Scope } from '../protocol/types';

export interface McpScope {
  /** The namespace subtree this session reads and writes (also the default namespace of new memories). */
  root: string;
  /** Where the root came from. */
  source: 'option' | 'env' | 'git-remote' | 'folder';
  /** The folder a derived root was derived from (the client's first root, else the working directory). */
  dir?: string;
}

export { gitConfigPath, projectNamespaceFor, remoteUrls, repoNameFromUrl, repoTop } from '../project';
import { projectNamespaceFor } from '../project';

/** True when the scope was given (--root, CAIRN_SCOPE_ROOT) rather than derived from a folder. */
export function isExplicit(scope: McpScope): boolean {
  return scope.source === 'option' || scope.source === 'env';
}

/**
 * Resolve the session's scope; throws InvalidNamespace for a malformed --root / CAIRN_SCOPE_ROOT.
 * Without either, derives it from `cwd` (the server later re-derives it from the client's workspace roots when it has some).
 */
export function resolveMcpScope(o: { root?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {}): McpScope {
  const fromEnv = readEnv('CAIRN_SCOPE_ROOT', o.env);
  const explicit = o.root
    ? { root: o.root, source: 'option' as const, field: '--root' }
    : fromEnv
      ? { root: fromEnv, source: 'env' as const, field: 'CAIRN_SCOPE_ROOT' }
      : null;
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
    throw new CairnError(
      'InvalidParams',
      `namespace "${namespace}" is outside this session's scope (${scope.root} and ${USER_ROOT}); start the server with --root or CAIRN_SCOPE_ROOT to work elsewhere`,
      { field },
    );
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
