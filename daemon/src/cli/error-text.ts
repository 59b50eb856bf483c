/**
 * A Cairn error as a person reads it on the command line: the sentence first (with its hint spelled as this
 * CLI's flag, `--restore`), then a dim details line with the code name and number, the field and the request, which
 * scripts and bug reports use. Exit codes do not change (main.ts).
 */
import { errorSentence, type CairnError } from '../protocol/errors';
import type { Paint } from './colour';

/** `ifVersion` → `--if-version` when the CLI has that flag; else the param as the protocol spells it. */
export function flagSpelling(flags: ReadonlySet<string>) {
  return (param: string, value: unknown): string => {
    const flag = param.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
    if (!flags.has(flag)) return `${param}: ${JSON.stringify(value)}`;
    return value === true ? `--${flag}` : `--${flag} ${String(value)}`;
  };
}

export function errorLines(e: CairnError, p: Paint, flags: ReadonlySet<string>): string[] {
  let sentence = errorSentence(e, flagSpelling(flags));
  if (!/[.!?]$/.test(sentence)) sentence += '.';
  const details = [
    `code ${e.data.name} ${e.code}`,
    e.data.field ? `field ${e.data.field}` : '',
    typeof e.data.request === 'string' ? `in ${e.data.request}` : '',
  ].filter(Boolean);
  return [`${p.red(p.bold('error'))}: ${sentence}`, p.dim(`  (${details.join(', ')})`)];
}
