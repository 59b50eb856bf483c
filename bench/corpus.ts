/**
 * A deterministic synthetic corpus that looks like what coding agents remember:
 * code notes with identifiers, preferences, decisions, procedures, across many
 * project namespaces plus the user tree. Same seed, same corpus.
 */
import type { UpsertParams } from '../daemon/src/protocol/types';

export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const verbs = [
  'get',
  'set',
  'load',
  'save',
  'parse',
  'render',
  'fetch',
  'build',
  'validate',
  'resolve',
  'merge',
  'flush',
  'retry',
  'cache',
  'index',
  'sync',
  'encode',
  'decode',
  'compress',
  'publish',
  'subscribe',
  'schedule',
  'cancel',
  'refresh',
  'rotate',
  'sign',
  'verify',
  'migrate',
  'seed',
  'export',
  'import',
  'transform',
  'normalize',
  'serialize',
  'hydrate',
  'prefetch',
  'throttle',
  'debounce',
  'dispatch',
  'reconcile',
];
const nouns = [
  'User',
  'Session',
  'Token',
  'Config',
  'Request',
  'Response',
  'Order',
  'Invoice',
  'Cart',
  'Schema',
  'Query',
  'Route',
  'Widget',
  'Payload',
  'Tenant',
  'Report',
  'Job',
  'Queue',
  'Account',
  'Payment',
  'Refund',
  'Shipment',
  'Product',
  'Catalog',
  'Coupon',
  'Webhook',
  'Event',
  'Metric',
  'Alert',
  'Dashboard',
  'Profile',
  'Avatar',
  'Thumbnail',
  'Upload',
  'Download',
  'Backup',
  'Snapshot',
  'Replica',
  'Shard',
  'Partition',
  'Cursor',
  'Batch',
  'Stream',
  'Channel',
  'Socket',
  'Lease',
  'Lock',
  'Quota',
  'Budget',
  'Subscription',
  'Plan',
  'Feature',
  'Flag',
  'Experiment',
  'Variant',
  'Locale',
  'Currency',
  'Timezone',
  'Calendar',
  'Reminder',
];
const techs = [
  'Postgres',
  'Redis',
  'SQLite',
  'Kafka',
  'esbuild',
  'webpack',
  'React',
  'Vue',
  'Express',
  'Fastify',
  'gRPC',
  'GraphQL',
  'Docker',
  'Terraform',
  'pytest',
  'vitest',
  'node:test',
  'Prisma',
  'zod',
  'OpenTelemetry',
  'RabbitMQ',
  'NATS',
  'MongoDB',
  'DynamoDB',
  'Cassandra',
  'ClickHouse',
  'Elasticsearch',
  'Meilisearch',
  'Svelte',
  'Angular',
  'Next.js',
  'Remix',
  'Vite',
  'Rollup',
  'Babel',
  'Jest',
  'Playwright',
  'Cypress',
  'Storybook',
  'Kubernetes',
  'Helm',
  'Nomad',
  'Consul',
  'Vault',
  'Nginx',
  'Envoy',
  'Traefik',
  'Prometheus',
  'Grafana',
  'Sentry',
  'Datadog',
  'S3',
  'MinIO',
  'Celery',
  'Sidekiq',
  'BullMQ',
  'Temporal',
  'Airflow',
  'dbt',
  'Spark',
  'Flink',
];
const dirs = [
  'src',
  'src/api',
  'src/db',
  'src/auth',
  'lib',
  'internal/queue',
  'cmd',
  'web/components',
  'scripts',
  'src/jobs',
  'pkg/billing',
  'services/search',
];
const fileNames = [
  'server',
  'pool',
  'routes',
  'cache',
  'main',
  'session',
  'cart',
  'deploy',
  'worker',
  'consumer',
  'client',
  'config',
  'schema',
  'handlers',
  'middleware',
  'retry',
];
const exts = ['ts', 'py', 'go', 'tsx', 'rs'];
const adjectives = [
  'flaky',
  'slow',
  'critical',
  'deprecated',
  'experimental',
  'legacy',
  'hot',
  'idempotent',
  'async',
  'batched',
  'stale',
  'noisy',
  'fragile',
  'chatty',
  'blocking',
  'lossy',
  'ordered',
  'sharded',
  'cached',
  'encrypted',
  'throttled',
  'retried',
  'leaky',
  'expensive',
  'cold',
  'bursty',
  'lazy',
  'eager',
  'sticky',
  'transient',
];
const prefs = [
  'tabs over spaces',
  'two-space indentation',
  'named exports',
  'small pure functions',
  'early returns',
  'descriptive commit messages',
  'dark theme',
  'vim keybindings',
  'strict TypeScript',
  'snake_case in Python',
  'squash merges',
  'conventional commits',
  'table-driven tests',
  'property-based tests',
  'explicit return types',
  'no default exports',
  'async/await over callbacks',
  'immutable data',
  'feature flags for risky changes',
  'short pull requests',
  'trunk-based development',
  'monorepos',
  'ripgrep over grep',
  'tmux',
  'zsh',
  'fish shell',
  'emacs',
  'JetBrains Mono',
  'light theme',
  'verbose logging in dev',
  'structured JSON logs',
  'Makefiles',
  'just over make',
  'docstrings on public APIs',
  'type hints everywhere',
  'Prettier defaults',
  'ESLint flat config',
  'pnpm',
  'yarn berry',
  'bun for scripts',
];

