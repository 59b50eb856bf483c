/**
 * The agent tools VS Code gets (language-model tools), defined once: they are the MCP server's own tools
 * (daemon/src/mcp/tools.ts: name, description for the model, zod input schema, handler), so an agent in
 * VS Code and an agent speaking MCP get the same tools with the same behaviour and the same result text.
 *
 * This module has no `vscode` import: scripts/sync-agents.mjs and a plain-Node unit test use it to keep
 * `contributes.languageModelTools` in package.json equal to these definitions.
 */
import { z } from 'zod';
import { forgetTool, recallTool, rememberTool, searchTool } from '../../../daemon/src/mcp/tools';

export const AGENT_TOOLS = {
  cairn_search: searchTool,
  cairn_remember: rememberTool,
  cairn_recall: recallTool,
  cairn_forget: forgetTool,
} as const;
export type AgentToolName = keyof typeof AGENT_TOOLS;
export const AGENT_TOOL_NAMES = Object.keys(AGENT_TOOLS) as AgentToolName[];

/** What only VS Code shows (the model reads `modelDescription` and `inputSchema`, which come from the MCP tool). */
const META: Record<AgentToolName, { displayName: string; toolReferenceName: string; userDescription: string; icon: string }> = {
  cairn_search: {
    displayName: 'Search Cairn Memories',
    toolReferenceName: 'cairnSearch',
    userDescription: 'Search the memories of this workspace (its project namespace and your user memories).',
    icon: '$(search)',
  },
  cairn_remember: {
    displayName: 'Remember (Cairn)',
    toolReferenceName: 'cairnRemember',
    userDescription: 'Save a memory in this workspace. With cairn.review.agentWrites on, it waits for your review.',
    icon: '$(add)',
  },
  cairn_recall: {
    displayName: 'Recall a Cairn Memory',
    toolReferenceName: 'cairnRecall',
    userDescription: 'Read one memory in full, by key or id.',
    icon: '$(note)',
  },
  cairn_forget: {
    displayName: 'Forget a Cairn Memory',
    toolReferenceName: 'cairnForget',
    userDescription: 'Forget a memory (asks for confirmation): it is deleted and its value is not stored again.',
    icon: '$(circle-slash)',
  },
};

/** The JSON Schema VS Code gives the model: the MCP tool's zod input schema. */
export function inputSchemaOf(name: AgentToolName): Record<string, unknown> {
  const s = z.toJSONSchema(AGENT_TOOLS[name].input, { io: 'input' }) as Record<string, unknown>;
  delete s.$schema;
  return s;
}

/** `contributes.languageModelTools`, as package.json must declare it. */
export function languageModelToolsContribution(): Record<string, unknown>[] {
  return AGENT_TOOL_NAMES.map((name) => ({
    name,
    displayName: META[name].displayName,
    toolReferenceName: META[name].toolReferenceName,
    canBeReferencedInPrompt: true,
    icon: META[name].icon,
    userDescription: META[name].userDescription,
    modelDescription: AGENT_TOOLS[name].description,
    tags: ['cairn', 'memory'],
    inputSchema: inputSchemaOf(name),
  }));
}
