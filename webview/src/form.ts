/**
 * The memory edit form: a memory as editable text fields, the form back to memory/upsert params (saved with
 * ifVersion), which fields differ between the form and a newer stored version, a merge of the two, and the
 * form field a daemon error names (`data.field`, e.g. `anchors[0].path` -> anchors).
 */
import type { Anchor, Memory, UpsertParams } from '../../daemon/src/protocol/types';

export const FORM_FIELDS = [
  'value',
  'kind',
  'tags',
  'importance',
  'confidence',
  'validFrom',
  'validTo',
  'expiresAt',
  'anchors',
  'properties',
] as const;
export type FormField = (typeof FORM_FIELDS)[number];
export type Form = Record<FormField, string>;

export function anchorText(a: Anchor): string {
  const lines = a.startLine ? `:${a.startLine}${a.endLine && a.endLine !== a.startLine ? `-${a.endLine}` : ''}` : '';
  return `${a.path}${lines}${a.symbol ? `#${a.symbol}` : ''}`;
}

/** "src/a.ts:3-4#fn" -> anchor; lines that do not parse are passed through as a path for the daemon to judge. */
export function parseAnchor(line: string): Anchor {
  const m = /^(.+?)(?::(\d+)(?:-(\d+))?)?(?:#(.+))?$/.exec(line.trim());
  if (!m) return { path: line.trim() };
  const a: Anchor = { path: m[1] };
  if (m[2]) a.startLine = Number(m[2]);
  if (m[3]) a.endLine = Number(m[3]);
  if (m[4]) a.symbol = m[4];
  return a;
}

export function formFromMemory(m: Memory): Form {
  return {
    value: m.value,
    kind: m.kind,
    tags: m.tags.join(', '),
    importance: String(m.importance),
    confidence: String(m.confidence),
    validFrom: m.validFrom ?? '',
    validTo: m.validTo ?? '',
    expiresAt: m.expiresAt ?? '',
    anchors: m.anchors.map(anchorText).join('\n'),
    properties: Object.keys(m.properties).length ? JSON.stringify(m.properties, null, 2) : '',
  };
}

/** A problem found before sending (the daemon validates everything else). */
export class FormError extends Error {
  constructor(
    readonly field: FormField,
    message: string,
  ) {
    super(message);
  }
}

const num = (s: string): number | string => (s.trim() !== '' && Number.isFinite(Number(s)) ? Number(s) : s);
const date = (s: string): string | null => (s.trim() ? s.trim() : null);

/** The form as upsert params for `m`, saved only if the store still holds `ifVersion`. */
export function upsertFromForm(
  form: Form,
  m: Pick<Memory, 'namespace' | 'key'>,
  ifVersion: number,
  extra: Partial<UpsertParams> = {},
): UpsertParams {
  let properties: UpsertParams['properties'] = {};
  if (form.properties.trim()) {
    try {
      properties = JSON.parse(form.properties);
    } catch (e) {
      throw new FormError('properties', `Properties must be a JSON object, such as {"ticket": "T-1"} (${(e as Error).message}).`);
    }
    if (!properties || typeof properties !== 'object' || Array.isArray(properties))
      throw new FormError('properties', 'Properties must be a JSON object, such as {"ticket": "T-1"}.');
  }
  return {
    namespace: m.namespace,
    key: m.key,
    value: form.value,
    kind: form.kind as UpsertParams['kind'],
    tags: form.tags
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean),
    // Not-a-number text goes to the daemon as it is, so its validation error names the field.
    importance: num(form.importance) as number,
    confidence: num(form.confidence) as number,
    validFrom: date(form.validFrom),
    validTo: date(form.validTo),
    expiresAt: date(form.expiresAt),
    anchors: form.anchors
      .split('\n')
      .filter((l) => l.trim())
      .map(parseAnchor),
    properties,
    ifVersion,
    actor: 'dashboard',
    ...extra,
  };
}

/** The form field a daemon error's `data.field` names, if it is one of the form's. */
export function formFieldOf(field: string | undefined): FormField | undefined {
  if (!field) return undefined;
  const head = field.split(/[.[]/)[0];
  return (FORM_FIELDS as readonly string[]).includes(head) ? (head as FormField) : undefined;
}

/** Fields where the user's form and the stored (newer) memory disagree. */
export function conflictingFields(mine: Form, theirs: Memory): FormField[] {
  const t = formFromMemory(theirs);
  return FORM_FIELDS.filter((f) => mine[f] !== t[f]);
}

export type Choice = 'mine' | 'theirs';

/** The merged form: each field from the side chosen for it (default: mine). */
export function mergeForms(mine: Form, theirs: Memory, choices: Partial<Record<FormField, Choice>>): Form {
  const t = formFromMemory(theirs);
  const out = { ...mine };
  for (const f of FORM_FIELDS) if (choices[f] === 'theirs') out[f] = t[f];
  return out;
}
