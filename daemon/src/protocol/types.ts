/**
 * Every params and result type of the Cairn protocol, declared once as a zod schema.
 *
 * The schemas are the single source of truth: TypeScript types are inferred from
 * them, the daemon validates every incoming params object with them (unknown
 * fields rejected), and `schema/protocol.schema.json` is generated from them for
 * clients in other languages.
 */
import { z } from 'zod';
import { BRANCH_NAME_MAX, BRANCH_NAME_PATTERN, BRANCH_NAME_RULE } from './branch-name';

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
/** A memory branch's name (docs/branches.md): letters, digits, `.`, `_`, `-`, `/`; starts with a letter or digit. */
export const BranchName = z.string().max(BRANCH_NAME_MAX).regex(BRANCH_NAME_PATTERN, BRANCH_NAME_RULE);

/** A full git commit id (SHA-1 or SHA-256), lower-case hex. */
export const GitCommit = z.string().regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/, 'a full commit id: 40 (or 64) lower-case hex digits');
/** A git branch name as `git branch` shows it (no `refs/heads/`). */
export const GitBranchName = z
  .string()
  .min(1)
  .max(255)
  .regex(/^[^\s\p{Cc}~^:?*[\\]+$/u, 'a git branch name (no spaces, control characters, ~ ^ : ? * [ or backslash)');
/** Where a write was made (docs/protocol.md#git-aware-memory): the git branch checked out and its HEAD commit. */
export const GitWrite = z.object({ branch: GitBranchName, commit: GitCommit }).strict();
export type GitWrite = z.infer<typeof GitWrite>;
/**
 * Where a reader stands (docs/protocol.md#git-aware-memory): the repository's top folder, its HEAD commit and the
 * branch checked out (absent when HEAD is detached). Memories written on other branches are left out, inside every
 * retrieval arm, until their branch is merged into HEAD.
 */
export const GitContext = z
  .object({
    repo: z.string().min(1).max(4096),
    head: GitCommit,
    branch: GitBranchName.optional(),
    /** The base branch (memories written there are visible everywhere); default: the repository's default branch. */
    base: GitBranchName.optional(),
    /** The namespace subtree the rule applies to; default: the repository's project namespace (project.ts). */
    namespace: NamespacePath.optional(),
  })
  .strict();
export type GitContext = z.infer<typeof GitContext>;

/** How the daemon last re-located an anchor (see docs/protocol.md#anchors-that-follow-the-code). */
export const ANCHOR_RELOCATIONS = ['moved', 'similar', 'symbol', 'renamed'] as const;
export const AnchorRelocation = z
  .object({
    /** moved: the same lines elsewhere; similar: changed lines still like the anchored ones; symbol: found again by its
     *  symbol; renamed: its file was renamed (git). */
    how: z.enum(ANCHOR_RELOCATIONS),
    /** Where it was before: "path:start-end". */
    from: z.string().max(1100),
    at: isoDate,
    /** For similar and symbol: how similar the lines are now (0..1). */
    similarity: z.number().min(0).max(1).optional(),
  })
  .strict();
export type AnchorRelocation = z.infer<typeof AnchorRelocation>;

export const Anchor = z
  .object({
    /** Workspace-relative (preferred) or absolute path, '/' separated. */
    path: z.string().min(1).max(1024),
    symbol: z.string().min(1).max(512).optional(),
    /** 1-based inclusive line range. */
    startLine: z.number().int().min(1).optional(),
    endLine: z.number().int().min(1).optional(),
    /**
     * The anchored lines' fingerprint (text/anchor-locate.ts): content hash (whitespace removed), a short excerpt,
     * 4 characters of hash per line, the hashes of the nearest lines around, and whether nothing else in the file looked
     * like them. Given by the client that anchors (the extension) or recorded by the daemon when it first sees the file.
     */
    hash: z
      .string()
      .regex(/^[0-9a-f]{16}$/)
      .optional(),
    excerpt: z.string().max(240).optional(),
    lines: z
      .string()
      .max(800)
      .regex(/^(?:[A-Za-z0-9_-]{4})*$/)
      .optional(),
    context: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{16}$/)
      .optional(),
    unique: z.boolean().optional(),
    /** The git HEAD when the fingerprint was recorded: a file renamed since (git mv) is followed. */
    commit: z
      .string()
      .regex(/^[0-9a-f]{40}(?:[0-9a-f]{24})?$/)
      .optional(),
    /** Set by the daemon when the anchored code disappeared or changed beyond recognition (the memory went to review). */
    stale: z.boolean().optional(),
    /** Set by the daemon with `stale`: why. */
    staleReason: z.string().max(300).optional(),
    /** Set by the daemon when it re-located the anchor. */
    relocated: AnchorRelocation.optional(),
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
  /** The git branch and commit this version was written on (local store; absent when the write named none). */
  git: z.object({ branch: z.string(), commit: z.string() }).optional(),
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
    /** Read or write the memory branch of this name instead of the base (docs/branches.md). */
    branch: BranchName.optional(),
    /** The git branch and HEAD commit the write was made on (recorded with this version; docs/protocol.md#git-aware-memory). */
    git: GitWrite.optional(),
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
      .array(UpsertParams.omit({ idempotencyKey: true, branch: true }))
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
  z
    .object({
      id: MemoryId,
      includeDeleted: z.boolean().optional(),
      scope: Scope.optional(),
      branch: BranchName.optional(),
      git: GitContext.optional(),
    })
    .strict(),
  z
    .object({
      namespace: NamespacePath,
      key: z.string().min(1).max(Limits.keyChars),
      includeDeleted: z.boolean().optional(),
      scope: Scope.optional(),
      branch: BranchName.optional(),
      /** The reader's git checkout: memories written on unmerged git branches are left out (docs/protocol.md#git-aware-memory). */
      git: GitContext.optional(),
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
    /** Read or write the memory branch of this name instead of the base (docs/branches.md). */
    branch: BranchName.optional(),
    /** The reader's git checkout: memories written on unmerged git branches are left out (docs/protocol.md#git-aware-memory). */
    git: GitContext.optional(),
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
export const DeleteParams = z.object({ ...target, branch: BranchName.optional() }).strict();
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
      .object({
        id: z.string().optional(),
        namespace: z.string().optional(),
        key: z.string().optional(),
        root: z.string().optional(),
        /** episodes/erase: the episode's id. */
        episode: z.string().optional(),
      })
      .strict(),
    /** Ids and namespaces of the erased memories (keys and values are not repeated here); [] for an episode. */
    memories: z.array(z.object({ id: z.string(), namespace: z.string() }).strict()),
    /** episodes/erase: the erased episode, its namespace and how many events it held. */
    episodes: z.array(z.object({ id: z.string(), namespace: z.string(), events: z.number().int() }).strict()).optional(),
    /** Rows removed besides the memories (for an episode: its events' vectors in `vectors`, and `events`; branchRows: memory branches' rows of them, also in contentHash). */
    removed: z
      .object({
        history: z.number().int(),
        links: z.number().int(),
        vectors: z.number().int(),
        namespaces: z.number().int(),
        events: z.number().int().optional(),
        branchRows: z.number().int().optional(),
      })
      .strict(),
    /**
     * sha256 over the canonical JSON of [salt, [[id, namespace, key, value], ...] sorted by id, then namespace, key,
     * value]; for an episode over [salt, [[episode id, seq, kind, at, text], ...] in seq order] (`at` as ISO-8601).
     */
    contentHash: z.string(),
    /** A subtree erasure that removed episodes: their events' hash, computed as an episode erasure's contentHash. */
    eventsContentHash: z.string().optional(),
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
/**
 * The receipt of an erasure of team memory, signed by the team database (HMAC-SHA256 with a key only its owner can
 * read; `cairn team verify-receipt` asks the database to check it). Canonical forms are PostgreSQL's jsonb text.
 */
export const TeamErasureReceipt = z
  .object({
    format: z.literal('cairn-erasure-receipt'),
    version: z.literal(1),
    store: z.literal('team'),
    id: z.string(),
    erasedAt: z.string(),
    /** The database login role that erased. */
    actor: z.string(),
    reason: z.string().nullable(),
    target: z
      .object({ id: z.string().optional(), namespace: z.string().optional(), key: z.string().optional(), root: z.string().optional() })
      .strict(),
    memories: z.array(z.object({ id: z.string(), namespace: z.string() }).strict()),
    removed: z
      .object({ history: z.number().int(), links: z.number().int(), vectors: z.number().int(), namespaces: z.number().int() })
      .strict(),
    /** sha256 over the jsonb text of [salt, [[id, namespace, key, value], ...] sorted by id]. */
    contentHash: z.string(),
    salt: z.string(),
    /** Always true: PostgreSQL reclaims the deleted row versions at the next VACUUM (autovacuum or the owner's). */
    vacuumPending: z.boolean(),
    /** The database that signed (its name), and its key's id. */
    database: z.string(),
    keyId: z.string(),
    algorithm: z.literal('hmac-sha256'),
    /** Hex HMAC-SHA256 over the jsonb text of every other field. */
    signature: z.string(),
  })
  .strict();
export type TeamErasureReceipt = z.infer<typeof TeamErasureReceipt>;
export const EraseResult = z.object({
  erased: z.number().int(),
  position: z.number().int(),
  receipt: z.union([ErasureReceipt, TeamErasureReceipt]),
});
export type EraseResult = z.infer<typeof EraseResult>;

export const HistoryParams = z
  .object({
    id: MemoryId.optional(),
    namespace: NamespacePath.optional(),
    key: z.string().min(1).max(Limits.keyChars).optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
    /** The caller's scope: the memory must lie inside it, else NotFound. */
    scope: Scope.optional(),
    /** The writes of this memory branch (open, else its latest closed one), not the base's (docs/branches.md). */
    branch: BranchName.optional(),
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
  /** The memory branch the write was made on (memory/history with `branch`); absent for the base's history. */
  branch: z.string().optional(),
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
    /** Read or write the memory branch of this name instead of the base (docs/branches.md). */
    branch: BranchName.optional(),
    /** The reader's git checkout: memories written on unmerged git branches are left out (docs/protocol.md#git-aware-memory). */
    git: GitContext.optional(),
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
  /**
   * The model whose vectors the vector arm of searches ranks by: `model`, or during a switch made in a running daemon
   * (index/rebuild with another model) the previous one until the new one's vectors are complete; null when the
   * vector arm cannot serve (search is full-text). Local store only.
   */
  servingModel: z.string().nullable().optional(),
  vectorExtension: z.boolean(),
  /**
   * Bytes the vector index holds in memory (0 while a large store's index is not read yet: it is read on first
   * use), and whether it is compact (4-bit vectors in memory, candidates ranked again from disk). Local store only.
   */
  index: z.object({ bytes: z.number().int(), compact: z.boolean() }).optional(),
});
export type EmbeddingStatus = z.infer<typeof EmbeddingStatus>;
export const StoreStatusResult = z.object({
  path: z.string(),
  sizeBytes: z.number().int(),
  /**
   * Of sizeBytes, the free pages: space no table uses (SQLite reuses it for the next writes first). A store created
   * with incremental auto-vacuum gives them back to the file system in the daemon's sweep once they are a sixteenth
   * of the file; `reclaims` is false for a store created before that (its free pages stay until reused).
   */
  free: z.object({ bytes: z.number().int(), reclaims: z.boolean() }).optional(),
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
  /**
   * The public half of the key that signs this store's erasure receipts (raw 32-byte Ed25519 key, base64), for a third
   * party to verify receipts against a key it got from here rather than from the receipt; null when the store has no
   * key file yet (a read-only open of a new store).
   */
  signingKey: z.object({ algorithm: z.literal('ed25519'), publicKey: z.string() }).nullable(),
  /**
   * Durability of a committed write on the daemon's connection, read back from SQLite (`PRAGMA synchronous`):
   * `normal` (the default, cairn.store.synchronous) or `full` (an fsync per commit).
   */
  synchronous: z.enum(['off', 'normal', 'full', 'extra']).optional(),
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
  /**
   * Team memory, when this daemon has a team database: its URL without password, the roots it serves, the login role,
   * whether it opened; until it has, why not (`error`) and when the next attempt is due (`nextAttemptAt`, ISO 8601).
   */
  team: z
    .object({
      url: z.string(),
      roots: z.array(z.string()),
      user: z.string().nullable(),
      connected: z.boolean(),
      error: z.string().nullable().optional(),
      nextAttemptAt: z.string().nullable().optional(),
    })
    .optional(),
  /** Episodic memory (docs/episodes.md): episodes, events and the newest event position (`indexes` lists events_fts and events_vec against it). */
  episodes: z.object({ episodes: z.number().int(), events: z.number().int(), position: z.number().int() }).optional(),
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
  /**
   * The events' indexes (docs/episodes.md): caught up to the newest event at the time of the call (full text always;
   * vectors when the daemon embeds, within the same timeout).
   */
  events: z
    .object({ position: z.number().int(), fts: z.number().int(), vector: z.number().int().nullable(), reached: z.boolean() })
    .optional(),
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
  /** An episode (docs/episodes.md), followed in an export by its events in seq order. */
  z.object({
    type: z.literal('episode'),
    episode: z.object({
      id: z.lazy(() => EpisodeId),
      namespace: NamespacePath,
      title: z.string().min(1).max(500),
      taskId: z.string().nullable(),
      source: z.string().min(1).max(200),
      branch: z.string().nullable(),
      commit: z.string().nullable(),
      startedAt: isoDate,
      endedAt: isoDate.nullable(),
    }),
    namespaceId: z.string(),
    createdAt: isoDate,
    actor: z.string(),
  }),
  /** One event of an episode; imported once per (episode, seq). */
  z.object({
    type: z.literal('event'),
    episodeId: z.string(),
    seq: z.number().int().min(0),
    kind: z.lazy(() => EventKind),
    text: z.string().max(65_536),
    at: isoDate,
    actor: z.string(),
    context: z.lazy(() => EventContext).nullable(),
    secret: z.boolean(),
    ingestedAt: isoDate,
  }),
  /**
   * A memory branch (docs/branches.md), followed in an export by its rows and the history of its writes; open and
   * closed ones (a closed branch keeps only its history). Imported once per id.
   */
  z.object({
    type: z.literal('branch'),
    branch: z.object({
      id: z.string().min(1).max(100),
      name: BranchName,
      root: NamespacePath,
      parent: z.string().nullable(),
      createdAt: isoDate,
      createdBy: z.string(),
      status: z.enum(['open', 'merged', 'discarded']),
      closedAt: isoDate.nullable(),
      closedBy: z.string().nullable(),
      taskId: z.string().nullable(),
      gitBranch: z.string().nullable(),
      gitRepo: z.string().nullable(),
      gitCommit: z.string().nullable(),
    }),
  }),
  /** One row of a branch: its write of (namespace, key), with the base version it started from. */
  z.object({
    type: z.literal('branchMemory'),
    branchId: z.string(),
    baseVersion: z.number().int().nullable(),
    memory: Memory,
    namespaceId: z.string(),
    deleteReason: z.string().nullable(),
  }),
  /** One history entry of a branch's writes (memory/history with `branch`). */
  z.object({ type: z.literal('branchHistory'), branchId: z.string(), entry: HistoryEntry }),
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
  /** Episodes and events written (an episode or event already stored is neither written nor counted as skipped). */
  episodes: z.number().int().optional(),
  events: z.number().int().optional(),
  /** Memory branches and branch rows written (one already stored is neither written nor counted as skipped). */
  branches: z.number().int().optional(),
  branchRows: z.number().int().optional(),
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
    /**
     * How long events of the episodes under the root are kept, by the time they happened (`at`): the shortest limit
     * that applies to an event wins. Episodes themselves stay. See docs/episodes.md#retention.
     */
    events: z
      .object({
        /** Every event. */
        maxAgeDays: z.number().min(0.001).max(36_500).optional(),
        /** By the episode's source: an exact source (`vscode`), or a prefix ending in `:` (`agent:` for every agent). */
        bySource: z.record(z.string().min(1).max(200), z.number().min(0.001).max(36_500)).optional(),
        /** By event kind (`tool_result`, `user`, …). */
        byKind: z.record(z.string().min(1).max(64), z.number().min(0.001).max(36_500)).optional(),
      })
      .strict()
      .optional(),
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
  /** Events removed by the rules' `events` limits. */
  removedEvents: z.number().int().optional(),
  /** Per episode, the events removed (the first 200; episodes/removals keeps them all). */
  eventActions: z.array(z.object({ root: z.string(), episodeId: z.string(), count: z.number().int() })).optional(),
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
  /** The task's open burner branch (tasks/create with `branch: true`): its agent writes go there until merged. */
  branch: z.string().optional(),
});
export type Task = z.infer<typeof Task>;
export const TaskCreateParams = z
  .object({
    title: z.string().min(1).max(500),
    scope: Scope.optional(),
    dontInject: z.boolean().optional(),
    /** Give the task its own memory branch of `scope.root`, named `task/<id>` (docs/branches.md). */
    branch: z.boolean().optional(),
    /** With branch: the task's branch follows this git branch (branch/create `gitBranch`). */
    gitBranch: GitBranchName.optional(),
    /** With gitBranch: its repository. */
    gitRepo: z.string().min(1).max(4096).optional(),
  })
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
    /**
     * Absolute path of the workspace folder the anchors' relative paths start from: the anchors of the memories
     * injected are checked against the files there first (a memory whose code is gone goes to review, not into the block).
     */
    root: z.string().min(1).max(4096).optional(),
    /**
     * Also add up to this many events most relevant to the prompt, each with its neighbours, as a <workspace_events>
     * section inside the same budget (the client's cairn.injection.events). Default 0: none. Secret events never.
     */
    events: z.number().int().min(0).max(20).optional(),
    /** The reader's git checkout: memories written on unmerged git branches are left out (docs/protocol.md#git-aware-memory). */
    git: GitContext.optional(),
  })
  .strict();
export type InjectBlockParams = z.infer<typeof InjectBlockParams>;
export const AnchorsCheckParams = z
  .object({
    /** Absolute path of the workspace folder (the anchors' relative paths start there). */
    root: z.string().min(1).max(4096),
    /** Default: the project namespace of `root` plus `user`, as hovers use. */
    scope: Scope.optional(),
    /** Only anchors on these paths (relative to root, or absolute). */
    paths: z.array(z.string().min(1).max(1024)).max(1000).optional(),
  })
  .strict();
export type AnchorsCheckParams = z.infer<typeof AnchorsCheckParams>;
export const AnchorChange = z.object({
  id: z.string(),
  namespace: z.string(),
  key: z.string(),
  path: z.string(),
  /** fingerprinted: the daemon recorded the lines' content for the first time. */
  status: z.enum(['moved', 'similar', 'symbol', 'renamed', 'stale', 'fingerprinted']),
  /** "path:start-end" before and after. */
  from: z.string(),
  to: z.string().optional(),
  reason: z.string().optional(),
});
export type AnchorChange = z.infer<typeof AnchorChange>;
export const AnchorsCheckResult = z.object({
  /** Anchors checked (stale ones are not checked again). */
  checked: z.number().int(),
  /** Still where they were. */
  matched: z.number().int(),
  relocated: z.number().int(),
  stale: z.number().int(),
  fingerprinted: z.number().int(),
  /** What changed, at most 200 entries. */
  changes: z.array(AnchorChange),
});
export type AnchorsCheckResult = z.infer<typeof AnchorsCheckResult>;

export const InjectSkip = z.enum(['disabled', 'auto-off', 'no-matches']);
export const InjectBlockResult = z.object({
  block: z.string(),
  memoryIds: z.array(z.string()),
  memories: z.array(z.object({ id: z.string(), namespace: z.string(), key: z.string(), kind: MemoryKind, score: z.number() })),
  skipped: InjectSkip.optional(),
  /** Injection-log sequence number of this call. */
  logSeq: z.number().int(),
  /** With `events`: the events injected (their position, episode, kind and search score), best first. */
  events: z.array(z.object({ position: z.number().int(), episodeId: z.string(), kind: z.string(), score: z.number() })).optional(),
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
  /** Positions of the events the call injected (inject/block `events`). */
  eventPositions: z.array(z.number().int()).optional(),
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
  records: z.object({
    namespaces: z.number().int(),
    history: z.number().int(),
    links: z.number().int(),
    rejected: z.number().int(),
    episodes: z.number().int().optional(),
    events: z.number().int().optional(),
    /** Memory branch records: branches, their rows, the history of their writes. */
    branches: z.number().int().optional(),
    branchRows: z.number().int().optional(),
    branchHistory: z.number().int().optional(),
  }),
  /**
   * What store/import would do with the episode and event records: `new` are written; `existing` are stored already
   * (an episode by id, an event by (episode, seq)) and left as they are; `refused`: an episode id stored in another
   * namespace, or an event whose episode is neither stored nor in the records.
   */
  episodes: z.object({ new: z.number().int(), existing: z.number().int(), refused: z.number().int() }).optional(),
  events: z.object({ new: z.number().int(), existing: z.number().int(), refused: z.number().int() }).optional(),
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

// ---------------------------------------------------------------------------
// Episodic memory: episodes (sessions) and their events (docs/episodes.md)
// ---------------------------------------------------------------------------
/** Built-in event kinds; a client may use a name of its own (lowercase, `[a-z][a-z0-9_.-]*`). */
export const EVENT_KINDS = ['user', 'agent', 'tool_call', 'tool_result', 'command', 'edit', 'note'] as const;
export const EventKind = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[a-z][a-z0-9_.-]*$/, 'a lowercase name such as user, agent, tool_call, tool_result, command, edit or note');
/** An episode's id: client-chosen (8-128 of `A-Z a-z 0-9 _ . : -`, e.g. a session id) or given by the daemon. */
export const EpisodeId = z
  .string()
  .min(8)
  .max(128)
  .regex(/^[A-Za-z0-9_.:-]+$/, 'use 8-128 characters of A-Z a-z 0-9 _ . : -');
/** Max events in one events/append, and max characters of one event's text. */
export const EpisodeLimits = {
  appendEvents: 5000,
  eventTextChars: 65_536,
  expandEach: 200,
  timelineEach: 100,
  searchEpisodes: 50,
} as const;

/** Context parts of an event, kept as data: the file and range it touched, the symbol, the command and its exit code, the tool. */
export const EventContext = z
  .object({
    path: z.string().min(1).max(1024).optional(),
    startLine: z.number().int().min(1).optional(),
    endLine: z.number().int().min(1).optional(),
    symbol: z.string().min(1).max(512).optional(),
    command: z.string().min(1).max(4096).optional(),
    exitCode: z.number().int().optional(),
    tool: z.string().min(1).max(200).optional(),
    properties: Properties.optional(),
  })
  .strict();
export type EventContext = z.infer<typeof EventContext>;

export const Episode = z.object({
  id: z.string(),
  title: z.string(),
  namespace: z.string(),
  taskId: z.string().nullable(),
  source: z.string(),
  branch: z.string().nullable(),
  commit: z.string().nullable(),
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  /** Events appended so far. */
  events: z.number().int(),
  /** Reference time of its newest event (null without events). */
  lastEventAt: z.string().nullable(),
});
export type Episode = z.infer<typeof Episode>;

export const EpisodeEvent = z.object({
  /** The event's id: its position in the store's total order of events. */
  position: z.number().int(),
  episodeId: z.string(),
  /** The client's sequence number inside the episode. */
  seq: z.number().int(),
  kind: z.string(),
  text: z.string(),
  /** When it happened (the reference time), which may be long before it was ingested. */
  at: z.string(),
  actor: z.string(),
  context: EventContext.nullable(),
  /** The text looks like a credential (or the client said so): never shown to agents unless the user allows it. */
  secret: z.boolean(),
});
export type EpisodeEvent = z.infer<typeof EpisodeEvent>;

export const EpisodeStartParams = z
  .object({
    /** The episode's project namespace (team namespaces are refused: docs/episodes.md#team). */
    namespace: NamespacePath,
    title: z.string().min(1).max(500),
    /** Client-chosen id (e.g. a session id): starting it again returns the stored episode (`created: false`). */
    id: EpisodeId.optional(),
    taskId: MemoryId.optional(),
    /** The agent or tool producing it, e.g. `agent:claude-code`, `cli`, `ci`. Default `user`. */
    source: z.string().min(1).max(200).optional(),
    branch: z.string().min(1).max(255).optional(),
    commit: z.string().min(1).max(64).optional(),
    /** Default: now. */
    startedAt: isoDate.optional(),
    actor: Actor.optional(),
    /** The caller's scope: the namespace must lie inside it. */
    scope: Scope.optional(),
  })
  .strict();
export type EpisodeStartParams = z.infer<typeof EpisodeStartParams>;
export const EpisodeStartResult = z.object({ episode: Episode, created: z.boolean() });
export type EpisodeStartResult = z.infer<typeof EpisodeStartResult>;

export const EventInput = z
  .object({
    /** The client's sequence number (>= 0): an event already stored at (episode, seq) is not appended again. Default: the next one. */
    seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
    kind: EventKind,
    text: z.string().max(EpisodeLimits.eventTextChars),
    /** When it happened; default now. An imported transcript keeps its dates. */
    at: isoDate.optional(),
    actor: Actor.optional(),
    context: EventContext.optional(),
    /** Mark the event secret even if no credential is detected in it. */
    secret: z.boolean().optional(),
  })
  .strict();
export type EventInput = z.infer<typeof EventInput>;
export const EventAppendParams = z
  .object({
    episodeId: EpisodeId,
    events: z.array(EventInput).min(1).max(EpisodeLimits.appendEvents),
    /** Default actor of events without one. */
    actor: Actor.optional(),
    scope: Scope.optional(),
  })
  .strict();
export type EventAppendParams = z.infer<typeof EventAppendParams>;
export const EventAppendResult = z.object({
  episodeId: z.string(),
  results: z.array(
    z.object({
      seq: z.number().int(),
      position: z.number().int(),
      /** False: an event was already stored at this seq (a retried append); it is kept as it was. */
      created: z.boolean(),
      /**
       * True: retention removed the event stored at this seq (a retried append after a sweep): nothing is stored and
       * `position` is the one the removed event had.
       */
      removed: z.literal(true).optional(),
      warnings: z.array(WriteWarning).optional(),
    }),
  ),
  /** The newest event position after the append (index/wait with `events` waits for it). */
  position: z.number().int(),
});
export type EventAppendResult = z.infer<typeof EventAppendResult>;

export const EpisodeEndParams = z.object({ id: EpisodeId, endedAt: isoDate.optional(), scope: Scope.optional() }).strict();
export type EpisodeEndParams = z.infer<typeof EpisodeEndParams>;

export const EpisodeGetParams = z
  .object({
    id: EpisodeId,
    scope: Scope.optional(),
    /** Events to return, in order (default 100, 0 for none). */
    limit: z.number().int().min(0).max(Limits.pageSize).optional(),
    /** Return events after this seq (paging). */
    afterSeq: z.number().int().min(-1).optional(),
    /** Leave out events marked secret (agents). */
    excludeSecrets: z.boolean().optional(),
  })
  .strict();
export type EpisodeGetParams = z.infer<typeof EpisodeGetParams>;
export const EpisodeGetResult = z.object({ episode: Episode, events: z.array(EpisodeEvent), nextSeq: z.number().int().nullable() });
export type EpisodeGetResult = z.infer<typeof EpisodeGetResult>;

export const EpisodeListParams = z
  .object({
    scope: Scope.optional(),
    /** Episodes started at or after / before these times. */
    since: isoDate.optional(),
    before: isoDate.optional(),
    taskId: MemoryId.optional(),
    source: z.string().min(1).max(200).optional(),
    branch: z.string().min(1).max(255).optional(),
    /** Only episodes not ended yet. */
    open: z.boolean().optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
    cursor: z.string().max(512).optional(),
  })
  .strict();
export type EpisodeListParams = z.infer<typeof EpisodeListParams>;
export const EpisodeListResult = z.object({ episodes: z.array(Episode), nextCursor: z.string().nullable() });
export type EpisodeListResult = z.infer<typeof EpisodeListResult>;

/** How a relative time phrase of the query was read (docs/episodes.md#time). */
export const TimeReadingResult = z.object({
  phrase: z.string(),
  since: z.string(),
  before: z.string(),
  reading: z.string(),
  reference: z.string(),
  /** Where the reference time came from: the caller (`reference`), the newest event in scope, or the clock. */
  referenceFrom: z.enum(['param', 'newest-event', 'now']),
});
export type TimeReadingResult = z.infer<typeof TimeReadingResult>;

export const EventSearchParams = z
  .object({
    query: z.string().max(Limits.queryChars),
    scope: Scope.optional(),
    mode: SearchMode.optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
    kinds: z.array(EventKind).min(1).max(64).optional(),
    /** Episode sources (e.g. `agent:claude-code`). */
    sources: z.array(z.string().min(1).max(200)).min(1).max(64).optional(),
    episodeId: EpisodeId.optional(),
    /** Events that happened at or after / before these times (reference time `at`). */
    since: isoDate.optional(),
    before: isoDate.optional(),
    /** The time relative phrases are read against; default the newest event in scope, else now. */
    reference: isoDate.optional(),
    /** Read a relative time phrase of the query as a time range (default true). */
    timePhrases: z.boolean().optional(),
    /** Return each hit with this many events before and after it in its episode (0-10). */
    expand: z.number().int().min(0).max(10).optional(),
    excludeSecrets: z.boolean().optional(),
  })
  .strict();
export type EventSearchParams = z.infer<typeof EventSearchParams>;
export const EventHit = z.object({
  event: EpisodeEvent,
  episode: z.object({ id: z.string(), title: z.string(), namespace: z.string(), source: z.string(), startedAt: z.string() }),
  position: z.number().int(),
  score: z.number(),
  snippet: z.string(),
  /** With `expand`: the neighbouring events of the same episode, in order (the hit included). */
  context: z.array(EpisodeEvent).optional(),
});
export type EventHit = z.infer<typeof EventHit>;
export const EventSearchResult = z.object({
  hits: z.array(EventHit),
  mode: SearchMode,
  degraded: z.string().optional(),
  time: TimeReadingResult.optional(),
});
export type EventSearchResult = z.infer<typeof EventSearchResult>;

export const EpisodeSearchParams = z
  .object({
    query: z.string().max(Limits.queryChars),
    scope: Scope.optional(),
    mode: SearchMode.optional(),
    /** Episodes to return (default 5). */
    limit: z.number().int().min(1).max(EpisodeLimits.searchEpisodes).optional(),
    /** The best-matching events shown per episode (default 3, 0: none). */
    hits: z.number().int().min(0).max(10).optional(),
    kinds: z.array(EventKind).min(1).max(64).optional(),
    sources: z.array(z.string().min(1).max(200)).min(1).max(64).optional(),
    since: isoDate.optional(),
    before: isoDate.optional(),
    reference: isoDate.optional(),
    timePhrases: z.boolean().optional(),
    excludeSecrets: z.boolean().optional(),
  })
  .strict();
export type EpisodeSearchParams = z.infer<typeof EpisodeSearchParams>;
export const EpisodeSearchHit = z.object({
  episode: Episode,
  score: z.number(),
  /** Its best-matching events, best first: position, kind, reference time and a snippet (events/expand has the rest). */
  hits: z.array(z.object({ position: z.number().int(), kind: z.string(), at: z.string(), score: z.number(), snippet: z.string() })),
});
export type EpisodeSearchHit = z.infer<typeof EpisodeSearchHit>;
export const EpisodeSearchResult = z.object({
  episodes: z.array(EpisodeSearchHit),
  mode: SearchMode,
  degraded: z.string().optional(),
  time: TimeReadingResult.optional(),
});
export type EpisodeSearchResult = z.infer<typeof EpisodeSearchResult>;

export const EventExpandParams = z
  .object({
    position: z.number().int().min(1),
    /** Events before / after it in its episode (default 3 each, at most 200). */
    before: z.number().int().min(0).max(EpisodeLimits.expandEach).optional(),
    after: z.number().int().min(0).max(EpisodeLimits.expandEach).optional(),
    /** Instead of counts: the events of its episode within this many minutes of it. */
    windowMinutes: z
      .number()
      .min(0)
      .max(7 * 24 * 60)
      .optional(),
    scope: Scope.optional(),
    excludeSecrets: z.boolean().optional(),
  })
  .strict();
export type EventExpandParams = z.infer<typeof EventExpandParams>;
export const EventExpandResult = z.object({ episode: Episode, anchor: z.number().int(), events: z.array(EpisodeEvent) });
export type EventExpandResult = z.infer<typeof EventExpandResult>;

export const EpisodeTimelineParams = z
  .object({
    /** The anchor event's position. */
    anchor: z.number().int().min(1),
    /** Entries before / after it by reference time, across the episodes in scope (default 5 each, at most 100). */
    before: z.number().int().min(0).max(EpisodeLimits.timelineEach).optional(),
    after: z.number().int().min(0).max(EpisodeLimits.timelineEach).optional(),
    scope: Scope.optional(),
    excludeSecrets: z.boolean().optional(),
  })
  .strict();
export type EpisodeTimelineParams = z.infer<typeof EpisodeTimelineParams>;
export const TimelineEntry = z.object({
  position: z.number().int(),
  episodeId: z.string(),
  episodeTitle: z.string(),
  kind: z.string(),
  at: z.string(),
  /** The event's first line, at most 160 characters: the full text is one events/expand away. */
  excerpt: z.string(),
  anchor: z.boolean(),
});
export const EpisodeTimelineResult = z.object({ entries: z.array(TimelineEntry) });
export type EpisodeTimelineResult = z.infer<typeof EpisodeTimelineResult>;

export const EpisodeProposeParams = z
  .object({
    /** Positions of the source events (all in scope): the memory's provenance. */
    events: z.array(z.number().int().min(1)).min(1).max(64),
    /** Default: the namespace of the first source event's episode. */
    namespace: NamespacePath.optional(),
    key: z.string().min(1).max(Limits.keyChars),
    value: z.string().min(1),
    kind: MemoryKind.optional(),
    tags: z.array(z.string().min(1).max(Limits.tagChars)).max(Limits.tags).optional(),
    importance: unit.optional(),
    confidence: unit.optional(),
    /** Id of a memory this one replaces when approved (the usual supersession). */
    supersedes: MemoryId.optional(),
    actor: Actor.optional(),
    reason: Reason.optional(),
    scope: Scope.optional(),
    /** Refuse source events marked secret (agents). */
    excludeSecrets: z.boolean().optional(),
    /**
     * The git branch and HEAD commit the proposal was made on, recorded with the proposed version as memory/upsert's
     * `git` (docs/protocol.md#git-aware-memory): a reader on another git branch sees it once that branch is merged.
     */
    git: GitWrite.optional(),
  })
  .strict();
export type EpisodeProposeParams = z.infer<typeof EpisodeProposeParams>;
export const EpisodeProposeResult = z.object({ memory: Memory, position: z.number().int(), sourceEvents: z.array(z.number().int()) });
export type EpisodeProposeResult = z.infer<typeof EpisodeProposeResult>;

export const EpisodeEraseParams = z
  .object({ id: EpisodeId, actor: Actor.optional(), reason: Reason.optional(), scope: Scope.optional() })
  .strict();
export type EpisodeEraseParams = z.infer<typeof EpisodeEraseParams>;
export const EpisodeEraseResult = z.object({
  id: z.string(),
  events: z.number().int(),
  vectors: z.number().int(),
  /** The WAL was checkpointed and truncated after the erasure. */
  walTruncated: z.boolean(),
  /** The signed erasure receipt (`cairn verify-receipt` checks it), as memory/erase returns. */
  receipt: ErasureReceipt,
});
export type EpisodeEraseResult = z.infer<typeof EpisodeEraseResult>;
/** One removal from the event log: an erased episode, or the events retention removed from one episode. */
export const EpisodeRemoval = z.object({
  seq: z.number().int(),
  op: z.enum(['erase', 'retention']),
  episodeId: z.string(),
  namespace: z.string(),
  /** Events removed. */
  events: z.number().int(),
  actor: z.string(),
  reason: z.string().nullable(),
  at: z.string(),
  /** erase: `receipt` (its id); retention: `root`, `byKind` (events removed per kind), `before` (the cutoff). */
  detail: z.record(z.string(), z.unknown()).nullable(),
});
export type EpisodeRemoval = z.infer<typeof EpisodeRemoval>;
export const EpisodeRemovalsParams = z
  .object({
    scope: Scope.optional(),
    episodeId: EpisodeId.optional(),
    limit: z.number().int().min(1).max(Limits.pageSize).optional(),
  })
  .strict();
export type EpisodeRemovalsParams = z.infer<typeof EpisodeRemovalsParams>;
export const EpisodeRemovalsResult = z.object({ entries: z.array(EpisodeRemoval) });
export type EpisodeRemovalsResult = z.infer<typeof EpisodeRemovalsResult>;
// Memory branches (branch/*): copy-on-write overlays of a namespace subtree. See docs/branches.md.
export const Branch = z.object({
  id: z.string(),
  name: z.string(),
  /** The namespace subtree the branch covers: its writes must lie under it. */
  root: z.string(),
  /** The branch it was made from (its writes were copied at creation), or null: made from the base. */
  from: z.string().nullable(),
  /** The change-log position of the base when the branch was made. */
  forkPosition: z.number().int(),
  createdAt: z.string(),
  createdBy: z.string(),
  status: z.enum(['open', 'merged', 'discarded']),
  closedAt: z.string().nullable(),
  closedBy: z.string().nullable(),
  /** The agent task this branch belongs to (tasks/create with branch: true), or null. */
  taskId: z.string().nullable(),
  /** How many memories the branch has written (changed, added or deleted). */
  writes: z.number().int(),
  /** The git branch it follows (branch/create `gitBranch`): merging that git branch merges the memory branch. */
  gitBranch: z.string().optional(),
  /** Set when the followed git branch was found merged but the memory merge has this many conflicts (not merged). */
  gitConflicts: z.number().int().optional(),
});
export type Branch = z.infer<typeof Branch>;
export const BranchCreateParams = z
  .object({
    name: BranchName,
    root: NamespacePath,
    from: BranchName.optional(),
    actor: Actor.optional(),
    /** Follow this git branch: when a reader's checkout shows it merged, the memory branch is merged (branch/sync). */
    gitBranch: GitBranchName.optional(),
    /** The repository of gitBranch (default: any repository a reader has checked out). */
    gitRepo: z.string().min(1).max(4096).optional(),
    /** gitBranch's tip when bound (default: read from gitRepo); the branch counts as merged only after moving past it. */
    gitCommit: GitCommit.optional(),
  })
  .strict();
export type BranchCreateParams = z.infer<typeof BranchCreateParams>;
export const BranchListParams = z.object({ all: z.boolean().optional() }).strict();
export type BranchListParams = z.infer<typeof BranchListParams>;
export const BranchListResult = z.object({ branches: z.array(Branch) });
export type BranchListResult = z.infer<typeof BranchListResult>;
export const BranchNameParams = z.object({ name: BranchName, actor: Actor.optional() }).strict();
export type BranchNameParams = z.infer<typeof BranchNameParams>;
/** branch/sync: merge the memory branches whose followed git branch this checkout shows merged into its base. */
export const BranchSyncParams = GitContext.extend({ actor: Actor.optional() }).strict();
export type BranchSyncParams = z.infer<typeof BranchSyncParams>;
export const BranchSyncItem = z.object({
  name: z.string(),
  gitBranch: z.string(),
  /** merged: changes applied; conflicts: that many conflicts, nothing merged (branch/merge with resolutions). */
  applied: z.number().int().optional(),
  conflicts: z.number().int().optional(),
});
export type BranchSyncItem = z.infer<typeof BranchSyncItem>;
export const BranchSyncResult = z.object({
  /** False when the checkout is not on its base branch: nothing was checked. */
  onBase: z.boolean(),
  merged: z.array(BranchSyncItem),
  conflicted: z.array(BranchSyncItem),
});
export type BranchSyncResult = z.infer<typeof BranchSyncResult>;
/** git/markMerged: mark a git branch merged (a squash merge git cannot see), or take the mark back with merged: false. */
export const GitMarkMergedParams = z.object({ branch: GitBranchName, merged: z.boolean().optional(), actor: Actor.optional() }).strict();
export type GitMarkMergedParams = z.infer<typeof GitMarkMergedParams>;
export const GitMarkMergedResult = z.object({ branch: z.string(), merged: z.boolean(), wasMerged: z.boolean() });
export type GitMarkMergedResult = z.infer<typeof GitMarkMergedResult>;
export const BranchChange = z.object({
  namespace: z.string(),
  key: z.string(),
  change: z.enum(['added', 'changed', 'deleted']),
  /** The base memory's version when the branch first wrote this key (null: the base had none). */
  baseVersion: z.number().int().nullable(),
  /** The base memory now (null: none); its version differs from baseVersion when the base changed since. */
  base: Memory.nullable(),
  branch: Memory,
  /** Changed on both sides since the branch first wrote it: merge needs a resolution. */
  conflict: z.boolean(),
});
export type BranchChange = z.infer<typeof BranchChange>;
export const BranchDiffResult = z.object({ branch: Branch, changes: z.array(BranchChange) });
export type BranchDiffResult = z.infer<typeof BranchDiffResult>;
export const BranchResolution = z
  .object({
    namespace: NamespacePath,
    key: z.string().min(1).max(Limits.keyChars),
    /** `branch`: the branch's version wins; `base`: the base stays; an object: this content is written. */
    take: z.union([
      z.enum(['branch', 'base']),
      z
        .object({
          value: z.string(),
          kind: MemoryKind.optional(),
          tags: z.array(z.string().min(1).max(Limits.tagChars)).max(Limits.tags).optional(),
          importance: unit.optional(),
          confidence: unit.optional(),
          properties: Properties.optional(),
        })
        .strict(),
    ]),
  })
  .strict();
export type BranchResolution = z.infer<typeof BranchResolution>;
export const BranchMergeParams = z
  .object({
    name: BranchName,
    actor: Actor.optional(),
    reason: Reason.optional(),
    resolutions: z.array(BranchResolution).max(Limits.batchItems).optional(),
  })
  .strict();
export type BranchMergeParams = z.infer<typeof BranchMergeParams>;
export const BranchMergeResult = z.object({
  /** False when a conflict has no resolution: then nothing was written. */
  merged: z.boolean(),
  /** Base writes made (upserts and deletes). */
  applied: z.number().int(),
  /** The conflicts still without a resolution (empty when merged). */
  conflicts: z.array(BranchChange),
  position: z.number().int(),
});
export type BranchMergeResult = z.infer<typeof BranchMergeResult>;
export const BranchDiscardResult = z.object({ name: z.string(), dropped: z.number().int() });
export type BranchDiscardResult = z.infer<typeof BranchDiscardResult>;
