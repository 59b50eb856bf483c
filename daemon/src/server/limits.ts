/**
 * The daemon's request limits: the shape check before schema validation (protocol/shape.ts, shared with the
 * clients), the frame time limits of a connection (from the environment), and `pace()` for long handlers.
 */
import { CairnError } from '../protocol/errors';
import { processEnv, readEnv, type Env } from '../protocol/settings';
import { Limits } from '../protocol/types';
export { checkParamsShape, checkParamsShapePaced, FORBIDDEN_KEYS, wellFormed } from '../protocol/shape';

/** How long a connection may take over one frame (server/framing.ts). */
export interface FrameLimits {
  /** From a frame's first byte to the end of its header section. */
  frameHeaderMs: number;
  /** From a frame's first byte to its last (a total deadline, not an idle timer). */
  frameTimeMs: number;
}

/**
 * The daemon's frame time limits: Limits' defaults, or CAIRN_FRAME_HEADER_MS / CAIRN_FRAME_TIME_MS (whole
 * milliseconds ≥ 1; anything else is ignored with a line in the log).
 */
export function frameLimits(env: Env = processEnv(), log: (m: string) => void = () => {}): FrameLimits {
  const read = (name: string, raw: string | undefined, fallback: number): number => {
    if (raw === undefined) return fallback;
    const n = Number(raw);
    if (Number.isSafeInteger(n) && n >= 1) return n;
    log(`ignoring ${name}=${JSON.stringify(raw.slice(0, 40))}: not a whole number of milliseconds; using ${fallback}`);
    return fallback;
  };
  return {
    frameHeaderMs: read('CAIRN_FRAME_HEADER_MS', readEnv('CAIRN_FRAME_HEADER_MS', env), Limits.frameHeaderMs),
    frameTimeMs: read('CAIRN_FRAME_TIME_MS', readEnv('CAIRN_FRAME_TIME_MS', env), Limits.frameTimeMs),
  };
}

/**
 * What a long handler needs to share the daemon's one thread: its deadline (Limits.requestTimeMs from the
 * request's start) and where to report progress.
 */
export interface RequestContext {
  /** Epoch ms after which the work stops at its next chunk boundary. */
  deadline: number;
  /** The limit it was given, for the error. */
  limitMs: number;
}

/** A context for a request starting now. */
export function requestContext(limitMs: number = Limits.requestTimeMs): RequestContext {
  return { deadline: Date.now() + limitMs, limitMs };
}

/**
 * Between two chunks of a long request: let the event loop run (other connections' requests are read and
 * answered), then stop with RequestTimeLimit when the request is past its deadline. `progress` goes into the
 * error's data so the caller knows what was done.
 */
export async function pace(ctx: RequestContext | undefined, progress: Record<string, number>): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve));
  if (ctx && Date.now() >= ctx.deadline) {
    throw new CairnError(
      'RequestTimeLimit',
      `the request ran past its time limit of ${ctx.limitMs} ms and stopped; what it did so far stands (data.progress)`,
      { limit: ctx.limitMs, progress },
    );
  }
}
