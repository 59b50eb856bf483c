/**
 * The git CLI, asynchronously (git-aware memory asks it about ancestry and patches; no library). Every call is
 * bounded in time and output, never goes through a shell, and answers the exit code with stdout; a missing git or
 * repository is code -1 or 128, never a throw.
 */
import { spawn } from 'node:child_process';

const TIMEOUT_MS = 10_000;
const MAX_OUTPUT = 64 * 1024 * 1024;

export interface GitResult {
  code: number;
  out: string;
}

/** Run `git args` in `cwd`, with `input` on stdin when given. */
export function git(cwd: string, args: string[], input?: string): Promise<GitResult> {
  return new Promise((resolve) => {
    let child;
    try {
      child = spawn('git', ['-c', 'core.quotepath=false', ...args], {
        cwd,
        stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'ignore'],
      });
    } catch {
      resolve({ code: -1, out: '' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (r: GitResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      finish({ code: -1, out: '' });
    }, TIMEOUT_MS);
    child.stdout!.on('data', (b: Buffer) => {
      size += b.length;
      if (size > MAX_OUTPUT) {
        child.kill('SIGKILL');
        finish({ code: -1, out: '' });
      } else chunks.push(b);
    });
    child.on('error', () => finish({ code: -1, out: '' }));
    child.on('close', (code) => finish({ code: code ?? -1, out: Buffer.concat(chunks).toString('utf8') }));
    if (input !== undefined) {
      child.stdin!.on('error', () => {}); // git may exit before reading everything
      child.stdin!.end(input);
    }
  });
}

export const COMMIT_ID = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;
