/**
 * `cairn branch create|list|diff|merge|discard`: memory branches (docs/branches.md) through the store's daemon.
 * Reads and writes on a branch are the ordinary commands with `--branch NAME`. `cairn branch merged NAME` marks a git
 * branch merged for git-aware memory (a squash merge git cannot recognise; docs/protocol.md#git-aware-memory).
 */
import { Requests } from '../protocol/methods';
import type { BranchChange, BranchResolution } from '../protocol/types';
import type { CairnClient } from '../client/socket-client';
import { followGitFor, gitCheckout } from '../git/checkout';
import { UsageError } from './main';

const USAGE =
  'usage: cairn branch create NAME ROOT [--from BRANCH] | list [--all] | diff NAME | merge NAME [--take NS/KEY=branch|base]... | discard NAME | merged GIT-BRANCH [--undo] | sync';

/** `NS/KEY=branch|base` (a namespace has no `/`; the key is everything up to the last `=`). */
export function parseTake(s: string): BranchResolution {
  const slash = s.indexOf('/');
  const eq = s.lastIndexOf('=');
  const take = s.slice(eq + 1);
  if (slash <= 0 || eq <= slash + 1 || (take !== 'branch' && take !== 'base'))
    throw new UsageError(`--take wants NS/KEY=branch or NS/KEY=base, got ${JSON.stringify(s)}`);
  return { namespace: s.slice(0, slash), key: s.slice(slash + 1, eq), take };
}

function describe(c: BranchChange): string {
  const base = c.baseVersion === null ? 'new' : `from base v${c.baseVersion}`;
  const conflict = c.conflict
    ? `  CONFLICT: base is now ${c.base ? `v${c.base.version}${c.base.deletedAt ? ' (deleted)' : ''}` : 'gone'}`
    : '';
  return `${c.change.padEnd(8)} ${c.namespace}/${c.key} (${base})${conflict}`;
}

export async function runBranch(
  c: CairnClient,
  pos: string[],
  o: { json: boolean; actor: string; all?: boolean; from?: string; take?: string[]; reason?: string; undo?: boolean },
  out: (s: string) => void,
): Promise<number> {
  const [sub, ...args] = pos;
  const emit = (v: unknown, human: () => void) => (o.json ? out(JSON.stringify(v, null, 2)) : human());
  const one = () => {
    if (args.length !== 1) throw new UsageError(USAGE);
    return args[0];
  };
  switch (sub) {
    case 'merged': {
      const r = await c.call(Requests.gitMarkMerged, { branch: one(), actor: o.actor, ...(o.undo ? { merged: false } : {}) });
      emit(r, () =>
        out(
          r.merged
            ? `git branch ${r.branch} marked merged: its memories are visible on every branch${r.wasMerged ? ' (it already was)' : ''}`
            : `git branch ${r.branch} no longer marked merged${r.wasMerged ? '' : ' (it was not)'}`,
        ),
      );
      return 0;
    }
    case 'sync': {
      if (args.length !== 0) throw new UsageError(USAGE);
      const g = gitCheckout(process.cwd());
      if (!g) throw new UsageError('cairn branch sync runs in a git repository with a commit');
      const r = await c.call(Requests.branchSync, { ...g, actor: o.actor });
      emit(r, () => {
        if (!r.onBase) out('not on the base branch: nothing to check');
        else if (r.merged.length + r.conflicted.length === 0) out('no followed git branch is merged');
        for (const m of r.merged) out(`git branch ${m.gitBranch} merged: merged branch ${m.name} (${m.applied} change(s))`);
        for (const m of r.conflicted)
          out(`git branch ${m.gitBranch} merged, memory merge has ${m.conflicts} conflict(s): cairn branch merge ${m.name} --take ...`);
      });
      return r.conflicted.length ? 1 : 0;
    }
    case 'create': {
      if (args.length !== 2) throw new UsageError(USAGE);
      const b = await c.call(Requests.branchCreate, {
        name: args[0],
        root: args[1],
        actor: o.actor,
        ...(o.from ? { from: o.from } : {}),
        ...followGitFor(),
      });
      const follows = b.gitBranch !== undefined ? `, following git branch ${b.gitBranch}` : '';
      emit(b, () => out(`created branch ${b.name} of ${b.root}${b.from ? ` from ${b.from}` : ''} at position ${b.forkPosition}${follows}`));
      return 0;
    }
    case 'list': {
      const r = await c.call(Requests.branchList, o.all ? { all: true } : {});
      emit(r, () => {
        if (r.branches.length === 0) out('no branches');
        for (const b of r.branches) {
          const g = b.gitBranch === undefined ? '' : `  follows git ${b.gitBranch}`;
          const n = b.gitConflicts !== undefined ? ` (git branch merged, memory merge has ${b.gitConflicts} conflicts)` : '';
          out(`${b.name}  ${b.root}  ${b.status}  ${b.writes} writes  created ${b.createdAt} by ${b.createdBy}${g}${n}`);
        }
      });
      return 0;
    }
    case 'diff': {
      const r = await c.call(Requests.branchDiff, { name: one() });
      emit(r, () => {
        if (r.changes.length === 0) out(`branch ${r.branch.name} has no changes`);
        for (const ch of r.changes) out(describe(ch));
      });
      return 0;
    }
    case 'merge': {
      const r = await c.call(Requests.branchMerge, {
        name: one(),
        actor: o.actor,
        ...(o.reason ? { reason: o.reason } : {}),
        ...(o.take?.length ? { resolutions: o.take.map(parseTake) } : {}),
      });
      emit(r, () => {
        if (r.merged) out(`merged ${r.applied} change(s) at position ${r.position}`);
        else {
          out(`not merged: ${r.conflicts.length} conflict(s) need a decision (--take NS/KEY=branch|base):`);
          for (const ch of r.conflicts) out(`  ${describe(ch)}`);
        }
      });
      return r.merged ? 0 : 1;
    }
    case 'discard': {
      const r = await c.call(Requests.branchDiscard, { name: one(), actor: o.actor });
      emit(r, () => out(`discarded branch ${r.name} (${r.dropped} row(s) dropped)`));
      return 0;
    }
    default:
      throw new UsageError(USAGE);
  }
}
