/**
 * Every params and result type of the Cairn protocol, declared once as a zod schema.
 *
 * The schemas are the single source of truth: TypeScript types are inferred from
 * them, the daemon validates every incoming params object with them (unknown
 * fields rejected), and `schema/protocol.schema.json` is generated from them for
 * clients in other languages.
 */
import { z } from 'zod';

// ---------------------------------------------------------------------------
// Limits (documented in docs/protocol.md#limits)
// ---------------------------------------------------------------------------
export const Limits = {
  /** Max UTF-8 bytes of a memory value. */
  valueBytes: 64 * 1024,
  /** Max characters of a key. */
  keyChars: 512,
  /** Max characters of a namespace path, segments, and chars per segment. */
  namespaceChars: 255,
  namespaceSegments: 16,
  namespaceSegmentChars: 64,
  /** Max tags per memory and chars per tag. */
  tags: 64,
  tagChars: 64,
  /** Max anchors per memory. */
  anchors: 32,
  /** Max properties per memory, chars per key and per string value. */
  properties: 64,
  propertyKeyChars: 64,
  propertyValueChars: 1024,
  /** Max items per page / search hits. */
  pageSize: 1000,
  /** Max query characters. */
  queryChars: 4096,
  /** Max items in one batch upsert. */
  batchItems: 5000,
  /** Max bytes of one JSON-RPC message body (larger frames are refused and the connection dropped). */
  messageBytes: 16 * 1024 * 1024,
  /**
   * Max JSON bytes of the records of one store/export reply (the daemon holds a one-reply export whole): larger
   * exports are refused with ValueTooLarge naming store/exportPage, which pages with bounded memory.
   */
  exportReplyBytes: 16 * 1024 * 1024,
  /** Max depth and node count of a filter tree. */
  filterDepth: 16,
  filterNodes: 256,
  /** Max nesting of any params object (objects and arrays), checked before schema validation. */
  paramsDepth: 64,
  /**
   * Max simultaneous client connections on the daemon's socket. One more closes the least recently active idle one
   * (no request under way) to make room; only when every one has a request under way is it refused (Overloaded).
   */
  connections: 128,
  /** Reading a connection's requests pauses while this many reply bytes wait to be sent to it. */
  outputHighWaterBytes: 16 * 1024 * 1024,
  /** A connection with more than this many unsent reply/notification bytes is closed (a client that never reads). */
  outputMaxBytes: 128 * 1024 * 1024,
  /**
   * A frame's header section must be complete this long after its first byte, and the whole frame (header and body)
   * within frameTimeMs: a total deadline, so a peer sending a byte now and then is closed too. Defaults; the daemon
   * takes others from CAIRN_FRAME_HEADER_MS / CAIRN_FRAME_TIME_MS (server/limits.ts frameLimits).
   */
  frameHeaderMs: 10_000,
  frameTimeMs: 30_000,
  /** Values longer than this many characters get an extractive summary at write time. */
  summaryThresholdChars: 600,
  /**
   * Per-request time limit (ms). Long work (import, whole export) runs in chunks that yield to other requests
   * between them; past this limit it stops at the next chunk boundary with RequestTimeLimit (`data.progress`).
   */
  requestTimeMs: 60_000,
  /** Records a store/import applies per chunk (one transaction each), and store/export reads per chunk. */
  chunkRecords: 256,
} as const;

/** Namespace grammar: lowercase segments `[a-z0-9][a-z0-9_-]*` joined by '.'. */
export const NAMESPACE_SEGMENT = /^[a-z0-9][a-z0-9_-]*$/;

export const MEMORY_KINDS = ['fact', 'preference', 'decision', 'procedure', 'episode', 'note'] as const;
export const MEMORY_STATUSES = ['active', 'proposed', 'superseded'] as const;
export const HISTORY_OPS = [
  'create',
  'update',
  'delete',
  'restore',
  'supersede',
  'expire',
  'purge',
  'forget',
  'erase',
  'retention',
] as const;
export const LINK_TYPES = ['relates_to', 'contradicts', 'depends_on', 'derived_from', 'supports', 'refines'] as const;
export const SEARCH_MODES = ['hybrid', 'fts', 'vector'] as const;

const isoDate = z.iso.datetime({ offset: true });
const unit = z.number().finite();

export const NamespacePath = z.string().min(1).max(Limits.namespaceChars);
export const MemoryId = z.string().min(1).max(64);
export const Actor = z.string().min(1).max(200);
export const Reason = z.string().max(2000);

export const Anchor = z
  .object({
    /** Workspace-relative (preferred) or absolute path, '/' separated. */
    path: z.string().min(1).max(1024),
    symbol: z.string().min(1).max(512).optional(),
    /** 1-based inclusive line range. */
    startLine: z.number().int().min(1).optional(),
    endLine: z.number().int().min(1).optional(),
    /** Set by the daemon when the anchored code disappeared. */
    stale: z.boolean().optional(),
  })
  .strict();
export type Anchor = z.infer<typeof Anchor>;

export const PropertyValue = z.union([z.string().max(Limits.propertyValueChars), z.number().finite(), z.boolean(), z.null()]);
export const Properties = z.record(z.string().min(1).max(Limits.propertyKeyChars), PropertyValue);
export type Properties = z.infer<typeof Properties>;

export const MemoryKind = z.enum(MEMORY_KINDS);
export const MemoryStatus = z.enum(MEMORY_STATUSES);
export const LinkType = z.enum(LINK_TYPES);
export const SearchMode = z.enum(SEARCH_MODES);
export type MemoryKind = z.infer<typeof MemoryKind>;
export type MemoryStatus = z.infer<typeof MemoryStatus>;
export type LinkType = z.infer<typeof LinkType>;
export type SearchMode = z.infer<typeof SearchMode>;

