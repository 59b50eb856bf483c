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
 *
 * The newest states do not store the value a second time: a state whose value
 * equals its memory row's value (every state appendHistory writes, since a
 * state is the row as just written) is marked `$: 3` and leaves `value` out;
 * it is read with the row's value. Invariant (schema v4): a `$: 3` state's value
 * is its memory row's current value. Whatever changes a row's value first writes
 * the value into those states (`inlineValue`); whatever removes a row removes
 * its history with it (purge and erase keep only contentless rows).
 */
import type { Memory } from '../protocol/types';

const STATE = 2;
/** A compact state whose value is its memory row's current value (not stored in the state). */
const STATE_ROW_VALUE = 3;
const DIFF = 'd';

/** SQL GLOB matching a state stored as STATE_ROW_VALUE (JSON.stringify writes the marker first). */
export const ROW_VALUE_GLOB = '{"$":3[,}]*';

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

/**
 * A state as stored. `valueInRow`: the memory row holds this state's value now (then the value is left out and
 * read from the row; see the invariant above).
 */
export function encodeState(m: Memory, row: RowFacts, valueInRow = false): string {
  const tpl = template(row);
  const out: Record<string, unknown> = { $: valueInRow ? STATE_ROW_VALUE : STATE };
  for (const [k, v] of Object.entries(m)) if ((!(k in tpl) || !same(v, tpl[k])) && !(valueInRow && k === 'value')) out[k] = v;
  return JSON.stringify(out);
}

/** Whether a stored state reads its value from the memory row. */
const ROW_VALUE_RE = /^\{"\$":3[,}]/;
export const readsRowValue = (text: string | null): boolean => text !== null && ROW_VALUE_RE.test(text);

/**
 * A state as read. `rowValue`: the memory row's current value, needed (only) by a state that reads its value from
 * the row; a state that needs it and gets none throws rather than return a memory without its value.
 */
export function decodeState(text: string, row: RowFacts, rowValue?: string | null): Memory {
  const o = JSON.parse(text) as Record<string, unknown>;
  if (o.$ !== STATE && o.$ !== STATE_ROW_VALUE) return o as unknown as Memory; // written before the compact encoding
  const m = template(row);
  for (const [k, v] of Object.entries(o)) if (k !== '$') m[k] = v;
  if (o.$ === STATE_ROW_VALUE) {
    if (typeof rowValue !== 'string')
      throw new Error(`history state of ${row.memoryId} v${row.version} reads the value of a missing memory row`);
    m.value = rowValue;
  }
  return m as unknown as Memory;
}

/**
 * The same state with its value written in (before the memory row's value changes): decodes to the same Memory
 * without the row. A state that already holds its value comes back unchanged.
 */
export function inlineValue(text: string, rowValue: string): string {
  if (!readsRowValue(text)) return text;
  const o = JSON.parse(text) as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) out[k] = k === '$' ? STATE : v;
  out.value = rowValue;
  return JSON.stringify(out);
}

/**
 * A state written before schema v4 in the row-value form when its value equals the row's (the migration); null
 * when it must stay as it is (another value, or the encoding before compact states).
 */
export function toRowValueForm(text: string, rowValue: string): string | null {
  const o = JSON.parse(text) as Record<string, unknown>;
  if (o.$ !== STATE || o.value !== rowValue) return null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (k !== 'value') out[k] = k === '$' ? STATE_ROW_VALUE : v;
  return JSON.stringify(out);
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
  return o.$ === STATE ? decodeState(text, row) : (o as unknown as Memory); // a previous never reads the row's value
}
