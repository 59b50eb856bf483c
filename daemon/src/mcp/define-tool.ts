/**
 * Declaring an MCP tool (tools.ts, episode-tools.ts): `tool` keeps a tool's argument type tied to its input schema,
 * `ro` the annotations of a tool that only reads.
 */
import type { z } from 'zod';
import type { CairnTool, ToolAnnotations } from './tools';

export function tool<S extends z.ZodObject>(t: CairnTool<S>): CairnTool<S> {
  return t;
}

/** A read-only tool's annotations: no side effects, the same answer again, nothing outside Cairn. */
export const ro = (title: string): ToolAnnotations => ({
  title,
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
});
