/**
 * The git context (docs/protocol.md#git-aware-memory) a request forwarded from the dashboard carries, as the
 * window's own commands send it: lists and searches see what the checkout sees (not on a memory branch); a memory
 * written records the git branch and HEAD commit (memory/upsert: GitWatch.write decides, the project namespace
 * only); a new memory branch follows the git branch checked out (branch/create, with cairn.branches.followGit).
 * What the dashboard set itself is kept. Pure (no vscode), unit-tested in test/unit/dashboard-git-params.test.ts.
 */
import type { GitContext, GitWrite } from '../../../daemon/src/protocol/types';

/** The parts of the window's GitWatch (git.ts) used here. */
export interface GitParamsSource {
  read(): { git?: GitContext };
  write(namespace: string): { git?: GitWrite };
  follow(): { gitBranch?: string; gitRepo?: string };
}

export function withGitContext(name: string, params: unknown, git: GitParamsSource): unknown {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return params;
  const p = params as Record<string, unknown>;
  switch (name) {
    case 'list':
    case 'search':
      return 'git' in p || 'branch' in p ? p : { ...p, ...git.read() };
    case 'upsert':
      return 'git' in p || typeof p.namespace !== 'string' ? p : { ...p, ...git.write(p.namespace) };
    case 'branchCreate':
      return 'gitBranch' in p ? p : { ...p, ...git.follow() };
    default:
      return p;
  }
}
