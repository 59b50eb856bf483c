/**
 * Splitting code identifiers into words, so `getUserById`, `max_retries` and
 * `HTTPServer` are found by "get user by id", "max retries" and "http server".
 */

/** A word as identifiers are found in text: letters, digits, `_` and `$` (use with matchAll: it is global). */
export const WORD = /[\p{L}\p{N}_$]+/gu;

/** A plain word (ASCII letters, lowercase after an optional capital): never more than one part. */
const PLAIN = /^[A-Za-z]?[a-z]*$/;

const isLower = (c: number) => c >= 97 && c <= 122;
const isUpper = (c: number) => c >= 65 && c <= 90;
const isDigit = (c: number) => c >= 48 && c <= 57;

/**
 * Split one identifier into lowercase parts; returns [] when it has only one part. Parts are separated by `_` and
 * `$` runs, and inside a run between a lowercase letter or digit and a capital (`getUser`), before the last capital
 * of a run of capitals followed by a lowercase letter (`HTTPServer` → http server), and between letters and digits
 * (`utf8` → utf 8); only ASCII letters and digits split. A scan of the characters: this runs for every compound
 * word of every write (the full-text index's `idents` column), where the former split by a look-behind pattern cost
 * about three times as much (test/unit/fts-identifiers.test.ts compares the two on random identifiers).
 */
export function splitIdentifier(token: string): string[] {
  if (PLAIN.test(token)) return []; // most words of prose
  const parts: string[] = [];
  const n = token.length;
  let start = 0;
  for (let i = 0; i <= n; i++) {
    const b = i < n ? token.charCodeAt(i) : 95;
    if (b === 95 || b === 36) {
      // `_` or `$` (or the end): the end of a part
      if (i > start) parts.push(token.slice(start, i).toLowerCase());
      start = i + 1;
      continue;
    }
    if (i === start) continue;
    const a = token.charCodeAt(i - 1);
    if (
      (isUpper(b) && (isLower(a) || isDigit(a))) ||
      (isUpper(a) && isUpper(b) && i + 1 < n && isLower(token.charCodeAt(i + 1))) ||
      (isDigit(b) && (isLower(a) || isUpper(a))) ||
      (isDigit(a) && (isLower(b) || isUpper(b)))
    ) {
      parts.push(token.slice(start, i).toLowerCase());
      start = i;
    }
  }
  return parts.length > 1 ? parts : [];
}

/** The split forms of every compound identifier in a text, space-joined (empty when there are none). */
export function identifierWords(text: string): string {
  return identifierForms(text).words;
}

/**
 * Runs of word characters and hyphens: a kebab-case identifier (`max-retries`; `user-service.ts` → `user-service`)
 * is such a run with two words or more. A split, not a pattern with nested repetition, so a long run costs linear time.
 */
const NOT_KEBAB = /[^\p{L}\p{N}_$-]+/u;

/** The parts of a kebab-case identifier (its words), each word split as an identifier too. */
function kebabParts(words: string[]): string[] {
  return words.flatMap((w) => {
    const p = splitIdentifier(w);
    return p.length
      ? p
      : w
          .split(/[_$]+/)
          .filter(Boolean)
          .map((x) => x.toLowerCase());
  });
}

/**
 * The joined form of each identifier of a text (`max_retries`, `maxRetries`, `MAX_RETRIES`, `max-retries` →
 * "maxretries"), space-separated: the token a query word that is an identifier becomes (search-fts.ts), so it finds
 * the identifier in any spelling with one token instead of a phrase of its parts, which FTS5 matches and counts
 * position by position. It is the token the tokenizer makes of the camelCase spelling.
 */
export function identifierCompounds(text: string): string {
  return identifierForms(text).compounds;
}

/** Both forms of a text's identifiers in one pass: split (identifierWords) and joined (identifierCompounds). */
function identifierForms(text: string): { words: string; compounds: string } {
  const words: string[] = [];
  const compounds: string[] = [];
  // The words as one array of strings (one native pass; matchAll made a match object and an iterator step each).
  for (const w of text.match(WORD) ?? []) {
    const parts = splitIdentifier(w);
    if (parts.length) {
      words.push(parts.join(' '));
      compounds.push(parts.join(''));
    }
  }
  if (text.includes('-'))
    for (const run of text.split(NOT_KEBAB)) {
      if (!run.includes('-')) continue;
      const kebab = run.split('-').filter(Boolean);
      if (kebab.length > 1) compounds.push(kebabParts(kebab).join(''));
    }
  return { words: words.join(' '), compounds: compounds.join(' ') };
}

/**
 * What the SQLite full-text index stores for the identifiers of a text (its `idents` column): each compound
 * identifier's parts (so "max retries" finds `maxRetries`), then the joined forms (identifierCompounds).
 */
export function identifierIndexText(text: string): string {
  const { words, compounds } = identifierForms(text);
  return words && compounds ? `${words} ${compounds}` : words || compounds;
}

/** Lowercase word tokens of a text, as the FTS tokenizer sees them, plus split identifier parts. */
export function queryTokens(text: string): string[] {
  const seen = new Set<string>();
  for (const m of text.matchAll(WORD)) {
    const raw = m[0];
    for (const w of raw.toLowerCase().split(/[_$]+/)) if (w) seen.add(w);
    for (const p of splitIdentifier(raw)) seen.add(p);
  }
  return [...seen];
}

/** Common English words that match almost every memory and slow an OR query down without helping it. */
export const STOPWORDS = new Set(
  (
    'a an and are as at be but by for from has have he her his i if in into is it its me my not of on or our she so ' +
    'that the their them then there these they this to was we were what when where which who whom why will with you your ' +
    'do does did how can could would should about than too very just also been being am any all some such only own same'
  ).split(' '),
);