function pick<T>(r: () => number, xs: T[]): T {
  return xs[Math.floor(r() * xs.length)];
}
function ident(r: () => number): string {
  const v = pick(r, verbs),
    n = pick(r, nouns);
  const style = r();
  if (style < 0.5) return `${v}${n}${r() < 0.3 ? 'ById' : ''}`;
  if (style < 0.8) return `${v}_${n.toLowerCase()}${r() < 0.3 ? '_by_id' : ''}`;
  return `${n.toUpperCase()}_${v.toUpperCase()}_MAX`;
}

export const PROJECTS = 50;

export function memoryAt(i: number, seed = 42): UpsertParams {
  const r = rng(seed * 1_000_003 + i);
  const project = `project.p${Math.floor(r() * PROJECTS)}`;
  const kindRoll = r();
  const tech = pick(r, techs),
    tech2 = pick(r, techs),
    id1 = ident(r),
    id2 = ident(r),
    adj = pick(r, adjectives);
  const file = `${pick(r, dirs)}/${pick(r, fileNames)}.${pick(r, exts)}`;
  const n = Math.floor(r() * 20) + 1;
  if (kindRoll < 0.01) {
    return {
      namespace: `user.preferences`,
      key: `pref-${i}`,
      value: `The developer prefers ${pick(r, prefs)} and ${pick(r, prefs)} when working with ${tech}.`,
      kind: 'preference',
      tags: ['style'],
      importance: r(),
    };
  }
  if (kindRoll < 0.4) {
    return {
      namespace: project,
      key: `decision-${i}`,
      kind: 'decision',
      tags: [tech.toLowerCase(), 'architecture'],
      importance: r(),
      value: `We decided to use ${tech} instead of ${tech2} for the ${adj} ${pick(r, nouns).toLowerCase()} pipeline because ${id1} was too ${pick(r, adjectives)} under load; see ${file}.`,
    };
  }
  if (kindRoll < 0.8) {
    return {
      namespace: project,
      key: `note-${i}`,
      kind: 'fact',
      tags: ['code'],
      anchors: [{ path: file, startLine: n * 3, endLine: n * 3 + 5 }],
      value: `${id1}() in ${file} calls ${id2} with max_retries=${n}; it is ${adj} when ${tech} is unavailable, so wrap it in a circuit breaker.`,
    };
  }
  return {
    namespace: project,
    key: `howto-${i}`,
    kind: 'procedure',
    tags: ['ops'],
    value: `To ${pick(r, verbs)} the ${pick(r, nouns).toLowerCase()} service: run scripts/deploy.sh --env staging, check ${id1} metrics in ${tech}, then promote with ${id2}.`,
  };
}

/** Queries a developer or agent might send against this corpus. */
export function queryAt(i: number, seed = 7): { query: string; project: string } {
  const r = rng(seed * 7919 + i);
  const forms = [
    () => `${ident(r)} retries`,
    () => `why ${pick(r, techs)} instead of ${pick(r, techs)}`,
    () => `how to deploy ${pick(r, nouns).toLowerCase()} service`,
    () => `${pick(r, adjectives)} ${pick(r, nouns).toLowerCase()} pipeline`,
    () => `${pick(r, dirs)}/${pick(r, fileNames)}.${pick(r, exts)} circuit breaker`,
    () => `prefers ${pick(r, prefs)}`,
  ];
  return { query: pick(r, forms)(), project: `project.p${Math.floor(r() * PROJECTS)}` };
}
