/** Temporary git repositories for tests: the git CLI with a fixed identity and no user or system config. */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Environment for git in tests: a fixed author and committer, no global or system configuration. */
export const GIT_ENV = {
  GIT_AUTHOR_NAME: 't',
  GIT_AUTHOR_EMAIL: 't@example.com',
  GIT_COMMITTER_NAME: 't',
  GIT_COMMITTER_EMAIL: 't@example.com',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};

/** Run git in `repo` and return its trimmed output (throws on a non-zero exit). */
export function sh(repo: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd: repo,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...GIT_ENV },
  }).trim();
}

/** Commit a change to one file (its own line, so patches of different commits never overlap); returns the commit. */
export function commit(repo: string, file: string, line: string, msg = `${file}: ${line}`): string {
  fs.appendFileSync(path.join(repo, file), line + '\n');
  sh(repo, 'add', file);
  sh(repo, 'commit', '-q', '-m', msg);
  return sh(repo, 'rev-parse', 'HEAD');
}
