/**
 * Text preparation before tokenization, shared by every embedding model.
 * Pure functions: no transformers.js here, so the main thread can use them too.
 */

/** Identifier-like runs of ASCII letters and digits that start with a letter. */
const IDENTIFIER = /[A-Za-z][A-Za-z0-9]*/g;
/** A run with an internal case change: getUser, HTTPServer, utf8Decode. */
const HAS_HUMP = /[a-z0-9][A-Z]|[A-Z][A-Z][a-z]/;

/**
 * Splits code identifiers into words so that they embed like the words they are made of:
 * `getUserById` becomes `get User By Id`, `HTTPServer` `HTTP Server`, `user_id` `user id`,
 * `MAX_RETRY_COUNT` `MAX RETRY COUNT`. Other punctuation is left to the tokenizer (BERT-style
 * tokenizers split on it), and case is left alone (uncased tokenizers lowercase).
 *
 * `isKnownWord` (given the lowercased run) keeps runs the model knows as one word, so
 * `JavaScript` or `GitHub` stay whole when the vocabulary has `javascript` or `github`.
 * Without it every camelCase run is split.
 */
export function prepareText(text: string, isKnownWord?: (lowercaseWord: string) => boolean): string {
  if (typeof text !== 'string') throw new TypeError('prepareText expects a string');
  return text
    .replace(IDENTIFIER, (run) => {
      if (!HAS_HUMP.test(run)) return run;
      if (isKnownWord && isKnownWord(run.toLowerCase())) return run;
      return run.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2');
    })
    .replace(/_+/g, ' ');
}

/** True for texts that carry nothing to embed (empty or whitespace only, after preparation). */
export function isBlank(text: string): boolean {
  return text.trim().length === 0;
}
