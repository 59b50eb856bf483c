/**
 * The rules of a write, shared by both stores (the SQLite store in `store.ts` and the team store in
 * `pg/write-plan.ts`): what content is accepted, which writes are refused (deletion sticks, optimistic
 * concurrency, forgotten values, supersession), and how a request merges with the stored row. Each store
 * fetches the rows these rules need in its own way and applies them in the order written here; keeping one
 * copy is what makes "a behaviour that differs between the backends is a bug" hold by construction.
 */
import { CairnError } from '../protocol/errors';
import { Limits, type Anchor, type HistoryEntry, type UpsertParams, type UpsertResult } from '../protocol/types';
import { detectCredentials, normalizeTags, SECRET_TAG } from '../text/secrets';
import { extractiveSummary } from '../text/summary';
import { fromIso, iso, isoReq, type MemoryRow } from './rows';

/** The actor of deletions done by the TTL sweep: such a memory may be written again without `restore`. */
export const SYSTEM_EXPIRE = 'system:expire';
/** The actor of the daemon's anchor checks (an anchor gone stale sends its memory to review). */
export const SYSTEM_ANCHORS = 'system:anchors';

/** The content a write stores, merged from the request and the stored row. */
export interface NextContent {
  value: string;
  kind: string;
  tags: string[];
  importance: number;
  confidence: number;
  source: string;
  properties: unknown;
  anchors: Anchor[];
  validFrom: number | null;
  validTo: number | null;
  expiresAt: number | null;
  status: string;
}

/**
 * The 14 content columns of a memory row as both stores write them, in their statements' order: value, value_hash,
 * summary, kind, tags, importance, confidence, source, properties, anchors, valid_from, valid_to, expires_at, status.
 */
export function contentColumns(next: NextContent, valueHash: string, summary: string | null): unknown[] {
  return [
    next.value,
    valueHash,
    summary,
    next.kind,
    JSON.stringify(next.tags),
    next.importance,
    next.confidence,
    next.source,
    JSON.stringify(next.properties),
    JSON.stringify(next.anchors),
    next.validFrom,
    next.validTo,
    next.expiresAt,
    next.status,
  ];
}

export const clamp01 = (x: number) => Math.min(1, Math.max(0, x));

export function stripUndefined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** The request's own content (the store checks namespace and scope first, with its own query builder). */
export function validateContent(p: UpsertParams): void {
  const bytes = Buffer.byteLength(p.value, 'utf8');
  if (bytes > Limits.valueBytes)
    throw new CairnError('ValueTooLarge', `value is ${bytes} bytes; the limit is ${Limits.valueBytes}`, {
      field: 'value',
      limit: Limits.valueBytes,
    });
  if (p.value.trim().length === 0) throw new CairnError('InvalidParams', 'value is empty', { field: 'value' });
  if (p.value.includes('\u0000')) throw new CairnError('InvalidParams', 'value contains a NUL character', { field: 'value' });
  p.tags?.forEach((t, i) => {
    if (t.trim().length === 0) throw new CairnError('InvalidParams', 'a tag is empty or only whitespace', { field: `tags[${i}]` });
  });
  if (p.properties && Object.keys(p.properties).length > Limits.properties)
    throw new CairnError('InvalidParams', `more than ${Limits.properties} properties`, { field: 'properties' });
  p.anchors?.forEach((a, i) => {
    if (a.startLine !== undefined && a.endLine !== undefined && a.endLine < a.startLine)
      throw new CairnError('InvalidParams', 'endLine is before startLine', { field: `anchors[${i}].endLine` });
    if (a.endLine !== undefined && a.startLine === undefined)
      throw new CairnError('InvalidParams', 'endLine needs startLine', { field: `anchors[${i}].startLine` });
  });
  const vf = fromIso(p.validFrom);
  const vt = fromIso(p.validTo);
  if (vf !== null && vt !== null && vt <= vf)
    throw new CairnError('InvalidParams', 'validTo must be after validFrom', { field: 'validTo' });
}

