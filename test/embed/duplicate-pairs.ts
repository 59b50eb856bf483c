/**
 * Labelled pairs of memories for choosing the possible-duplicate threshold per model
 * (bench/duplicates.ts chooses on SELECTION, confirms on HELD_OUT; test/embed/duplicates.test.ts
 * checks the shipped thresholds on both). Written for this purpose, in the style of what coding
 * agents save: a key, a one- or two-sentence value.
 *
 * A duplicate: the second memory says the same fact or decision as the first (reworded, other key,
 * sometimes a short unrelated key such as `note` or `copy`): the agent should have updated the first.
 * Not a duplicate: a different fact, often on the same topic and with shared words (hard negatives),
 * or something unrelated.
 */
export interface Memo {
  key: string;
  value: string;
  tags?: string[];
}
export interface Pair {
  a: Memo;
  b: Memo;
  duplicate: boolean;
}

const m = (key: string, value: string, tags?: string[]): Memo => ({ key, value, ...(tags ? { tags } : {}) });
const dup = (a: Memo, b: Memo): Pair => ({ a, b, duplicate: true });
const diff = (a: Memo, b: Memo): Pair => ({ a, b, duplicate: false });

export const SELECTION: Pair[] = [
  // duplicates
  dup(
    m('staging-refresh', 'The staging database is refreshed from production every Sunday night'),
    m('orig', 'Every Sunday night the staging database is refreshed from production'),
  ),
  dup(
    m('test-runner', 'Unit tests run with node:test through tsx'),
    m('how-to-test', 'We run the unit tests with node:test, loaded through tsx'),
  ),
  dup(m('indent', 'Indent TypeScript with two spaces'), m('style.indent', 'TypeScript files use two-space indentation')),
  dup(
    m('deploy-day', 'Production deploys go out every Tuesday after the release review'),
    m('release-schedule', 'We deploy to production on Tuesdays, once the release review is done'),
  ),
  dup(
    m('session-store', 'User sessions are kept in Redis with a 30 minute expiry'),
    m('copy', 'Sessions live in Redis and expire after 30 minutes'),
  ),
  dup(
    m('db-driver', 'Use better-sqlite3, not node-sqlite3, for the store'),
    m('sqlite-lib', 'The store uses better-sqlite3 instead of node-sqlite3'),
  ),
  dup(
    m('lint-before-commit', 'Run npm run lint before every commit'),
    m('precommit', 'Always run the linter (npm run lint) before committing'),
  ),
  dup(
    m('api-errors', 'API errors are returned as JSON with a code and a message field'),
    m('error-format', 'The API answers errors with a JSON body holding code and message'),
  ),
  dup(
    m('no-default-exports', 'Do not use default exports; use named exports everywhere'),
    m('exports', 'Prefer named exports; default exports are not allowed'),
  ),
  dup(m('node-version', 'The project requires Node 20 or newer'), m('runtime', 'Node.js 20+ is required to build and run the project')),
  dup(
    m('flaky-e2e', 'The e2e login test is flaky on CI because the editor starts slowly'),
    m('note', 'Login e2e test fails intermittently in CI: the editor is slow to start'),
  ),
  dup(
    m('migrations', 'Database migrations live in daemon/src/store/migrations and run at startup'),
    m('schema-migrations', 'Schema migrations are in daemon/src/store/migrations; they run when the daemon starts'),
  ),
  dup(m('cache-ttl', 'The HTTP cache keeps responses for 5 minutes'), m('http-cache', 'Responses stay in the HTTP cache for five minutes')),
  dup(
    m('getUserById', 'getUserById returns null for a missing user instead of throwing'),
    m('user-lookup', 'get user by id gives null when the user does not exist; it does not throw'),
  ),
  dup(
    m('log-level', 'Set LOG_LEVEL=debug to see the daemon request log'),
    m('debug-logging', 'The daemon logs every request when LOG_LEVEL is debug'),
  ),
  dup(
    m('branch-naming', 'Feature branches are named feat/<ticket>-<short-name>'),
    m('branches', 'Name feature branches feat/<ticket>-<short-name>'),
  ),
  dup(
    m('timeouts', 'Outgoing HTTP requests time out after 10 seconds and retry twice'),
    m('http-retry', 'HTTP calls have a 10 s timeout and are retried two times'),
  ),
  dup(m('date-lib', 'Use date-fns for date handling, not moment'), m('dates', 'We chose date-fns over moment.js for dates')),
  dup(
    m('ci-cache', 'CI caches node_modules keyed on package-lock.json'),
    m('x', 'node_modules is cached in CI, with package-lock.json as the cache key'),
  ),
  dup(
    m('pr-review', 'Every pull request needs one approving review before merge'),
    m('merge-rule', 'Pull requests can be merged only after one approval'),
  ),
  dup(
    m('secrets', 'Secrets come from the environment, never from files in the repository'),
    m('config-secrets', 'Never commit secrets; read them from environment variables'),
  ),
  dup(m('port', 'The dev server listens on port 8111'), m('dev-server-port', 'Dev server port is 8111')),
  dup(
    m('embedding-worker', 'Embeddings are computed in a worker thread so the event loop never blocks'),
    m('worker', 'The embedding model runs in a worker thread to keep the event loop free'),
  ),
  dup(
    m('socket-path', 'The daemon socket is at $XDG_RUNTIME_DIR/cairn/daemon.sock'),
    m('daemon-socket', 'Daemon listens on a Unix socket under XDG_RUNTIME_DIR: cairn/daemon.sock'),
  ),
  dup(m('max-line', 'Keep lines under 140 characters'), m('line-length', 'Maximum line length is 140 characters')),
  dup(m('user.editor', 'The user prefers vim keybindings in the editor'), m('prefs', 'User likes vim key bindings when editing')),
  dup(
    m('retry-policy', 'Failed jobs are retried three times with exponential backoff'),
    m('jobs', 'A failing job is retried up to 3 times, backing off exponentially'),
  ),
  dup(
    m('css', 'Styles use CSS modules, no global stylesheets'),
    m('styling', 'We style components with CSS modules; global CSS is avoided'),
  ),
  dup(m('timezone', 'All timestamps are stored in UTC'), m('utc', 'Store every timestamp in UTC')),
  dup(
    m('fts', 'Full-text search uses SQLite FTS5 with the porter tokenizer'),
    m('search-fts', 'The full-text index is FTS5 with porter stemming'),
  ),
  // not duplicates
  diff(
    m('staging-refresh', 'The staging database is refreshed from production every Sunday night'),
    m('other', 'Frontend tests run in headless Chromium'),
  ),
  diff(m('test-runner', 'Unit tests run with node:test through tsx'), m('e2e-runner', 'End-to-end tests run in code-server with mocha')),
  diff(m('indent', 'Indent TypeScript with two spaces'), m('python-indent', 'Python scripts use four spaces and black formatting')),
  diff(
    m('deploy-day', 'Production deploys go out every Tuesday after the release review'),
    m('rollback', 'A bad deploy is rolled back with the previous container image tag'),
  ),
  diff(
    m('session-store', 'User sessions are kept in Redis with a 30 minute expiry'),
    m('rate-limit', 'Rate limits are counted in Redis per API key'),
  ),
  diff(
    m('db-driver', 'Use better-sqlite3, not node-sqlite3, for the store'),
    m('pg-driver', 'The team store talks to PostgreSQL through the pg package'),
  ),
  diff(m('lint-before-commit', 'Run npm run lint before every commit'), m('format', 'Prettier formats the whole tree; run npm run format')),
  diff(
    m('api-errors', 'API errors are returned as JSON with a code and a message field'),
    m('api-versioning', 'The API version is part of the URL path, for example /v2/users'),
  ),
  diff(
    m('no-default-exports', 'Do not use default exports; use named exports everywhere'),
    m('barrel-files', 'Each folder has an index.ts that re-exports its public API'),
  ),
  diff(m('node-version', 'The project requires Node 20 or newer'), m('python-version', 'The conversion scripts need Python 3.11')),
  diff(
    m('flaky-e2e', 'The e2e login test is flaky on CI because the editor starts slowly'),
    m('slow-build', 'The extension build is slow because esbuild bundles the webview twice'),
  ),
  diff(
    m('migrations', 'Database migrations live in daemon/src/store/migrations and run at startup'),
    m('backups', 'The store is backed up with the SQLite online backup API every hour'),
  ),
  diff(m('cache-ttl', 'The HTTP cache keeps responses for 5 minutes'), m('dns-cache', 'DNS lookups are cached by the OS resolver')),
  diff(
    m('getUserById', 'getUserById returns null for a missing user instead of throwing'),
    m('deleteUser', 'deleteUser soft-deletes the row and keeps it for 30 days'),
  ),
  diff(
    m('log-level', 'Set LOG_LEVEL=debug to see the daemon request log'),
    m('log-rotation', 'Daemon logs rotate daily and keep seven files'),
  ),
  diff(
    m('branch-naming', 'Feature branches are named feat/<ticket>-<short-name>'),
    m('commit-style', 'Commit messages say why, in the imperative mood'),
  ),
  diff(
    m('timeouts', 'Outgoing HTTP requests time out after 10 seconds and retry twice'),
    m('db-timeout', 'SQLite busy timeout is 5 seconds'),
  ),
  diff(m('date-lib', 'Use date-fns for date handling, not moment'), m('money', 'Amounts of money are integers in cents, never floats')),
  diff(m('ci-cache', 'CI caches node_modules keyed on package-lock.json'), m('ci-matrix', 'CI runs on Linux only, Node 20 and 22')),
  diff(
    m('pr-review', 'Every pull request needs one approving review before merge'),
    m('issue-labels', 'Bugs are labelled bug and triaged on Mondays'),
  ),
  diff(
    m('secrets', 'Secrets come from the environment, never from files in the repository'),
    m('env-example', 'The .env.example file lists every variable the app reads'),
  ),
  diff(m('port', 'The dev server listens on port 8111'), m('metrics-port', 'Prometheus scrapes metrics on port 9100')),
  diff(
    m('embedding-worker', 'Embeddings are computed in a worker thread so the event loop never blocks'),
    m('fts-inline', 'Full-text indexing happens inside the write transaction'),
  ),
  diff(
    m('socket-path', 'The daemon socket is at $XDG_RUNTIME_DIR/cairn/daemon.sock'),
    m('db-path', 'The database file is under XDG_DATA_HOME/cairn/cairn.db'),
  ),
  diff(m('max-line', 'Keep lines under 140 characters'), m('max-file', 'Split files longer than 400 lines')),
  diff(
    m('user.editor', 'The user prefers vim keybindings in the editor'),
    m('user.theme', 'The user works with a dark theme and large fonts'),
  ),
  diff(
    m('retry-policy', 'Failed jobs are retried three times with exponential backoff'),
    m('job-queue', 'Background jobs are queued in a SQLite table polled every second'),
  ),
  diff(m('css', 'Styles use CSS modules, no global stylesheets'), m('icons', 'Icons come from the codicons font')),
  diff(m('timezone', 'All timestamps are stored in UTC'), m('ids', 'Memory ids are ULIDs, sortable by creation time')),
  diff(
    m('fts', 'Full-text search uses SQLite FTS5 with the porter tokenizer'),
    m('vector-search', 'Vector search scores int8 vectors after a SimHash prefilter'),
  ),
];

