/**
 * The closed set of Cairn error codes.
 *
 * JSON-RPC reserves -32768..-32000 and LSP reserves -32899..-32800 inside it;
 * Cairn's own codes live in 1000..1099 so they can never collide with either.
 * Codes are never reused: a retired code stays here, marked deprecated.
 *
 * Every error a handler returns is a ResponseError whose `code` is one of
 * these and whose `data` is a {@link CairnErrorData}.
 */
export const ErrorCodes = {
  /** A params object failed validation. `data.field` names the offending field (dotted path). */
  InvalidParams: 1001,
  /** The memory, namespace, task or link does not exist (or is outside the caller's scope). */
  NotFound: 1002,
  /** The (namespace, key) was deleted; writing it again needs `restore: true`. `data.deletedAt`, `data.deletedBy`. */
  Deleted: 1003,
  /** The value was rejected by `memory/forget` in this namespace; writing it needs `force: true`. */
  RejectedValue: 1004,
  /** `ifVersion` did not match the stored version. `data.currentVersion`. */
  VersionConflict: 1005,
  /** A namespace path broke the grammar (see docs/protocol.md#namespaces). `data.field`. */
  InvalidNamespace: 1006,
  /** A value, message or batch is larger than its documented limit. `data.limit`. */
  ValueTooLarge: 1007,
  /** The store stayed locked by another process past the busy timeout and retries. */
  StoreBusy: 1008,
  /** A bug: anything the daemon did not anticipate. The daemon keeps serving. */
  Internal: 1009,
  /** A filter tree is malformed. `data.field` is the JSON path of the bad node, e.g. `filter.and[1].op`. */
  InvalidFilter: 1010,
  /**
   * @deprecated Retired before release and never sent: `index/wait` answers `reached: false` instead.
   * Reserved so the number is never given another meaning.
   */
  Timeout: 1011,
  /** The request conflicts with the current state (e.g. linking a memory to itself, restoring a live memory). */
  InvalidState: 1012,
  /**
   * Something the request needs cannot be reached. Client side: no daemon could be reached, or the connection closed
   * before the reply came; `data.sent` is false when the request was never written (safe to retry), true when it was
   * and its outcome is unknown. From a daemon: the team database cannot be reached (`data.store` is `team`); nothing
   * was written, retry later.
   */
  Unavailable: 1013,
  /** The database refused the change: the caller's database role was not granted this namespace root (team store). */
  Forbidden: 1014,
  /** The daemon is at a documented capacity limit (connections, unread output); `data.limit`. Retry later. */
  Overloaded: 1015,
  /**
   * The request ran past the per-request time limit (`data.limit`, ms; docs/protocol.md#limits) and was stopped at
   * a chunk boundary. Each chunk is atomic: `data.progress` says what was done (an import can be sent again: what
   * it already wrote is skipped). Not the retired `Timeout`.
   */
  RequestTimeLimit: 1016,
} as const;

export type ErrorCodeName = keyof typeof ErrorCodes;
export type ErrorCode = (typeof ErrorCodes)[ErrorCodeName];

/** The `data` member of every Cairn error reply. */
export interface CairnErrorData {
  /** The symbolic name of the code, e.g. `"Deleted"`. */
  name: ErrorCodeName;
  /** Dotted path of the offending params field, when one is to blame. */
  field?: string;
  /** What the caller can pass to make the request succeed (see {@link ErrorHint}); clients render it. */
  hint?: ErrorHint;
  /** Extra, code-specific facts (deletedAt, deletedBy, currentVersion, limit, ...). */
  [extra: string]: unknown;
}

/** Codes that are reserved but never sent any more. */
export const deprecatedErrorCodes: ReadonlySet<ErrorCodeName> = new Set<ErrorCodeName>(['Timeout']);

export const errorCodeNames: Record<number, ErrorCodeName> = Object.fromEntries(
  Object.entries(ErrorCodes).map(([k, v]) => [v, k as ErrorCodeName]),
);

