/**
 * Which memories a reader's git checkout sees (docs/protocol.md#git-aware-memory). A memory version written on git
 * branch B at commit C is visible from HEAD H on branch R when:
 *
 * - B is the base branch (default: the repository's default branch), B is R, or B is marked merged; or
 * - C has reached H — C is an ancestor of H (fast-forward or merge commit), a commit with C's patch is (rebase), or
 *   B's tip was squash-merged into H — and B is not unmerged: B's tip T (its ref, else the last commit seen checked
 *   out on B) is an ancestor of H, every commit of T missing from H has its patch in H (`git cherry`: rebased), or
 *   the whole of T since the merge base is one patch in H (squash).
 *
 * So a note written on a branch before its first commit (C is still on the base) stays hidden while the branch's
 * commits are unmerged. Every answer comes from git itself and is cached per (repository, HEAD): a HEAD that does
 * not move costs nothing but the refs' listing (kept 2 s).
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
/** Patch checks look at most this many commits of H since the merge base (older history: no patch match). */
const PATCH_WINDOW = 2000;
const PARALLEL = 4;

interface HeadCache {
  ancestor: Map<string, Promise<boolean>>;
  patchIds: Map<string, Promise<Set<string>>>;
  unmerged: Map<string, Promise<boolean>>;
  reached: Map<string, Promise<boolean>>;
}

export class GitVisibility {
  private heads = new Map<string, HeadCache>();
  private refs = new Map<string, { at: number; refs: Promise<Map<string, string>> }>();
  private bases = new Map<string, Promise<string | null>>();
  /** git processes run (for the benchmark and tests of the cache). */
  spawned = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** The pairs of `pairs` the reader must not see. */
  async hidden(reader: Reader, pairs: Pair[], book: TipBook): Promise<Pair[]> {
    if (pairs.length === 0) return [];
    const base = reader.base ?? (await this.defaultBase(reader.repo));
    const merged = book.merged();
    const todo = pairs.filter((p) => p.branch !== base && p.branch !== reader.branch && !merged.has(p.branch));
    if (todo.length === 0) return [];
    const refs = await this.branchRefs(reader.repo);
    const out: Pair[] = [];
    await eachLimited(todo, PARALLEL, async (p) => {
      const tip = refs.get(p.branch) ?? book.lastTip(p.branch);
      if (!(await this.visible(reader, p, tip))) out.push(p);
    });
    return out;
  }

  private cache(reader: Reader): HeadCache {
    const key = `${reader.repo}\0${reader.head}`;
    let c = this.heads.get(key);
    if (c) {
      this.heads.delete(key); // most recently used last
      this.heads.set(key, c);
      return c;
    }
    c = { ancestor: new Map(), patchIds: new Map(), unmerged: new Map(), reached: new Map() };
    this.heads.set(key, c);
    if (this.heads.size > HEADS_KEPT) this.heads.delete(this.heads.keys().next().value!);
    return c;
  }

  private run(repo: string, args: string[], input?: string) {
    this.spawned++;
    return git(repo, args, input);
  }

  private async visible(reader: Reader, p: Pair, tip: string | null): Promise<boolean> {
    if (!COMMIT_ID.test(p.commit)) return false;
    const usableTip = tip && COMMIT_ID.test(tip) ? tip : null;
    if (!(await this.reached(reader, p.commit, usableTip))) return false;
    return usableTip === null || !(await this.unmerged(reader, usableTip));
  }

  /** C reached H: an ancestor, its patch in H (rebase), or part of a tip squash-merged into H. */
  private reached(reader: Reader, commit: string, tip: string | null): Promise<boolean> {
    const c = this.cache(reader);
    const key = `${commit}\0${tip ?? ''}`;
    let r = c.reached.get(key);
    if (!r) {
      r = (async () => {
        if (await this.isAncestor(reader, commit, reader.head)) return true;
        if (await this.patchInHead(reader, commit)) return true;
        // Squashed: the branch's whole work since the merge base (from its tip when C is on the way to it) is one patch in H.
        if (tip && tip !== commit && (await this.isAncestor(reader, commit, tip))) return this.squashed(reader, tip);
        return this.squashed(reader, commit);
      })();
      c.reached.set(key, r);
    }
    return r;
  }

