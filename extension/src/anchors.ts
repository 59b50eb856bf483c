/**
 * Anchors that follow the code, from the editor's side. The daemon re-checks the anchors of documents as they are
 * opened and saved (server/lsp.ts); this asks it to re-check every anchor under each workspace folder against the files
 * on disk (`anchors/check`: code moved, files renamed with git, code gone) when the daemon connects and whenever a
 * repository's HEAD changes (a commit, a checkout, a pull), read from VS Code's git extension when it is there.
 */
import * as vscode from 'vscode';
import type { Scope } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';

/** The parts of the git extension's API (vscode.git, API version 1) read here. */
interface GitRepository {
  rootUri: vscode.Uri;
  state: { HEAD?: { commit?: string }; onDidChange: vscode.Event<void> };
}
interface GitApi {
  repositories: GitRepository[];
  onDidOpenRepository: vscode.Event<GitRepository>;
}

export function registerAnchors(c: Ctx): void {
  let running: Promise<void> = Promise.resolve();
  /** Checks run one after another (a burst of HEAD changes queues, never overlaps). */
  const check = (why: string) => {
    running = running.then(() => checkFolders(c, why)).catch(() => {});
  };
  c.push(c.client.onDidConnect(() => check('connected')));
  void watchHeads(c, check);
}

/** The project's memories only: the `user` tree's relative paths may name files of any project. */
function scopeOf(c: Ctx): Scope | undefined {
  const ns = c.project?.namespace;
  return ns ? { root: ns, includeUser: false } : undefined;
}

async function checkFolders(c: Ctx, why: string): Promise<void> {
  for (const folder of vscode.workspace.workspaceFolders ?? []) {
    if (folder.uri.scheme !== 'file') continue;
    try {
      const scope = scopeOf(c);
      const r = await c.client.request('anchorsCheck', { root: folder.uri.fsPath, ...(scope ? { scope } : {}) }, 60_000);
      if (r.relocated || r.stale || r.fingerprinted)
        c.output.info(
          `anchors (${why}): ${r.checked} checked, ${r.relocated} re-located, ${r.stale} stale (sent to review), ${r.fingerprinted} fingerprinted`,
        );
    } catch (e) {
      c.output.warn(`anchors/check ${folder.uri.fsPath}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}

async function watchHeads(c: Ctx, check: (why: string) => void): Promise<void> {
  try {
    const ext = vscode.extensions.getExtension<{ getAPI(v: 1): GitApi }>('vscode.git');
    if (!ext) return;
    const api = (ext.isActive ? ext.exports : await ext.activate()).getAPI(1);
    const heads = new Map<string, string | undefined>();
    const watch = (repo: GitRepository) => {
      const key = repo.rootUri.toString();
      heads.set(key, repo.state.HEAD?.commit);
      c.push(
        repo.state.onDidChange(() => {
          const head = repo.state.HEAD?.commit;
          if (head === heads.get(key)) return;
          heads.set(key, head);
          check(`HEAD ${head?.slice(0, 8) ?? 'changed'}`);
        }),
      );
    };
    api.repositories.forEach(watch);
    c.push(api.onDidOpenRepository(watch));
  } catch {
    /* no git extension (or an incompatible one): anchors are still checked on connect, open and save */
  }
}
