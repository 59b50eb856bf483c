/**
 * Memory branch commands (docs/branches.md): create one (following the git branch checked out with
 * `cairn.branches.followGit`, as `cairn branch create` does), review them in the dashboard's Branches tab, discard
 * one. commands.ts registers them with the other commands; they return what they did, for the extension-host tests.
 */
import * as vscode from 'vscode';
import { namespaceProblem } from '../../daemon/src/protocol/namespace';
import { BranchName, type Branch, type BranchDiscardResult } from '../../daemon/src/protocol/types';
import type { Ctx } from './ctx';
import { DashboardPanel } from './dashboard';
import { Cancelled } from './errors';

/** Why a typed branch name cannot be used (the protocol's own rule), or null. */
export function branchNameProblem(name: string): string | null {
  const r = BranchName.safeParse(name);
  return r.success ? null : (r.error.issues[0]?.message ?? 'not a branch name');
}

/** The quick pick row of an open branch. */
export function branchItem(b: Branch): vscode.QuickPickItem & { branch: Branch } {
  const git = b.gitBranch !== undefined ? ` · follows git ${b.gitBranch}` : '';
  const conflicts = b.gitConflicts !== undefined ? ` · git branch merged, ${b.gitConflicts} conflict(s) to decide` : '';
  return {
    label: b.name,
    description: `${b.root} · ${b.writes} write(s)${git}`,
    detail: conflicts ? conflicts.slice(3) : undefined,
    branch: b,
  };
}

function given<T>(v: T | undefined): T {
  if (v === undefined) throw new Cancelled();
  return v;
}

/** The open branch a command acts on: its name as the argument, or picked from the open branches. */
async function pickBranch(ctx: Ctx, arg: unknown, title: string): Promise<Branch> {
  const { branches } = await ctx.client.request('branchList', {});
  if (typeof arg === 'string' || (arg && typeof arg === 'object' && typeof (arg as Branch).name === 'string')) {
    const name = typeof arg === 'string' ? arg : (arg as Branch).name;
    const b = branches.find((x) => x.name === name);
    if (!b) throw new Error(`No open memory branch is named "${name}".`);
    return b;
  }
  if (!branches.length) throw new Error('There is no open memory branch. Create one with "Cairn: Create Memory Branch".');
  return given(await ctx.ui.quickPick(branches.map(branchItem), { title, matchOnDescription: true })).branch;
}

type Handler = (...args: any[]) => Promise<unknown>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const branchCommands: Record<string, (ctx: Ctx) => Handler> = {
  'cairn.createBranch':
    (ctx) =>
    async (a: { name?: string; root?: string } = {}) => {
      const name = (
        a.name ??
        given(
          await ctx.ui.inputBox({
            title: 'Create Memory Branch (1/2): name',
            prompt: 'Letters, digits, ".", "_", "-" and "/", e.g. feature/db-move',
            validateInput: (v) => (v.trim() ? branchNameProblem(v.trim()) : 'The name cannot be empty'),
          }),
        )
      ).trim();
      const problem = branchNameProblem(name);
      if (problem) throw new Error(`Invalid branch name "${name}": ${problem}.`);
      const root = (
        a.root ??
        given(
          await ctx.ui.inputBox({
            title: 'Create Memory Branch (2/2): namespace it branches',
            value: ctx.defaultNamespace,
            prompt: 'The namespace subtree the branch covers (its writes must lie under it)',
            validateInput: (v) => namespaceProblem(v.trim()),
          }),
        )
      ).trim();
      const rootProblem = namespaceProblem(root);
      if (rootProblem) throw new Error(`Invalid namespace "${root}": ${rootProblem}.`);
      const b = await ctx.client.request('branchCreate', { name, root, actor: 'vscode', ...ctx.git.follow() });
      const follows = b.gitBranch !== undefined ? `, following git branch ${b.gitBranch}` : '';
      void ctx.ui.info(`Created memory branch ${b.name} of ${b.root}${follows}.`);
      return b;
    },

  // Returns the dashboard panel (extension-host tests use it; the palette ignores it).
  'cairn.reviewBranches': (ctx) => async (arg?: unknown) => {
    const name = typeof arg === 'string' ? arg : arg && typeof arg === 'object' ? (arg as Partial<Branch>).name : undefined;
    return DashboardPanel.show(ctx, { tab: 'branches', ...(typeof name === 'string' ? { branch: name } : {}) });
  },

  'cairn.discardBranch':
    (ctx) =>
    async (arg?: unknown): Promise<BranchDiscardResult | undefined> => {
      const b = await pickBranch(ctx, arg, 'Discard which memory branch?');
      const ok = await ctx.ui.confirm(
        `Discard memory branch "${b.name}"?`,
        'Discard Branch',
        `Cairn drops the branch's ${b.writes} write(s) under ${b.root} and closes it; the base keeps what it has. This cannot be undone.`,
      );
      if (!ok) return undefined;
      const r = await ctx.client.request('branchDiscard', { name: b.name, actor: 'vscode' });
      void ctx.ui.info(`Discarded memory branch ${r.name}.`);
      return r;
    },
};
