// A small retrieval benchmark for choosing the built-in model's settings
// (vocabulary size, weighting) and for checking any embedding model by hand.
//
// 100 memories of the kind a coding agent keeps (conventions, bugs, decisions,
// environment facts) plus a few everyday notes, each with two queries:
//   tier 1 "paraphrase": mostly avoids the memory's own words (tests semantics);
//   tier 2 "keyword": how an agent would actually search, sharing a few often rare
//     technical terms (tests vocabulary coverage: a term missing from the
//     vocabulary contributes nothing).
// Each query should rank its own memory first among all 100 (ties count against).
// Scores: hit@1, recall@5 and MRR, separately for PAIRS (60, used to tune the built-in
// model) and HELDOUT (40, written afterwards).
//
// usage (any model, through the daemon's Embedder; needs tsx):
//   node --import tsx daemon/scripts/retrieval-eval.mjs [model id | builtin] [modelPath]
//   (remote loading off: a hub model must already be in the cache or modelPath)
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const PAIRS = [
  [
    'Run the test suite with `npm test -w daemon`; the integration tests need a built dist folder first.',
    'how do I execute the unit tests for the daemon package',
    'running integration tests needs dist build',
  ],
  [
    'The SQLite store uses WAL journal mode so readers never block the writer.',
    'database concurrency setting for parallel reads',
    'sqlite WAL mode',
  ],
  [
    'Never commit secrets: API keys live in .env.local which is gitignored.',
    'where should credentials and tokens be stored',
    'where are API keys kept',
  ],
  [
    'The CI pipeline on GitHub Actions caches node_modules keyed by the lockfile hash.',
    'continuous integration dependency caching',
    'GitHub Actions cache for node_modules',
  ],
  [
    'getUserById returns null instead of throwing when the user record does not exist.',
    'what happens when fetching a missing account by identifier',
    'getUserById null for missing user',
  ],
  [
    'We chose pnpm over yarn because of its strict dependency isolation and disk savings.',
    'why did we pick this package manager',
    'pnpm vs yarn decision',
  ],
  [
    'Memory leak: the file watcher adds a new listener every time the config reloads.',
    'process memory keeps growing after configuration changes',
    'file watcher listener leak',
  ],
  [
    'Use the logger module instead of console.log; log lines go to ~/.cache/cairn/daemon.log.',
    'where do diagnostic messages get written',
    'daemon log file location',
  ],
  [
    'The REST API paginates with an opaque cursor, not page numbers.',
    'how to fetch the next set of results from the endpoint',
    'REST API cursor pagination',
  ],
  [
    'Dates are stored as UTC ISO-8601 strings and converted to local time only in the UI.',
    'timezone handling for timestamps',
    'UTC timestamps in the UI',
  ],
  [
    'The Docker image is built on debian slim; alpine broke the native sqlite module.',
    'which base container image and why',
    'docker base image alpine sqlite problem',
  ],
  [
    'Flaky test: the websocket reconnect test fails when the machine is under heavy load; retry it.',
    'intermittent failure in socket reconnection spec',
    'websocket reconnect test flaky',
  ],
  [
    'Frontend uses React with Vite; the webview bundle must stay under 500 KB.',
    'size limit of the user interface javascript bundle',
    'webview bundle size limit vite',
  ],
  [
    'Password reset emails are sent through the SendGrid queue with a 15 minute expiry.',
    'users want to change a forgotten login credential',
    'password reset email expiry',
  ],
  [
    'Prefer composition over inheritance in the service layer; classes should be small.',
    'code style guideline for object design',
    'composition vs inheritance guideline',
  ],
  [
    'The embedding worker runs in a separate thread so the event loop never blocks.',
    'keep the main loop responsive during vector computation',
    'embedding worker thread event loop',
  ],
  [
    'Migrations are numbered sequentially and must be idempotent; never edit an applied migration.',
    'rules for changing the database schema',
    'idempotent migrations rule',
  ],
  [
    'The deploy script requires AWS credentials with the production role.',
    'permissions needed to release to the live environment',
    'AWS production deploy credentials',
  ],
  [
    'Rate limiting is 100 requests per minute per token; exceeding it returns HTTP 429.',
    'throttling policy for clients calling the server too often',
    'HTTP 429 rate limit',
  ],
  [
    'TypeScript strict mode is on; avoid any and prefer unknown with narrowing.',
    'compiler type checking strictness conventions',
    'typescript strict no any',
  ],
  [
    'The search ranking combines BM25 keyword scores with vector similarity.',
    'how results are ordered by relevance',
    'BM25 plus vector ranking',
  ],
  [
    'Windows paths break the socket name; use a named pipe on win32.',
    'interprocess communication on microsoft operating system',
    'windows named pipe socket',
  ],
  [
    'Large files over 10 MB are skipped by the indexer to save memory.',
    'maximum document size that gets processed',
    'indexer skips big files',
  ],
  [
    'The release branch is cut every second Tuesday; hotfixes are cherry-picked.',
    'schedule for shipping new versions',
    'release branch schedule hotfix',
  ],
  [
    'Authentication uses short-lived JWT access tokens and refresh tokens stored in httpOnly cookies.',
    'how login sessions are kept secure in the browser',
    'JWT refresh token cookies',
  ],
  [
    'Lint with eslint and format with prettier before opening a pull request.',
    'code formatting tools to run before review',
    'eslint prettier before PR',
  ],
  [
    'The cache invalidation bug was caused by comparing timestamps with second precision.',
    'stale data served because time resolution was too coarse',
    'cache invalidation timestamp precision bug',
  ],
  [
    'Backups of the database are taken nightly and kept for thirty days.',
    'how long do we retain snapshots of stored data',
    'nightly database backup retention',
  ],
  [
    'Our error codes follow JSON-RPC: -32602 means invalid params.',
    'what does the invalid parameters failure number mean',
    'JSON-RPC error -32602',
  ],
  [
    'The python scripts need version 3.11 or newer because they use tomllib.',
    'interpreter version requirement for the helper tools',
    'python 3.11 tomllib',
  ],
  [
    'The staging server runs on port 8080 behind an nginx reverse proxy.',
    'web proxy configuration of the test environment',
    'nginx staging port 8080',
  ],
  [
    'Profiling showed JSON serialization dominates request latency; switched to a streaming encoder.',
    'performance bottleneck when responding to requests',
    'slow JSON serialization latency',
  ],
  [
    'Feature flags are read from LaunchDarkly at startup and cached for five minutes.',
    'toggling experimental functionality at runtime',
    'LaunchDarkly feature flags cache',
  ],
  [
    'Keyboard shortcut ctrl+shift+m opens the memory panel in the editor.',
    'key binding to show the sidebar view',
    'shortcut for memory panel',
  ],
  [
    'The mobile app crashes on Android 12 when camera permission is denied.',
    'phone application failure when access to photos is refused',
    'android camera permission crash',
  ],
  [
    'Accessibility: every button needs an aria-label and a visible focus outline.',
    'making the interface usable with screen readers',
    'aria-label buttons accessibility',
  ],
  [
    'Translations live in locales/*.json; German strings are often too long for buttons.',
    'internationalization text files and layout problems',
    'german translations too long',
  ],
  [
    'The payment webhook must verify the Stripe signature before trusting the event.',
    'validating callbacks from the billing provider',
    'stripe webhook signature verification',
  ],
  [
    'Kubernetes pods restart when the liveness probe times out during startup.',
    'containers keep getting killed by the health check',
    'kubernetes liveness probe restarts',
  ],
  [
    'Image thumbnails are generated asynchronously by a background job queue.',
    'creating preview pictures without blocking uploads',
    'thumbnail generation background queue',
  ],
  ['Use UUID v7 for primary keys so ids sort by creation time.', 'identifier format for table rows', 'UUID v7 primary keys'],
  [
    'The GraphQL schema is generated from the TypeScript types; do not edit schema.graphql by hand.',
    'generated query language definitions file',
    'graphql schema generated from types',
  ],
  [
    'The regex for email validation rejected plus addresses; replaced it with a simpler check.',
    'valid mail addresses with a plus sign were refused',
    'email regex plus address',
  ],
  [
    'Tests must not hit the network; mock HTTP calls with nock.',
    'stubbing outgoing web requests in unit tests',
    'mock HTTP in tests with nock',
  ],
  [
    'Decided to keep the monorepo with npm workspaces instead of splitting repositories.',
    'repository layout decision for multiple packages',
    'monorepo npm workspaces decision',
  ],
  [
    'The CSV export escapes quotes and uses CRLF line endings for Excel compatibility.',
    'spreadsheet download formatting details',
    'CSV export CRLF excel',
  ],
  [
    'Search queries are debounced by 300 milliseconds in the text box.',
    'delay before sending what the user types',
    'search input debounce',
  ],
  ['The cron job that cleans temporary uploads runs at 3am.', 'scheduled task deleting old files', 'cron cleanup temporary uploads'],
  [
    'Encryption at rest uses AES-256 with keys rotated every 90 days.',
    'how stored data is protected cryptographically',
    'AES key rotation',
  ],
  ['The onboarding tutorial is shown only once per account.', 'first-time user introduction walkthrough', 'onboarding tutorial once'],
  ['Bought flour, eggs and butter for the weekend baking.', 'groceries for making a cake', 'baking ingredients'],
  ['Flight to Rome departs Friday morning, hotel booked near the station.', 'travel plans for italy', 'rome flight friday'],
  ['The dog needs its vaccination appointment at the vet next month.', 'veterinary shots for my puppy', 'dog vaccination vet'],
  ['Quarterly revenue grew while operating costs fell.', 'company earnings and expenses this quarter', 'quarterly revenue costs'],
  ['The sqlite database index uses a btree for fast lookups.', 'data structure behind table indexes', 'sqlite btree index'],
  [
    'Refactored parseConfigFile to return a Result instead of throwing exceptions.',
    'configuration parsing error handling change',
    'parseConfigFile Result refactor',
  ],
  [
    'The HTTP client retries idempotent requests three times with exponential backoff.',
    'what happens when a network call fails temporarily',
    'http retry exponential backoff',
  ],
  [
    'File names are compared after NFC unicode normalization on macOS.',
    'filename comparison problems with accented characters on apple computers',
    'NFC normalization filenames macOS',
  ],
  [
    'The daemon writes its pid and socket path to cairn.db.daemon.json.',
    'how clients discover the running background process',
    'daemon pid socket json file',
  ],
  [
    'Async functions in the watcher must catch errors or the process exits on unhandled rejection.',
    'crash caused by promise errors nobody handled',
    'unhandled promise rejection watcher crash',
  ],
];

