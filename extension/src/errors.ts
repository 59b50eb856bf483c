/**
 * Turning failures into sentences a user can act on. Daemon errors arrive as JSON-RPC errors whose
 * `data.name` is the symbolic Cairn code (daemon/src/protocol/errors.ts); everything else is shown with
 * its own message.
 */
import {
  CairnError,
  errorSentence,
  isWireError,
  wireErrorName,
  type CairnErrorData,
  type ErrorCodeName,
  type WireError,
} from '../../daemon/src/protocol/errors';

/** A JSON-RPC error as the language client hands it over (the protocol module's WireError). */
export type RpcErrorLike = WireError;

export const isRpcError = isWireError;

/** The Cairn error name of a failure (`VersionConflict`, `NotFound`, ...), or undefined. */
export function cairnErrorName(e: unknown): ErrorCodeName | undefined {
  return wireErrorName(e);
}

export function errorData(e: unknown): Partial<CairnErrorData> {
  return isRpcError(e) && e.data && typeof e.data === 'object' ? (e.data as Partial<CairnErrorData>) : {};
}

/** The user dismissed a prompt: the command ends quietly, with nothing to report. */
export class Cancelled extends Error {}

/** Raised when a command needs the daemon and the window is not connected to one: `Unavailable`, not sent. */
export class NotConnectedError extends CairnError {
  constructor(state: string) {
    super('Unavailable', `Cairn is not connected to its daemon (${state}). Run "Cairn: Restart Daemon" or see "Cairn: Show Log".`, {
      sent: false,
    });
  }
}

/** Raised when the daemon did not answer in time: `Unavailable`, sent (it may still be applied). */
export class RequestTimeoutError extends CairnError {
  constructor(method: string, ms: number) {
    super('Unavailable', `The Cairn daemon did not answer ${method} within ${Math.round(ms / 1000)} s.`, { sent: true, method });
  }
}

/** One sentence for a failed `action` ("Forget memory", "Search"), naming the Cairn error when there is one. */
export function describeError(action: string, e: unknown): string {
  const name = cairnErrorName(e);
  const data = errorData(e);
  const msg = e instanceof Error || isRpcError(e) ? errorSentence(e as { message: string; data?: unknown }) : String(e);
  switch (name) {
    case 'VersionConflict':
      return `${action} failed: the memory changed since you opened it (now version ${String(data.currentVersion ?? '?')}). Reopen it to see the latest value, then edit again.`;
    case 'Deleted':
      return `${action} failed: that key was deleted${data.deletedBy ? ` by ${String(data.deletedBy)}` : ''}. Restore it first.`;
    case 'RejectedValue':
      return `${action} failed: this value was forgotten in this namespace, so Cairn refuses to store it again.`;
    case 'NotFound':
      return `${action} failed: no such memory (it may have been deleted or purged). ${msg}`;
    case 'InvalidNamespace':
      return `${action} failed: invalid namespace. ${msg}`;
    case undefined:
      return `${action} failed: ${msg}`;
    default:
      return `${action} failed: ${msg} (${name})`;
  }
}
