/**
 * Every Cairn setting with its default, declared once. The VS Code extension's
 * `contributes.configuration` must declare exactly these keys with these
 * defaults (a test checks it); the daemon reads the same keys from flags and
 * CAIRN_* environment variables.
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
  'cairn.store.path': { type: 'string', default: '', env: 'CAIRN_DB', description: 'SQLite store file. Empty: the per-user data directory (XDG_DATA_HOME/cairn/cairn.db on Linux).' },
  'cairn.daemon.path': { type: 'string', default: '', env: 'CAIRN_DAEMON', description: 'Path of the daemon entry script (bin/cairn.js). Empty: the copy bundled with the extension.' },
  'cairn.daemon.nodePath': { type: 'string', default: '', env: 'CAIRN_NODE', description: 'Node.js executable used to start the daemon. Empty: `node` on PATH.' },
  'cairn.scope.projectNamespace': { type: 'string', default: '', description: 'Namespace of this workspace. Empty: derived as project.<slug> from the git remote or the folder name.' },
  'cairn.scope.includeUser': { type: 'boolean', default: true, description: 'Always include the `user` namespace tree in searches and injection.' },
  'cairn.embeddings.model': { type: 'string', default: 'Xenova/all-MiniLM-L6-v2', env: 'CAIRN_MODEL', description: 'Embedding model id (transformers.js, feature-extraction) or "builtin" for the offline GloVe model.' },
  'cairn.embeddings.modelPath': { type: 'string', default: '', env: 'CAIRN_MODEL_PATH', description: 'Local folder holding models (<folder>/<model id>/...). Empty: the user cache directory.' },
  'cairn.embeddings.allowRemote': { type: 'boolean', default: true, env: 'CAIRN_ALLOW_REMOTE_MODELS', description: 'Allow downloading the configured model on first use. Off: local folders and the built-in model only.' },
  'cairn.hover.enabled': { type: 'boolean', default: true, description: 'Show memories anchored to code on hover.' },
  'cairn.injection.auto': { type: 'boolean', default: false, env: 'CAIRN_INJECT_AUTO', description: 'Inject memories into agent prompts automatically. Off: only on demand (tool calls, @cairn).' },
  'cairn.injection.k': { type: 'number', default: 8, minimum: 1, maximum: 50, description: 'Number of memories injected into a prompt.' },
  'cairn.injection.budgetChars': { type: 'number', default: 4000, minimum: 200, maximum: 100000, description: 'Character budget of an injected memory block.' },
  'cairn.agents.allowSecrets': { type: 'boolean', default: false, env: 'CAIRN_AGENTS_ALLOW_SECRETS', description: 'Let agents see memories tagged `secret` (injection, MCP and language-model tools). Off: they never reach an agent.' },
  'cairn.review.agentWrites': { type: 'boolean', default: true, description: 'Memories written by agents start as `proposed` and wait for review.' },
} as const satisfies Record<string, SettingDef>;

export type SettingKey = keyof typeof Settings;
