/**
 * Per-command help. The general usage text (main.ts) stays the one list of commands; `cairn <command> --help`
 * prints that command's entry from it (the line that starts with the command and the lines indented under it) with
 * the global options, so a command added to the usage text has its help at once. `DETAILS` adds a few lines of
 * explanation where the usage line alone does not say enough.
 */

const DETAILS: Record<string, string> = {
  add: `Creates the memory, or updates it when <namespace> <key> exists. "." as the namespace is this folder's project
namespace (the one the editor shows as "This project"; see cairn status).
  --kind K            fact, preference, decision, procedure, episode or note (default note)
  --tags a,b          comma-separated tags
  --importance N      0 to 1 (default 0.5); --confidence N likewise
  --anchor PATH[:START[-END]]   tie the memory to code (repeatable)
  --restore           write a key that was deleted
  --force             write a value that was forgotten in this namespace
  --proposed          store it as proposed (waits for review)
Examples:
  cairn add . db-choice "We use PostgreSQL 16 with pgvector" --kind decision --tags db
  echo "multi-line value" | cairn add user.preferences editor -`,
  search: `Hybrid search (full-text and vectors) over the scope: by default every namespace, user.* included.
"--root ." is this folder's project namespace. Matches are shown bold on a terminal.
Example:
  cairn search how do we retry http calls --root . --limit 5`,
  list: `Newest first, 50 unless --limit N or --all. "--root ." is this folder's project namespace; user.* memories are
included unless --no-user.`,
};

/** The usage text's entry for `cmd`, or undefined when the usage text has none. */
export function commandEntry(usage: string, cmd: string): string | undefined {
  const lines = usage.split('\n');
  const start = lines.findIndex((l) => {
    const m = /^ {2}(\S+)/.exec(l);
    return !!m && m[1].split('|').includes(cmd);
  });
  if (start < 0) return undefined;
  const entry = [lines[start]];
  for (let i = start + 1; i < lines.length && /^ {4,}\S/.test(lines[i]); i++) entry.push(lines[i]);
  // Sub-command lines of the same command (`retention set …`, `retention clear …`) follow as their own entries.
  for (let i = start + entry.length; i < lines.length && new RegExp(`^ {2}${cmd} `).test(lines[i]); i++) {
    entry.push(lines[i]);
    while (i + 1 < lines.length && /^ {4,}\S/.test(lines[i + 1])) entry.push(lines[++i]);
  }
  return entry.join('\n');
}

/** `cairn <cmd> --help`: the command's usage entry, its details and the global options; undefined for an unknown command. */
export function commandHelp(usage: string, cmd: string): string | undefined {
  const entry = commandEntry(usage, cmd);
  if (entry === undefined) return undefined;
  const globals = usage.slice(usage.indexOf('\nGlobal:') + 1);
  return [`Usage: cairn ${entry.trim()}`, ...(DETAILS[cmd] ? ['', DETAILS[cmd]] : []), '', globals].join('\n');
}
