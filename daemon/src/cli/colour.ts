/**
 * Colour on a terminal, plain text everywhere else. `NO_COLOR` (any non-empty value) turns colour off,
 * `FORCE_COLOR` turns it on (`FORCE_COLOR=0` off) even into a pipe; otherwise a stream gets colour only when it is a
 * TTY (https://no-color.org, https://force-color.org) and the terminal is not `dumb`. `--json` output is never coloured.
 */
import { processEnv, readEnv, type Env } from '../protocol/settings';

export function colourFor(stream: { isTTY?: boolean }, env: Env = processEnv()): boolean {
  const force = readEnv('FORCE_COLOR', env);
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  if (readEnv('NO_COLOR', env) !== undefined) return false;
  return stream.isTTY === true && readEnv('TERM', env) !== 'dumb';
}

export interface Paint {
  enabled: boolean;
  bold(s: string): string;
  dim(s: string): string;
  red(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

const sgr = (on: string, off: string) => (s: string) => `\x1b[${on}m${s}\x1b[${off}m`;

export function paint(enabled: boolean): Paint {
  const id = (s: string) => s;
  return {
    enabled,
    bold: enabled ? sgr('1', '22') : id,
    dim: enabled ? sgr('2', '22') : id,
    red: enabled ? sgr('31', '39') : id,
    yellow: enabled ? sgr('33', '39') : id,
    cyan: enabled ? sgr('36', '39') : id,
  };
}

/** A search snippet: the «…» match markers become bold (and coloured) on a terminal and disappear otherwise. */
export function highlight(snippet: string, p: Paint): string {
  return snippet.replace(/«([^«»]*)»/g, (_m, s: string) => (p.enabled ? p.bold(p.yellow(s)) : s));
}
