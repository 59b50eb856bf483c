/**
 * How history rows store memory states compactly without losing anything.
 *
 * A `state` is stored as the memory minus what the row already says or what is
 * the default: `id` (the row's memory_id), `version` (the row's version),
 * `createdAt`/`updatedAt` when they equal the row's time, and every field at its
 * default value (null, [], {}, 0, kind "note", importance 0.5, confidence 1,
 * source "user", status "active"). A `previous` state is stored as the fields in
 * which it differs from the same row's state. Both carry a marker (`$`), so rows
 * written before this encoding (full JSON objects) read back unchanged.
 * Decoding restores exactly the Memory that was encoded.
 */
import type { Memory } from '../protocol/types';

const STATE = 2;
const DIFF = 'd';

/**
 * The memory a compact state is read against: the row's own facts plus every field at its default, in the order a
 * Memory's fields are written. Encoding leaves out each field equal to this; decoding starts from it. One
 * definition for both directions, so they can't drift apart.
 */
function template(row: RowFacts): Record<string, unknown> {
  const at = new Date(row.at).toISOString();
  return {
    id: row.memoryId,
    namespace: undefined,
    key: undefined,
    value: undefined,
    summary: null,
    kind: 'note',
    tags: [],
    importance: 0.5,
    confidence: 1,
    source: 'user',
    properties: {},
    anchors: [],
    createdAt: at,
    updatedAt: at,
    validFrom: null,
    validTo: null,
    expiresAt: null,
    lastAccessedAt: null,
    accessCount: 0,
    version: row.version,
    status: 'active',
    supersededBy: null,
    deletedAt: null,
    deletedBy: null,
  };
}

const same = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && JSON.stringify(a) === JSON.stringify(b));

/** The row's own facts a state is encoded against. */
export interface RowFacts {
  memoryId: string;
  version: number;
  at: number;
}

export function encodeState(m: Memory, row: RowFacts): string {
  const tpl = template(row);
  const out: Record<string, unknown> = { $: STATE };
  for (const [k, v] of Object.entries(m)) if (!(k in tpl) || !same(v, tpl[k])) out[k] = v;
  return JSON.stringify(out);
}

export function decodeState(text: string, row: RowFacts): Memory {
  const o = JSON.parse(text) as Record<string, unknown>;
  if (o.$ !== STATE) return o as unknown as Memory; // written before the compact encoding
  const m = template(row);
  for (const [k, v] of Object.entries(o)) if (k !== '$') m[k] = v;
  return m as unknown as Memory;
}

/** `previous` as the fields in which it differs from `state` (or in full when there is no state). */
export function encodePrevious(previous: Memory, state: Memory | null, row: RowFacts): string {
  if (!state) return encodeState(previous, row);
  const out: Record<string, unknown> = { $: DIFF };
  for (const [k, v] of Object.entries(previous) as [keyof Memory, unknown][]) if (!same(v, state[k])) out[k] = v;
  return JSON.stringify(out);
}

export function decodePrevious(text: string, state: Memory | null, row: RowFacts): Memory {
  const o = JSON.parse(text) as Record<string, unknown>;
  if (o.$ === DIFF && state) {
    const m: Record<string, unknown> = { ...state };
    for (const [k, v] of Object.entries(o)) if (k !== '$') m[k] = v;
    return m as unknown as Memory;
  }
  return o.$ === STATE ? decodeState(text, row) : (o as unknown as Memory);
}
