/**
 * Every Cairn setting with its default, declared once. The VS Code extension's
 * `contributes.configuration` must declare exactly these keys with these
 * defaults (a test checks it); the daemon reads the same keys from flags and
 * CAIRN_* environment variables.
 *
 * Every environment variable Cairn reads is declared here too (a setting's `env`, or `Environment` below) and read
 * only through `readEnv` / `envFlag` (test/unit/tidy.test.ts fails on `process.env` anywhere else).
 */
export interface SettingDef {
  type: 'string' | 'boolean' | 'number';
  default: string | boolean | number;
  description: string;
  /** Environment variable the daemon and CLI read as a fallback. */
  env?: string;
  minimum?: number;
  maximum?: number;
  enum?: string[];
}

export const Settings = {
  'cairn.store.path': {
    type: 'string',
    default: '',
    env: 'CAIRN_DB',
    description: 'SQLite store file. Empty: the per-user data directory (XDG_DATA_HOME/cairn/cairn.db on Linux).',
  },
  'cairn.daemon.path': {
    type: 'string',
    default: '',
    env: 'CAIRN_DAEMON',
    description: 'Path of the daemon entry script (bin/cairn.js). Empty: the copy bundled with the extension.',
  },
  'cairn.daemon.nodePath': {
    type: 'string',
    default: '',
    env: 'CAIRN_NODE',
    description: 'Node.js executable used to start the daemon. Empty: `node` on PATH.',
  },
  'cairn.scope.projectNamespace': {
    type: 'string',
    default: '',
    description: 'Namespace of this workspace. Empty: derived as project.<slug> from the git remote or the folder name.',
  },
  'cairn.scope.includeUser': {
    type: 'boolean',
    default: true,
    description: 'Always include the `user` namespace tree in searches and injection.',
  },
  'cairn.embeddings.model': {
    type: 'string',
    default: 'Xenova/all-MiniLM-L6-v2',
    env: 'CAIRN_MODEL',
    description:
      'Embedding model id (transformers.js, feature-extraction) or "builtin" for the built-in offline model (static, distilled from all-mpnet-base-v2).',
  },
  'cairn.embeddings.modelPath': {
    type: 'string',
    default: '',
    env: 'CAIRN_MODEL_PATH',
    description: 'Local folder holding models (<folder>/<model id>/...). Empty: the user cache directory.',
  },
  'cairn.embeddings.allowRemote': {
    type: 'boolean',
    default: true,
    env: 'CAIRN_ALLOW_REMOTE_MODELS',
    description: 'Allow downloading the configured model on first use. Off: local folders and the built-in model only.',
  },
  'cairn.hover.enabled': { type: 'boolean', default: true, description: 'Show memories anchored to code on hover.' },
  'cairn.hover.gutter': {
    type: 'boolean',
    default: true,
    description: 'Mark lines that memories are anchored to in the editor gutter (while the lines still hold the anchored code).',
  },
  'cairn.git.visibility': {
    type: 'boolean',
    default: true,
    env: 'CAIRN_GIT_VISIBILITY',
    description:
      'Git-aware memory: writes to the project namespace record the git branch and commit, and memories written on another git branch stay hidden until that branch is merged into HEAD.',
  },
  'cairn.git.baseBranch': {
    type: 'string',
    default: '',
    env: 'CAIRN_GIT_BASE',
    description:
      'The base git branch, whose memories are visible on every branch. Empty: the repository default branch (origin HEAD, else main, else master).',
  },
  'cairn.branches.followGit': {
    type: 'boolean',
    default: false,
    env: 'CAIRN_BRANCHES_FOLLOW_GIT',
    description:
      'A memory branch made in a git repository (an agent task with its own branch, `cairn branch create`) follows the git branch checked out: when that git branch is merged into the base, its memories are merged too.',
  },
  'cairn.injection.auto': {
    type: 'boolean',
    default: false,
    description: 'Inject memories into agent prompts automatically. Off: only on demand (tool calls, @cairn).',
  },
  'cairn.injection.k': { type: 'number', default: 8, minimum: 1, maximum: 50, description: 'Number of memories injected into a prompt.' },
  'cairn.injection.budgetChars': {
    type: 'number',
    default: 4000,
    minimum: 200,
    maximum: 100000,
    description: 'Character budget of an injected memory block.',
  },
  'cairn.injection.events': {
    type: 'number',
    default: 0,
    minimum: 0,
    maximum: 20,
    description:
      'Also inject up to this many recorded events (episodes) most relevant to the prompt, each with its neighbours, as a separate section within the same budget. 0: none. Events marked secret are never injected.',
  },
  'cairn.agents.allowSecrets': {
    type: 'boolean',
    default: false,
    env: 'CAIRN_AGENTS_ALLOW_SECRETS',
    description: 'Let agents see memories tagged `secret` (injection, MCP and language-model tools). Off: they never reach an agent.',
  },
  'cairn.store.synchronous': {
    type: 'string',
    default: 'normal',
    enum: ['normal', 'full'],
    env: 'CAIRN_STORE_SYNCHRONOUS',
    description:
      'Durability of each write. normal: a committed write survives the daemon crashing; the newest writes may be lost if the machine loses power. full: every write is flushed to disk before it returns (slower).',
  },
  'cairn.review.agentWrites': {
    type: 'boolean',
    default: true,
    env: 'CAIRN_REVIEW_AGENT_WRITES',
    description: 'Memories written by agents start as `proposed` and wait for review.',
  },
  'cairn.team.url': {
    type: 'string',
    default: '',
    env: 'CAIRN_TEAM_URL',
    description:
      'Team memory database: postgres://user@host:port/db (PostgreSQL with pgvector). The password comes from PGPASSWORD or ~/.pgpass and is never shown. Empty: no team memory.',
  },
  'cairn.team.roots': {
    type: 'string',
    default: 'team',
    env: 'CAIRN_TEAM_ROOTS',
    description: 'Namespace roots stored in the team database, comma separated (e.g. "team, project.shared"); everything else stays local.',
  },
  'cairn.episodes.capture': {
    type: 'boolean',
    default: false,
    env: 'CAIRN_EPISODES_CAPTURE',
    description:
      'Record agent sessions as episodes (docs/episodes.md): `cairn log` appends events, `cairn mcp` records its tool calls, and in the editor @cairn records its turns and the language-model tools their calls (the status bar shows a record mark). Off: nothing is captured.',
  },
} as const satisfies Record<string, SettingDef>;

