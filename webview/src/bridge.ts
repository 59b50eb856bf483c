/**
 * Messages between the dashboard webview and the extension host. Payloads are
 * the protocol's own types: the webview asks the host to run a protocol request
 * and receives its result or its Cairn error.
 */
import type { CairnErrorData } from '../../daemon/src/protocol/errors';
import type { RequestName } from '../../daemon/src/protocol/methods';
import type { DidChangeParams } from '../../daemon/src/protocol/types';

/** webview → host: run one protocol request. */
export interface RunRequest {
  type: 'request';
  seq: number;
  request: RequestName;
  params: unknown;
}

/** host → webview: the reply to a RunRequest. */
export type RequestReply =
  | { type: 'result'; seq: number; result: unknown }
  | { type: 'error'; seq: number; code: number; message: string; data: CairnErrorData };

/** host → webview: a store change, forwarded from memory/didChange. */
export interface ChangeNotice {
  type: 'didChange';
  change: DidChangeParams;
}

export type ToHost = RunRequest;
export type ToWebview = RequestReply | ChangeNotice;
