/**
 * The few git facts anchors need, from the git CLI (no library): the HEAD commit of the repository holding a folder,
 * and where files recorded at an older commit are now (git's rename detection, `git diff -M`, which also sees a
 * `git mv` not yet committed). Every call is bounded (5 s) and answers null when git or the repository is missing.
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';

const TIMEOUT_MS = 5000;
const COMMIT = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

function git(cwd: string, args: string[]): string | null {
  try {
    return execFileSync('git', ['-c', 'core.quotepath=false', ...args], {
      cwd,
      encoding: 'utf8',
      timeout: TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    return null;
  }
}

/** The repository's top folder and HEAD commit for a folder inside it, or null outside a repository (or without commits). */
export function gitHead(dir: string): { top: string; head: string } | null {
  const out = git(dir, ['rev-parse', '--show-toplevel', 'HEAD']);
  if (!out) return null;
  const [top, head] = out.trim().split('\n');
  return top && head && COMMIT.test(head) ? { top, head } : null;
}

/**
 * Renames since `commit` as absolute old path → absolute new path, one step each: every commit's renames from
 * `commit` to HEAD in order (`git log -M --diff-filter=R`), then those not committed yet (`git diff -M HEAD`, which
 * sees a staged `git mv`). Follow a path through them with followRenames. Empty when the commit is unknown.
 */
export function gitRenamesSince(top: string, commit: string): Map<string, string> {
  const steps = new Map<string, string>();
  if (!COMMIT.test(commit)) return steps;
  const read = (out: string | null) => {
    const f = (out ?? '').split('\0').map((x) => x.replace(/^\n+/, ''));
    for (let i = 0; i < f.length; i++) {
      if (/^R\d*$/.test(f[i]) && f[i + 2] !== undefined) {
        steps.set(path.join(top, f[i + 1]), path.join(top, f[i + 2]));
        i += 2;
      }
    }
  };
  read(git(top, ['log', '-M', '--diff-filter=R', '--name-status', '-z', '--format=', '--reverse', `${commit}..HEAD`, '--']));
  read(git(top, ['diff', '-M', '--diff-filter=R', '--name-status', '-z', 'HEAD', '--']));
  return steps;
}

/** Where `file` went through these rename steps (a → b, b → c gives c), or null when it was not renamed. */
export function followRenames(steps: Map<string, string>, file: string): string | null {
  let at = file;
  for (let i = 0; i < 100 && steps.has(at); i++) at = steps.get(at)!;
  return at === file ? null : at;
}
