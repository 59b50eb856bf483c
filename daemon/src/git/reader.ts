/**
 * A reader's git context applied to the local store (docs/protocol.md#git-aware-memory): the rowids of the memories
 * its checkout must not see, which every retrieval arm leaves out before ranking (search's `exclude`, list's WHERE),
 * and the one-memory check of get. The store holds the records (store/git-visibility.ts); git decides (visibility.ts).
 */
import { CairnError } from '../protocol/errors';
import type { GitContext, Scope } from '../protocol/types';
import type { Store } from '../store/store';
import { hiddenRowids, lastTip, mergedBranches, noteTip, pairOf, recordedPairs, type RecordedPair } from '../store/git-visibility';
import { projectNamespaceFor } from '../project';
import { COMMIT_ID, git } from './run';
import { GitVisibility } from './visibility';

/** The namespace subtree a checkout's rule covers: the context's `namespace`, else the repository's project namespace. */
function projectOf(ctx: GitContext): string {
  return ctx.namespace ?? projectNamespaceFor(ctx.repo).namespace;
}

const CHECKOUT_TTL_MS = 1000;

/** The repository holding `dir`: top folder, HEAD and branch, from git (null outside one or without commits). */
async function readCheckout(dir: string): Promise<GitContext | null> {
  const r = await git(dir, ['rev-parse', '--show-toplevel', 'HEAD', '--symbolic-full-name', 'HEAD']);
  if (r.code !== 0) return null;
  const [repo, head, ref] = r.out.trim().split('\n');
  if (!repo || !head || !COMMIT_ID.test(head)) return null;
  return { repo, head, ...(ref?.startsWith('refs/heads/') ? { branch: ref.slice('refs/heads/'.length) } : {}) };
}

/** SQL answers (pairs of a scope, hidden rowids) kept, least recently made dropped first. */
const MEMOS_KEPT = 64;

export class GitReader {
  readonly oracle: GitVisibility;

  constructor(private readonly store: Store) {
    this.oracle = new GitVisibility(() => store.now());
  }

  private book() {
    const db = this.store.db;
    return { lastTip: (b: string) => lastTip(db, b), merged: () => mergedBranches(db) };
  }

  /** Called with each reader's git context before it is judged (memory branches that follow git: git/follow.ts). */
  onContext?: (ctx: GitContext) => Promise<void>;

  private async hiddenPairs(ctx: GitContext, pairs: RecordedPair[]): Promise<RecordedPair[]> {
    if (ctx.branch !== undefined) noteTip(this.store.db, ctx.branch, ctx.head, this.store.now());
    return this.oracle.hidden(ctx, pairs, this.book());
  }

  /** Rowids hidden from this reader inside `scope`; null without a git context (nothing hidden). */
  async hidden(ctx: GitContext | undefined, scope: Scope | undefined): Promise<Set<number> | null> {
    if (!ctx) return null;
    await this.onContext?.(ctx);
    const db = this.store.db;
    const root = projectOf(ctx);
    // The SQL answers depend only on the memories (the change-log position), the scope and the root: kept per key.
    const key = `${this.store.position()}\0${root}\0${JSON.stringify(scope ?? null)}`;
    const pairs = this.memo(key, () => recordedPairs(db, scope, root));
    const hidden = await this.hiddenPairs(ctx, pairs);
    if (hidden.length === 0) return null;
    const which = hidden
      .map((p) => `${p.branch}\0${p.commit}`)
      .sort()
      .join('\0');
    return this.memo(`${key}\0${which}`, () => hiddenRowids(db, scope, root, hidden));
  }

  private memos = new Map<string, unknown>();
  private memo<T>(key: string, fn: () => T): T {
    if (this.memos.has(key)) return this.memos.get(key) as T;
    const v = fn();
    this.memos.set(key, v);
    if (this.memos.size > MEMOS_KEPT) this.memos.delete(this.memos.keys().next().value!);
    return v;
  }

  /**
   * For hovers: which memories the checkout holding `dir` hides inside `scope` (its HEAD and branch read with git,
   * kept 1 s per folder), as a test on memory ids; null outside a repository or when nothing is hidden.
   */
  async hiddenIn(dir: string, scope: Scope): Promise<((memoryId: string) => boolean) | null> {
    const at = this.store.now();
    let known = this.checkouts.get(dir);
    if (!known || at - known.at > CHECKOUT_TTL_MS) {
      known = { at, checkout: readCheckout(dir) };
      this.checkouts.set(dir, known);
      if (this.checkouts.size > 256) this.checkouts.delete(this.checkouts.keys().next().value!);
    }
    const c = await known.checkout;
    if (!c) return null;
    const rowids = await this.hidden({ ...c, ...(scope.root ? { namespace: scope.root } : {}) }, scope);
    if (!rowids) return null;
    return (id) => {
      const r = this.store.rowidOf(id);
      return r !== undefined && rowids.has(r);
    };
  }

  private checkouts = new Map<string, { at: number; checkout: Promise<GitContext | null> }>();

  /** Refuse (NotFound) one memory its version's git branch hides from this reader. */
  async checkOne(ctx: GitContext | undefined, target: { id: string } | { namespace: string; key: string }): Promise<void> {
    if (!ctx) return;
    await this.onContext?.(ctx);
    const pair = pairOf(this.store.db, target, projectOf(ctx));
    if (!pair) return;
    if ((await this.hiddenPairs(ctx, [pair])).length > 0) {
      const name = 'id' in target ? target.id : `${target.namespace}/${target.key}`;
      throw new CairnError('NotFound', `memory ${name} was written on git branch ${pair.branch}, which is not merged into HEAD`, {
        field: 'id' in target ? 'id' : 'key',
        gitBranch: pair.branch,
      });
    }
  }
}
