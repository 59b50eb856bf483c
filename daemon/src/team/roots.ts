/**
 * Which namespace roots live in the team database (`cairn.team.roots`), and whether a
 * running daemon serves the team database the settings ask for. No dependencies, so
 * the extension can use it too.
 */

export const DEFAULT_TEAM_ROOTS = ['team'];

/** `team.*, project.shared` -> ['team', 'project.shared'] (a trailing `.*` is accepted and means the same). */
export function parseRoots(s: string | string[] | undefined): string[] {
  const list = (Array.isArray(s) ? s : (s ?? '').split(/[,\s]+/)).map((x) => x.trim().replace(/\.\*$/, '')).filter(Boolean);
  return list.length ? list : DEFAULT_TEAM_ROOTS;
}

/** What a daemon reports about its team database (store/status `team`). */
export interface TeamStatus {
  url: string;
  roots: string[];
}

/** user@host:port/db of a postgres URL, without the password (two spellings of one database compare equal). */
function database(url: string): string | null {
  try {
    const u = new URL(url);
    return `${decodeURIComponent(u.username)}@${u.hostname}:${u.port || '5432'}${u.pathname}`;
  } catch {
    return null;
  }
}

/**
 * Why a running daemon does not serve the team settings (null when it does, or when
 * no team database is configured): it was started without them, or with others.
 */
export function teamMismatch(settings: { url: string; roots: string }, running: TeamStatus | undefined): string | null {
  if (!settings.url) return null;
  if (!running) return 'the running daemon has no team database (it was started without cairn.team.url)';
  if (database(settings.url) !== database(running.url)) return `the running daemon uses another team database (${running.url})`;
  const want = [...parseRoots(settings.roots)].sort().join(', ');
  const have = [...running.roots].sort().join(', ');
  if (want !== have) return `the running daemon serves team roots ${have}, the settings ask for ${want}`;
  return null;
}
