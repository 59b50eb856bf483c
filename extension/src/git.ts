/**
 * Git-aware memory in the editor (docs/protocol.md#git-aware-memory): the workspace repository's checkout, read from
 * VS Code's git extension (vscode.git, API 1). Reads (the tree, search, the gutter, injection) carry it as `git`, so
 * memories written on unmerged git branches stay out; writes to the project namespace record the branch and commit.
 * A checkout of another branch (or a new commit) fires `onDidChange`: the tree, the status bar and the gutter reload
 * with no window reload. Off with `cairn.git.visibility`; outside a repository nothing is sent. With
 * `cairn.branches.followGit`, a HEAD change first asks the daemon to merge the memory branches that follow a git
 * branch this checkout shows merged (branch/sync), and new memory branches follow the git branch checked out.
 */
import * as vscode from 'vscode';
import { isUnder } from '../../daemon/src/protocol/namespace';
import type { GitContext, GitWrite } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';

/** The parts of the git extension's API read here. */
interface GitRepository {
  rootUri: vscode.Uri;
  state: { HEAD?: { commit?: string; name?: string }; onDidChange: vscode.Event<void> };
}
interface GitApi {
  repositories: GitRepository[];
  onDidOpenRepository: vscode.Event<GitRepository>;
}

const COMMIT = /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/;

export interface Checkout {
  repo: string;
  head: string;
  branch?: string;
}

export class GitWatch implements vscode.Disposable {
  private current: Checkout | undefined;
  private readonly emitter = new vscode.EventEmitter<Checkout | undefined>();
  /** Fired when the workspace repository's HEAD commit or branch changes (a checkout, a commit, a pull). */
  readonly onDidChange = this.emitter.event;
  private readonly disposables: vscode.Disposable[] = [this.emitter];
  /** Resolves once the git extension was asked (whether or not it is there). */
  readonly ready: Promise<void>;

  constructor(private readonly ctx: Ctx) {
    this.ready = this.start();
    this.disposables.push(
      vscode.workspace.onDidChangeConfiguration((e) => {
        if (e.affectsConfiguration('cairn.git')) this.emitter.fire(this.current);
      }),
    );
  }

  /** The checkout in view, when git-aware memory is on and the workspace is in a repository. */
  get checkout(): Checkout | undefined {
    return this.ctx.config.get('cairn.git.visibility') ? this.current : undefined;
  }

  /** The `git` a read carries (spread into params). */
  read(): { git?: GitContext } {
    const c = this.checkout;
    if (!c) return {};
    const base = this.ctx.config.get('cairn.git.baseBranch');
    const ns = this.ctx.project?.namespace;
    return { git: { ...c, ...(base ? { base } : {}), ...(ns ? { namespace: ns } : {}) } };
  }

  /** The `git` a write to `namespace` records: only the project namespace (or under it), only on a branch. */
  write(namespace: string): { git?: GitWrite } {
    const c = this.checkout;
    const ns = this.ctx.project?.namespace;
    if (!c?.branch || !ns || !isUnder(namespace, ns)) return {};
    return { git: { branch: c.branch, commit: c.head } };
  }

  /** What a new memory branch follows (`cairn.branches.followGit`, off by default): the git branch checked out. */
  follow(): { gitBranch?: string; gitRepo?: string } {
    const c = this.current;
    if (!this.ctx.config.get('cairn.branches.followGit') || !c?.branch) return {};
    return { gitBranch: c.branch, gitRepo: c.repo };
  }

  /** On a HEAD change with followGit on: merge the memory branches whose git branch this checkout shows merged. */
  private async sync(c: Checkout): Promise<void> {
    const base = this.ctx.config.get('cairn.git.baseBranch');
    try {
      const r = await this.ctx.client.request('branchSync', { ...c, ...(base ? { base } : {}) });
      for (const m of r.merged) this.ctx.output.info(`git branch ${m.gitBranch} merged: merged memory branch ${m.name}`);
      for (const m of r.conflicted)
        this.ctx.output.warn(`git branch ${m.gitBranch} merged, memory merge of ${m.name} has ${m.conflicts} conflict(s)`);
    } catch (e) {
      this.ctx.output.info(`branch sync: ${e instanceof Error ? e.message : String(e)}`);
    }
  }

  private async start(): Promise<void> {
    try {
      const ext = vscode.extensions.getExtension<{ getAPI(v: 1): GitApi }>('vscode.git');
      if (!ext) return;
      const api = (ext.isActive ? ext.exports : await ext.activate()).getAPI(1);
      const watch = (repo: GitRepository) => {
        this.disposables.push(repo.state.onDidChange(() => this.update(api)));
        this.update(api);
      };
      api.repositories.forEach(watch);
      this.disposables.push(api.onDidOpenRepository(watch));
    } catch (e) {
      this.ctx.output.info(`git-aware memory: no git extension (${e instanceof Error ? e.message : String(e)})`);
    }
  }

  /** The repository holding the first workspace folder (the deepest root that contains it). */
  private update(api: GitApi): void {
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri;
    if (!folder || folder.scheme !== 'file') return;
    const f = folder.fsPath;
    const repo = api.repositories
      .filter((r) => f === r.rootUri.fsPath || f.startsWith(r.rootUri.fsPath.replace(/[\\/]$/, '') + '/'))
      .sort((a, b) => b.rootUri.fsPath.length - a.rootUri.fsPath.length)[0];
    const head = repo?.state.HEAD?.commit;
    const next: Checkout | undefined =
      repo && head && COMMIT.test(head)
        ? { repo: repo.rootUri.fsPath, head, ...(repo.state.HEAD?.name ? { branch: repo.state.HEAD.name } : {}) }
        : undefined;
    const before = this.current;
    if (before?.repo === next?.repo && before?.head === next?.head && before?.branch === next?.branch) return;
    this.current = next;
    this.ctx.output.info(`git-aware memory: ${next ? `${next.branch ?? 'detached'} @ ${next.head.slice(0, 8)}` : 'no repository'}`);
    // With followGit, the views reload after the sync, so that memories merged by it are in view.
    if (next && this.ctx.config.get('cairn.branches.followGit')) void this.sync(next).finally(() => this.emitter.fire(next));
    else this.emitter.fire(next);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