/** A memory as every client sees it. Times are ISO-8601 strings (UTC). */
export const Memory = z.object({
  id: z.string(),
  namespace: z.string(),
  key: z.string(),
  value: z.string(),
  summary: z.string().nullable(),
  kind: MemoryKind,
  tags: z.array(z.string()),
  importance: z.number(),
  confidence: z.number(),
  source: z.string(),
  properties: Properties,
  anchors: z.array(Anchor),
  createdAt: z.string(),
  updatedAt: z.string(),
  validFrom: z.string().nullable(),
  validTo: z.string().nullable(),
  expiresAt: z.string().nullable(),
  lastAccessedAt: z.string().nullable(),
  accessCount: z.number().int(),
  version: z.number().int(),
  status: MemoryStatus,
  supersededBy: z.string().nullable(),
  deletedAt: z.string().nullable(),
  deletedBy: z.string().nullable(),
});
export type Memory = z.infer<typeof Memory>;

// ---------------------------------------------------------------------------
// Scope, include flags and filters
// ---------------------------------------------------------------------------
export const Scope = z
  .object({
    /** Exact allow-list of namespaces (no nesting). */
    namespaces: z.array(NamespacePath).max(256).optional(),
    /** This namespace and everything nested under it. */
    root: NamespacePath.optional(),
    /** Default true: the `user` root and its descendants are always in scope. */
    includeUser: z.boolean().optional(),
  })
  .strict();
export type Scope = z.infer<typeof Scope>;

export const Include = z
  .object({
    deleted: z.boolean().optional(),
    expired: z.boolean().optional(),
    superseded: z.boolean().optional(),
    outOfValidity: z.boolean().optional(),
    proposed: z.boolean().optional(),
  })
  .strict();
export type Include = z.infer<typeof Include>;

const cmp = z.enum(['eq', 'ne', 'lt', 'lte', 'gt', 'gte']);
const timeField = z.enum(['createdAt', 'updatedAt', 'expiresAt', 'validFrom', 'validTo', 'lastAccessedAt']);

/** Leaf comparisons. Every leaf is a strict object; see docs/protocol.md#filters. */
export const FilterLeaf = z.union([
  z.object({ field: z.enum(['kind', 'source', 'status', 'namespace', 'key']), op: z.enum(['eq', 'ne']), value: z.string() }).strict(),
  z
    .object({
      field: z.enum(['kind', 'source', 'status', 'namespace', 'key']),
      op: z.literal('in'),
      value: z.array(z.string()).min(1).max(256),
    })
    .strict(),
  z.object({ field: z.literal('source'), op: z.literal('prefix'), value: z.string().min(1) }).strict(),
  z
    .object({
      field: z.literal('tags'),
      op: z.enum(['has', 'hasAny', 'hasAll', 'hasNone']),
      value: z.union([z.string(), z.array(z.string()).min(1).max(256)]),
    })
    .strict(),
  z.object({ field: timeField, op: cmp, value: isoDate }).strict(),
  z.object({ field: timeField, op: z.literal('exists'), value: z.boolean() }).strict(),
  z.object({ field: z.literal('validAt'), op: z.literal('eq'), value: isoDate }).strict(),
  z.object({ field: z.enum(['importance', 'confidence']), op: cmp, value: unit }).strict(),
  z
    .object({ field: z.literal('anchors.path'), op: z.enum(['eq', 'prefix', 'exists']), value: z.union([z.string().min(1), z.boolean()]) })
    .strict(),
  z
    .object({
      property: z.string().min(1).max(Limits.propertyKeyChars),
      op: cmp,
      value: z.union([z.string(), z.number().finite(), z.boolean()]),
    })
    .strict(),
  z.object({ property: z.string().min(1).max(Limits.propertyKeyChars), op: z.literal('exists'), value: z.boolean() }).strict(),
]);
export type FilterLeaf = z.infer<typeof FilterLeaf>;

export type Filter = FilterLeaf | { and: Filter[] } | { or: Filter[] } | { not: Filter };
export const Filter: z.ZodType<Filter> = z.lazy(() =>
  z.union([
    z.object({ and: z.array(Filter).min(1).max(64) }).strict(),
    z.object({ or: z.array(Filter).min(1).max(64) }).strict(),
    z.object({ not: Filter }).strict(),
    FilterLeaf,
  ]),
);

// ---------------------------------------------------------------------------
// Lifecycle
// ---------------------------------------------------------------------------
/** LSP clients send many standard fields; Cairn reads only these and ignores the rest. */
export const InitializeParams = z
  .object({
    processId: z.number().int().nullable().optional(),
    clientInfo: z.object({ name: z.string(), version: z.string().optional() }).loose().optional(),
    rootUri: z.string().nullable().optional(),
    initializationOptions: z.unknown().optional(),
    capabilities: z.unknown().optional(),
  })
  .loose();
export type InitializeParams = z.infer<typeof InitializeParams>;

export const InitializeResult = z.object({
  serverInfo: z.object({ name: z.string(), version: z.string() }),
  protocolVersion: z.string(),
  capabilities: z.object({
    hoverProvider: z.boolean(),
    textDocumentSync: z.number().int(),
    cairn: z.object({ methods: z.array(z.string()), searchModes: z.array(SearchMode), vectors: z.boolean() }),
  }),
});
export type InitializeResult = z.infer<typeof InitializeResult>;

