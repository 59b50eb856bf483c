/**
 * Log lines on stderr, while stderr can take them (the daemon's and the MCP server's). When its reader is gone (the
 * terminal or the process that started us ended) a write fails with EPIPE, raised as an 'error' event; unhandled,
 * that was an uncaught exception the process logged to the same stderr, failing again: a loop at full CPU that also
 * kept SIGTERM from stopping the daemon. The first failure turns these lines off; the process keeps serving.
 */
let open = true;
let watched = false;

/** Write one line to stderr unless stderr has failed. */
export function stderrLine(line: string): void {
  if (!watched) {
    watched = true;
    process.stderr.on('error', () => (open = false));
  }
  if (open) process.stderr.write(`${line}\n`);
}

/** The daemon's log: a timestamped line. */
export const stderrLog = (m: string): void => stderrLine(`[cairn ${new Date().toISOString()}] ${m}`);
