/**
 * Text shaping shared by every human-facing surface (CLI, MCP tool output, the extension's chat, tool and tree
 * views, the daemon's hovers). Pure: no Node or VS Code APIs, so the extension bundles it.
 */

/** Whitespace runs folded to one space, trimmed, and cut to `max` characters with an ellipsis. */
export function oneLine(s: string, max: number): string {
  const t = s.replace(/\s+/g, ' ').trim();
  return t.length > max ? t.slice(0, max - 1) + '…' : t;
}

/**
 * Text shown as itself inside Markdown (memory keys, values, summaries): backslash-escapes every character that
 * can start or end inline syntax (emphasis, code, links, HTML, entities, tables, strikethrough, and `$` of VS
 * Code's `$(icon)`), and the markers that only act at the start of a line (headings, quotes, lists, ordered lists,
 * setext underlines). CommonMark allows a backslash before any ASCII punctuation, so the text renders unchanged.
 */
export function escapeMarkdown(s: string): string {
  return s
    .replace(/[\\`*_[\]<>#|~&$]/g, (c) => '\\' + c)
    .replace(/^([ \t]*)([-+=])/gm, '$1\\$2')
    .replace(/^([ \t]*\d+)([.)])/gm, '$1\\$2');
}