// ---------------------------------------------------------------------------
// Memories
// ---------------------------------------------------------------------------
/**
 * A client-chosen key (8–128 of `A-Z a-z 0-9 _ . : -`, e.g. a UUID) that makes a write safe to send again after
 * `Unavailable` with `data.sent: true`: the daemon applies it once and answers a retry with the first result
 * (`replayed: true`). See docs/protocol.md#idempotency.
 */
export const IdempotencyKey = z
  .string()
  .min(8)
  .max(128)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'use 8-128 characters of A-Z a-z 0-9 _ . : -');
export const UpsertParams = z
  .object({
    namespace: NamespacePath,
    key: z.string().min(1).max(Limits.keyChars),
    value: z.string(),
    kind: MemoryKind.optional(),
    tags: z.array(z.string().min(1).max(Limits.tagChars)).max(Limits.tags).optional(),
    /** Clamped to 0..1. */
    importance: unit.optional(),
    /** Clamped to 0..1. */
    confidence: unit.optional(),
    source: z.string().min(1).max(200).optional(),
    actor: Actor.optional(),
    reason: Reason.optional(),
    anchors: z.array(Anchor).max(Limits.anchors).optional(),
    properties: Properties.optional(),
    validFrom: isoDate.nullable().optional(),
    validTo: isoDate.nullable().optional(),
    expiresAt: isoDate.nullable().optional(),
    status: z.enum(['active', 'proposed']).optional(),
    /** Id of an older memory this one replaces; it becomes `superseded`. */
    supersedes: MemoryId.optional(),
    /** Write a deleted key again (recorded as `restore`). */
    restore: z.boolean().optional(),
    /** Write a rejected (forgotten) value anyway (recorded in history). */
    force: z.boolean().optional(),
    /** Fail with VersionConflict unless the stored version equals this (0 = must not exist). */
    ifVersion: z.number().int().min(0).optional(),
    /** The caller's scope: `namespace` and the memory named by `supersedes` must lie inside it. */
    scope: Scope.optional(),
    /**
     * Wait (up to a few seconds) for the vector index to embed this write and answer with its
     * `possibleDuplicates`. Without it the duplicate check runs in the background (`duplicateCheck: "pending"`).
     */
    waitForDuplicates: z.boolean().optional(),
    /** Apply this write once: a retry with the same key gets the first result (docs/protocol.md#idempotency). */
    idempotencyKey: IdempotencyKey.optional(),
  })
  .strict();
export type UpsertParams = z.infer<typeof UpsertParams>;

export const PossibleDuplicate = z.object({ id: z.string(), key: z.string(), namespace: z.string(), similarity: z.number() });
export type PossibleDuplicate = z.infer<typeof PossibleDuplicate>;
/** done: possibleDuplicates is the answer; pending: the vector index checks it in the background; unavailable: no vector index runs. */
export const DuplicateCheck = z.enum(['done', 'pending', 'unavailable']);
export type DuplicateCheck = z.infer<typeof DuplicateCheck>;

/** A non-fatal remark on a write, e.g. a value that looks like a credential (then tagged `secret`). */
export const WriteWarning = z.object({ code: z.enum(['credential']), kind: z.string(), message: z.string() });
export type WriteWarning = z.infer<typeof WriteWarning>;

export const UpsertResult = z.object({
  memory: Memory,
  created: z.boolean(),
  /** Change-log position of this write. */
  position: z.number().int(),
  /** False when the write changed nothing (same content): no new version, no history row. */
  changed: z.boolean(),
  possibleDuplicates: z.array(PossibleDuplicate).optional(),
  /** Set when the duplicate check could not run for this write (the embedding model is still loading, no embeddings), saying why. */
  duplicatesSkipped: z.string().optional(),
  /** Present when the value looks like a credential: the memory was tagged `secret` (docs/protocol.md#secrets). */
  warnings: z.array(WriteWarning).optional(),
  /** State of the duplicate check of this write (absent when the write changed nothing). */
  duplicateCheck: DuplicateCheck.optional(),
  /** True when this is the recorded result of an earlier request with the same idempotencyKey (nothing was applied now). */
  replayed: z.literal(true).optional(),
});
export type UpsertResult = z.infer<typeof UpsertResult>;

export const DuplicatesParams = z
  .object({ id: MemoryId, /** The caller's scope: a memory outside it is NotFound. */ scope: Scope.optional() })
  .strict();
export type DuplicatesParams = z.infer<typeof DuplicatesParams>;
export const DuplicatesResult = z.object({
  id: z.string(),
  version: z.number().int(),
  duplicateCheck: DuplicateCheck,
  possibleDuplicates: z.array(PossibleDuplicate),
});
export type DuplicatesResult = z.infer<typeof DuplicatesResult>;

export const UpsertBatchParams = z
  .object({
    items: z
      .array(UpsertParams.omit({ idempotencyKey: true }))
      .min(1)
      .max(Limits.batchItems),
    actor: Actor.optional(),
    idempotencyKey: IdempotencyKey.optional(),
  })
  .strict();
export type UpsertBatchParams = z.infer<typeof UpsertBatchParams>;
export const UpsertBatchResult = z.object({
  results: z.array(
    z.union([
      z.object({
        ok: z.literal(true),
        id: z.string(),
        created: z.boolean(),
        position: z.number().int(),
        version: z.number().int(),
        warnings: z.array(WriteWarning).optional(),
      }),
      z.object({ ok: z.literal(false), error: z.object({ code: z.number().int(), message: z.string(), data: z.unknown() }) }),
    ]),
  ),
  position: z.number().int(),
  replayed: z.literal(true).optional(),
});
export type UpsertBatchResult = z.infer<typeof UpsertBatchResult>;

