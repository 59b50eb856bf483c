/**
 * The project namespace of a folder — one rule for the VS Code extension and
 * the MCP server: `project.<slug>` of the repository name in the git
 * remote URL (`origin` first), read from .git/config without running git, of
 * the nearest repository at or above the folder; else of the folder's name
 * (the repository's top level when inside one). Pure Node: the extension host
 * may load it.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { slugify } from './protocol/namespace';

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
export function gitConfigPath(dir: string): string | null {
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
    const cfg = gitConfigPath(top);
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
