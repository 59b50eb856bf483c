/**
 * The workspace's project namespace.
 *
 * 1. `cairn.scope.projectNamespace` when set (per workspace);
 * 2. `project.<slug>` from the repository name in the git remote URL of the first workspace folder
 *    (`origin` preferred, else the first remote), read from .git/config without running git;
 * 3. `project.<slug>` from the folder name.
 * No folder open: no project namespace (writes go to `user`).
 *
 * This module is plain Node (no vscode import) so unit tests can run it directly.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { namespaceProblem, slugify } from '../../daemon/src/protocol/namespace';

export interface ProjectNamespace {
  namespace: string;
  /** How it was derived: 'setting' | 'git-remote' | 'folder'. */
  source: 'setting' | 'git-remote' | 'folder';
}

/** The remote URLs in a git config file, `origin` first. */
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
  const trimmed = url.replace(/[\\/]+$/, '');
  const m = /([^/:\\]+?)(?:\.git)?$/.exec(trimmed);
  return m && m[1] ? m[1] : null;
}

/** Locate the git config of a working tree (handles `.git` files of worktrees and submodules). */
export function gitConfigPath(folder: string): string | null {
  const dotGit = path.join(folder, '.git');
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
    const gitDir = path.resolve(folder, m[1].trim());
    // A worktree's gitdir is <main>/.git/worktrees/<name>; its config lives in the common dir.
    const common = path.join(gitDir, 'commondir');
    const base = fs.existsSync(common) ? path.resolve(gitDir, fs.readFileSync(common, 'utf8').trim()) : gitDir;
    return path.join(base, 'config');
  } catch {
    return null;
  }
}

export function deriveProjectNamespace(folder: string | undefined, setting: string): ProjectNamespace | null {
  if (setting && !namespaceProblem(setting)) return { namespace: setting, source: 'setting' };
  if (!folder) return null;
  const cfg = gitConfigPath(folder);
  if (cfg) {
    try {
      for (const url of remoteUrls(fs.readFileSync(cfg, 'utf8'))) {
        const name = repoNameFromUrl(url);
        if (name) return { namespace: `project.${slugify(name)}`, source: 'git-remote' };
      }
    } catch {
      // unreadable config: fall back to the folder name
    }
  }
  return { namespace: `project.${slugify(path.basename(folder))}`, source: 'folder' };
}