export const GetParams = z.union([
  z.object({ id: MemoryId, includeDeleted: z.boolean().optional(), scope: Scope.optional() }).strict(),
  z
    .object({
      namespace: NamespacePath,
      key: z.string().min(1).max(Limits.keyChars),
      includeDeleted: z.boolean().optional(),
      scope: Scope.optional(),
    })
    .strict(),
]);
export type GetParams = z.infer<typeof GetParams>;

export const ListParams = z
  .object({
    scope: Scope.optional(),
    filter: Filter.optional(),
    include: Include.optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
    /** Opaque cursor from a previous page. */
    cursor: z.string().max(512).optional(),
  })
  .strict();
export type ListParams = z.infer<typeof ListParams>;
export const ListResult = z.object({ items: z.array(Memory), nextCursor: z.string().nullable() });
export type ListResult = z.infer<typeof ListResult>;

const target = {
  id: MemoryId.optional(),
  namespace: NamespacePath.optional(),
  key: z.string().min(1).max(Limits.keyChars).optional(),
  actor: Actor.optional(),
  reason: Reason.optional(),
  /** The caller's scope: the memory (by id or key) must lie inside it, else NotFound. */
  scope: Scope.optional(),
  /** Apply this write once: a retry with the same key gets the first result (docs/protocol.md#idempotency). */
  idempotencyKey: IdempotencyKey.optional(),
};
export const DeleteParams = z.object(target).strict();
export type DeleteParams = z.infer<typeof DeleteParams>;
export const RestoreParams = z.object(target).strict();
export type RestoreParams = z.infer<typeof RestoreParams>;
export const ForgetParams = z.object(target).strict();
export type ForgetParams = z.infer<typeof ForgetParams>;
export const PurgeParams = z.object(target).strict();
export type PurgeParams = z.infer<typeof PurgeParams>;
export const WriteResult = z.object({ memory: Memory, position: z.number().int(), replayed: z.literal(true).optional() });
export type WriteResult = z.infer<typeof WriteResult>;
export const PurgeResult = z.object({ id: z.string(), position: z.number().int(), replayed: z.literal(true).optional() });
export type PurgeResult = z.infer<typeof PurgeResult>;

// Erasure (memory/erase): removal with proof. See docs/protocol.md#erasure.
export const EraseParams = z
  .object({
    id: MemoryId.optional(),
    namespace: NamespacePath.optional(),
    key: z.string().min(1).max(Limits.keyChars).optional(),
    /** Erase every memory in this namespace and its sub-namespaces, and the namespaces themselves. */
    root: NamespacePath.optional(),
    actor: Actor.optional(),
    reason: Reason.optional(),
    /** The caller's scope: the memory, or the root and its whole subtree, must lie inside it, else NotFound. */
    scope: Scope.optional(),
  })
  .strict();
export type EraseParams = z.infer<typeof EraseParams>;
export const ErasureReceipt = z
  .object({
    format: z.literal('cairn-erasure-receipt'),
    version: z.literal(1),
    /** Receipt id (also in the audit history rows of the erasure). */
    id: z.string(),
    erasedAt: z.string(),
    actor: z.string(),
    reason: z.string().nullable(),
    /** What was asked: one memory (id, or namespace and key) or a namespace subtree (root). */
    target: z
      .object({ id: z.string().optional(), namespace: z.string().optional(), key: z.string().optional(), root: z.string().optional() })
      .strict(),
    /** Ids and namespaces of the erased memories (keys and values are not repeated here). */
    memories: z.array(z.object({ id: z.string(), namespace: z.string() }).strict()),
    /** Rows removed besides the memories. */
    removed: z
      .object({ history: z.number().int(), links: z.number().int(), vectors: z.number().int(), namespaces: z.number().int() })
      .strict(),
    /** sha256 over the canonical JSON of [salt, [[id, namespace, key, value], ...] sorted by id]. */
    contentHash: z.string(),
    salt: z.string(),
    /** The WAL was checkpointed and truncated after the erasure (false: another connection held an old snapshot; erase again once it is gone). */
    walTruncated: z.boolean(),
    /** Base64 raw Ed25519 public key of the store that signed. */
    publicKey: z.string(),
    /** Base64 Ed25519 signature over the canonical JSON of every other field. */
    signature: z.string(),
  })
  .strict();
export type ErasureReceipt = z.infer<typeof ErasureReceipt>;
export const EraseResult = z.object({ erased: z.number().int(), position: z.number().int(), receipt: ErasureReceipt });
export type EraseResult = z.infer<typeof EraseResult>;

export const HistoryParams = z
  .object({
    id: MemoryId.optional(),
    namespace: NamespacePath.optional(),
    key: z.string().min(1).max(Limits.keyChars).optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
    /** The caller's scope: the memory must lie inside it, else NotFound. */
    scope: Scope.optional(),
  })
  .strict();
export type HistoryParams = z.infer<typeof HistoryParams>;
export const HistoryEntry = z.object({
  seq: z.number().int(),
  memoryId: z.string(),
  op: z.enum(HISTORY_OPS),
  actor: z.string(),
  reason: z.string().nullable(),
  at: z.string(),
  /** Version after the operation. */
  version: z.number().int(),
  /** Full state before the operation (null for create). */
  previous: Memory.nullable(),
  /** Full state after the operation (null for purge). */
  state: Memory.nullable(),
  /** Extra facts: forced (rejected value overridden), afterExpire, unrejected, supersededBy, purged key. */
  detail: z.record(z.string(), z.unknown()).nullable(),
});
export type HistoryEntry = z.infer<typeof HistoryEntry>;
export const HistoryResult = z.object({ entries: z.array(HistoryEntry), capped: z.boolean() });
export type HistoryResult = z.infer<typeof HistoryResult>;

