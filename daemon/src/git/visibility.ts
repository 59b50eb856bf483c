/**
 * Which memories a reader's git checkout sees (docs/protocol.md#git-aware-memory). A memory version written on git
 * branch B at commit C is visible from HEAD H on branch R when:
 *
 * - B is the base branch (default: the repository's default branch), B is R, or B is marked merged; or
 * - B is not unmerged — B's tip T (its ref, else the last commit seen checked out on B) is an ancestor of H, or every
 *   commit of T since its merge base with H has its patch in H (rebased), or T's whole change since that merge base
 *   is one commit's patch in H (squashed) — and C has reached H: C is an ancestor of H (fast-forward or merge
 *   commit), C's patch is in H (rebase), or C is part of T's merged work.
 *
 * So a note written on a branch before its first commit (C is still on the base) stays hidden while the branch's
 * commits are unmerged. Every answer comes from git itself and is cached per (repository, HEAD): H's ancestors (one
 * `git rev-list`) and the patch ids of H's recent commits (one `git log -p | git patch-id`) are read once per HEAD,
 * then each unmerged branch costs a merge base and (cached per merge base and tip) its patch ids.
 */
import { COMMIT_ID, git } from './run';

export interface Pair {
  branch: string;
  commit: string;
}

export interface Reader {
  repo: string;
  head: string;
  branch?: string;
  base?: string;
}

/** What the oracle needs from the store: the last tip seen per branch and the branches marked merged. */
export interface TipBook {
  lastTip(branch: string): string | null;
  merged(): Set<string>;
}

const REFS_TTL_MS = 2000;
/** HEADs whose answers are kept per repository. */
const HEADS_KEPT = 16;
/** H's ancestors read at once; an older commit is asked about alone (`merge-base --is-ancestor`). */
const ANCESTOR_WINDOW = 50_000;
/** Patch equivalence (rebase, squash) is looked for among H's last PATCH_WINDOW non-merge commits. */
const PATCH_WINDOW = 1000;
const PARALLEL = 4;

interface HeadCache {
  ancestors: Promise<{ set: Set<string>; complete: boolean }> | null;
  ancestor: Map<string, Promise<boolean>>;
  patchIds: Promise<Set<string>> | null;
  unmerged: Map<string, Promise<boolean>>;
}

export class GitVisibility {
  private heads = new Map<string, HeadCache>();
  private refs = new Map<string, { at: number; refs: Promise<Map<string, string>> }>();
  private bases = new Map<string, Promise<string | null>>();
  /** Patch ids of a range's commits and of its whole diff, by repository and range (they never change). */
  private rangePatches = new Map<string, Promise<{ each: string[]; whole: string | null }>>();
  /** git processes run (for the benchmark and tests of the cache). */
  spawned = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** The pairs of `pairs` the reader must not see. */
  async hidden(reader: Reader, pairs: Pair[], book: TipBook): Promise<Pair[]> {
    if (pairs.length === 0) return [];
    const base = reader.base ?? (await this.defaultBase(reader.repo));
    const merged = book.merged();
    const byBranch = new Map<string, Pair[]>();
    for (const p of pairs) {
      if (p.branch === base || p.branch === reader.branch || merged.has(p.branch)) continue;
      const list = byBranch.get(p.branch);
      if (list) list.push(p);
      else byBranch.set(p.branch, [p]);
    }
    if (byBranch.size === 0) return [];
    const refs = await this.branchRefs(reader.repo);
    const tips = new Map<string, string | null>();
    for (const branch of byBranch.keys()) {
      const known = refs.get(branch) ?? book.lastTip(branch);
      tips.set(branch, known && COMMIT_ID.test(known) ? known : null);
    }
    await this.judgeTips(reader, [...new Set([...tips.values()].filter((t): t is string => t !== null))]);
    const out: Pair[] = [];
    await eachLimited([...byBranch], PARALLEL, async ([branch, list]) => {
      const tip = tips.get(branch) ?? null;
      if (tip && (await this.unmerged(reader, tip))) {
        out.push(...list);
        return;
      }
      for (const p of list) if (!(await this.reached(reader, p.commit, tip))) out.push(p);
    });
    return out;
  }