/** Short human descriptions, used by docs/protocol.md and the CLI. */
export const errorDescriptions: Record<ErrorCodeName, string> = {
  InvalidParams: 'params failed validation; data.field names the offending field',
  NotFound: 'no such memory, namespace, task or link in scope',
  Deleted: 'the key was deleted; pass restore: true to write it again (data.deletedAt, data.deletedBy)',
  RejectedValue: 'the value was forgotten (rejected) in this namespace; pass force: true to write it anyway',
  VersionConflict: 'ifVersion did not match the stored version (data.currentVersion)',
  InvalidNamespace: 'namespace path breaks the grammar',
  ValueTooLarge: 'value, message or batch over its documented limit (data.limit)',
  StoreBusy: 'the store stayed locked by another process past the busy timeout',
  Internal: 'unexpected failure inside the daemon (a bug); the daemon keeps serving',
  InvalidFilter: 'malformed filter tree; data.field is the path of the bad node',
  InvalidState: 'the request conflicts with the current state',
  Timeout: 'deprecated, never sent (reserved): index/wait answers reached: false instead',
  Unavailable:
    'no daemon could be reached or the connection closed before the reply (client side; data.sent says whether the request was written), or the team database cannot be reached (data.store: team; nothing was written)',
  Forbidden: "the team database refused the change: the caller's role was not granted this namespace root",
  Overloaded: 'the daemon is at a documented capacity limit (connections, unread output); data.limit; retry later',
  RequestTimeLimit:
    'the request ran past the per-request time limit (data.limit ms) and stopped at a chunk boundary; data.progress says what was done',
};