export const LinkParams = z
  .object({ from: MemoryId, to: MemoryId, type: LinkType, actor: Actor.optional(), scope: Scope.optional() })
  .strict();
export type LinkParams = z.infer<typeof LinkParams>;
export const UnlinkParams = LinkParams;
export type UnlinkParams = LinkParams;
export const Link = z.object({ from: z.string(), to: z.string(), type: LinkType, createdAt: z.string(), actor: z.string() });
export type Link = z.infer<typeof Link>;
export const LinkResult = z.object({ link: Link, created: z.boolean(), position: z.number().int() });
export type LinkResult = z.infer<typeof LinkResult>;
export const UnlinkResult = z.object({ removed: z.boolean(), position: z.number().int() });
export type UnlinkResult = z.infer<typeof UnlinkResult>;
export const NeighborsParams = z
  .object({ id: MemoryId, type: LinkType.optional(), direction: z.enum(['out', 'in', 'both']).optional(), scope: Scope.optional() })
  .strict();
export type NeighborsParams = z.infer<typeof NeighborsParams>;
export const NeighborsResult = z.object({
  neighbors: z.array(z.object({ memory: Memory, type: LinkType, direction: z.enum(['out', 'in']) })),
});
export type NeighborsResult = z.infer<typeof NeighborsResult>;

export const SearchParams = z
  .object({
    query: z.string().max(Limits.queryChars),
    scope: Scope.optional(),
    filter: Filter.optional(),
    include: Include.optional(),
    limit: z.number().int().min(1).max(200).optional(),
    mode: SearchMode.optional(),
    explain: z.boolean().optional(),
  })
  .strict();
export type SearchParams = z.infer<typeof SearchParams>;
export const ArmExplain = z.object({ rank: z.number().int(), score: z.number() });
export const SearchHit = z.object({
  memory: Memory,
  score: z.number(),
  /** Value excerpt with matches wrapped in «…». */
  snippet: z.string(),
  /** Which store the hit came from: `local` (this machine's SQLite) or `team` (the shared PostgreSQL database). */
  store: z.enum(['local', 'team']).optional(),
  explain: z.object({ fts: ArmExplain.nullable(), vector: ArmExplain.nullable(), fused: z.number(), boost: z.number() }).optional(),
});
export type SearchHit = z.infer<typeof SearchHit>;
export const SearchResult = z.object({
  hits: z.array(SearchHit),
  mode: SearchMode,
  /** Set when hybrid/vector search fell back to full-text; says why. */
  degraded: z.string().optional(),
});
export type SearchResult = z.infer<typeof SearchResult>;

// ---------------------------------------------------------------------------
// Namespaces
// ---------------------------------------------------------------------------
export const NamespaceInfo = z.object({ id: z.string(), path: z.string(), createdAt: z.string(), memoryCount: z.number().int() });
export type NamespaceInfo = z.infer<typeof NamespaceInfo>;
export const NamespacesListParams = z.object({ root: NamespacePath.optional() }).strict();
export type NamespacesListParams = z.infer<typeof NamespacesListParams>;
export const NamespacesListResult = z.object({ namespaces: z.array(NamespaceInfo) });
export type NamespacesListResult = z.infer<typeof NamespacesListResult>;
export const NamespacesRenameParams = z.object({ from: NamespacePath, to: NamespacePath, actor: Actor.optional() }).strict();
export type NamespacesRenameParams = z.infer<typeof NamespacesRenameParams>;
export const NamespacesRenameResult = z.object({ renamed: z.number().int(), position: z.number().int() });
export type NamespacesRenameResult = z.infer<typeof NamespacesRenameResult>;
export const NamespacesDeleteParams = z.object({ path: NamespacePath, actor: Actor.optional(), reason: Reason.optional() }).strict();
export type NamespacesDeleteParams = z.infer<typeof NamespacesDeleteParams>;
export const NamespacesDeleteResult = z.object({ deleted: z.number().int(), memories: z.number().int(), position: z.number().int() });
export type NamespacesDeleteResult = z.infer<typeof NamespacesDeleteResult>;

// ---------------------------------------------------------------------------
// Store, index, import/export
// ---------------------------------------------------------------------------
export const StoreStatusParams = z.object({}).strict().optional();
export const IndexWatermark = z.object({ name: z.string(), watermark: z.number().int(), behind: z.number().int() });
export const EmbeddingStatus = z.object({
  /** Model id in use (after any fallback). */
  model: z.string().nullable(),
  /** Model id the user configured. */
  configuredModel: z.string().nullable(),
  dimension: z.number().int().nullable(),
  /** 'ready' | 'loading' | 'reindexing' | 'unavailable' */
  state: z.enum(['ready', 'loading', 'reindexing', 'unavailable', 'disabled']),
  /** Why the configured model is not in use, when falling back. */
  fallbackReason: z.string().nullable(),
  vectors: z.number().int(),
  pending: z.number().int(),
  vectorExtension: z.boolean(),
});
export type EmbeddingStatus = z.infer<typeof EmbeddingStatus>;
export const StoreStatusResult = z.object({
  path: z.string(),
  sizeBytes: z.number().int(),
  schemaVersion: z.number().int(),
  position: z.number().int(),
  counts: z.object({
    memories: z.number().int(),
    active: z.number().int(),
    proposed: z.number().int(),
    superseded: z.number().int(),
    deleted: z.number().int(),
    namespaces: z.number().int(),
    history: z.number().int(),
    links: z.number().int(),
    rejectedValues: z.number().int(),
  }),
  indexes: z.array(IndexWatermark),
  historyCap: z.number().int().nullable(),
  embeddings: EmbeddingStatus,
  daemon: z
    .object({
      pid: z.number().int(),
      version: z.string(),
      socket: z.string().nullable(),
      clients: z.number().int(),
      uptimeMs: z.number().int(),
    })
    .optional(),
  /** Team memory, when this daemon has a team database: its URL without password, the roots it serves, the login role, whether it opened. */
  team: z.object({ url: z.string(), roots: z.array(z.string()), user: z.string().nullable(), connected: z.boolean() }).optional(),
});
export type StoreStatusResult = z.infer<typeof StoreStatusResult>;