// Written after the vocabulary and tech-terms.mjs were settled, to check that the built-in
// model's settings generalize beyond PAIRS (which guided them).
export const HELDOUT = [
  [
    'Switched the HTTP server from Express to Fastify for lower overhead per request.',
    'replacing the web framework to reduce latency',
    'express to fastify migration',
  ],
  [
    'The nightly build publishes a Docker image tagged with the commit sha to the registry.',
    'automatic container releases every night',
    'nightly docker image tag',
  ],
  [
    'Use structuredClone instead of JSON.parse(JSON.stringify(x)) to deep copy objects.',
    'how to duplicate nested data properly',
    'deep copy structuredClone',
  ],
  [
    'The mutex around the token refresh prevents two requests from refreshing at once.',
    'avoid concurrent renewal of credentials',
    'token refresh mutex',
  ],
  [
    'Our Redis instance evicts keys with an LRU policy once it reaches 2 GB.',
    'what happens when the in-memory store is full',
    'redis eviction policy',
  ],
  ['The linter forbids default exports; always use named exports.', 'module export style rule', 'no default exports lint rule'],
  [
    'Coverage must stay above 80 percent or the pull request check fails.',
    'minimum amount of code exercised by tests',
    'coverage threshold PR check',
  ],
  [
    'The PDF renderer runs in a sandboxed subprocess because it crashed the server before.',
    'isolating the document converter for stability',
    'pdf renderer subprocess sandbox',
  ],
  [
    'Environment variables are validated with zod at startup; missing ones abort the boot.',
    'checking required settings when the program launches',
    'validate env vars zod startup',
  ],
  [
    'The onboarding email is delayed by one hour so new users are not flooded.',
    'timing of the welcome message for new signups',
    'welcome email delay',
  ],
  ['We store money as integer cents, never floating point.', 'representing currency amounts safely', 'money integer cents'],
  [
    'The staging database is refreshed from an anonymized production dump every Sunday.',
    'copying real data into the test environment weekly',
    'staging db refresh anonymized dump',
  ],
  [
    'Prefer async iterators over event emitters for streaming results.',
    'pattern for producing results incrementally',
    'async iterator streaming',
  ],
  ['Log messages must not contain personal data such as emails or phone numbers.', 'privacy rules for diagnostic output', 'no PII in logs'],
  [
    'The search index is rebuilt from scratch when the schema version changes.',
    'when do we regenerate the lookup structures completely',
    'reindex on schema version change',
  ],
  [
    'Git hooks run the formatter on staged files through husky and lint-staged.',
    'automatic code cleanup before each commit',
    'husky lint-staged pre-commit',
  ],
  [
    'Timeouts for outbound calls default to five seconds; the payment API gets thirty.',
    'how long we wait for external services to answer',
    'outbound request timeout defaults',
  ],
  [
    'The map view uses vector tiles served from our own tile server.',
    'where the geographic display gets its data',
    'vector tiles map server',
  ],
  [
    'Each microservice owns its database; no cross-service joins.',
    'data ownership between backend components',
    'database per microservice',
  ],
  [
    'The retry queue uses a dead-letter topic after five failed attempts.',
    'where messages go when processing keeps failing',
    'dead letter queue after retries',
  ],
  [
    'Charts are rendered with D3 on a canvas because SVG was too slow for 50k points.',
    'drawing large graphs quickly in the browser',
    'd3 canvas instead of svg',
  ],
  ['Session cookies are marked SameSite=Lax and Secure.', 'browser cookie attributes for logins', 'samesite secure cookies'],
  [
    'The CLI prints machine-readable output with --json for scripting.',
    'structured output mode of the command line tool',
    'cli json output flag',
  ],
  ['Only the ops team may change the DNS records; open a ticket.', 'who controls domain name configuration', 'dns records change ticket'],
  [
    'The audio transcoder needs ffmpeg installed on the host.',
    'system dependency for converting sound files',
    'ffmpeg required transcoding',
  ],
  [
    'Hot module reload breaks when two copies of React are bundled.',
    'live code refresh stops working because of duplicate libraries',
    'HMR duplicate react',
  ],
  [
    'The admin dashboard is only reachable over the VPN.',
    'network access restrictions for the management interface',
    'admin dashboard vpn only',
  ],
  [
    'Invoices are generated on the first day of each month at midnight UTC.',
    'when monthly bills get created',
    'monthly invoice generation',
  ],
  [
    'The websocket server sends a heartbeat ping every 30 seconds to detect dead clients.',
    'keeping persistent connections alive',
    'websocket heartbeat ping',
  ],
  ['Uploaded images are scanned for malware before they are stored.', 'security check on files users submit', 'malware scan uploads'],
  [
    'Feature branches are squashed when merged to keep history linear.',
    'how commits are combined when integrating changes',
    'squash merge feature branches',
  ],
  [
    'The recommendation model is retrained weekly on the latest click data.',
    'how often the suggestion algorithm learns from user behavior',
    'weekly retraining recommendation model',
  ],
  [
    'We pinned Node 20 in .nvmrc; Node 22 broke a native addon.',
    'which javascript runtime version to use locally',
    'nvmrc node version pin',
  ],
  [
    'Screenshots in the docs are regenerated with Playwright on every release.',
    'keeping documentation pictures up to date',
    'playwright docs screenshots',
  ],
  ['The cat knocked the plant off the windowsill again.', 'pet broke a flower pot', 'cat plant windowsill'],
  ['Remember to renew the car insurance before the end of March.', 'vehicle policy renewal deadline', 'car insurance renewal'],
  ['The garden needs watering twice a week in summer.', 'how often to water plants when it is hot', 'garden watering schedule'],
  ['Dinner with the team is booked for Thursday at the Italian place.', 'restaurant reservation with colleagues', 'team dinner thursday'],
  [
    'Memory usage spikes when the importer loads the whole CSV file at once; stream it instead.',
    'reading a big spreadsheet without running out of RAM',
    'csv import memory streaming',
  ],
  [
    'Error messages shown to users must say what to do next, not just what failed.',
    'guidelines for writing helpful failure text',
    'actionable error messages',
  ],
];

