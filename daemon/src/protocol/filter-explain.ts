/**
 * What is wrong with a filter tree, in words. The schema (types.ts `Filter`) is a union of unions, so zod can only
 * say which branch got furthest — for `{"field":"colour",…}` that was "filter.and: expected array, received
 * undefined", about a key the caller never wrote. This walks the tree the way a reader does: a node with `and`/`or`
 * is a list, `not` wraps one node, `field`/`property` is a leaf whose field, op and value are checked in that order.
 */
import { formatFieldPath, issueSentence, type Blame } from './errors';
import { FilterLeaf, Limits } from './types';

interface LeafBranch {
  fields: string[] | null; // null: a `property` leaf
  ops: string[];
  schema: (typeof FilterLeaf.options)[number];
}

/** The values a zod enum or literal accepts. */
function accepted(s: unknown): string[] {
  const z = s as { options?: unknown[]; values?: Iterable<unknown> } | undefined;
  if (!z) return [];
  if (Array.isArray(z.options)) return z.options.map(String);
  if (z.values) return [...z.values].map(String);
  return [];
}

let branches: LeafBranch[] | null = null;
function leafBranches(): LeafBranch[] {
  branches ??= FilterLeaf.options.map((schema) => {
    const shape = schema.shape as Record<string, unknown>;
    return { fields: 'property' in shape ? null : accepted(shape.field), ops: accepted(shape.op), schema };
  });
  return branches;
}

const unique = (xs: string[]) => [...new Set(xs)];
const quoted = (xs: string[]) => xs.map((x) => `"${x}"`).join(', ');
const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

const SHAPES = '{"field", "op", "value"}, {"property", "op", "value"}, {"and": [...]}, {"or": [...]} or {"not": {...}}';

/** The first problem in a filter tree (depth first, in the order a person reads it), or null when none is found. */
export function explainFilter(value: unknown, path: PropertyKey[] = ['filter'], depth = 0): Blame | null {
  const at = formatFieldPath(path);
  if (depth > Limits.filterDepth) return null; // the depth limit has its own error
  if (!isObject(value)) return { path, message: `${at} must be a filter object: ${SHAPES}` };
  const keys = Object.keys(value);
  for (const op of ['and', 'or'] as const) {
    if (!(op in value)) continue;
    const extra = keys.find((k) => k !== op);
    if (extra) return { path: [...path, extra], message: `a filter node with "${op}" takes nothing else, but ${at} also has "${extra}"` };
    const list = value[op];
    if (!Array.isArray(list))
      return {
        path: [...path, op],
        message: `"${op}" needs a list of filters, e.g. {"${op}": [{"field": "kind", "op": "eq", "value": "decision"}, …]}${list === undefined ? '' : `, not ${JSON.stringify(list)}`}`,
      };
    if (list.length === 0) return { path: [...path, op], message: `"${op}" needs at least one filter in its list` };
    if (list.length > 64) return { path: [...path, op], message: `"${op}" takes at most 64 filters (got ${list.length})` };
    for (let i = 0; i < list.length; i++) {
      const b = explainFilter(list[i], [...path, op, i], depth + 1);
      if (b) return b;
    }
    return null;
  }
  if ('not' in value) {
    const extra = keys.find((k) => k !== 'not');
    if (extra) return { path: [...path, extra], message: `a filter node with "not" takes nothing else, but ${at} also has "${extra}"` };
    return explainFilter(value.not, [...path, 'not'], depth + 1);
  }
  const isProperty = 'property' in value;
  if (!isProperty && !('field' in value) && (value.op === 'and' || value.op === 'or' || value.op === 'not'))
    return {
      path: [...path, 'op'],
      message: `"${value.op}" is not an op but a node of its own: write {"${value.op}": ${value.op === 'not' ? '{…}' : '[{…}, {…}]'}} around the filter${value.op === 'not' ? '' : 's'} it joins`,
    };
  if (!isProperty && !('field' in value))
    return { path, message: `${at} is not a filter: a filter is ${SHAPES}${keys.length ? `; it has ${quoted(keys)}` : ''}` };
  const extra = keys.find((k) => k !== (isProperty ? 'property' : 'field') && k !== 'op' && k !== 'value');
  if (extra)
    return {
      path: [...path, extra],
      message: `a filter on a ${isProperty ? 'property' : 'field'} takes only "${isProperty ? 'property' : 'field'}", "op" and "value", not "${extra}"`,
    };
  const all = leafBranches();
  let candidates: LeafBranch[];
  let subject: string;
  if (isProperty) {
    candidates = all.filter((b) => b.fields === null);
    if (typeof value.property !== 'string' || !value.property)
      return { path: [...path, 'property'], message: `"property" must be the name of a memory property (a non-empty string)` };
    subject = `property "${value.property}"`;
  } else {
    const known = unique(all.flatMap((b) => b.fields ?? []));
    if (typeof value.field !== 'string' || !known.includes(value.field))
      return {
        path: [...path, 'field'],
        message: `${JSON.stringify(value.field ?? null)} is not a field a filter can test; the fields are ${known.join(', ')} (use {"property": …} for your own properties)`,
      };
    candidates = all.filter((b) => b.fields?.includes(value.field as string));
    subject = `field ${value.field}`;
  }
  const ops = unique(candidates.flatMap((b) => b.ops));
  if (!('op' in value)) return { path: [...path, 'op'], message: `the filter on ${subject} has no "op"; use one of ${ops.join(', ')}` };
  if (typeof value.op !== 'string' || !ops.includes(value.op))
    return { path: [...path, 'op'], message: `op ${JSON.stringify(value.op)} does not apply to ${subject}; use one of ${ops.join(', ')}` };
  const matching = candidates.filter((b) => b.ops.includes(value.op as string));
  if (!('value' in value)) return { path: [...path, 'value'], message: `the filter on ${subject} (op ${value.op}) has no "value"` };
  for (const b of matching) {
    const r = b.schema.safeParse(value);
    if (r.success) return null;
  }
  const first = matching[0].schema.safeParse(value);
  const issue = first.success ? undefined : (first.error.issues[0] as unknown as Parameters<typeof issueSentence>[0]);
  if (!issue) return null;
  const deep = issue.code === 'invalid_union' ? (issue.errors?.[0]?.[0] ?? issue) : issue;
  const p = [...path, ...issue.path];
  return { path: p, message: issueSentence(deep, `the value for ${subject} (op ${value.op})`, value.value) };
}
