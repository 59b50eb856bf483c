/**
 * The git checkout a client runs in (the CLI and `cairn mcp`: their working folder), for git-aware memory
 * (docs/protocol.md#git-aware-memory): the `git` a write records and the `git` context a read carries. Synchronous
 * git CLI calls (one per lookup), bounded; outside a repository, without commits or without git, there is none.
 */
import { execFileSync } from 'node:child_process';
import { isUnder } from '../protocol/namespace';
import { envFlag, readEnv, type Env } from '../protocol/settings';
import type { GitContext, GitWrite } from '../protocol/types';
import { projectNamespaceFor } from '../project';
import { COMMIT_ID } from './run';

export interface Checkout {
  repo: string;
  head: string;
  /** Absent when HEAD is detached. */
  branch?: string;
}

/** The repository holding `cwd`: its top folder, HEAD commit and the branch checked out; null when there is none. */
export function gitCheckout(cwd: string): Checkout | null {
  let out: string;
  try {
    out = execFileSync('git', ['rev-parse', '--show-toplevel', 'HEAD', '--symbolic-full-name', 'HEAD'], {
      cwd,
      encoding: 'utf8',
      timeout: 5000,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  } catch {
    return null;
  }
  const [repo, head, ref] = out.trim().split('\n');
  if (!repo || !head || !COMMIT_ID.test(head)) return null;
  const branch = ref?.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : undefined;
  return { repo, head, ...(branch ? { branch } : {}) };
}

/** Whether git-aware memory is on (`cairn.git.visibility`, CAIRN_GIT_VISIBILITY). */
export function gitAware(env?: Env): boolean {
  return envFlag('CAIRN_GIT_VISIBILITY', true, env);
}

/**
 * What a write to `namespace` records: the checkout's branch and commit, for the project namespace (`project`,
 * default the folder's) or under it only.
 */
export function gitWriteFor(namespace: string, cwd: string = process.cwd(), env?: Env, project?: string): GitWrite | undefined {
  if (!gitAware(env) || !isUnder(namespace, project ?? projectNamespaceFor(cwd).namespace)) return undefined;
  const c = gitCheckout(cwd);
  return c?.branch ? { branch: c.branch, commit: c.head } : undefined;
}

/** The reader's git context of `cwd` for its project namespace, or undefined (no repository, or git-aware memory off). */
export function gitReadFor(cwd: string = process.cwd(), env?: Env, project?: string): GitContext | undefined {
  if (!gitAware(env)) return undefined;
  const c = gitCheckout(cwd);
  if (!c) return undefined;
  const base = readEnv('CAIRN_GIT_BASE', env);
  return { ...c, ...(base ? { base } : {}), namespace: project ?? projectNamespaceFor(cwd).namespace };
}

/**
 * What a new memory branch made in `cwd` follows (`cairn.branches.followGit`, CAIRN_BRANCHES_FOLLOW_GIT; off by
 * default): the git branch checked out, its repository and tip; nothing when off, detached or outside a repository.
 */
export function followGitFor(
  cwd: string = process.cwd(),
  env?: Env,
): { gitBranch: string; gitRepo: string; gitCommit: string } | undefined {
  if (!envFlag('CAIRN_BRANCHES_FOLLOW_GIT', false, env)) return undefined;
  const c = gitCheckout(cwd);
  return c?.branch ? { gitBranch: c.branch, gitRepo: c.repo, gitCommit: c.head } : undefined;
}
