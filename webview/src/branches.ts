/**
 * The Branches tab's state that is not drawing (docs/branches.md): the "New branch" form (checked with the protocol's
 * branch-name rule before sending, branch/create's errors shown at their field), a decision per conflict, the
 * resolutions `branch/merge` takes (none until every conflict has a decision), and the words for a branch and its changes.
 * Pure, unit-tested in test/unit/webview-branches.test.ts.
 */
import { branchNameProblem } from '../../daemon/src/protocol/branch-name';
import type { Branch, BranchChange, BranchCreateParams, BranchResolution } from '../../daemon/src/protocol/types';
import type { WebviewError } from '../../daemon/src/protocol/webview';
import type { Question } from './confirm';
import { sentence } from './errors';

/** What the user decided for one conflict: the branch's version, the base's, or a merged value they typed. */
export type Decision = { take: 'branch' } | { take: 'base' } | { take: 'edit'; value: string };
export type Decisions = Record<string, Decision>;

type Keyed = Pick<BranchChange, 'namespace' | 'key'>;
/** A change's key in Decisions: `namespace/key` (a namespace has no `/`). */
export const changeKey = (c: Keyed) => `${c.namespace}/${c.key}`;

/** The conflicts with no usable decision yet (an edited value must not be empty). */
export function undecided(changes: BranchChange[], decisions: Decisions): BranchChange[] {
  return changes.filter((c) => {
    if (!c.conflict) return false;
    const d = decisions[changeKey(c)];
    return !d || (d.take === 'edit' && !d.value.trim());
  });
}

/** The text an edited merged value starts from: the branch's value, or the base's when the branch deleted it. */
export function mergedStart(c: BranchChange): string {
  return c.change === 'deleted' && c.base ? c.base.value : c.branch.value;
}

/**
 * branch/merge's `resolutions` for these decisions, or null while a conflict has none (the Merge button stays off).
 * An edited value keeps the metadata of the side it started from.
 */
export function mergeResolutions(changes: BranchChange[], decisions: Decisions): BranchResolution[] | null {
  if (undecided(changes, decisions).length) return null;
  return changes
    .filter((c) => c.conflict)
    .map((c) => {
      const d = decisions[changeKey(c)];
      if (d.take !== 'edit') return { namespace: c.namespace, key: c.key, take: d.take };
      const from = c.change === 'deleted' && c.base ? c.base : c.branch;
      return {
        namespace: c.namespace,
        key: c.key,
        take: {
          value: d.value,
          kind: from.kind,
          tags: from.tags,
          importance: from.importance,
          confidence: from.confidence,
          ...(from.properties ? { properties: from.properties } : {}),
        },
      };
    });
}

/** Decisions still about a change of the diff (a reloaded diff drops the others). */
export function keptDecisions(changes: BranchChange[], decisions: Decisions): Decisions {
  const keys = new Set(changes.filter((c) => c.conflict).map(changeKey));
  return Object.fromEntries(Object.entries(decisions).filter(([k]) => keys.has(k)));
}

/** "2 changes: 1 added, 1 changed; 1 conflict" */
export function diffSummary(changes: BranchChange[]): string {
  if (!changes.length) return 'No changes: the branch has written nothing that differs from the base.';
  const n = (k: BranchChange['change']) => changes.filter((c) => c.change === k).length;
  const parts = (['added', 'changed', 'deleted'] as const).filter((k) => n(k)).map((k) => `${n(k)} ${k}`);
  const conflicts = changes.filter((c) => c.conflict).length;
  const head = `${changes.length} change${changes.length === 1 ? '' : 's'}: ${parts.join(', ')}`;
  return conflicts ? `${head}; ${conflicts} conflict${conflicts === 1 ? '' : 's'} to decide.` : `${head}.`;
}

/** Where a change started: "new on the branch" or "from base version 3". */
export function changeOrigin(c: Pick<BranchChange, 'baseVersion'>): string {
  return c.baseVersion === null ? 'new on the branch' : `from base version ${c.baseVersion}`;
}

/** The message when the followed git branch was merged but the memory merge waits for decisions (the CLI's words). */
export function gitConflictsText(b: Pick<Branch, 'gitBranch' | 'gitConflicts'>): string | null {
  if (b.gitConflicts === undefined) return null;
  return `Git branch ${b.gitBranch ?? ''} merged, memory merge has ${b.gitConflicts} conflict${b.gitConflicts === 1 ? '' : 's'}: decide ${b.gitConflicts === 1 ? 'it' : 'them'} and merge.`;
}

/** One line about a branch: its root, writes, task and the git branch it follows. */
export function branchLine(b: Branch): string {
  return [
    `of ${b.root}`,
    `${b.writes} write${b.writes === 1 ? '' : 's'}`,
    b.taskId ? `task ${b.taskId}` : null,
    b.gitBranch !== undefined ? `follows git ${b.gitBranch}` : null,
    `by ${b.createdBy}`,
  ]
    .filter(Boolean)
    .join(' · ');
}

export function discardBranchQuestion(b: Pick<Branch, 'name' | 'root' | 'writes'>): Question {
  return {
    message: `Discard memory branch "${b.name}"?`,
    detail:
      `Cairn drops the branch's ${b.writes} write${b.writes === 1 ? '' : 's'} under ${b.root} and closes it; ` +
      'the base keeps what it has. This cannot be undone.',
    confirm: 'Discard branch',
  };
}

/** The "New branch" form: a name, the namespace it branches (the project's by default) and the branch it starts from ('' = the base). */
export interface NewBranchForm {
  name: string;
  root: string;
  from: string;
}
export type NewBranchField = keyof NewBranchForm;
export type NewBranchProblems = Partial<Record<NewBranchField, string>>;

/** The form's first state: the root is the project namespace (else `user`), from the base. */
export const newBranchForm = (projectNamespace: string | null): NewBranchForm => ({ name: '', root: projectNamespace ?? 'user', from: '' });

/**
 * The form with `from` picked among the open branches: a branch of a branch must lie inside its root, so a root
 * outside the picked branch's becomes that root (a root inside it is kept).
 */
export function pickStart(f: NewBranchForm, from: string, open: Pick<Branch, 'name' | 'root'>[]): NewBranchForm {
  const parent = open.find((b) => b.name === from);
  const root = f.root.trim();
  const inside = parent && (root === parent.root || root.startsWith(parent.root + '.'));
  return { ...f, from, ...(parent && !inside ? { root: parent.root } : {}) };
}

/** What is wrong with the form before it is sent (the name by the protocol's own rule); the daemon judges the rest. */
export function newBranchProblems(f: NewBranchForm): NewBranchProblems {
  const out: NewBranchProblems = {};
  const name = branchNameProblem(f.name.trim());
  if (name) out.name = sentence(name);
  if (!f.root.trim()) out.root = 'The namespace cannot be empty.';
  return out;
}

/** branch/create's params for the form (trimmed), made by the dashboard. */
export function newBranchParams(f: NewBranchForm): BranchCreateParams {
  const from = f.from.trim();
  return { name: f.name.trim(), root: f.root.trim(), ...(from ? { from } : {}), actor: 'dashboard' };
}

/** The form field a branch/create error belongs to (`data.field`: name, root or from), or null (shown under the form). */
export function newBranchErrorField(e: Pick<WebviewError, 'data'>): NewBranchField | null {
  const head = typeof e.data.field === 'string' ? e.data.field.split(/[.[]/)[0] : '';
  return head === 'name' || head === 'root' || head === 'from' ? head : null;
}
