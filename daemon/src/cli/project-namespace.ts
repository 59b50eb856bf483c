/**
 * Namespaces as a person types them on the command line: "." is this folder's project namespace — the one the
 * editor shows as "This project" (project.ts, from the git remote or the folder name) — and ".sub" a namespace
 * under it. A scope root that names no namespace gets a warning with the nearest one, instead of a silent
 * "no matches" (or only user.* memories).
 */
import { Requests } from '../protocol/methods';
import type { CairnClient } from '../client/socket-client';
import { projectNamespaceFor, repoTop } from '../project';
import { nearest } from './suggest';

/** `.` → `project.<slug>` of `cwd`, `.web` → `project.<slug>.web`; anything else as given. */
export function expandNamespace(ns: string, cwd: string = process.cwd()): string {
  if (ns !== '.' && !/^\.[^.]/.test(ns)) return ns;
  const project = projectNamespaceFor(cwd).namespace;
  return ns === '.' ? project : project + ns;
}

/**
 * A warning when `root` names no namespace (neither itself nor any under it), naming the nearest existing one and
 * what the command shows instead; undefined when the root exists.
 */
export async function missingRootWarning(c: CairnClient, root: string, includeUser: boolean): Promise<string | undefined> {
  const under = await c.call(Requests.namespacesList, { root });
  if (under.namespaces.length > 0) return undefined;
  const all = (await c.call(Requests.namespacesList, {})).namespaces.map((n) => n.path);
  const near = nearest(root, all);
  return (
    `no namespace ${root} exists${near ? `; did you mean ${near}?` : ''}` +
    (includeUser ? ' (only user.* memories can match; --no-user leaves them out)' : '')
  );
}

/**
 * Inside a repository, a write to another project's namespace is allowed but likely a slip (the README once wrote
 * to project.myapp while the editor showed project.main): a note naming the namespace the editor shows, or
 * undefined when the write goes there (or under it), is not a project namespace, or the folder is no repository.
 */
export function otherProjectNote(namespace: string, cwd: string = process.cwd()): string | undefined {
  if (!namespace.startsWith('project.') || !repoTop(cwd)) return undefined;
  const here = projectNamespaceFor(cwd).namespace;
  if (namespace === here || namespace.startsWith(here + '.')) return undefined;
  return `this repository's project namespace (the editor's "This project") is ${here}, so ${namespace} will not show there; "." writes to ${here}`;
}
