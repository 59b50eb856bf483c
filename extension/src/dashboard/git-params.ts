/**
 * The git context (docs/protocol.md#git-aware-memory) a request forwarded from the dashboard carries, as the
 * window's own commands send it: lists and searches see what the checkout sees (not on a memory branch); a memory
 * written or proposed from events records the git branch and HEAD commit (memory/upsert, episodes/propose:
 * GitWatch.write decides, the project namespace only); a new memory branch follows the git branch checked out (branch/create, with cairn.branches.followGit).
 * What the dashboard set itself is kept. Pure (no vscode; the daemon is asked through the function given), unit-tested in test/unit/dashboard-git-params.test.ts.
 */
import type { EventExpandParams, EventExpandResult, GitContext, GitWrite } from '../../../daemon/src/protocol/types';

/** The parts of the window's GitWatch (git.ts) used here. */
export interface GitParamsSource {
  read(): { git?: GitContext };
  write(namespace: string): { git?: GitWrite };
  follow(): { gitBranch?: string; gitRepo?: string };
}

/** `proposalNamespace`: where an episodes/propose without a namespace lands (see proposalNamespace below). */
export function withGitContext(name: string, params: unknown, git: GitParamsSource, proposalNamespace?: string): unknown {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return params;
  const p = params as Record<string, unknown>;
  switch (name) {
    case 'list':
    case 'search':
      return 'git' in p || 'branch' in p ? p : { ...p, ...git.read() };
    case 'upsert':
      return 'git' in p || typeof p.namespace !== 'string' ? p : { ...p, ...git.write(p.namespace) };
    case 'episodesPropose': {
      // A proposed memory records where it was proposed, by the same rule as a written one.
      const ns = typeof p.namespace === 'string' ? p.namespace : proposalNamespace;
      return 'git' in p || ns === undefined ? p : { ...p, ...git.write(ns) };
    }
    case 'branchCreate':
      return 'gitBranch' in p ? p : { ...p, ...git.follow() };
    default:
      return p;
  }
}

/**
 * Where an episodes/propose that names no namespace lands: its first source event's session's namespace, read with
 * events/expand in the request's scope. Undefined when the request names one, or the event cannot be read (the
 * daemon then answers the proposal's own error).
 */
export async function proposalNamespace(
  params: unknown,
  expand: (q: EventExpandParams) => Promise<EventExpandResult>,
): Promise<string | undefined> {
  if (typeof params !== 'object' || params === null || Array.isArray(params)) return undefined;
  const p = params as Record<string, unknown>;
  if ('namespace' in p || 'git' in p || !Array.isArray(p.events) || typeof p.events[0] !== 'number') return undefined;
  const q = { position: p.events[0], before: 0, after: 0, ...(p.scope ? { scope: p.scope } : {}) } as EventExpandParams;
  return expand(q).then(
    (r) => r.episode.namespace,
    () => undefined,
  );
}
