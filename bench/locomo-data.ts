/**
 * LoCoMo for the benches (bench/locomo.ts: every turn a memory; bench/locomo-episodes.ts: every session an episode):
 * the data file and its flags, conversations and their sessions and turns, the evidence ids questions are scored
 * against, and the in-process daemon both run on.
 *
 * Flags read here: --data FILE (default ../shared/data/locomo/locomo-dev5.json, CC BY-NC 4.0, evaluation only),
 * --model builtin|ID|PATH, --model-path DIR, --convs A or A-B (0-based conversation indices, in file order).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { attachEmbeddings } from '../daemon/src/index/attach';
import type { Indexer } from '../daemon/src/index/indexer';
import { slugify } from '../daemon/src/protocol/namespace';
import type { UpsertParams } from '../daemon/src/protocol/types';
import { Daemon } from '../daemon/src/server/daemon';
import { tempDir } from '../test/helpers';
import { arg } from './stats';

export const DATA = arg('data', path.resolve(__dirname, '..', '..', 'shared', 'data', 'locomo', 'locomo-dev5.json'));
export const MODEL = ((m) => (fs.existsSync(path.join(m, 'config.json')) ? path.resolve(m) : m))(arg('model', 'builtin'));
export const MODEL_PATH = arg('model-path', '');
export const CONVS = arg('convs', '');
export const CATEGORY = { 1: 'multi-hop', 2: 'temporal', 3: 'open-domain', 4: 'single-hop', 5: 'adversarial' } as Record<number, string>;

export interface Turn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}
export interface Sample {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: { question: string; evidence?: string[]; category: number }[];
}
/** A session of a conversation: its number, its date as written, its turns. */
export interface SessionTurns {
  n: number;
  date: string;
  turns: Turn[];
}

/** The session number of a turn id (`D3:12` → 3). */
export const sessionOf = (dia: string) => Number(/^D(\d+):/.exec(dia)?.[1] ?? -1);
/** The turn ids a question's evidence names. */
export const evidenceIds = (ev: string[] | undefined) => [
  ...new Set((ev ?? []).flatMap((e) => [...String(e).matchAll(/D\d+:\d+/g)].map((m) => m[0]))),
];
/** The namespace of a conversation's memories and episodes. */
export const conversationNamespace = (s: Sample) => `locomo.${slugify(s.sample_id)}`;

/** The conversations of --data, only those of --convs when given. */
export function loadSamples(): Sample[] {
  const samples = JSON.parse(fs.readFileSync(DATA, 'utf8')) as Sample[];
  if (!CONVS) return samples;
  const m = /^(\d+)(?:-(\d+))?$/.exec(CONVS);
  if (!m) throw new Error(`--convs takes A or A-B (0-based conversation indices), not "${CONVS}"`);
  return samples.slice(Number(m[1]), Number(m[2] ?? m[1]) + 1);
}

/** A conversation's sessions, in the order the file has them. */
export function sessionTurns(s: Sample): SessionTurns[] {
  const out: SessionTurns[] = [];
  for (const [k, v] of Object.entries(s.conversation)) {
    const m = /^session_(\d+)$/.exec(k);
    if (!m || !Array.isArray(v)) continue;
    out.push({ n: Number(m[1]), date: String(s.conversation[`session_${m[1]}_date_time`] ?? ''), turns: v as Turn[] });
  }
  return out;
}

/** A turn's text: the speaker, what was said, and a shared photo's caption. */
export const turnText = (t: Turn) => `${t.speaker}: ${t.text}${t.blip_caption ? ` [shares a photo: ${t.blip_caption}]` : ''}`;

/** A turn as a memory of its conversation's namespace (keyed by its turn id, speaker and session kept). */
export const turnMemory = (ns: string, t: Turn, session: SessionTurns): UpsertParams => ({
  namespace: ns,
  key: t.dia_id,
  kind: 'episode',
  source: 'import',
  value: turnText(t),
  properties: { speaker: t.speaker, session: session.n, sessionDate: session.date },
});

/**
 * A daemon in process on a fresh store (no socket, no sweeps) with the --model embeddings, once its model is ready;
 * `close` stops it and removes the store.
 */
export async function startDaemon(prefix: string): Promise<{ d: Daemon; close: () => Promise<void> }> {
  const dir = tempDir(prefix);
  let indexer!: Indexer;
  const d = await Daemon.start({
    db: path.join(dir, 'locomo.db'),
    socket: null,
    sweepEveryMs: 0,
    log: () => {},
    setup: async (dd) => {
      indexer = await attachEmbeddings(dd, {
        model: MODEL,
        allowRemote: false,
        ...(MODEL_PATH ? { modelPath: path.resolve(MODEL_PATH) } : {}),
      });
    },
  });
  const close = async () => {
    await d.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 6000 && indexer.state !== 'ready'; i++) await new Promise((r) => setTimeout(r, 50));
  return { d, close };
}