/**
 * Score an embedding function: every query of `set` is ranked against all 100 memories
 * (PAIRS and HELDOUT together).
 * @param {(texts: string[]) => Promise<ArrayLike<number>[]> | ArrayLike<number>[]} embed unit-length vectors
 * @param {1 | 2} tier 1: paraphrased queries (semantics), 2: keyword queries (vocabulary coverage)
 * @param {'dev' | 'heldout'} set
 * @returns {Promise<{ n: number, hit1: number, recall5: number, mrr: number, misses: string[] }>}
 */
export async function evaluate(embed, tier = 1, set = 'dev') {
  const all = [...PAIRS, ...HELDOUT];
  const offset = set === 'dev' ? 0 : PAIRS.length;
  const mine = set === 'dev' ? PAIRS : HELDOUT;
  const notes = await embed(all.map((p) => p[0]));
  const queries = await embed(mine.map((p) => p[tier]));
  const dot = (a, b) => {
    let s = 0;
    for (let i = 0; i < a.length; i++) s += a[i] * b[i];
    return s;
  };
  let hit1 = 0,
    recall5 = 0,
    mrr = 0;
  const misses = [];
  queries.forEach((q, i) => {
    const own = dot(q, notes[offset + i]);
    let rank = 0;
    notes.forEach((n, j) => {
      if (j !== offset + i && dot(q, n) >= own) rank++;
    });
    if (rank === 0) hit1++;
    else misses.push(`${mine[i][tier]} (rank ${rank + 1})`);
    if (rank < 5) recall5++;
    mrr += 1 / (rank + 1);
  });
  const n = mine.length;
  return { n, hit1, recall5, mrr: mrr / n, misses };
}

