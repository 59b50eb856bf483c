/**
 * The MCP tools: each a name, a description written for a model, an input
 * schema built from the protocol's zod schemas, and a handler that calls the
 * daemon through `Requests.*` inside the session's scope.
 */
import { z } from 'zod';
import { CairnError } from '../protocol/errors';
import { Requests, type RequestDef } from '../protocol/methods';
import * as T from '../protocol/types';
import { listText, memoryFull, neighborsText, rememberText, scopeText, searchText, statusText } from './format';
import { isUnder, USER_ROOT } from '../protocol/namespace';
import { boundedScope, checkNamespace, defaultScope, type McpScope } from './scope';
import { isSecretTagged, SECRET_TAG } from '../text/secrets';
// Episodic memory's tools live in their own file (episode-tools.ts).
import { EPISODE_TOOLS } from './episode-tools';
import { ro, tool } from './define-tool';

/** What a tool handler may use. */
export interface ToolContext {
  call<P extends z.ZodType, R extends z.ZodType>(def: RequestDef<P, R>, params: z.input<P>): Promise<z.infer<R>>;
  scope: McpScope;
  /** `agent:<client name>`: the source and actor of every write. */
  actor(): string;
  /** New and updated memories are `proposed` (cairn.review.agentWrites). */
  reviewAgentWrites: boolean;
  /** Memories tagged `secret` reach the agent (cairn.agents.allowSecrets). Default false: they are never returned. */
  allowSecrets?: boolean;
  /** Git-aware memory (docs/protocol.md#git-aware-memory): the checkout reads carry, and what a write records. */
  git?: { read(): T.GitContext | undefined; write(namespace: string): T.GitWrite | undefined };
  /**
   * The open burner branch of the session's active task (docs/branches.md#burner-branches-for-agent-tasks), if it has
   * one: reads and searches see it over the base, writes under its root go to it. Asked once per tool call.
   */
  taskBranch?(): Promise<TaskBranch | undefined>;
}

/** An agent task's memory branch: its name (`task/<id>`) and the subtree it covers (the task's scope root). */
export interface TaskBranch {
  task: string;
  name: string;
  root: string;
}

/** The `branch` a read carries: the active task's branch, if any. */
async function readBranch(ctx: ToolContext): Promise<{ branch?: string }> {
  const b = await ctx.taskBranch?.();
  return b ? { branch: b.name } : {};
}

/** The task branch a write to `namespace` goes to: only under the branch's root (elsewhere, e.g. `user`, the base). */
async function writeBranch(ctx: ToolContext, namespace: string): Promise<TaskBranch | undefined> {
  const b = await ctx.taskBranch?.();
  return b && isUnder(namespace, b.root) ? b : undefined;
}

/** The `git` field of a read from this session's checkout (none outside a repository). */
function gitRead(ctx: ToolContext): { git?: T.GitContext } {
  const g = ctx.git?.read();
  return g ? { git: g } : {};
}

export interface ToolOutput {
  text: string;
  structured: Record<string, unknown>;
}

export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

export interface CairnTool<S extends z.ZodObject = z.ZodObject> {
  name: string;
  description: string;
  input: S;
  annotations: ToolAnnotations;
  run(args: z.infer<S>, ctx: ToolContext): Promise<ToolOutput>;
}

// ---------------------------------------------------------------------------
// Shared argument schemas (the protocol's, with descriptions for a model)
// ---------------------------------------------------------------------------
const Up = T.UpsertParams.shape;
const scopeArg = T.Scope.optional().describe(
  'Where to look. Default: this project’s namespace and everything under it, plus the user’s own `user` namespace. `root` narrows to a subtree (e.g. "project.web.api"), `namespaces` lists exact namespaces, `includeUser: false` leaves out `user`. Only this project’s namespaces and `user` can be read.',
);
const filterArg = z
  .record(z.string(), z.unknown())
  .optional()
  .describe(
    'Advanced filter tree (Cairn filter grammar), e.g. {"field":"importance","op":"gte","value":0.7}, {"field":"anchors.path","op":"prefix","value":"src/auth/"}, {"field":"updatedAt","op":"gt","value":"2025-01-01T00:00:00Z"}, {"property":"ticket","op":"eq","value":"ABC-1"}; combine with {"and":[...]}, {"or":[...]}, {"not":{...}}.',
  );