  /** Judge these branch tips against H together (a few git processes for all of them), for branchMerged to answer from. */
  async judgeAll(reader: Reader, tips: string[]): Promise<void> {
    await this.judgeTips(
      reader,
      tips.filter((t) => COMMIT_ID.test(t)),
    );
  }

  /**
   * Whether git branch B is merged into H by the same test as hidden(): marked merged, or its tip (`tip`: its ref as
   * the caller read it, else the last commit seen on it) an ancestor of H, rebased or squashed into H. A tip still at
   * `since` (where it was when a memory branch was bound to it) has no work of its own yet and is not merged.
   */
  async branchMerged(reader: Reader, branch: string, tip: string | null, book: TipBook, since: string | null): Promise<boolean> {
    if (book.merged().has(branch)) return true;
    const t = tip ?? book.lastTip(branch);
    if (!t || !COMMIT_ID.test(t) || t === since) return false;
    return !(await this.unmerged(reader, t));
  }

  private cache(reader: Reader): HeadCache {
    const key = `${reader.repo}\0${reader.head}`;
    let c = this.heads.get(key);
    if (c) {
      this.heads.delete(key); // most recently used last
      this.heads.set(key, c);
      return c;
    }
    c = { ancestors: null, ancestor: new Map(), patchIds: null, unmerged: new Map() };
    this.heads.set(key, c);
    if (this.heads.size > HEADS_KEPT) this.heads.delete(this.heads.keys().next().value!);
    return c;
  }

  /** Milliseconds spent waiting for git, by subcommand (for the benchmark). */
  readonly waited = new Map<string, number>();

  private async run(repo: string, args: string[], input?: string) {
    this.spawned++;
    const t0 = performance.now();
    const r = await git(repo, args, input);
    this.waited.set(args[0], (this.waited.get(args[0]) ?? 0) + performance.now() - t0);
    return r;
  }

  /** C reached H: an ancestor, its patch in H (rebase), or part of a merged tip's work (squash, rebase). */
  private async reached(reader: Reader, commit: string, tip: string | null): Promise<boolean> {
    if (!COMMIT_ID.test(commit)) return false;
    if (await this.isAncestor(reader, commit, reader.head)) return true;
    // Here the tip, when known, is merged (hidden() asked): C is part of its work when C is an ancestor of it.
    if (tip && tip !== commit && (await this.isAncestor(reader, commit, tip))) return true;
    // Rewritten since (rebase, squash): C's own work since its merge base with H is in H as patches.
    const mb = await this.mergeBase(reader, commit);
    if (!mb) return false;
    const heads = await this.headPatchIds(reader);
    const r = await this.patches(reader.repo, mb, commit);
    return (r.whole !== null && heads.has(r.whole)) || (r.each.length > 0 && r.each.every((id) => heads.has(id)));
  }

  /** B (by its tip) is not merged into H (judged by judgeTips, once per HEAD). */
  private unmerged(reader: Reader, tip: string): Promise<boolean> {
    const c = this.cache(reader);
    let r = c.unmerged.get(tip);
    if (!r) {
      r = this.judgeTips(reader, [tip]).then(() => c.unmerged.get(tip)!);
      c.unmerged.set(tip, r);
    }
    return r;
  }

  /**
   * Whether each tip is unmerged into H: not an ancestor, not every commit of its own (those H lacks) rebased into H
   * (their patch ids among H's), not squashed (its whole change since the merge base is one of H's patch ids). In a
   * few git processes for all tips at once: the tips' own commits with their parents (one rev-list, whose boundary
   * gives each merge base), their patch ids (one log -p and one patch-id), and their whole diffs (one diff-tree and
   * one patch-id).
   */
  private async judgeTips(reader: Reader, tips: string[]): Promise<void> {
    const c = this.cache(reader);
    const todo: string[] = [];
    for (const t of tips) {
      if (c.unmerged.has(t)) continue;
      if (await this.isAncestor(reader, t, reader.head)) c.unmerged.set(t, Promise.resolve(false));
      else todo.push(t);
    }
    if (todo.length === 0) return;
    let settle!: (m: Map<string, boolean>) => void;
    const verdicts = new Promise<Map<string, boolean>>((res) => (settle = res));
    for (const t of todo)
      c.unmerged.set(
        t,
        verdicts.then((m) => m.get(t) ?? true),
      );
    try {
      settle(await this.judge(reader, todo));
    } catch {
      settle(new Map());
    }
  }