/**
 * 1. Deletion sticks: a deleted key is only written again with restore: true (except a memory that merely
 * expired: its TTL was not anyone's rejection). Returns the write's history op; notes an after-expiry write in `detail`.
 */
export function refuseDeleted(p: UpsertParams, existing: MemoryRow | undefined, detail: Record<string, unknown>): HistoryEntry['op'] {
  if (!existing) return 'create';
  if (existing.deleted_at === null) return 'update';
  const expiredOnly = existing.deleted_by === SYSTEM_EXPIRE;
  if (!p.restore && !expiredOnly) {
    throw new CairnError('Deleted', `${p.namespace}/${p.key} was deleted at ${iso(existing.deleted_at)} by ${existing.deleted_by}`, {
      field: 'key',
      hint: { param: 'restore', value: true, effect: 'to write it again' },
      id: existing.id,
      deletedAt: iso(existing.deleted_at),
      deletedBy: existing.deleted_by,
      reason: existing.delete_reason,
    });
  }
  if (expiredOnly) detail.afterExpire = true;
  return 'restore';
}

/** 2. Optimistic concurrency: `ifVersion` must be the stored live version (0: no live memory). */
export function refuseStaleVersion(p: UpsertParams, existing: MemoryRow | undefined): void {
  if (p.ifVersion === undefined) return;
  const current = existing && existing.deleted_at === null ? existing.version : 0;
  if (current !== p.ifVersion)
    throw new CairnError(
      'VersionConflict',
      current === 0
        ? `${p.namespace}/${p.key} is not there (deleted, or never written), but the write expected version ${p.ifVersion}`
        : p.ifVersion === 0
          ? `${p.namespace}/${p.key} already exists (version ${current})`
          : `${p.namespace}/${p.key} changed since it was read: it is at version ${current}, not ${p.ifVersion}`,
      {
        field: 'ifVersion',
        currentVersion: current,
        id: existing?.id,
      },
    );
}

/** 3. A forgotten value is not re-learned unless forced (noted in `detail`). */
export function refuseRejected(
  p: UpsertParams,
  rejected: { actor: string; at: number } | undefined,
  detail: Record<string, unknown>,
): void {
  if (!rejected) return;
  if (!p.force) {
    throw new CairnError('RejectedValue', `this value was forgotten in ${p.namespace} at ${isoReq(rejected.at)} by ${rejected.actor}`, {
      field: 'value',
      hint: { param: 'force', value: true, effect: 'to write it anyway' },
      rejectedAt: isoReq(rejected.at),
      rejectedBy: rejected.actor,
    });
  }
  detail.forced = true;
}

/** 4. The memory a write supersedes (looked up inside the caller's scope) must be live, another one, not superseded yet. */
export function refuseBadSupersede(p: UpsertParams, existing: MemoryRow | undefined, superseded: MemoryRow | undefined): void {
  if (p.supersedes === undefined) return;
  if (!superseded || superseded.deleted_at !== null)
    throw new CairnError('NotFound', `no live memory ${p.supersedes} to supersede${p.scope ? ' in scope' : ''}`, {
      field: 'supersedes',
    });
  if (existing && superseded.id === existing.id)
    throw new CairnError('InvalidState', 'a memory cannot supersede itself', { field: 'supersedes' });
  if (superseded.status === 'superseded')
    throw new CairnError('InvalidState', `memory ${p.supersedes} is already superseded by ${superseded.superseded_by}`, {
      field: 'supersedes',
    });
}

/**
 * 5. Merge: omitted fields keep their stored values (a restored memory keeps its attributes unless given); null
 * clears a nullable field. Tags are stored normalized (trimmed, lowercased); a value that looks like a credential
 * is tagged `secret`, so it never reaches an agent unless the user allows it (docs/protocol.md#secrets), and the
 * result carries a warning.
 */