/** All four scores. */
export async function evaluateAll(embed) {
  return {
    dev: { paraphrase: await evaluate(embed, 1, 'dev'), keyword: await evaluate(embed, 2, 'dev') },
    heldout: { paraphrase: await evaluate(embed, 1, 'heldout'), keyword: await evaluate(embed, 2, 'heldout') },
  };
}

export function formatScore(s) {
  return `hit@1 ${s.hit1}/${s.n} recall@5 ${s.recall5}/${s.n} MRR ${s.mrr.toFixed(3)}`;
}

/** One line: MRR of the four (set, tier) combinations. */
export function formatAll(r) {
  const m = (s) => s.mrr.toFixed(3);
  return `MRR dev P ${m(r.dev.paraphrase)} K ${m(r.dev.keyword)} | held-out P ${m(r.heldout.paraphrase)} K ${m(r.heldout.keyword)}`;
}

// CLI: evaluate a model through the production Embedder (run with `node --import tsx`).
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const mod = await import(pathToFileURL(path.join(here, '..', 'src', 'embed', 'index.ts')).href);
  const { Embedder } = mod.default ?? mod;
  const [model = 'builtin', modelPath] = process.argv.slice(2);
  const e = await Embedder.start({ model, modelPath, allowRemote: false, log: (m) => console.error(m) });
  try {
    const r = await evaluateAll((t) => e.embed(t));
    console.log(`${e.info.model} (${e.info.dimension}d, pooling ${e.info.pooling})`);
    for (const set of /** @type {const} */ (['dev', 'heldout'])) {
      for (const tier of /** @type {const} */ (['paraphrase', 'keyword'])) {
        console.log(`  ${set.padEnd(7)} ${tier.padEnd(10)} ${formatScore(r[set][tier])}`);
        if (process.env.VERBOSE) for (const m of r[set][tier].misses) console.log('    miss:', m);
      }
    }
  } finally {
    await e.close();
  }
}