const kindsArg = z.array(T.MemoryKind).min(1).max(6).optional().describe('Only memories of these kinds.');
const tagsArg = z
  .array(z.string().min(1).max(T.Limits.tagChars))
  .min(1)
  .max(64)
  .optional()
  .describe('Only memories carrying at least one of these tags.');
const includeProposedArg = z
  .boolean()
  .optional()
  .describe('Also return proposed memories (written by agents, not yet reviewed by the user). Default false.');
const idArg = T.MemoryId;

/** kinds/tags conveniences AND-ed with a raw filter, and (unless the user allows it) "no `secret` tag". */
function combinedFilter(
  a: { kinds?: string[]; tags?: string[]; filter?: Record<string, unknown> },
  ctx: ToolContext,
): T.Filter | undefined {
  const parts: unknown[] = [];
  if (!ctx.allowSecrets) parts.push({ field: 'tags', op: 'hasNone', value: [SECRET_TAG] });
  if (a.kinds) parts.push({ field: 'kind', op: 'in', value: a.kinds });
  if (a.tags) parts.push({ field: 'tags', op: 'hasAny', value: a.tags });
  if (a.filter) parts.push(a.filter);
  if (parts.length === 0) return undefined;
  return (parts.length === 1 ? parts[0] : { and: parts }) as T.Filter;
}

/** Resolve `id` or `namespace`+`key` arguments; with neither, or both, say so. */
function target(a: { id?: string; namespace?: string; key?: string }): { id: string } | { namespace?: string; key: string } {
  if (a.id !== undefined && a.key !== undefined)
    throw new CairnError('InvalidParams', 'give either id, or key (with an optional namespace), not both', { field: 'id' });
  if (a.id !== undefined) return { id: a.id };
  if (a.key !== undefined) return { ...(a.namespace !== undefined ? { namespace: a.namespace } : {}), key: a.key };
  throw new CairnError('InvalidParams', 'give the memory’s id, or its key (with an optional namespace)', {
    field: a.namespace !== undefined ? 'key' : 'id',
  });
}

/**
 * A memory an agent may see: secret memories are NotFound to agents unless the user allows them. The same answer
 * for a read (recall, forget, link, neighbors) and for a write over one (remember with its key, supersedes).
 */
function visibleToAgent(ctx: ToolContext, m: T.Memory, field = 'id'): T.Memory {
  if (!ctx.allowSecrets && isSecretTagged(m.tags)) {
    throw new CairnError(
      'NotFound',
      `memory ${m.id} is tagged "${SECRET_TAG}" and is not shown to agents (the user can allow it with cairn.agents.allowSecrets)`,
      { field },
    );
  }
  return m;
}

/**
 * Before an agent writes `namespace`/`key`: the memory stored there, when it is one the agent may not see (a secret
 * one, also deleted), is NotFound, as for a read; otherwise the version the write must find (0: none yet), so that a
 * memory tagged secret between this look and the write makes the write fail (VersionConflict) instead of rewriting it.
 */
async function writableVersion(ctx: ToolContext, namespace: string, key: string): Promise<number | undefined> {
  if (ctx.allowSecrets) return undefined;
  let m: T.Memory;
  try {
    m = await ctx.call(Requests.get, { namespace, key, scope: defaultScope(ctx.scope), includeDeleted: true, ...(await readBranch(ctx)) });
  } catch (e) {
    if (e instanceof CairnError && e.data.name === 'NotFound') return 0;
    throw e;
  }
  visibleToAgent(ctx, m, 'key');
  return m.deletedAt === null ? m.version : undefined; // a deleted key refuses the write itself (Deleted)
}

