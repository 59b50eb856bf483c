/**
 * A fast path for the params of the most frequent request, memory/upsert (single writes from agents). zod's
 * strict-object parse cost about as much daemon CPU as the upsert's change-log statement. This check only ever
 * *accepts*: params it cannot vouch for in a few type and length tests (an unknown or rarer field, a wrong type,
 * an out-of-range length, anchors, properties, dates, a scope, an idempotency key...) go to the protocol's zod
 * schema, the one definition, which gives every error. What it accepts is exactly what the schema returns for the
 * same input: UpsertParams has no defaults or transforms, so that is a copy with the same fields in the schema's
 * order (test/unit/write-path.test.ts compares the two on valid and invalid inputs).
 */
import { Limits, MEMORY_KINDS, type UpsertParams } from '../protocol/types';

const KINDS = new Set<string>(MEMORY_KINDS);
const str = (v: unknown, min: number, max: number) => typeof v === 'string' && v.length >= min && v.length <= max;
const finite = (v: unknown) => typeof v === 'number' && Number.isFinite(v);
const bool = (v: unknown) => typeof v === 'boolean';

/** The fields checked here, in UpsertParams' own order (the parsed object's key order). */
const FIELDS = new Map<string, (v: unknown) => boolean>([
  ['namespace', (v) => str(v, 1, Limits.namespaceChars)],
  ['key', (v) => str(v, 1, Limits.keyChars)],
  ['value', (v) => typeof v === 'string'],
  ['kind', (v) => typeof v === 'string' && KINDS.has(v)],
  ['tags', (v) => Array.isArray(v) && v.length <= Limits.tags && v.every((t) => str(t, 1, Limits.tagChars))],
  ['importance', finite],
  ['confidence', finite],
  ['source', (v) => str(v, 1, 200)],
  ['actor', (v) => str(v, 1, 200)],
  ['reason', (v) => str(v, 0, 2000)],
  ['status', (v) => v === 'active' || v === 'proposed'],
  ['restore', bool],
  ['force', bool],
  ['waitForDuplicates', bool],
]);
const REQUIRED = ['namespace', 'key', 'value'];

/** memory/upsert params as the schema would parse them, or null: then the schema decides (and gives any error). */
export function fastUpsertParams(p: unknown): UpsertParams | null {
  if (p === null || typeof p !== 'object' || Object.getPrototypeOf(p) !== Object.prototype) return null;
  const o = p as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length > FIELDS.size) return null;
  for (const k of keys) {
    const ok = FIELDS.get(k);
    if (!ok || !ok(o[k])) return null;
  }
  for (const k of REQUIRED) if (!Object.hasOwn(o, k)) return null;
  const out: Record<string, unknown> = {};
  for (const k of FIELDS.keys()) if (Object.hasOwn(o, k)) out[k] = k === 'tags' ? [...(o[k] as string[])] : o[k];
  return out as UpsertParams;
}
