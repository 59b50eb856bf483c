/**
 * The memory branch name rule (docs/branches.md), with no zod: types.ts builds `BranchName` from it, and the
 * dashboard checks a typed name with it before sending (the webview bundle carries no zod).
 */
export const BRANCH_NAME_MAX = 100;
export const BRANCH_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._/-]*$/;
export const BRANCH_NAME_RULE = 'a branch name is letters, digits, ".", "_", "-" and "/", starting with a letter or digit';

/** Why `name` is not a branch name (a sentence's end, as the daemon words it), or null. */
export function branchNameProblem(name: string): string | null {
  if (!name) return 'a branch name cannot be empty';
  if (name.length > BRANCH_NAME_MAX) return `a branch name is at most ${BRANCH_NAME_MAX} characters`;
  return BRANCH_NAME_PATTERN.test(name) ? null : BRANCH_NAME_RULE;
}