  private async judge(reader: Reader, tips: string[]): Promise<Map<string, boolean>> {
    const out = new Map<string, boolean>();
    const graph = await this.run(reader.repo, ['rev-list', '--parents', ...tips, '--not', reader.head]);
    if (graph.code !== 0) return out; // an unknown tip: nothing says it was merged
    const parents = new Map<string, string[]>();
    for (const line of graph.out.split('\n')) {
      const [cm, ...ps] = line.split(' ');
      if (cm) parents.set(cm, ps);
    }
    // Each tip's own commits (reachable from it, not from H) and its merge base (where its first parents leave them).
    const own = new Map<string, string[]>();
    const bases = new Map<string, string>();
    for (const t of tips) {
      const seen = new Set<string>();
      const stack = [t];
      while (stack.length) {
        const x = stack.pop()!;
        if (seen.has(x) || !parents.has(x)) continue;
        seen.add(x);
        stack.push(...parents.get(x)!);
      }
      own.set(
        t,
        [...seen].filter((x) => (parents.get(x)?.length ?? 0) <= 1),
      ); // merges have no patch id
      let x = t;
      while (parents.has(x) && parents.get(x)!.length > 0 && parents.has(parents.get(x)![0])) x = parents.get(x)![0];
      const mb = parents.get(x)?.[0];
      if (mb) bases.set(t, mb);
    }
    const [each, heads] = await Promise.all([
      this.patchIdsByCommit(reader.repo, [
        'log',
        '-p',
        '--no-merges',
        '--no-color',
        '--no-ext-diff',
        '--format=commit %H',
        ...tips,
        '--not',
        reader.head,
      ]),
      this.headPatchIds(reader),
    ]);
    // Whole diffs since the merge base in one diff-tree run ("tip base" lines: each diff headed by its tip), so that
    // one patch-id run names them.
    const pairsIn = tips.filter((t) => bases.has(t)).map((t) => `${t} ${bases.get(t)}\n`);
    const diffs = pairsIn.length ? await this.run(reader.repo, ['diff-tree', '-p', '--stdin'], pairsIn.join('')) : null;
    const whole = diffs && diffs.code === 0 ? await this.patchIdsByCommit(reader.repo, null, diffs.out) : new Map<string, string>();
    for (const t of tips) {
      const w = whole.get(t);
      if (w && heads.has(w)) {
        out.set(t, false); // squashed
        continue;
      }
      const ids = own.get(t)!.map((x) => each.get(x));
      out.set(t, !(ids.length > 0 && ids.every((id) => id !== undefined && heads.has(id)))); // rebased: merged
    }
    return out;
  }

  /** commit → patch id, from `git log -p …` (logArgs) or from a patch text already made (input). */
  private async patchIdsByCommit(repo: string, logArgs: string[] | null, input?: string): Promise<Map<string, string>> {
    const text = logArgs ? await this.run(repo, logArgs) : { code: 0, out: input ?? '' };
    const m = new Map<string, string>();
    if (text.code !== 0 || text.out.length === 0) return m;
    const ids = await this.run(repo, ['patch-id', '--stable'], text.out);
    for (const line of ids.out.split('\n')) {
      const [pid, cm] = line.split(' ');
      if (pid && cm) m.set(cm, pid);
    }
    return m;
  }

  private async mergeBase(reader: Reader, commit: string): Promise<string | null> {
    const mb = await this.run(reader.repo, ['merge-base', commit, reader.head]);
    const id = mb.out.trim();
    return mb.code === 0 && COMMIT_ID.test(id) ? id : null;
  }

