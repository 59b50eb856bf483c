/**
 * What a new vector table's signatures are centred on (quantize.ts signatureInput): the mean of the model's own
 * embeddings of a fixed list of generic developer notes, unit length each. Nothing of the store's data goes in, so
 * a new store's first memory already gets the signature every later one is compared with, and the centre is the same
 * for every store and machine that runs the model (it is kept with the table, vec_models.centre, so a store keeps the
 * one its signatures were computed with). Measured against the store's own mean on the side-by-side corpus: 217
 * against 255 bits of entropy, and 0.72–0.73 against 0.74–0.75 of the exact top 10 among 128 Hamming candidates
 * (0.54–0.56 with plain signatures; bench/README.md "The SimHash's bits").
 */

/** Generic notes of the kind developers keep (no topic of the benchmark corpora): the centre's sample. */
export const CENTRE_TEXTS: readonly string[] = [
  'The build fails on Node 18 because the lockfile was written by npm 10; regenerate it with the pinned version.',
  'Use pnpm workspaces for the monorepo; never run npm install inside a package folder.',
  'The API returns 429 when more than 100 requests per minute come from one token.',
  'Database migrations run at deploy time; roll back with the down script in migrations/.',
  'Prefer composition over inheritance in the UI components.',
  'The flaky test in checkout.spec waits for the network; mock the payment client instead.',
  'Logs go to stdout in JSON; the collector adds the host and service name.',
  'Release notes are written in CHANGELOG.md under the Unreleased heading.',
  'The auth service signs tokens with RS256 and rotates keys every 30 days.',
  'Do not commit secrets; the pre-commit hook scans for keys and tokens.',
  'Our code style: two-space indentation, single quotes, trailing commas.',
  'The cache layer is Redis with a five minute TTL for user profiles.',
  'CI runs lint, type checks, unit tests and then the end-to-end suite.',
  'The mobile app targets iOS 16 and Android 12 as minimum versions.',
  'Search results are ranked by BM25 and then re-ranked by recency.',
  'When the queue backs up, the worker pool scales out to eight instances.',
  'Error messages should say what failed, why, and what the user can do next.',
  'The frontend talks to the backend only through the generated GraphQL client.',
  'Feature flags live in LaunchDarkly; remove a flag within two sprints of full rollout.',
  'Benchmarks run on a quiet machine and report medians of five runs.',
  'The parser rejects files larger than 10 MB with a clear error.',
  'User uploads are stored in S3 with server-side encryption and a 90 day lifecycle.',
  "Timestamps are stored in UTC and converted to the user's zone in the UI.",
  'The retry policy is exponential backoff with jitter, at most five attempts.',
  'Docs are built with MkDocs and published on every merge to main.',
  'Meeting notes: we decided to drop support for Python 3.8 next quarter.',
  'The payment webhook must be idempotent; dedupe by event id.',
  'Profiling showed the JSON serializer dominates the response time.',
  'Keep pull requests under 400 lines; split refactors from behaviour changes.',
  'The config loader reads env vars first, then the YAML file, then defaults.',
  'On-call rotates weekly; escalate to the team lead after 30 minutes.',
  'The legacy endpoint /v1/orders is deprecated and will be removed in June.',
];

/**
 * The mean of the unit-length embeddings of CENTRE_TEXTS by `embedder`, or null when it cannot be computed (the model
 * failed, or gave only zero vectors): the table's signatures are then plain, as before centres.
 */
export async function signatureCentre(embedder: {
  info: { dimension: number };
  embed(texts: string[]): Promise<Float32Array[]>;
}): Promise<Float32Array | null> {
  let vectors: Float32Array[];
  try {
    vectors = await embedder.embed([...CENTRE_TEXTS]);
  } catch {
    return null;
  }
  const d = embedder.info.dimension;
  const sum = new Float64Array(d);
  let n = 0;
  for (const v of vectors) {
    if (v.length !== d) return null;
    let ss = 0;
    for (let i = 0; i < d; i++) ss += v[i] * v[i];
    if (!(ss > 0) || !Number.isFinite(ss)) continue;
    const inv = 1 / Math.sqrt(ss);
    for (let i = 0; i < d; i++) sum[i] += v[i] * inv;
    n++;
  }
  return n > 0 ? Float32Array.from(sum, (x) => x / n) : null;
}
