import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { suite, test } from 'node:test';
import { AGENT_TOOL_NAMES, AGENT_TOOLS, inputSchemaOf, languageModelToolsContribution } from '../../agents/toolDefs';

/** package.json's agent contributions: the language-model tools must be the MCP tools (scripts/sync-agents.mjs). */
suite('agent contributions', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8'));
  const c = pkg.contributes;

  test('languageModelTools equal the definitions (run node scripts/sync-agents.mjs when this fails)', () => {
    assert.deepEqual(c.languageModelTools, languageModelToolsContribution());
  });

  test('each tool: the MCP tool name, its model description and input schema, referenceable in prompts', () => {
    assert.deepEqual(AGENT_TOOL_NAMES, ['cairn_search', 'cairn_remember', 'cairn_recall', 'cairn_forget']);
    for (const t of c.languageModelTools as Record<string, unknown>[]) {
      const name = t.name as (typeof AGENT_TOOL_NAMES)[number];
      assert.equal(AGENT_TOOLS[name].name, name);
      assert.equal(t.modelDescription, AGENT_TOOLS[name].description);
      assert.equal(t.canBeReferencedInPrompt, true);
      assert.match(String(t.toolReferenceName), /^[A-Za-z][A-Za-z0-9]*$/);
      const schema = t.inputSchema as { type: string; properties: Record<string, unknown>; $schema?: string };
      assert.equal(schema.type, 'object');
      assert.equal(schema.$schema, undefined);
      assert.deepEqual(schema, inputSchemaOf(name));
    }
    assert.deepEqual((inputSchemaOf('cairn_search') as { required: string[] }).required, ['query']);
    assert.deepEqual(((inputSchemaOf('cairn_remember') as { required: string[] }).required ?? []).sort(), ['key', 'value']);
  });

  test('Agent Tasks view, its commands, @cairn with its slash commands, the MCP provider', () => {
    assert.ok((c.views.cairn as { id: string }[]).some((v) => v.id === 'cairn.tasks'));
    const cmds = new Set((c.commands as { command: string }[]).map((x) => x.command));
    for (const id of [
      'cairn.newTask',
      'cairn.deleteTask',
      'cairn.setActiveTask',
      'cairn.clearActiveTask',
      'cairn.toggleDontInject',
      'cairn.refreshTasks',
    ])
      assert.ok(cmds.has(id), id);
    const p = (c.chatParticipants as { id: string; name: string; commands: { name: string }[] }[]).find((x) => x.id === 'cairn.chat');
    assert.ok(p);
    assert.equal(p.name, 'cairn');
    assert.deepEqual(p.commands.map((x) => x.name).sort(), ['forget', 'remember', 'search']);
    assert.ok((c.mcpServerDefinitionProviders as { id: string }[]).some((x) => x.id === 'cairn.mcp'));
  });
});
