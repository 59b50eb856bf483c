import { Limits, NAMESPACE_SEGMENT } from './types';

/** The user's own namespace tree (preferences that follow the user across projects). */
export const USER_ROOT = 'user';

/**
 * Check a namespace path against the grammar: 1..16 segments joined by '.',
 * each segment `[a-z0-9][a-z0-9_-]*` of at most 64 characters, at most 255 in all.
 * Returns null when valid, otherwise a sentence saying what is wrong.
 */
export function namespaceProblem(path: unknown): string | null {
  if (typeof path !== 'string') return 'namespace must be a string';
  if (path.length === 0) return 'namespace is empty';
  if (path.length > Limits.namespaceChars) return `namespace is longer than ${Limits.namespaceChars} characters`;
  const segments = path.split('.');
  if (segments.length > Limits.namespaceSegments) return `namespace has more than ${Limits.namespaceSegments} segments`;
  for (const s of segments) {
    if (s.length === 0) return `namespace "${path}" has an empty segment`;
    if (s.length > Limits.namespaceSegmentChars)
      return `namespace segment "${s.slice(0, 20)}…" is longer than ${Limits.namespaceSegmentChars} characters`;
    if (!NAMESPACE_SEGMENT.test(s))
      return `namespace segment "${s}" must match [a-z0-9][a-z0-9_-]* (no wildcards, whitespace or uppercase)`;
  }
  return null;
}

/** True when `path` is `root` itself or nested under it (exact segment match, never a string prefix). */
export function isUnder(path: string, root: string): boolean {
  return path === root || path.startsWith(root + '.');
}

/** Turn any folder or repository name into a namespace segment (`My Repo.git` -> `my-repo`). */
export function slugify(name: string): string {
  const s = name
    .toLowerCase()
    .replace(/\.git$/, '')
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|-+$/g, '')
    .slice(0, Limits.namespaceSegmentChars);
  return s || 'workspace';
}