  private async isAncestor(reader: Reader, commit: string, of: string): Promise<boolean> {
    if (commit === of) return true;
    const c = this.cache(reader);
    if (of === reader.head) {
      c.ancestors ??= this.run(reader.repo, ['rev-list', `--max-count=${ANCESTOR_WINDOW}`, reader.head]).then((r) => {
        const list = r.code === 0 ? r.out.split('\n').filter((l) => l) : [];
        return { set: new Set(list), complete: r.code === 0 && list.length < ANCESTOR_WINDOW };
      });
      const a = await c.ancestors;
      if (a.set.has(commit)) return true;
      if (a.complete) return false;
    }
    const key = `${commit}\0${of}`;
    let r = c.ancestor.get(key);
    if (!r) {
      r = this.run(reader.repo, ['merge-base', '--is-ancestor', commit, of]).then((x) => x.code === 0);
      c.ancestor.set(key, r);
    }
    return r;
  }

  /** Patch ids of each commit of base..tip and of the range's whole diff (cached: a range never changes). */
  private patches(repo: string, base: string, tip: string): Promise<{ each: string[]; whole: string | null }> {
    const key = `${repo}\0${base}..${tip}`;
    let r = this.rangePatches.get(key);
    if (!r) {
      r = (async () => {
        const [each, diff] = await Promise.all([
          this.patchIdsOf(repo, ['log', '-p', '--no-merges', '--no-color', '--no-ext-diff', '--format=commit %H', `${base}..${tip}`]),
          this.run(repo, ['diff', '--no-color', '--no-ext-diff', base, tip]),
        ]);
        let whole: string | null = null;
        if (diff.code === 0 && diff.out.length > 0) {
          const id = await this.run(repo, ['patch-id', '--stable'], diff.out);
          whole = id.out.split(' ')[0] || null;
        }
        return { each: [...each], whole };
      })();
      this.rangePatches.set(key, r);
      if (this.rangePatches.size > 4096) this.rangePatches.delete(this.rangePatches.keys().next().value!);
    }
    return r;
  }

  /** Patch ids of H's last PATCH_WINDOW non-merge commits, once per HEAD. */
  private headPatchIds(reader: Reader): Promise<Set<string>> {
    const c = this.cache(reader);
    c.patchIds ??= this.patchIdsOf(reader.repo, [
      'log',
      '-p',
      '--no-merges',
      '--no-color',
      '--no-ext-diff',
      `--max-count=${PATCH_WINDOW}`,
      '--format=commit %H',
      reader.head,
    ]);
    return c.patchIds;
  }

  private async patchIdsOf(repo: string, logArgs: string[]): Promise<Set<string>> {
    const log = await this.run(repo, logArgs);
    if (log.code !== 0 || log.out.length === 0) return new Set();
    const ids = await this.run(repo, ['patch-id', '--stable'], log.out);
    return new Set(
      ids.out
        .split('\n')
        .map((l) => l.split(' ')[0])
        .filter((x) => x),
    );
  }

  /** Local branches and their tips (`git for-each-ref`), kept REFS_TTL_MS. */
  private branchRefs(repo: string): Promise<Map<string, string>> {
    const at = this.now();
    const known = this.refs.get(repo);
    if (known && at - known.at < REFS_TTL_MS) return known.refs;
    const refs = this.run(repo, ['for-each-ref', '--format=%(objectname) %(refname:short)', 'refs/heads']).then((r) => {
      const m = new Map<string, string>();
      for (const line of r.out.split('\n')) {
        const sp = line.indexOf(' ');
        if (sp > 0) m.set(line.slice(sp + 1), line.slice(0, sp));
      }
      return m;
    });
    this.refs.set(repo, { at, refs });
    return refs;
  }

  /** The repository's default branch: origin's HEAD, else `main`, else `master`; null when none exists. */
  defaultBase(repo: string): Promise<string | null> {
    let r = this.bases.get(repo);
    if (!r) {
      r = (async () => {
        const origin = await this.run(repo, ['symbolic-ref', '--quiet', '--short', 'refs/remotes/origin/HEAD']);
        if (origin.code === 0 && origin.out.trim().startsWith('origin/')) return origin.out.trim().slice('origin/'.length);
        const refs = await this.branchRefs(repo);
        return refs.has('main') ? 'main' : refs.has('master') ? 'master' : null;
      })();
      this.bases.set(repo, r);
    }
    return r;
  }
}

async function eachLimited<T>(items: T[], limit: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
