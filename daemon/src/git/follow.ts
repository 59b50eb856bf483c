/**
 * Memory branches that follow a git branch (docs/branches.md#following-a-git-branch): when a reader's checkout is on
 * its base branch and shows a followed git branch merged (git-aware memory's test: its tip an ancestor of HEAD, rebased
 * or squashed into it, or marked merged), the memory branch is merged into its base with branch/merge's rules, in one
 * transaction, by actor `git` with the reason "git branch X merged". A merge with conflicts is not applied: the branch
 * stays open and records how many conflicts wait for a decision (branch/list, status).
 */
import { CairnError } from '../protocol/errors';
import type { BranchCreateParams, BranchSyncItem, BranchSyncResult, GitContext } from '../protocol/types';
import { anyBinding, openBindings, recordGitConflicts } from '../store/branch-git';
import type { Branches } from '../store/branches';
import { lastTip, mergedBranches } from '../store/git-visibility';
import type { Store } from '../store/store';
import { COMMIT_ID, git } from './run';
import type { GitVisibility } from './visibility';

export class GitFollow {
  /** The last (repository, HEAD, bindings) checked by a read, so that reads of one checkout ask git once. */
  private checked = new Map<string, string>();
  private running = new Map<string, Promise<BranchSyncResult>>();

  constructor(
    private readonly store: Store,
    private readonly branches: Branches,
    private readonly oracle: GitVisibility,
  ) {}

  /**
   * branch/create with gitBranch: the commit a git branch with no work of its own yet is bound at (it must move past
   * it to count as merged, else its tip, still on the base, would look merged at once). With gitRepo, the tip (given
   * or read) is kept only when it is already on the repository's default branch; without, the given commit or the
   * last tip seen is kept.
   */
  async bindAt<P extends BranchCreateParams>(p: P): Promise<P> {
    if (p.gitBranch === undefined) return p;
    const { gitCommit: _, ...rest } = p;
    if (p.gitRepo === undefined) {
      const tip = p.gitCommit ?? lastTip(this.store.db, p.gitBranch);
      return tip ? ({ ...rest, gitCommit: tip } as P) : p;
    }
    const tip = p.gitCommit ?? (await this.tipOf(p.gitRepo, p.gitBranch));
    const base = await this.oracle.defaultBase(p.gitRepo);
    const onBase =
      tip !== null && base !== null && (await git(p.gitRepo, ['merge-base', '--is-ancestor', tip, `refs/heads/${base}`])).code === 0;
    return (onBase ? { ...rest, gitCommit: tip } : rest) as P;
  }

  /** On a read with a git context: sync once per checkout and bindings; never fails the read. */
  async onRead(ctx: GitContext): Promise<void> {
    const db = this.store.db;
    if (db.readonly || !anyBinding(db)) return;
    const state = JSON.stringify([ctx.head, ctx.branch ?? null, ctx.base ?? null, openBindings(db, ctx.repo), [...mergedBranches(db)]]);
    if (this.checked.get(ctx.repo) === state) return;
    try {
      await this.sync(ctx);
    } catch {
      /* the read goes on (not asked again for this state); branch/sync reports the error */
    }
    this.checked.set(ctx.repo, state);
    if (this.checked.size > 64) this.checked.delete(this.checked.keys().next().value!);
  }

  /** branch/sync: check every open branch following a git branch of this repository; merge those merged. */
  sync(ctx: GitContext, actor = 'git'): Promise<BranchSyncResult> {
    const key = `${ctx.repo}\0${ctx.head}`;
    let r = this.running.get(key);
    if (!r) {
      r = this.check(ctx, actor).finally(() => this.running.delete(key));
      this.running.set(key, r);
    }
    return r;
  }

  private async check(ctx: GitContext, actor: string): Promise<BranchSyncResult> {
    const none: BranchSyncResult = { onBase: false, merged: [], conflicted: [] };
    const bindings = openBindings(this.store.db, ctx.repo);
    const head = await git(ctx.repo, ['rev-parse', '--verify', '--quiet', `${ctx.head}^{commit}`]);
    if (head.code !== 0) {
      const repo = await git(ctx.repo, ['rev-parse', '--git-dir']);
      if (repo.code !== 0) throw new CairnError('InvalidParams', `${ctx.repo} is not a git repository`, { field: 'repo' });
      throw new CairnError('InvalidParams', `commit ${ctx.head} is not in ${ctx.repo}`, { field: 'head' });
    }
    const base = ctx.base ?? (await this.oracle.defaultBase(ctx.repo));
    if (base === null) return none;
    const onBase = ctx.branch !== undefined ? ctx.branch === base : (await this.tipOf(ctx.repo, base)) === ctx.head;
    if (!onBase) return none;
    const out: BranchSyncResult = { onBase: true, merged: [], conflicted: [] };
    const db = this.store.db;
    const book = { lastTip: (b: string) => lastTip(db, b), merged: () => mergedBranches(db) };
    const reader = { ...ctx, branch: base };
    // Every bound branch's tip in one git process, judged together: a few git processes per HEAD, not a few per binding.
    const tips = await this.localTips(ctx.repo);
    await this.oracle.judgeAll(reader, [
      ...new Set(bindings.flatMap((b) => (b.gitBranch !== base && tips.has(b.gitBranch) ? [tips.get(b.gitBranch)!] : []))),
    ]);
    for (const b of bindings) {
      if (b.gitBranch === base) continue;
      const tip = tips.get(b.gitBranch) ?? null;
      if (!(await this.oracle.branchMerged(reader, b.gitBranch, tip, book, b.gitCommit))) continue;
      const item: BranchSyncItem = { name: b.name, gitBranch: b.gitBranch };
      let r;
      try {
        r = this.branches.merge({ name: b.name, actor, reason: `git branch ${b.gitBranch} merged` });
      } catch (e) {
        if (e instanceof CairnError && e.codeName === 'NotFound') continue; // merged or discarded meanwhile
        throw e;
      }
      if (r.merged) out.merged.push({ ...item, applied: r.applied });
      else {
        recordGitConflicts(db, b.name, r.conflicts.length);
        out.conflicted.push({ ...item, conflicts: r.conflicts.length });
      }
    }
    return out;
  }

  /** Every local branch's tip, read now (not cached: a merge has just moved them). */
  private async localTips(repo: string): Promise<Map<string, string>> {
    const r = await git(repo, ['for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads/']);
    const out = new Map<string, string>();
    if (r.code !== 0) return out;
    for (const line of r.out.split('\n')) {
      const [id, ref] = [line.slice(0, line.indexOf(' ')), line.slice(line.indexOf(' ') + 1)];
      if (COMMIT_ID.test(id) && ref.startsWith('refs/heads/')) out.set(ref.slice('refs/heads/'.length), id);
    }
    return out;
  }

  /** A local branch's tip, read now (not cached: a merge has just moved it). */
  private async tipOf(repo: string, branch: string): Promise<string | null> {
    const r = await git(repo, ['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`]);
    const id = r.out.trim();
    return r.code === 0 && COMMIT_ID.test(id) ? id : null;
  }
}
