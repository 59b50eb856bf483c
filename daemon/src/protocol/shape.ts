/**
 * Request-shape limits checked before schema validation (docs/protocol.md#limits), by the daemon and, before they
 * send, by its clients (socket client, `cairn mcp`, the extension: no native code here).
 *
 * Schema validation (zod) is recursive and does work per node, and JSON.stringify recurses too, so a params object is
 * first walked once, iteratively, with hard caps — nesting depth, filter depth and size — and refused with a typed
 * error before any recursive code sees it. The same walk refuses what JSON.parse accepts but the store would
 * silently change:
 * - `__proto__`, `constructor` and `prototype` as property keys (copying them into a plain object
 *   re-wires its prototype or is dropped), and
 * - strings with unpaired UTF-16 surrogates (`"\ud800"` is valid JSON but has no UTF-8 form; SQLite
 *   would store U+FFFD instead).
 * Invalid UTF-8 in a frame's bytes is refused by the framing layer (server/framing.ts).
 */
import { CairnError } from './errors';
import { Limits } from './types';

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

/** One node of the walk; the path is rebuilt from parent links only when an error names it. */
interface Node {
  v: unknown;
  parent: Node | null;
  key: string | number;
  depth: number;
  /** Depth inside `filter` (-1 outside it). */
  fdepth: number;
}

function pathOf(n: Node | null): (string | number)[] {
  const out: (string | number)[] = [];
  for (let x = n; x && x.parent; x = x.parent) out.push(x.key);
  return out.reverse();
}

/** Throws InvalidParams / InvalidFilter when `params` breaks a shape limit; cheap (one iterative pass, no copies). */
export function checkParamsShape(params: unknown): void {
  if (params === null || typeof params !== 'object') return;
  const w: Walk = { stack: [{ v: params, parent: null, key: '', depth: 0, fdepth: -1 }], filterNodes: 0 };
  walk(w, Infinity);
}

/** Nodes visited between two clock reads of the paced check. */
const NODES_PER_CLOCK = 4096;
/** Work of the paced check between two yields (ms). */
const SHAPE_SLICE_MS = 8;

/**
 * checkParamsShape for the daemon: the same pass, but a large params object (a 16 MiB `store/import`) is walked in
 * slices of about 8 ms that yield to the event loop, so other connections are served meanwhile. Small params finish
 * within the first slice without yielding.
 */
export async function checkParamsShapePaced(params: unknown): Promise<void> {
  if (params === null || typeof params !== 'object') return;
  const w: Walk = { stack: [{ v: params, parent: null, key: '', depth: 0, fdepth: -1 }], filterNodes: 0 };
  let until = performance.now() + SHAPE_SLICE_MS;
  while (!walk(w, NODES_PER_CLOCK)) {
    if (performance.now() > until) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      until = performance.now() + SHAPE_SLICE_MS;
    }
  }
}

interface Walk {
  stack: Node[];
  filterNodes: number;
}

/** Visit up to `budget` nodes; true when the walk is complete. Throws on the first broken limit. */
function walk(w: Walk, budget: number): boolean {
  const stack = w.stack;
  for (let visited = 0; stack.length > 0; visited++) {
    if (visited >= budget) return false;
    const n = stack.pop()!;
    const v = n.v;
    if (typeof v === 'string') {
      if (!wellFormed(v)) {
        const f = at(pathOf(n));
        throw new CairnError('InvalidParams', `${f || 'params'}: string holds an unpaired UTF-16 surrogate (not representable as UTF-8)`, {
          field: f,
        });
      }
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (n.depth > Limits.paramsDepth) {
      throw new CairnError('InvalidParams', `params are nested deeper than ${Limits.paramsDepth} levels`, {
        field: at(pathOf(n)),
        limit: Limits.paramsDepth,
      });
    }
    if (n.fdepth >= 0 && !Array.isArray(v)) {
      if (++w.filterNodes > Limits.filterNodes)
        throw new CairnError('InvalidFilter', `filter has more than ${Limits.filterNodes} nodes`, {
          field: at(pathOf(n)),
          limit: Limits.filterNodes,
        });
      if (n.fdepth > Limits.filterDepth)
        throw new CairnError('InvalidFilter', `filter is nested deeper than ${Limits.filterDepth}`, {
          field: at(pathOf(n)),
          limit: Limits.filterDepth,
        });
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) {
        const x = v[i];
        // Numbers, booleans and null need no visit: skip the node allocation.
        if (x !== null && (typeof x === 'object' || typeof x === 'string'))
          stack.push({ v: x, parent: n, key: i, depth: n.depth + 1, fdepth: n.fdepth });
      }
      continue;
    }
    const keys = Object.keys(v);
    for (let i = keys.length - 1; i >= 0; i--) {
      const k = keys[i];
      if (FORBIDDEN_KEYS.has(k)) {
        const f = at([...pathOf(n), k]);
        throw new CairnError('InvalidParams', `${f}: "${k}" is not allowed as a property name`, { field: f });
      }
      if (!wellFormed(k)) {
        const f = at(pathOf(n));
        throw new CairnError('InvalidParams', `${f || 'params'}: a property name holds an unpaired UTF-16 surrogate`, { field: f });
      }
      const isFilterRoot = n.depth === 0 && k === 'filter';
      const nextF = n.fdepth >= 0 ? (k === 'and' || k === 'or' || k === 'not' ? n.fdepth + 1 : n.fdepth) : isFilterRoot ? 0 : -1;
      const x = (v as Record<string, unknown>)[k];
      if (x !== null && (typeof x === 'object' || typeof x === 'string'))
        stack.push({ v: x, parent: n, key: k, depth: n.depth + 1, fdepth: nextF });
    }
  }
  return true;
}