export const IndexWaitParams = z
  .object({ position: z.number().int().min(0), timeoutMs: z.number().int().min(0).max(600_000).optional() })
  .strict();
export type IndexWaitParams = z.infer<typeof IndexWaitParams>;
export const IndexWaitResult = z.object({
  watermark: z.number().int(),
  reached: z.boolean(),
  /** Which index the answer is about: `vector` when the daemon embeds, `fts` when it runs without embeddings. */
  index: z.enum(['vector', 'fts']).optional(),
  /** Why `reached` is false beyond the timeout: the model is still loading, the index is being rebuilt, or no vector index can exist. */
  reason: z.string().optional(),
});
export type IndexWaitResult = z.infer<typeof IndexWaitResult>;
export const IndexRebuildParams = z.object({ model: z.string().min(1).max(512).optional() }).strict();
export type IndexRebuildParams = z.infer<typeof IndexRebuildParams>;
export const IndexRebuildResult = z.object({ model: z.string().nullable(), queued: z.number().int() });
export type IndexRebuildResult = z.infer<typeof IndexRebuildResult>;

/** One JSON Lines record of an export. */
export const ExportRecord = z.union([
  z.object({
    type: z.literal('header'),
    format: z.literal('cairn-export'),
    version: z.literal(1),
    exportedAt: z.string(),
    schemaVersion: z.number().int(),
  }),
  z.object({
    type: z.literal('namespace'),
    id: z.string(),
    path: z.string(),
    createdAt: z.string(),
    deletedAt: z.string().nullable(),
    deletedBy: z.string().nullable(),
  }),
  z.object({ type: z.literal('memory'), memory: Memory, namespaceId: z.string(), deleteReason: z.string().nullable() }),
  z.object({ type: z.literal('history'), entry: HistoryEntry }),
  z.object({ type: z.literal('link'), link: Link }),
  z.object({
    type: z.literal('rejected'),
    namespaceId: z.string(),
    valueHash: z.string(),
    memoryId: z.string().nullable(),
    actor: z.string(),
    at: z.string(),
  }),
]);
export type ExportRecord = z.infer<typeof ExportRecord>;
export const ExportParams = z.object({ scope: Scope.optional(), includeHistory: z.boolean().optional() }).strict();
export type ExportParams = z.infer<typeof ExportParams>;
export const ExportResult = z.object({ records: z.array(ExportRecord) });
export type ExportResult = z.infer<typeof ExportResult>;
export const ExportPageParams = z
  .object({
    scope: Scope.optional(),
    includeHistory: z.boolean().optional(),
    /** From the previous page's nextCursor (scope and includeHistory are then those of the first page). */
    cursor: z.string().max(512).optional(),
    /** Records per page (a memory's history may run past it); pages also stop near 4 MB. */
    limit: z.number().int().min(1).max(10_000).optional(),
  })
  .strict();
export type ExportPageParams = z.infer<typeof ExportPageParams>;
export const ExportPageResult = z.object({
  records: z.array(ExportRecord),
  nextCursor: z.string().nullable(),
  progress: z.object({ memories: z.number().int(), total: z.number().int() }),
});
export type ExportPageResult = z.infer<typeof ExportPageResult>;
export const BackupParams = z
  .object({
    /** Absolute path of the copy to write (the daemon writes it). */
    path: z.string().min(1).max(4096),
    /** Replace an existing file at path. */
    overwrite: z.boolean().optional(),
  })
  .strict();
export type BackupParams = z.infer<typeof BackupParams>;
export const BackupResult = z.object({
  path: z.string(),
  bytes: z.number().int(),
  pages: z.number().int(),
  /** The key file copied beside the backup (`<path>.keys`), or null when the store has none. */
  keys: z.string().nullable(),
  schemaVersion: z.number().int(),
  ms: z.number().int(),
});
export type BackupResult = z.infer<typeof BackupResult>;
export const ProgressParams = z.object({
  operation: z.enum(['backup', 'import', 'export']),
  done: z.number().int(),
  total: z.number().int(),
});
export type ProgressParams = z.infer<typeof ProgressParams>;
export const ImportParams = z
  .object({
    records: z.array(z.unknown()).max(200_000),
    actor: Actor.optional(),
    /** The caller's scope: a namespace or memory record outside it is refused (InvalidParams naming the record). */
    scope: Scope.optional(),
  })
  .strict();
export type ImportParams = z.infer<typeof ImportParams>;
export const ImportResult = z.object({
  memories: z.number().int(),
  history: z.number().int(),
  links: z.number().int(),
  skipped: z.number().int(),
  position: z.number().int(),
});
export type ImportResult = z.infer<typeof ImportResult>;