export const HELD_OUT: Pair[] = [
  // duplicates
  dup(
    m('build-cmd', 'Build everything with npm run build from the repository root'),
    m('building', 'From the repo root, npm run build builds all packages'),
  ),
  dup(
    m('auth', 'Access tokens are JWTs signed with RS256 and expire after one hour'),
    m('tmp', 'JWT access tokens use RS256 signatures and last an hour'),
  ),
  dup(
    m('pagination', 'List endpoints paginate with a cursor, never with offsets'),
    m('cursor-paging', 'Use cursor-based pagination for list endpoints instead of offset'),
  ),
  dup(
    m('feature-flags', 'Feature flags are read from LaunchDarkly at startup'),
    m('flags', 'We load feature flags from LaunchDarkly when the service starts'),
  ),
  dup(
    m('image-uploads', 'Uploaded images are resized to 1024 pixels wide before storage'),
    m('uploads', 'Images get scaled down to a width of 1024 px before they are stored'),
  ),
  dup(
    m('monorepo', 'The repository is an npm workspaces monorepo with daemon, extension and webview'),
    m('layout', 'npm workspaces: daemon, extension and webview packages in one repo'),
  ),
  dup(
    m('no-any', 'Avoid any in TypeScript; use unknown and narrow it'),
    m('ts-any', 'Do not write any; prefer unknown plus type narrowing'),
  ),
  dup(
    m('queue-size', 'The indexer embeds at most 512 memories per batch'),
    m('indexer-batch', 'Indexer batches are capped at 512 memories'),
  ),
  dup(m('user.lang', 'The user wants answers in British English'), m('language', 'Reply in British English, as the user asked')),
  dup(
    m('error-codes', 'Errors use a closed set of typed codes defined in protocol/errors.ts'),
    m('codes', 'Every error has a typed code from the closed list in protocol/errors.ts'),
  ),
  dup(
    m('parseConfigFile', 'parseConfigFile throws InvalidParams on unknown keys'),
    m('config-parse', 'parse config file rejects unknown keys with an InvalidParams error'),
  ),
  dup(m('docker-base', 'Containers build from node:20-slim'), m('dockerfile', 'Our Docker images are based on node:20-slim')),
  dup(
    m('review-bot', 'The review bot comments on pull requests that change the protocol'),
    m('n1', 'Pull requests touching the protocol get an automatic comment from the review bot'),
  ),
  dup(
    m('wal', 'SQLite runs in WAL mode with synchronous=NORMAL'),
    m('sqlite-settings', 'journal_mode is WAL and synchronous is NORMAL for the SQLite store'),
  ),
  dup(
    m('hover', 'Hovers show the best matching memory for the symbol under the cursor'),
    m('lsp-hover', 'The hover for a symbol shows the memory that matches it best'),
  ),
  dup(m('offline', 'The built-in model works fully offline'), m('no-network', 'Without a network the built-in offline model still works')),
  dup(
    m('deps', 'New dependencies need a note in the pull request saying why'),
    m('dependencies', 'Explain in the PR why any new dependency is added'),
  ),
  dup(
    m('budget', 'Injected context is limited to 2000 tokens per prompt'),
    m('injection-budget', 'The prompt injection budget is 2000 tokens'),
  ),
  // not duplicates
  diff(
    m('build-cmd', 'Build everything with npm run build from the repository root'),
    m('clean', 'npm run clean removes dist and out folders'),
  ),
  diff(
    m('auth', 'Access tokens are JWTs signed with RS256 and expire after one hour'),
    m('refresh-tokens', 'Refresh tokens are opaque, stored hashed, and last 30 days'),
  ),
  diff(
    m('pagination', 'List endpoints paginate with a cursor, never with offsets'),
    m('sorting', 'List endpoints sort by creation time, newest first'),
  ),
  diff(
    m('feature-flags', 'Feature flags are read from LaunchDarkly at startup'),
    m('config-reload', 'Config changes are picked up without restarting'),
  ),
  diff(
    m('image-uploads', 'Uploaded images are resized to 1024 pixels wide before storage'),
    m('upload-limit', 'Uploads larger than 10 MB are refused with 413'),
  ),
  diff(
    m('monorepo', 'The repository is an npm workspaces monorepo with daemon, extension and webview'),
    m('release', 'Releases are tagged vX.Y.Z and published by CI'),
  ),
  diff(
    m('no-any', 'Avoid any in TypeScript; use unknown and narrow it'),
    m('strict', 'tsconfig has strict and noUncheckedIndexedAccess on'),
  ),
  diff(m('queue-size', 'The indexer embeds at most 512 memories per batch'), m('search-limit', 'Search returns at most 50 hits per call')),
  diff(m('user.lang', 'The user wants answers in British English'), m('user.tz', 'The user is in Berlin, UTC+1')),
  diff(
    m('error-codes', 'Errors use a closed set of typed codes defined in protocol/errors.ts'),
    m('methods', 'Every JSON-RPC method is declared once in protocol/methods.ts'),
  ),
  diff(
    m('parseConfigFile', 'parseConfigFile throws InvalidParams on unknown keys'),
    m('loadPlugins', 'loadPlugins skips plugins whose manifest is invalid'),
  ),
  diff(m('docker-base', 'Containers build from node:20-slim'), m('k8s', 'Services run on Kubernetes with two replicas each')),
  diff(
    m('review-bot', 'The review bot comments on pull requests that change the protocol'),
    m('stale-bot', 'Issues without activity for 60 days are closed'),
  ),
  diff(
    m('wal', 'SQLite runs in WAL mode with synchronous=NORMAL'),
    m('vacuum', 'The store is vacuumed when a third of its pages are free'),
  ),
  diff(
    m('hover', 'Hovers show the best matching memory for the symbol under the cursor'),
    m('codelens', 'Code lenses count the memories that mention a function'),
  ),
  diff(m('offline', 'The built-in model works fully offline'), m('download', 'Transformer models are downloaded once into the user cache')),
  diff(
    m('deps', 'New dependencies need a note in the pull request saying why'),
    m('licenses', 'Only MIT, Apache-2.0 and BSD licensed dependencies are allowed'),
  ),
  diff(
    m('budget', 'Injected context is limited to 2000 tokens per prompt'),
    m('ranking', 'Hybrid search fuses full-text and vector ranks with RRF'),
  ),
];