  /** B (by its tip) is not merged into H: not an ancestor, not every commit rebased into H, not squashed into H. */
  private unmerged(reader: Reader, tip: string): Promise<boolean> {
    const c = this.cache(reader);
    let r = c.unmerged.get(tip);
    if (!r) {
      r = (async () => {
        if (await this.isAncestor(reader, tip, reader.head)) return false;
        const cherry = await this.run(reader.repo, ['cherry', reader.head, tip]);
        if (cherry.code !== 0) return true; // an unknown tip: nothing says it was merged
        const lines = cherry.out.split('\n').filter((l) => l.length > 0);
        if (lines.length > 0 && lines.every((l) => l.startsWith('-'))) return false;
        return !(await this.squashed(reader, tip));
      })();
      c.unmerged.set(tip, r);
    }
    return r;
  }

  private isAncestor(reader: Reader, commit: string, of: string): Promise<boolean> {
    if (commit === of) return Promise.resolve(true);
    const c = this.cache(reader);
    const key = `${commit}\0${of}`;
    let r = c.ancestor.get(key);
    if (!r) {
      r = this.run(reader.repo, ['merge-base', '--is-ancestor', commit, of]).then((x) => x.code === 0);
      c.ancestor.set(key, r);
    }
    return r;
  }

  /** A commit's own patch is in H (`git cherry H C C^`: "-" when an equivalent commit is in H). */
  private async patchInHead(reader: Reader, commit: string): Promise<boolean> {
    const parent = await this.run(reader.repo, ['rev-parse', '--verify', '--quiet', `${commit}^`]);
    const args = parent.code === 0 ? ['cherry', reader.head, commit, parent.out.trim()] : null;
    if (!args) return false;
    const r = await this.run(reader.repo, args);
    return r.code === 0 && r.out.split('\n').some((l) => l.startsWith('- '));
  }

  /** The whole of `tip` since its merge base with H is one commit's patch in H (a squash merge). */
  private async squashed(reader: Reader, tip: string): Promise<boolean> {
    const mb = await this.run(reader.repo, ['merge-base', tip, reader.head]);
    if (mb.code !== 0) return false;
    const base = mb.out.trim();
    if (base === tip) return true; // an ancestor: merged
    const diff = await this.run(reader.repo, ['diff', '--no-color', '--no-ext-diff', base, tip]);
    if (diff.code !== 0 || diff.out.length === 0) return false;
    const id = await this.run(reader.repo, ['patch-id', '--stable'], diff.out);
    const pid = id.out.split(' ')[0];
    if (!pid) return false;
    return (await this.headPatchIds(reader, base)).has(pid);
  }

  /** Patch ids of the commits of H since `base` (at most PATCH_WINDOW of them), cached per HEAD. */
  private headPatchIds(reader: Reader, base: string): Promise<Set<string>> {
    const c = this.cache(reader);
    let r = c.patchIds.get(base);
    if (!r) {
      r = (async () => {
        const log = await this.run(reader.repo, [
          'log',
          '-p',
          '--no-merges',
          '--no-color',
          '--no-ext-diff',
          `--max-count=${PATCH_WINDOW}`,
          '--format=commit %H',
          `${base}..${reader.head}`,
        ]);
        if (log.code !== 0 || log.out.length === 0) return new Set<string>();
        const ids = await this.run(reader.repo, ['patch-id', '--stable'], log.out);
        return new Set(
          ids.out
            .split('\n')
            .map((l) => l.split(' ')[0])
            .filter((x) => x),
        );
      })();
      c.patchIds.set(base, r);
    }
    return r;
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
