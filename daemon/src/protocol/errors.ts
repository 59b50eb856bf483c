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
  /** The request conflicts with the current state (e.g. linking a memory to itself, restoring a live memory). */
  InvalidState: 1012,
} as const;

export type ErrorCodeName = keyof typeof ErrorCodes;
export type ErrorCode = (typeof ErrorCodes)[ErrorCodeName];

/** The `data` member of every Cairn error reply. */
export interface CairnErrorData {
  /** The symbolic name of the code, e.g. `"Deleted"`. */
  name: ErrorCodeName;
  /** Dotted path of the offending params field, when one is to blame. */
  field?: string;
  /** Extra, code-specific facts (deletedAt, deletedBy, currentVersion, limit, ...). */
  [extra: string]: unknown;
}

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