/** Read one memory in scope that the agent may see (see findMemoryAny). */
async function findMemory(
  ctx: ToolContext,
  t: { id: string } | { namespace?: string; key: string },
  includeDeleted = false,
  field = 'id',
): Promise<T.Memory> {
  return visibleToAgent(ctx, await findMemoryAny(ctx, t, includeDeleted), field);
}

/** Read one memory in scope: by id (scope-checked by the daemon), or by key in the given namespace, else the project root then `user`. */
async function findMemoryAny(
  ctx: ToolContext,
  t: { id: string } | { namespace?: string; key: string },
  includeDeleted = false,
): Promise<T.Memory> {
  const scope = defaultScope(ctx.scope);
  const branch = await readBranch(ctx);
  if ('id' in t) return ctx.call(Requests.get, { id: t.id, scope, ...branch, ...(includeDeleted ? { includeDeleted } : {}) });
  if (t.namespace !== undefined) {
    checkNamespace(ctx.scope, t.namespace, 'namespace');
    return ctx.call(Requests.get, { namespace: t.namespace, key: t.key, scope, ...branch, ...(includeDeleted ? { includeDeleted } : {}) });
  }
  try {
    return await ctx.call(Requests.get, { namespace: ctx.scope.root, key: t.key, scope, ...branch });
  } catch (e) {
    if (!(e instanceof CairnError) || e.data.name !== 'NotFound' || ctx.scope.root === USER_ROOT) throw e;
    try {
      return await ctx.call(Requests.get, { namespace: USER_ROOT, key: t.key, scope, ...branch });
    } catch (e2) {
      if (e2 instanceof CairnError && e2.data.name === 'NotFound') {
        throw new CairnError('NotFound', `no memory with key "${t.key}" in ${ctx.scope.root} or ${USER_ROOT}`, { field: 'key' });
      }
      throw e2;
    }
  }
}

// ---------------------------------------------------------------------------
// The tools
// ---------------------------------------------------------------------------
export const searchTool = tool({
  name: 'cairn_search',
  description:
    'Search Cairn, the persistent memory shared by the user and their coding agents, for facts, decisions, preferences, procedures and notes about this project and the user. ' +
    'Use it before starting a task, when unsure about a convention, a past decision or how something is done here, and before remembering something (to update an existing memory instead of duplicating it). ' +
    'Ranked hybrid search (keywords + meaning). Returns each memory’s namespace/key, id, kind and value.',
  input: z
    .object({
      query: T.SearchParams.shape.query
        .min(1)
        .describe('What to look for, in natural language or keywords, e.g. "how do we run the integration tests".'),
      scope: scopeArg,
      kinds: kindsArg,
      tags: tagsArg,
      filter: filterArg,
      mode: T.SearchMode.optional().describe('hybrid (default): keywords and meaning; fts: exact keywords only; vector: meaning only.'),
      limit: z.number().int().min(1).max(50).optional().describe('Most memories to return (default 10).'),
      includeProposed: includeProposedArg,
    })
    .strict(),
  annotations: ro('Search memories'),
  async run(a, ctx) {
    const scope = boundedScope(ctx.scope, a.scope);
    const filter = combinedFilter(a, ctx);
    const r = await ctx.call(Requests.search, {
      query: a.query,
      scope,
      ...gitRead(ctx),
      ...(await readBranch(ctx)),
      limit: a.limit ?? 10,
      ...(a.mode ? { mode: a.mode } : {}),
      ...(filter ? { filter } : {}),
      ...(a.includeProposed ? { include: { proposed: true } } : {}),
    });
    return { text: searchText(a.query, r, scopeText(scope)), structured: { ...r, scope } };
  },
});

