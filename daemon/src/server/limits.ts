/**
 * Request-shape limits checked before schema validation (docs/protocol.md#limits).
 *
 * Schema validation (zod) is recursive and does work per node, so a params object is first walked
 * once, iteratively, with hard caps — nesting depth, filter depth and size — and refused with a typed
 * error before any recursive code sees it. The same walk refuses what JSON.parse accepts but the
 * store would silently change:
 * - `__proto__`, `constructor` and `prototype` as property keys (copying them into a plain object
 *   re-wires its prototype or is dropped), and
 * - strings with unpaired UTF-16 surrogates (`"\ud800"` is valid JSON but has no UTF-8 form; SQLite
 *   would store U+FFFD instead).
 * Invalid UTF-8 in a frame's bytes is refused by the framing layer (server/framing.ts).
 */
import { CairnError } from '../protocol/errors';
import { Limits } from '../protocol/types';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const nativeWellFormed = (String.prototype as { isWellFormed?: () => boolean }).isWellFormed;
/** True when a string has no unpaired surrogate (so it has a UTF-8 form). */
export function wellFormed(s: string): boolean {
  return nativeWellFormed ? nativeWellFormed.call(s) : !LONE_SURROGATE.test(s);
}

export const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function at(path: (string | number)[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s ? `.${p}` : p;
  return s;
}

/** Throws InvalidParams / InvalidFilter when `params` breaks a shape limit; cheap (one iterative pass). */
export function checkParamsShape(params: unknown): void {
  if (params === null || typeof params !== 'object') return;
  // Iterative DFS: [value, path, depth, filterDepth (-1 outside `filter`)]
  const stack: [unknown, (string | number)[], number, number][] = [[params, [], 0, -1]];
  let filterNodes = 0;
  while (stack.length > 0) {
    const [v, path, depth, fdepth] = stack.pop()!;
    if (typeof v === 'string') {
      if (!wellFormed(v)) throw new CairnError('InvalidParams', `${at(path) || 'params'}: string holds an unpaired UTF-16 surrogate (not representable as UTF-8)`, { field: at(path) });
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > Limits.paramsDepth) {
      throw new CairnError('InvalidParams', `params are nested deeper than ${Limits.paramsDepth} levels`, { field: at(path), limit: Limits.paramsDepth });
    }
    if (fdepth >= 0 && !Array.isArray(v)) {
      if (++filterNodes > Limits.filterNodes) throw new CairnError('InvalidFilter', `filter has more than ${Limits.filterNodes} nodes`, { field: at(path), limit: Limits.filterNodes });
      if (fdepth > Limits.filterDepth) throw new CairnError('InvalidFilter', `filter is nested deeper than ${Limits.filterDepth}`, { field: at(path), limit: Limits.filterDepth });
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push([v[i], [...path, i], depth + 1, fdepth]);
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i];
      if (FORBIDDEN_KEYS.has(k)) throw new CairnError('InvalidParams', `${at([...path, k])}: "${k}" is not allowed as a property name`, { field: at([...path, k]) });
      if (!wellFormed(k)) throw new CairnError('InvalidParams', `${at(path) || 'params'}: a property name holds an unpaired UTF-16 surrogate`, { field: at(path) });
      const isFilterRoot = depth === 0 && k === 'filter';
      const nextF = fdepth >= 0 ? (k === 'and' || k === 'or' || k === 'not' ? fdepth + 1 : fdepth) : isFilterRoot ? 0 : -1;
      stack.push([(v as Record<string, unknown>)[k], [...path, k], depth + 1, nextF]);
    }
  }
}

/**
 * What a long handler needs to share the daemon's one thread: its deadline (Limits.requestTimeMs from the
 * request's start) and where to report progress.
 */
export interface RequestContext {
  /** Epoch ms after which the work stops at its next chunk boundary. */
  deadline: number;
  /** The limit it was given, for the error. */
  limitMs: number;
}

/** A context for a request starting now. */
export function requestContext(limitMs: number = Limits.requestTimeMs): RequestContext {
  return { deadline: Date.now() + limitMs, limitMs };
}

/**
 * Between two chunks of a long request: let the event loop run (other connections' requests are read and
 * answered), then stop with RequestTimeLimit when the request is past its deadline. `progress` goes into the
 * error's data so the caller knows what was done.
 */
export async function pace(ctx: RequestContext | undefined, progress: Record<string, number>): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (ctx && Date.now() > ctx.deadline) {
    throw new CairnError('RequestTimeLimit', `the request ran past its time limit of ${ctx.limitMs} ms and stopped; what it did so far stands (data.progress)`, { limit: ctx.limitMs, progress });
  }
}
