/**
 * The workspace's project namespace.
 *
 * 1. `cairn.scope.projectNamespace` when set (per workspace);
 * 2. else `projectNamespaceFor(first workspace folder)` from daemon/src/project.ts — the same rule
 *    `cairn mcp` uses: the git remote's repository name (of the nearest repository at or above the
 *    folder), else the folder name.
 * No folder open: no project namespace (writes go to `user`).
 *
 * This module is plain Node (no vscode import) so unit tests can run it directly.
 */
import { projectNamespaceFor } from '../../daemon/src/project';
import { namespaceProblem } from '../../daemon/src/protocol/namespace';

export interface ProjectNamespace {
  namespace: string;
  /** How it was derived: 'setting' | 'git-remote' | 'folder'. */
  source: 'setting' | 'git-remote' | 'folder';
}

export { gitConfigPath, remoteUrls, repoNameFromUrl } from '../../daemon/src/project';

export function deriveProjectNamespace(folder: string | undefined, setting: string): ProjectNamespace | null {
  if (setting && !namespaceProblem(setting)) return { namespace: setting, source: 'setting' };
  if (!folder) return null;
  return projectNamespaceFor(folder); // the same rule as `cairn mcp`
}