export const rememberTool = tool({
  name: 'cairn_remember',
  description:
    'Save a memory to Cairn so that later sessions (yours, other agents’, the user’s) know it: a project fact, a decision and its reason, a user preference, a procedure that worked, a pitfall. ' +
    'One self-contained idea per memory, written so it makes sense without this conversation. Writing to an existing namespace+key updates that memory (search first to find it). ' +
    'Project knowledge goes in the project namespace (the default); the user’s personal preferences that hold across projects go in "user" (e.g. namespace "user.preferences"). ' +
    'Never store secrets (passwords, tokens, keys). Depending on the user’s settings, new memories may wait for the user’s review (status proposed).',
  input: z
    .object({
      namespace: Up.namespace
        .optional()
        .describe('Dotted lowercase namespace, e.g. "project.web.api" or "user.preferences". Default: this project’s namespace.'),
      key: Up.key.describe(
        'Short stable identifier, unique in the namespace, e.g. "test-command" or "auth-token-refresh-decision". Reusing a key updates that memory.',
      ),
      value: Up.value.min(1).describe('The memory itself: clear, specific, self-contained text (markdown allowed).'),
      kind: Up.kind.describe('fact, preference, decision, procedure, episode (something that happened) or note (the default).'),
      tags: Up.tags.describe('Tags for filtering, e.g. ["testing","ci"].'),
      importance: z
        .number()
        .min(0)
        .max(1)
        .optional()
        .describe('0..1, how much this matters (default 0.5). Use 0.8+ for rules that must not be broken.'),
      confidence: z.number().min(0).max(1).optional().describe('0..1, how sure you are (default 1). Lower it for guesses and inferences.'),
      anchors: z
        .array(T.Anchor.omit({ stale: true }))
        .max(T.Limits.anchors)
        .optional()
        .describe(
          'Code locations this memory is about: workspace-relative path, optional symbol and 1-based line range. Shown when the user hovers that code.',
        ),
      properties: Up.properties.describe('Extra key/value facts, e.g. {"ticket":"ABC-123"}.'),
      supersedes: Up.supersedes.describe('Id of an older memory that this one replaces (it is marked superseded).'),
      expiresAt: Up.expiresAt.describe('ISO-8601 time after which the memory is dropped, for temporary facts.'),
      validFrom: Up.validFrom.describe('ISO-8601 time from which the memory holds.'),
      validTo: Up.validTo.describe('ISO-8601 time until which the memory holds.'),
      ifVersion: Up.ifVersion.describe('Only write if the stored memory is at this version (0: only if it does not exist yet).'),
      reason: Up.reason.describe('Why this is being saved or changed (kept in the memory’s history).'),
    })
    .strict(),
  annotations: { title: 'Remember', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(a, ctx) {
    const namespace = a.namespace ?? ctx.scope.root;
    checkNamespace(ctx.scope, namespace, 'namespace');
    // An agent neither reads nor rewrites a secret memory: not by its key (which would drop the tag with `tags: []`),
    // not through `supersedes`.
    const seen = await writableVersion(ctx, namespace, a.key);
    if (a.supersedes !== undefined && !ctx.allowSecrets)
      await findMemory(ctx, { id: a.supersedes }, false, 'supersedes').catch((e) => {
        throw e instanceof CairnError ? new CairnError(e.data.name, e.message, { ...e.data, field: 'supersedes' }) : e;
      });
    const { namespace: _n, ...rest } = a;
    // The agent's own ifVersion, else the version just seen; an ifVersion other than the one seen fails as stale.
    if (seen !== undefined && a.ifVersion !== undefined && a.ifVersion !== seen)
      throw new CairnError('VersionConflict', `stored version is ${seen}, not ${a.ifVersion}`, {
        field: 'ifVersion',
        currentVersion: seen,
      });
    const ifVersion = a.ifVersion ?? seen;
    const git = ctx.git?.write(namespace);
    const branch = await writeBranch(ctx, namespace);
    const r = await ctx.call(Requests.upsert, {
      ...rest,
      ...(ifVersion !== undefined ? { ifVersion } : {}),
      namespace,
      // The session's scope bounds the write: the namespace and the memory named by `supersedes`.
      scope: defaultScope(ctx.scope),
      source: ctx.actor(),
      actor: ctx.actor(),
      waitForDuplicates: true, // the agent sees its possible duplicates in the answer
      ...(git ? { git } : {}),
      ...(branch ? { branch: branch.name } : {}),
      ...(ctx.reviewAgentWrites ? { status: 'proposed' as const } : {}),
    });
    if (!branch) return { text: rememberText(r), structured: r };
    return {
      text: `${rememberText(r)}\nWritten on the memory branch ${branch.name} of the active task: the base is unchanged until the user merges the branch.`,
      structured: { ...r, branch: branch.name },
    };
  },
});

export const recallTool = tool({
  name: 'cairn_recall',
  description:
    'Read one memory in full: by its id (from cairn_search or cairn_list), or by its key. With a key and no namespace, looks in this project’s namespace and then in "user". ' +
    'Use it when a search result was shortened or when you know the key of what you need.',
  input: z
    .object({
      id: idArg.optional().describe('The memory’s id.'),
      namespace: T.NamespacePath.optional().describe('Namespace of the key. Default: this project’s namespace, then "user".'),
      key: Up.key.optional().describe('The memory’s key.'),
    })
    .strict(),
  annotations: ro('Recall a memory'),
  async run(a, ctx) {
    const m = await findMemory(ctx, target(a));
    return { text: memoryFull(m), structured: { memory: m } };
  },
});

export const forgetTool = tool({
  name: 'cairn_forget',
  description:
    'Forget a memory that is wrong, obsolete or that the user wants gone: it is deleted and its value is recorded as rejected, so it is not stored again by mistake. ' +
    'Identify it by id, or by key (and namespace). The user can still see and restore it from history. To correct a memory, prefer cairn_remember with the same key.',
  input: z
    .object({
      id: idArg.optional().describe('The memory’s id.'),
      namespace: T.NamespacePath.optional().describe('Namespace of the key. Default: this project’s namespace, then "user".'),
      key: T.ForgetParams.shape.key.describe('The memory’s key.'),
      reason: T.Reason.optional().describe('Why it is forgotten (kept in the history).'),
    })
    .strict(),
  annotations: { title: 'Forget a memory', readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false },
  async run(a, ctx) {
    // Resolve (and scope-check) first: a forget by id has no scope of its own.
    const m = await findMemory(ctx, target(a));
    const branch = await writeBranch(ctx, m.namespace);
    if (branch) {
      // On the task's branch a forget is a delete there: the base keeps the memory until the user merges the branch.
      const r = await ctx.call(Requests.delete, {
        id: m.id,
        branch: branch.name,
        scope: defaultScope(ctx.scope),
        actor: ctx.actor(),
        ...(a.reason ? { reason: a.reason } : {}),
      });
      return {
        text: `Deleted ${r.memory.namespace}/${r.memory.key} (id ${r.memory.id}) on the memory branch ${branch.name} of the active task: the base keeps it until the user merges the branch.`,
        structured: { ...r, branch: branch.name },
      };
    }
    const r = await ctx.call(Requests.forget, {
      id: m.id,
      scope: defaultScope(ctx.scope),
      actor: ctx.actor(),
      ...(a.reason ? { reason: a.reason } : {}),
    });
    return {
      text: `Forgot ${r.memory.namespace}/${r.memory.key} (id ${r.memory.id}); its value will be refused if written again in ${r.memory.namespace}.`,
      structured: r,
    };
  },
});

export const listTool = tool({
  name: 'cairn_list',
  description:
    'List memories in scope, most recently updated first, optionally only some kinds or tags. Use it to browse what is known about this project (or the user) when there is no specific query; use cairn_search to find something specific.',
  input: z
    .object({
      scope: scopeArg,
      kinds: kindsArg,
      tags: tagsArg,
      filter: filterArg,
      limit: z.number().int().min(1).max(100).optional().describe('Most memories to return (default 20).'),
      cursor: T.ListParams.shape.cursor.describe('Cursor from a previous cairn_list result, to get the next page.'),
      includeProposed: includeProposedArg,
    })
    .strict(),
  annotations: ro('List memories'),
  async run(a, ctx) {
    const scope = boundedScope(ctx.scope, a.scope);
    const filter = combinedFilter(a, ctx);
    const r = await ctx.call(Requests.list, {
      scope,
      ...gitRead(ctx),
      ...(await readBranch(ctx)),
      limit: a.limit ?? 20,
      ...(filter ? { filter } : {}),
      ...(a.cursor ? { cursor: a.cursor } : {}),
      ...(a.includeProposed ? { include: { proposed: true } } : {}),
    });
    return { text: listText(r.items, r.nextCursor, scopeText(scope)), structured: { ...r, scope } };
  },
});

export const linkTool = tool({
  name: 'cairn_link',
  description:
    'Connect two memories with a typed link, to record how knowledge fits together: relates_to, depends_on, supports, refines, derived_from, or contradicts (flag conflicting memories for the user). Both memories must be in scope; use their ids.',
  input: z
    .object({
      from: T.LinkParams.shape.from.describe('Id of the memory the link starts from.'),
      to: T.LinkParams.shape.to.describe('Id of the memory it points to.'),
      type: T.LinkType.describe(
        'relates_to, contradicts, depends_on (from needs to), derived_from, supports or refines (from refines to).',
      ),
    })
    .strict(),
  annotations: { title: 'Link memories', readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  async run(a, ctx) {
    if (!ctx.allowSecrets) {
      await findMemory(ctx, { id: a.from });
      await findMemory(ctx, { id: a.to }).catch((e) => {
        throw e instanceof CairnError ? new CairnError(e.data.name, e.message, { ...e.data, field: 'to' }) : e;
      });
    }
    const r = await ctx.call(Requests.link, { ...a, actor: ctx.actor(), scope: defaultScope(ctx.scope) });
    return { text: `${r.created ? 'Linked' : 'Already linked'}: ${a.from} —${a.type}→ ${a.to}.`, structured: r };
  },
});

export const neighborsTool = tool({
  name: 'cairn_neighbors',
  description:
    'Show the memories linked to a memory (what it depends on, supports, contradicts, refines...), to follow related knowledge from a search result.',
  input: z
    .object({
      id: T.NeighborsParams.shape.id.describe('Id of the memory.'),
      type: T.LinkType.optional().describe('Only links of this type.'),
      direction: T.NeighborsParams.shape.direction.describe('out: links from this memory; in: links to it; both (default).'),
    })
    .strict(),
  annotations: ro('Linked memories'),
  async run(a, ctx) {
    if (!ctx.allowSecrets) await findMemory(ctx, { id: a.id });
    const all = await ctx.call(Requests.neighbors, { ...a, scope: defaultScope(ctx.scope) });
    const r = ctx.allowSecrets ? all : { neighbors: all.neighbors.filter((n) => !isSecretTagged(n.memory.tags)) };
    return { text: neighborsText(a.id, r), structured: r };
  },
});

export const statusTool = tool({
  name: 'cairn_status',
  description:
    'Show the state of Cairn: memory counts, whether meaning-based (vector) search is ready, the daemon, and this session’s scope and review mode. Use it when search results look wrong or memory seems unavailable.',
  input: z.object({}).strict(),
  annotations: ro('Memory status'),
  async run(_a, ctx) {
    const r = await ctx.call(Requests.status, {});
    const session = {
      root: ctx.scope.root,
      rootSource: ctx.scope.source,
      dir: ctx.scope.dir ?? null,
      review: ctx.reviewAgentWrites,
      actor: ctx.actor(),
      branch: (await ctx.taskBranch?.())?.name ?? null,
    };
    return { text: statusText(r, session), structured: { ...r, session } };
  },
});

export const TOOLS: CairnTool[] = [
  searchTool,
  rememberTool,
  recallTool,
  forgetTool,
  listTool,
  linkTool,
  neighborsTool,
  statusTool,
  ...EPISODE_TOOLS,
] as unknown as CairnTool[];
