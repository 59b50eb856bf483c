/**
 * Scope -> SQL. A scope is turned into a predicate over the `namespaces` row
 * joined to each memory (alias `n`), applied inside every query that produces
 * candidates — never as a post-filter after a limit.
 *
 * Matching compares exact paths and exact segment prefixes with substr(), so
 * SQL wildcards (`%`, `_`) and prefix-sharing siblings (`project.foo` vs
 * `project.foobar`) can never widen a scope.
 */
import { CairnError } from '../protocol/errors';
import { isUnder, namespaceProblem, USER_ROOT } from '../protocol/namespace';
import type { Scope } from '../protocol/types';

export interface SqlFragment {
  sql: string;
  params: unknown[];
}

function check(path: string, field: string): void {
  const problem = namespaceProblem(path);
  if (problem) throw new CairnError('InvalidNamespace', problem, { field });
}

function subtree(col: string, root: string): SqlFragment {
  return { sql: `(${col} = ? OR substr(${col}, 1, ?) = ?)`, params: [root, root.length + 1, root + '.'] };
}

/**
 * Whether the `user` tree is added to a scope. It is added by default, except
 * when the caller's own scope already lies inside `user` (then adding the whole
 * `user` tree would widen the scope the caller asked for).
 */
export function effectiveIncludeUser(scope: Scope): boolean {
  if (scope.includeUser === false) return false;
  const own = [...(scope.namespaces ?? []), ...(scope.root !== undefined ? [scope.root] : [])];
  if (own.length > 0 && own.every((p) => isUnder(p, USER_ROOT))) return false;
  return true;
}

/** Predicate over alias `n` (namespaces). Returns null for "whole store". */
export function scopePredicate(scope: Scope | undefined, col = 'n.path'): SqlFragment | null {
  if (!scope) return null;
  scope.namespaces?.forEach((p, i) => check(p, `scope.namespaces[${i}]`));
  if (scope.root !== undefined) check(scope.root, 'scope.root');
  const ors: string[] = [];
  const params: unknown[] = [];
  if (scope.namespaces && scope.namespaces.length > 0) {
    ors.push(`${col} IN (${scope.namespaces.map(() => '?').join(', ')})`);
    params.push(...scope.namespaces);
  }
  if (scope.root !== undefined) {
    const f = subtree(col, scope.root);
    ors.push(f.sql);
    params.push(...f.params);
  }
  const hasOwn = ors.length > 0;
  if (!hasOwn && scope.namespaces === undefined && scope.root === undefined) {
    // No namespaces and no root: the scope is the whole store (includeUser is moot).
    return null;
  }
  if (effectiveIncludeUser(scope)) {
    const f = subtree(col, USER_ROOT);
    ors.push(f.sql);
    params.push(...f.params);
  }
  if (ors.length === 0) return { sql: '0', params: [] }; // e.g. namespaces: [] and includeUser: false
  return { sql: `(${ors.join(' OR ')})`, params };
}

/**
 * 0 for the caller's own scope, 1 for the always-included `user` tree (used to
 * break ties: the caller's own scope wins).
 */
export function ownScopeRank(scope: Scope | undefined, col = 'n.path'): SqlFragment | null {
  if (!scope || (!scope.namespaces?.length && scope.root === undefined)) return null;
  const own = scopePredicate({ ...scope, includeUser: false }, col)!;
  return { sql: `(CASE WHEN ${own.sql} THEN 0 ELSE 1 END)`, params: own.params };
}

/** Whether one namespace path lies inside a scope (the same rule as scopePredicate, in plain code). */
export function pathInScope(path: string, scope: Scope | undefined): boolean {
  if (!scope) return true;
  if (scope.namespaces === undefined && scope.root === undefined) return true;
  if (scope.namespaces?.includes(path)) return true;
  if (scope.root !== undefined && isUnder(path, scope.root)) return true;
  return effectiveIncludeUser(scope) && isUnder(path, USER_ROOT);
}