/** The error type thrown by the store and handlers; the RPC layer turns it into a ResponseError once. */
export class CairnError extends Error {
  readonly code: ErrorCode;
  readonly data: CairnErrorData;
  constructor(name: ErrorCodeName, message: string, extra: Omit<CairnErrorData, 'name'> = {}) {
    super(message);
    this.name = 'CairnError';
    this.code = ErrorCodes[name];
    this.data = { name, ...extra };
  }
  get codeName(): ErrorCodeName {
    return this.data.name;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Conversions. Every place that turns something into a Cairn error, or a Cairn error into a wire reply, uses these;
// none classifies an error by its message text.

/** A JSON-RPC error object as it travels: vscode-jsonrpc's ResponseError has this shape, so do raw replies. */
export interface WireError {
  code: number;
  message: string;
  data?: unknown;
}

export function isWireError(e: unknown): e is WireError {
  return !!e && typeof e === 'object' && typeof (e as WireError).code === 'number' && typeof (e as WireError).message === 'string';
}

/** The Cairn code name carried by a wire error (`data.name`, else its numeric code), or undefined. */
export function wireErrorName(e: unknown): ErrorCodeName | undefined {
  if (!isWireError(e)) return undefined;
  const named = (e.data as { name?: unknown } | undefined)?.name;
  if (typeof named === 'string' && named in ErrorCodes) return named as ErrorCodeName;
  return errorCodeNames[e.code];
}

/** JSON-RPC's own codes a Cairn client may meet, as the Cairn code closest in meaning. */
const jsonRpcCodes: Record<number, ErrorCodeName> = {
  [-32700]: 'InvalidParams',
  [-32600]: 'InvalidParams',
  [-32601]: 'NotFound',
  [-32602]: 'InvalidParams',
};

/**
 * Anything a call can throw, as a CairnError: a CairnError as is; a wire reply with its code, message and data
 * (JSON-RPC's own codes mapped to the nearest Cairn code); anything else as `Internal`.
 */
export function toCairnError(e: unknown): CairnError {
  if (e instanceof CairnError) return e;
  if (isWireError(e)) {
    const name = wireErrorName(e) ?? jsonRpcCodes[e.code];
    if (name) {
      const { name: _n, ...extra } = (e.data && typeof e.data === 'object' ? e.data : {}) as Record<string, unknown>;
      return new CairnError(name, e.message, extra);
    }
    return new CairnError('Internal', e.message, { rpcCode: e.code });
  }
  return new CairnError('Internal', (e as Error)?.message ?? String(e));
}

/**
 * A handler failure as the reply to send: a CairnError with its own code and data; anything else as `Internal`
 * (`unexpected: true`: the caller should log it as a bug).
 */
export function toWireError(e: unknown, context: string): WireError & { data: CairnErrorData; unexpected: boolean } {
  if (e instanceof CairnError) return { code: e.code, message: e.message, data: e.data, unexpected: false };
  const msg = (e as Error)?.message ?? String(e);
  return { code: ErrorCodes.Internal, message: `internal error in ${context}: ${msg}`, data: { name: 'Internal' }, unexpected: true };
}

/** `a.b[2].c` from a path of keys and indexes. */
export function formatFieldPath(path: readonly PropertyKey[]): string {
  let s = '';
  for (const p of path) s += typeof p === 'number' ? `[${p}]` : s ? `.${String(p)}` : String(p);
  return s;
}

/** The part of a zod issue these conversions read (zod 4's $ZodIssue has this shape). */
interface ZodIssueLike {
  code: string;
  path: PropertyKey[];
  message: string;
  keys?: string[];
  errors?: ZodIssueLike[][];
  expected?: string;
  origin?: string;
  minimum?: number | bigint;
  maximum?: number | bigint;
  inclusive?: boolean;
  values?: unknown[];
  format?: string;
}

/** What a validation failure blames: the field (dotted path) and a sentence saying what is wrong with it. */
export interface Blame {
  path: PropertyKey[];
  message: string;
}

/** How to read a validation failure: the input (to say what was received) and a better explanation for a subtree. */
export interface ZodErrorOptions {
  /** Extra words after "unknown field X" (e.g. the accepted names). */
  unknownField?: (field: string) => string;
  /** The params that failed: lets the message say what was received. */
  input?: unknown;
  /**
   * Explains a failure under a top-level field better than zod's first issue can (a filter tree is a union of
   * unions: zod blames the branch that got furthest, not the one the caller meant). Null: use zod's issue.
   */
  explain?: (field: string, value: unknown) => Blame | null;
}

/** The value at `path` inside `input` (undefined when absent). */
export function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

/** "a string", "a list", "null", … for a received JSON value. */
export function describeValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  switch (typeof v) {
    case 'string':
      return 'a string';
    case 'number':
      return 'a number';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'object':
      return 'an object';
    default:
      return typeof v;
  }
}

const TYPE_WORDS: Record<string, string> = {
  array: 'a list',
  object: 'an object',
  string: 'a string',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  null: 'null',
};

const plural = (n: number | bigint, one: string, many: string) => `${n} ${Number(n) === 1 ? one : many}`;

/** One zod issue as a sentence about the field (`what` is how the field is named, e.g. "importance"). */
export function issueSentence(i: ZodIssueLike, what: string, received: unknown): string {
  switch (i.code) {
    case 'invalid_type':
      if (received === undefined) return `${what} is missing: it must be ${TYPE_WORDS[i.expected ?? ''] ?? i.expected}`;
      return `${what} must be ${TYPE_WORDS[i.expected ?? ''] ?? i.expected}, not ${describeValue(received)}`;
    case 'too_small': {
      const n = i.minimum ?? 0;
      if (i.origin === 'array' || i.origin === 'set') return `${what} needs at least ${plural(n, 'item', 'items')}`;
      if (i.origin === 'string')
        return Number(n) === 1 ? `${what} cannot be empty` : `${what} needs at least ${plural(n, 'character', 'characters')}`;
      return `${what} must be ${i.inclusive === false ? 'greater than' : 'at least'} ${n}`;
    }
    case 'too_big': {
      const n = i.maximum ?? 0;
      if (i.origin === 'array' || i.origin === 'set') return `${what} takes at most ${plural(n, 'item', 'items')}`;
      if (i.origin === 'string') return `${what} is longer than ${plural(n, 'character', 'characters')}`;
      return `${what} must be ${i.inclusive === false ? 'less than' : 'at most'} ${n}`;
    }
    case 'invalid_value':
      return i.values?.length === 1
        ? `${what} must be ${JSON.stringify(i.values[0])}`
        : `${what} must be one of ${(i.values ?? []).map((v) => JSON.stringify(v)).join(', ')}${received !== undefined ? `, not ${JSON.stringify(received)}` : ''}`;
    case 'invalid_format':
      return i.format === 'datetime'
        ? `${what} must be an ISO 8601 date and time with a time zone, e.g. 2026-01-31T09:00:00Z${typeof received === 'string' ? `, not ${JSON.stringify(received)}` : ''}`
        : i.format === 'regex' && i.message && !/^Invalid/.test(i.message)
          ? `${what} is not valid: ${i.message}` // a pattern's own rule (e.g. BranchName's)
          : `${what} must be a valid ${i.format ?? 'value'}`;
    default:
      // Custom checks (refinements) carry their own sentence.
      return `${what}: ${i.message}`;
  }
}

/**
 * A zod validation failure as `InvalidParams` (or `InvalidFilter` when the bad field is under `filter`), naming the
 * offending field in `data.field` and saying in words what is wrong with it (`data.request`: the method or tool).
 * For a union, the branch that got furthest names the field, unless `explain` knows better.
 */
export function fromZodError(err: { issues: readonly unknown[] }, context: string, options: ZodErrorOptions = {}): CairnError {
  const issue = err.issues[0] as ZodIssueLike;
  const codeFor = (path: readonly PropertyKey[]) => (path[0] === 'filter' ? 'InvalidFilter' : 'InvalidParams');
  const top = issue.path[0];
  if (options.explain && typeof top === 'string' && options.input !== undefined) {
    const b = options.explain(top, valueAt(options.input, [top]));
    if (b) return new CairnError(codeFor(b.path), b.message, { field: formatFieldPath(b.path), request: context });
  }
  const deepest = (i: ZodIssueLike): ZodIssueLike => {
    if (i.code === 'invalid_union' && Array.isArray(i.errors)) {
      let best: ZodIssueLike | null = null;
      for (const branch of i.errors) {
        for (const sub of branch) {
          const d = deepest({ ...sub, path: [...i.path, ...sub.path] });
          if (!best || d.path.length > best.path.length) best = d;
        }
      }
      if (best && best.path.length > i.path.length) return best;
    }
    return i;
  };
  if (issue.code === 'unrecognized_keys' && issue.keys?.length) {
    const path = [...issue.path, issue.keys[0]];
    const at = formatFieldPath(path);
    const hint = options.unknownField?.(at);
    return new CairnError(codeFor(path), `unknown field ${at}${hint ? `; ${hint}` : ''}`, { field: at, request: context });
  }
  const d = deepest(issue);
  const field = formatFieldPath(d.path);
  const message =
    d.code === 'invalid_union'
      ? `${field || 'the params object'} does not match any accepted shape`
      : issueSentence(d, field || 'the params object', valueAt(options.input, d.path));
  return new CairnError(codeFor(d.path), message, { field, request: context });
}

// ---------------------------------------------------------------------------------------------------------------
// Hints: what the caller can do about an error, as data. Each client spells the parameter its own way (the CLI as
// its flag, `--restore`; the MCP server and the extension as the request param, `restore: true`).

/** `data.hint` of an error: the request param that would make the request succeed, and what it then does. */
export interface ErrorHint {
  param: string;
  value: unknown;
  /** What passing it does, e.g. "to write it again". */
  effect: string;
}

export function errorHint(data: unknown): ErrorHint | undefined {
  const h = (data as { hint?: Partial<ErrorHint> } | undefined)?.hint;
  return h && typeof h.param === 'string' && typeof h.effect === 'string' ? (h as ErrorHint) : undefined;
}

/** How a client names a param: by default as the request spells it (`restore: true`). */
export type ParamSpelling = (param: string, value: unknown) => string;
export const paramSpelling: ParamSpelling = (param, value) => `${param}: ${JSON.stringify(value)}`;

/** An error's message with its hint, as one sentence: "… was deleted …; pass restore: true to write it again". */
export function errorSentence(e: { message: string; data?: unknown }, spell: ParamSpelling = paramSpelling): string {
  const h = errorHint(e.data);
  return h ? `${e.message}; pass ${spell(h.param, h.value)} ${h.effect}` : e.message;
}