export function mergeContent(
  p: UpsertParams,
  base: MemoryRow | undefined,
  op: HistoryEntry['op'],
  detail: Record<string, unknown>,
): { next: NextContent; warn: { warnings?: NonNullable<UpsertResult['warnings']> } } {
  let tags = normalizeTags(p.tags !== undefined ? p.tags : base ? (JSON.parse(base.tags) as string[]) : []);
  const credentials = detectCredentials(
    [p.value, ...Object.values(p.properties ?? {}).filter((v): v is string => typeof v === 'string')].join('\n'),
  );
  const warnings = credentials.map((c) => ({
    code: 'credential' as const,
    kind: c.kind,
    message: `the value looks like it holds a ${c.kind}; the memory is tagged "${SECRET_TAG}" and kept from agents`,
  }));
  if (credentials.length > 0 && !tags.includes(SECRET_TAG)) {
    tags = normalizeTags([...tags, SECRET_TAG]);
    detail.autoSecret = credentials.map((c) => c.kind);
  }
  const anchors: Anchor[] =
    p.anchors !== undefined
      ? incomingAnchors(p.anchors, base ? (JSON.parse(base.anchors) as Anchor[]) : [])
      : base
        ? JSON.parse(base.anchors)
        : [];
  const next: NextContent = {
    value: p.value,
    kind: p.kind ?? (base?.kind as string | undefined) ?? 'note',
    tags,
    importance: p.importance !== undefined ? clamp01(p.importance) : (base?.importance ?? 0.5),
    confidence: p.confidence !== undefined ? clamp01(p.confidence) : (base?.confidence ?? 1),
    source: p.source ?? base?.source ?? 'user',
    properties: p.properties !== undefined ? p.properties : base ? JSON.parse(base.properties) : {},
    anchors,
    validFrom: p.validFrom !== undefined ? fromIso(p.validFrom) : (base?.valid_from ?? null),
    validTo: p.validTo !== undefined ? fromIso(p.validTo) : (base?.valid_to ?? null),
    expiresAt: p.expiresAt !== undefined ? fromIso(p.expiresAt) : op === 'restore' ? null : (base?.expires_at ?? null),
    status: p.status ?? (base && base.status !== 'superseded' ? base.status : 'active'),
  };
  if (next.validFrom !== null && next.validTo !== null && next.validTo <= next.validFrom)
    throw new CairnError('InvalidParams', 'validTo must be after validFrom', { field: 'validTo' });
  return { next, warn: warnings.length > 0 ? { warnings } : {} };
}

/**
 * Anchors as a write gives them. `stale`, `staleReason` and `relocated` are the daemon's: an anchor that names the
 * same place as a stored one (path, lines, symbol) with no fingerprint or the stored one keeps the stored anchor whole,
 * so saving a memory (from a form, or the memory as read) keeps what the daemon knows of its code — a stale anchor
 * stays stale until it is anchored again. Any other anchor (a new place, a new fingerprint) starts afresh.
 */
function incomingAnchors(given: Anchor[], stored: Anchor[]): Anchor[] {
  return given.map((a) => {
    const same = stored.find(
      (s) =>
        s.path === a.path &&
        s.startLine === a.startLine &&
        s.endLine === a.endLine &&
        s.symbol === a.symbol &&
        (a.hash === undefined || a.hash === s.hash),
    );
    return same ?? stripUndefined({ ...a, stale: undefined, staleReason: undefined, relocated: undefined });
  });
}

/** 6. Whether the stored row already holds exactly this content (then nothing is written). */
export function sameContent(r: MemoryRow, n: NextContent): boolean {
  return (
    r.value === n.value &&
    r.kind === n.kind &&
    r.tags === JSON.stringify(n.tags) &&
    r.importance === n.importance &&
    r.confidence === n.confidence &&
    r.source === n.source &&
    r.properties === JSON.stringify(n.properties) &&
    r.anchors === JSON.stringify(n.anchors) &&
    r.valid_from === n.validFrom &&
    r.valid_to === n.validTo &&
    r.expires_at === n.expiresAt &&
    r.status === n.status
  );
}

/** The stored summary of a long value (null for short ones, or when summarizing fails: readers fall back to the value). */
export function summaryOf(value: string): string | null {
  if (value.length <= Limits.summaryThresholdChars) return null;
  try {
    return extractiveSummary(value);
  } catch {
    return null;
  }
}