export const ConfigureParams = z
  .object({
    /** Keep at most this many history rows per memory; null keeps full history (the default). */
    historyCap: z.number().int().min(1).max(1_000_000).nullable().optional(),
    /** Automatic injection (inject/block with trigger 'auto'); off by default. */
    injectAuto: z.boolean().optional(),
  })
  .strict();
export type ConfigureParams = z.infer<typeof ConfigureParams>;
export const ConfigureResult = z.object({ historyCap: z.number().int().nullable(), injectAuto: z.boolean() });
export type ConfigureResult = z.infer<typeof ConfigureResult>;

export const RetentionRule = z
  .object({
    /** Namespace root the rule governs (with everything under it). */
    root: NamespacePath,
    /** Keep at most this many past versions (history entries with content) per memory. */
    maxVersions: z.number().int().min(1).max(1_000_000).optional(),
    /** Drop history older than this (each memory keeps its newest entry) and purge memories deleted longer ago. */
    maxAgeDays: z.number().min(0.001).max(36_500).optional(),
    /** Longest lifetime of a live memory after its last update (or the rule's start): sets expiresAt. */
    maxTtlDays: z.number().min(0.001).max(36_500).optional(),
  })
  .strict();
export type RetentionRule = z.infer<typeof RetentionRule>;
export const RetentionParams = z.object({ set: RetentionRule.optional(), clear: NamespacePath.optional() }).strict();
export type RetentionParams = z.infer<typeof RetentionParams>;
export const RetentionResult = z.object({ rules: z.array(RetentionRule.extend({ setAt: z.string() })) });
export type RetentionResult = z.infer<typeof RetentionResult>;
export const RetentionReport = z.object({
  removedVersions: z.number().int(),
  purged: z.number().int(),
  ttlCapped: z.number().int(),
  /** What was done, per memory (the first 200). */
  actions: z.array(
    z.object({ root: z.string(), action: z.enum(['versions', 'purge', 'ttl']), memoryId: z.string(), count: z.number().int() }),
  ),
});
export type RetentionReport = z.infer<typeof RetentionReport>;

export const AuditParams = z
  .object({
    /** Inclusive start of the time range (ISO-8601); default: the beginning. */
    from: z.iso.datetime({ offset: true }).optional(),
    /** Exclusive end of the time range; default: now and later. */
    to: z.iso.datetime({ offset: true }).optional(),
    scope: Scope.optional(),
    /** false: leave out the memory states (previous, state). Default true. */
    content: z.boolean().optional(),
    cursor: z.string().max(512).optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
  })
  .strict();
export type AuditParams = z.infer<typeof AuditParams>;
export const AuditResult = z.object({ entries: z.array(HistoryEntry), nextCursor: z.string().nullable() });
export type AuditResult = z.infer<typeof AuditResult>;

export const SweepParams = z
  .object({ batch: z.number().int().min(1).max(10_000).optional() })
  .strict()
  .optional();
export const SweepResult = z.object({
  expired: z.number().int(),
  purged: z.number().int(),
  position: z.number().int(),
  retention: RetentionReport.optional(),
});
export type SweepResult = z.infer<typeof SweepResult>;