export type SettingKey = keyof typeof Settings;

/** Environment variables that back no setting, with what reads them. */
export const Environment = {
  CAIRN_ACTOR: 'Actor the CLI records on its writes when --actor is not given (default "user").',
  CAIRN_SCOPE_ROOT: 'Namespace root of a `cairn mcp` session, as --root (default: derived from the workspace).',
  CAIRN_TASK: "Agent task of a `cairn mcp` session, as --task: with a burner branch, the session's memory reads and writes use it.",
  CAIRN_DISABLE_VEC: 'Boolean: open stores without sqlite-vec (vector search off); for diagnosis.',
  CAIRN_DAEMON_REEXEC:
    'Set by `cairn daemon` on the copy of itself it runs with the memory settings it was started without (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_, Node flags); that copy never runs another.',
  CAIRN_FRAME_HEADER_MS:
    "The daemon's time limit (ms, default 10000) for a connection to complete a frame's header section after its first byte.",
  CAIRN_FRAME_TIME_MS: "The daemon's time limit (ms, default 30000) for a connection to complete a whole frame after its first byte.",
  HF_ENDPOINT: 'Model hub to download embedding models from (default https://huggingface.co/).',
  HOME: 'Expands `~` in a model path.',
  XDG_DATA_HOME: 'Per-user data directory on Linux (the default store lives in $XDG_DATA_HOME/cairn).',
  XDG_CACHE_HOME: 'Per-user cache directory on Linux (downloaded models).',
  XDG_RUNTIME_DIR: 'Directory of the daemon sockets on Linux (else <tmpdir>/cairn-<uid>).',
  APPDATA: 'Per-user data directory on Windows.',
  LOCALAPPDATA: 'Per-user cache directory on Windows.',
  PATH: 'Where the extension looks for `node`.',
  PATHEXT: 'Executable file extensions on Windows, with PATH.',
  PGPASSWORD: 'Password of the team database (libpq convention); never logged or shown.',
  NO_COLOR: 'Any value: the CLI prints no colour (https://no-color.org).',
  FORCE_COLOR: 'The CLI prints colour even into a pipe (0 or false: never).',
  TERM: 'The CLI prints no colour on a `dumb` terminal.',
  PGPASSFILE: 'Password file of the team database (libpq convention, default ~/.pgpass; used only when private to its owner).',
} as const;

type SettingEnvName = { [K in SettingKey]: (typeof Settings)[K] extends { env: infer E extends string } ? E : never }[SettingKey];
/** Every environment variable Cairn reads. */
export type EnvName = SettingEnvName | keyof typeof Environment;
/** An environment to read from (process.env, or a child's environment being built). */
export type Env = Readonly<Record<string, string | undefined>>;

/** The process's environment, for code that hands it on (to a child process) or passes it to `readEnv`. */
export function processEnv(): NodeJS.ProcessEnv {
  return process.env;
}

/** The one reader of environment variables. An empty value counts as unset. */
export function readEnv(name: EnvName, env: Env = process.env): string | undefined {
  const v = env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** The one boolean parser: 1/true/yes/on and 0/false/no/off (any case); undefined when unset or anything else. */
export function parseBool(raw: string | undefined): boolean | undefined {
  const v = raw?.trim().toLowerCase();
  if (v === '1' || v === 'true' || v === 'yes' || v === 'on') return true;
  if (v === '0' || v === 'false' || v === 'no' || v === 'off') return false;
  return undefined;
}

/** A boolean environment variable, else `fallback` (unset, or a value parseBool does not know). */
export function envFlag(name: EnvName, fallback: boolean, env: Env = process.env): boolean {
  return parseBool(readEnv(name, env)) ?? fallback;
}