// ---------------------------------------------------------------------------
// Agent tasks and memory injection
// ---------------------------------------------------------------------------
export const TASK_STATUSES = ['open', 'done', 'archived'] as const;
export const Task = z.object({
  id: z.string(),
  title: z.string(),
  scope: Scope,
  dontInject: z.boolean(),
  status: z.enum(TASK_STATUSES),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Task = z.infer<typeof Task>;
export const TaskCreateParams = z
  .object({ title: z.string().min(1).max(500), scope: Scope.optional(), dontInject: z.boolean().optional() })
  .strict();
export type TaskCreateParams = z.infer<typeof TaskCreateParams>;
export const TaskUpdateParams = z
  .object({
    id: MemoryId,
    title: z.string().min(1).max(500).optional(),
    scope: Scope.optional(),
    dontInject: z.boolean().optional(),
    status: z.enum(TASK_STATUSES).optional(),
  })
  .strict();
export type TaskUpdateParams = z.infer<typeof TaskUpdateParams>;
export const TaskGetParams = z.object({ id: MemoryId }).strict();
export type TaskGetParams = z.infer<typeof TaskGetParams>;
export const TaskListParams = z
  .object({ status: z.enum(TASK_STATUSES).optional(), limit: z.number().int().min(1).max(Limits.pageSize).optional() })
  .strict();
export type TaskListParams = z.infer<typeof TaskListParams>;
export const TaskListResult = z.object({ tasks: z.array(Task) });
export type TaskListResult = z.infer<typeof TaskListResult>;
export const TaskDeleteResult = z.object({ id: z.string(), deleted: z.boolean() });
export type TaskDeleteResult = z.infer<typeof TaskDeleteResult>;

export const TaskDidChangeParams = z.object({ id: z.string(), op: z.enum(['create', 'update', 'delete']), task: Task.nullable() });
export type TaskDidChangeParams = z.infer<typeof TaskDidChangeParams>;

export const InjectBlockParams = z
  .object({
    taskId: MemoryId.optional(),
    prompt: z.string().max(100_000),
    /** Used when no task is given (a task's own scope always wins). */
    scope: Scope.optional(),
    /** How many memories at most (default 8). */
    k: z.number().int().min(1).max(50).optional(),
    /** Character budget of the whole block (default 4000). */
    budgetChars: z.number().int().min(200).max(100_000).optional(),
    /** Token budget; converted at 4 characters per token. The smaller budget wins. */
    budgetTokens: z.number().int().min(50).max(25_000).optional(),
    /** 'auto' when a client injects on its own initiative; refused while automatic injection is off. Default 'explicit'. */
    trigger: z.enum(['auto', 'explicit']).optional(),
    /** Also inject memories tagged `secret` (the user's cairn.agents.allowSecrets setting). Default false. */
    allowSecrets: z.boolean().optional(),
  })
  .strict();
export type InjectBlockParams = z.infer<typeof InjectBlockParams>;
export const InjectSkip = z.enum(['disabled', 'auto-off', 'no-matches']);
export const InjectBlockResult = z.object({
  block: z.string(),
  memoryIds: z.array(z.string()),
  memories: z.array(z.object({ id: z.string(), namespace: z.string(), key: z.string(), kind: MemoryKind, score: z.number() })),
  skipped: InjectSkip.optional(),
  /** Injection-log sequence number of this call. */
  logSeq: z.number().int(),
});
export type InjectBlockResult = z.infer<typeof InjectBlockResult>;
export const InjectLogParams = z
  .object({ taskId: MemoryId.optional(), memoryId: MemoryId.optional(), limit: z.number().int().min(1).max(Limits.pageSize).optional() })
  .strict();
export type InjectLogParams = z.infer<typeof InjectLogParams>;
export const InjectLogEntry = z.object({
  seq: z.number().int(),
  taskId: z.string().nullable(),
  memoryIds: z.array(z.string()),
  promptHash: z.string(),
  at: z.string(),
  skipped: InjectSkip.nullable(),
});
export type InjectLogEntry = z.infer<typeof InjectLogEntry>;
export const InjectLogResult = z.object({
  entries: z.array(InjectLogEntry),
  usedBy: z.array(z.object({ taskId: z.string(), title: z.string().nullable(), count: z.number().int(), lastAt: z.string() })),
});
export type InjectLogResult = z.infer<typeof InjectLogResult>;

// ---------------------------------------------------------------------------
// Notifications
// ---------------------------------------------------------------------------
export const DidChangeParams = z.object({
  position: z.number().int(),
  id: z.string().nullable(),
  namespace: z.string().nullable(),
  key: z.string().nullable(),
  op: z.string(),
  /** Set to `team` for a change in the shared team database (its positions are that database's own). */
  store: z.enum(['local', 'team']).optional(),
});
export type DidChangeParams = z.infer<typeof DidChangeParams>;
export const PossibleDuplicatesParams = z.object({
  id: z.string(),
  namespace: z.string(),
  key: z.string(),
  version: z.number().int(),
  /** Vector-index watermark at which the check ran. */
  position: z.number().int(),
  possibleDuplicates: z.array(PossibleDuplicate),
});
export type PossibleDuplicatesParams = z.infer<typeof PossibleDuplicatesParams>;
export const IndexProgressParams = z.object({
  model: z.string(),
  done: z.number().int(),
  total: z.number().int(),
  state: z.enum(['reindexing', 'ready']),
});
export type IndexProgressParams = z.infer<typeof IndexProgressParams>;

// ---------------------------------------------------------------------------
// Dashboard: overview and import preview
// ---------------------------------------------------------------------------
export const OverviewParams = z
  .object({
    scope: Scope.optional(),
    /** Days of write activity to report (default 30). */ days: z.number().int().min(1).max(366).optional(),
  })
  .strict()
  .optional();
export type OverviewParams = z.infer<typeof OverviewParams>;
export const CountByName = z.object({ name: z.string(), count: z.number().int() });
export const OverviewResult = z.object({
  /** Live memories per live namespace (every status but deleted). */
  byNamespace: z.array(CountByName),
  /** Live memories per kind. */
  byKind: z.array(CountByName),
  /** Memories per status, plus `deleted`. */
  byStatus: z.array(CountByName),
  /** Writes (create, update, restore) per UTC day and memory source, oldest day first. */
  writesPerDay: z.array(z.object({ day: z.string(), source: z.string(), count: z.number().int() })),
  days: z.number().int(),
});
export type OverviewResult = z.infer<typeof OverviewResult>;

export const IMPORT_OUTCOMES = ['new', 'unchanged', 'changed', 'conflicting', 'refusedDeleted', 'refusedForgotten'] as const;
export const ImportOutcome = z.enum(IMPORT_OUTCOMES);
export type ImportOutcome = z.infer<typeof ImportOutcome>;
export const ImportPreviewParams = z
  .object({
    records: z.array(z.unknown()).max(200_000),
    /** How many per-memory items to return at most (default 200). */
    sample: z.number().int().min(0).max(Limits.pageSize).optional(),
    /** The caller's scope: a namespace or memory record outside it is refused, as store/import does. */
    scope: Scope.optional(),
  })
  .strict();
export type ImportPreviewParams = z.infer<typeof ImportPreviewParams>;
export const ImportPreviewResult = z.object({
  /** Memory records by what store/import would do with them: only `new` ones are written. */
  counts: z.object({
    new: z.number().int(),
    unchanged: z.number().int(),
    changed: z.number().int(),
    conflicting: z.number().int(),
    refusedDeleted: z.number().int(),
    refusedForgotten: z.number().int(),
  }),
  /** Non-memory records in the file. */
  records: z.object({ namespaces: z.number().int(), history: z.number().int(), links: z.number().int(), rejected: z.number().int() }),
  items: z.array(
    z.object({
      id: z.string(),
      namespace: z.string(),
      key: z.string(),
      outcome: ImportOutcome,
      fileVersion: z.number().int(),
      storeVersion: z.number().int().nullable(),
    }),
  ),
  /** True when there are more memory records than items returned. */
  truncated: z.boolean(),
});
export type ImportPreviewResult = z.infer<typeof ImportPreviewResult>;
