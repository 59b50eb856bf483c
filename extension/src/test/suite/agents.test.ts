/**
 * Agents in the real extension host: the language-model tools through `vscode.lm.invokeTool`, the Agent
 * Tasks toggle (through the checkbox handler) against `injectionBlock`, the extension API from a second
 * extension (test/e2e/fixtures/api-consumer, loaded by the harness next to Cairn), @cairn without a
 * language model (its handler called directly: code-server has no chat model and the chat UI cannot be
 * driven from the extension host), and the MCP server definition (spawned and spoken to over stdio).
 */
import * as assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as vscode from 'vscode';
import { wireErrorName } from '../../../../daemon/src/protocol/errors';
import type { Memory, Task } from '../../../../daemon/src/protocol/types';
import type { AgentsExports } from '../../agents';
import type { TaskNode } from '../../agents/tasksView';
import type { Ctx } from '../../ctx';
import type { CairnApi } from '../../main';
import { EXTENSION_ID, harnessEnv, record, stubUi, uniq, waitFor } from './helpers';

type Exports = CairnApi & AgentsExports;
const TOOLS = ['cairn_search', 'cairn_remember', 'cairn_recall', 'cairn_forget'];

async function exportsOf(): Promise<Exports> {
  const ext = vscode.extensions.getExtension<Exports>(EXTENSION_ID);
  if (!ext) throw new Error(`${EXTENSION_ID} is not installed`);
  return ext.isActive ? ext.exports : await ext.activate();
}

/** invokeTool outside a chat, as any extension can; the text of the result. */
async function invoke(name: string, input: object): Promise<string> {
  const r = await vscode.lm.invokeTool(name, { input, toolInvocationToken: undefined });
  return r.content.map((p) => (p instanceof vscode.LanguageModelTextPart ? p.value : JSON.stringify(p))).join('');
}

/** A chat response stream that records what @cairn sends. */
function recorder() {
  const out = { markdown: [] as string[], progress: [] as string[], references: [] as string[], buttons: [] as vscode.Command[] };
  const stream = {
    markdown: (v: string | vscode.MarkdownString) => void out.markdown.push(typeof v === 'string' ? v : v.value),
    progress: (v: string) => void out.progress.push(v),
    reference: (v: vscode.Uri | vscode.Location) => void out.references.push(v instanceof vscode.Uri ? v.toString() : v.uri.toString()),
    button: (c: vscode.Command) => void out.buttons.push(c),
  };
  return { out, stream, text: () => out.markdown.join('') };
}

suite('agents', () => {
  let x: Exports;
  let c: Ctx;
  let ns: string;
  const tasks: string[] = [];
  /** An active memory the injection tests can find by its unusual words. */
  let seeded: Memory;
  const PROMPT = 'When does the quokka harbor deployment run?';

  suiteSetup(async function () {
    this.timeout(90_000);
    x = await exportsOf();
    c = x.ctx;
    await c.client.whenConnected(60_000);
    ns = x.workspaceScope().root!;
    assert.equal(ns, harnessEnv('CAIRN_E2E_EXPECT_PROJECT'));
    seeded = (
      await c.client.request('upsert', {
        namespace: ns,
        key: uniq('quokka-deploys'),
        value: 'The quokka harbor deployment runs every Tuesday at 10:00 UTC, never on Fridays.',
        kind: 'procedure',
        actor: 'e2e',
      })
    ).memory;
  });

  suiteTeardown(async () => {
    await x.setActiveTask(undefined);
    for (const id of tasks) await x.deleteTask(id).catch(() => {});
    await vscode.workspace.getConfiguration('cairn').update('review.agentWrites', undefined, vscode.ConfigurationTarget.Workspace);
  });

  test('the four language-model tools are registered and listed in vscode.lm.tools', async () => {
    const listed = await waitFor('the Cairn tools in vscode.lm.tools', () => {
      const mine = vscode.lm.tools.filter((t) => TOOLS.includes(t.name));
      return mine.length === TOOLS.length ? mine : undefined;
    });
    const declared = c.extension.extension.packageJSON.contributes.languageModelTools as { name: string; modelDescription: string }[];
    for (const t of listed) {
      assert.equal(t.description, declared.find((d) => d.name === t.name)?.modelDescription, `${t.name} description`);
      assert.equal((t.inputSchema as { type?: string } | undefined)?.type, 'object', `${t.name} schema`);
    }
    assert.deepEqual([...x.agents.tools.keys()].sort(), [...TOOLS].sort());
  });

  test('cairn_remember, then cairn_search and cairn_recall, through vscode.lm.invokeTool', async () => {
    const key = uniq('lm-tool');
    const saved = await invoke('cairn_remember', {
      key,
      value: 'The e2e builds share the zebra lantern cache.',
      kind: 'fact',
      tags: ['e2e'],
    });
    assert.match(saved, new RegExp(`Saved new memory ${ns}/${key}`));
    assert.match(saved, /proposed/, 'agent writes wait for review by default');
    const m = await c.client.request('get', { namespace: ns, key });
    assert.equal(m.status, 'proposed');
    assert.equal(m.source, 'agent:cairn_remember');

    // Proposed memories stay out of searches unless asked for.
    assert.doesNotMatch(await invoke('cairn_search', { query: 'zebra lantern cache' }), new RegExp(key));
    const found = await invoke('cairn_search', { query: 'zebra lantern cache', includeProposed: true });
    assert.match(found, new RegExp(`${ns}/${key}`));
    assert.match(found, /best first/);

    const recalled = await invoke('cairn_recall', { key });
    assert.match(recalled, /zebra lantern cache/);
    assert.match(recalled, new RegExp(`id ${m.id}`));
  });

  test('with cairn.review.agentWrites off, agent writes are active at once', async () => {
    const cfg = vscode.workspace.getConfiguration('cairn');
    await cfg.update('review.agentWrites', false, vscode.ConfigurationTarget.Workspace);
    try {
      await waitFor('the setting', () => x.agents.service.reviewAgentWrites === false);
      const key = uniq('lm-active');
      const text = await invoke('cairn_remember', { key, value: 'Pelican reviews happen in the staging room.' });
      assert.doesNotMatch(text, /proposed/);
      assert.equal((await c.client.request('get', { namespace: ns, key })).status, 'active');
      assert.match(await invoke('cairn_search', { query: 'pelican reviews staging' }), new RegExp(key));
    } finally {
      await cfg.update('review.agentWrites', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('the active task’s burner branch: the tools, the API, @cairn /search and injection use it; the base waits for the merge', async function () {
    this.timeout(60_000);
    const cfg = vscode.workspace.getConfiguration('cairn');
    await cfg.update('review.agentWrites', false, vscode.ConfigurationTarget.Workspace);
    const onBase = async (key: string) =>
      c.client.request('get', { namespace: ns, key }).then(
        (m) => m,
        (e: unknown) => {
          if (wireErrorName(e) === 'NotFound') return undefined;
          throw e;
        },
      );
    try {
      await waitFor('the setting', () => x.agents.service.reviewAgentWrites === false);
      const task = await x.createTask(uniq('e2e burner task'), { branch: true, activate: true });
      tasks.push(task.id);
      assert.ok(task.branch, JSON.stringify(task));
      const branch = task.branch;
      assert.equal(x.activeTaskId(), task.id);

      // A language-model tool's write goes to the branch; the tools read it back there; the base has nothing.
      const key = uniq('burner');
      assert.match(
        await invoke('cairn_remember', { key, value: 'The pelican mirror is rebuilt nightly by the heron job.' }),
        new RegExp(`memory branch ${branch}`),
      );
      assert.equal(await onBase(key), undefined, 'not on the base');
      assert.equal(
        (await c.client.request('get', { namespace: ns, key, branch })).value,
        'The pelican mirror is rebuilt nightly by the heron job.',
      );
      assert.match(await invoke('cairn_search', { query: 'pelican mirror heron' }), new RegExp(`${ns}/${key}`));
      assert.match(await invoke('cairn_recall', { key }), /heron job/);

      // The extension API and @cairn /search read the branch; an API write lands there too.
      assert.ok((await x.search('pelican mirror heron')).some((h) => h.memory.key === key));
      assert.equal((await x.recall({ key })).value, 'The pelican mirror is rebuilt nightly by the heron job.');
      const apiKey = uniq('burner-api');
      assert.equal((await x.remember({ key: apiKey, value: 'The API write of the burner task.' })).key, apiKey);
      assert.equal(await onBase(apiKey), undefined);
      const chat = recorder();
      await x.agents.chat({ prompt: 'pelican mirror heron', command: 'search' }, chat.stream);
      assert.match(chat.text(), new RegExp(key));

      // Forgetting a base memory through a tool deletes it on the branch only.
      assert.match(await invoke('cairn_forget', { key: seeded.key }), new RegExp(`on the memory branch ${branch}`));
      assert.equal((await onBase(seeded.key))?.value, seeded.value, 'the base keeps it');
      assert.match(await invoke('cairn_recall', { key: seeded.key }), /^Cairn error NotFound/);

      // Injection for the active task searches the branch.
      const block = await x.injectionBlock(task.id, 'pelican mirror heron job');
      assert.match(block.block, /heron job/);

      // The MCP server definition carries the task, so an MCP agent writes there too.
      assert.deepEqual((await x.agents.mcpServerSpec()).args.slice(-2), ['--task', task.id]);

      // Without an active task, the same tools read and write the base again.
      await x.setActiveTask(undefined);
      assert.doesNotMatch(await invoke('cairn_search', { query: 'pelican mirror heron' }), new RegExp(key));
      assert.match(await invoke('cairn_recall', { key: seeded.key }), /quokka harbor/);
      assert.ok(!(await x.agents.mcpServerSpec()).args.includes('--task'));
      const diff = await c.client.request('branchDiff', { name: branch });
      assert.deepEqual(
        diff.changes.map((ch) => `${ch.change} ${ch.key}`).sort(),
        [`added ${apiKey}`, `added ${key}`, `deleted ${seeded.key}`].sort(),
      );
    } finally {
      await x.setActiveTask(undefined);
      await cfg.update('review.agentWrites', undefined, vscode.ConfigurationTarget.Workspace);
    }
  });

  test('failures come back as tool results naming the Cairn error', async () => {
    assert.match(
      await invoke('cairn_remember', { namespace: 'Not A Namespace', key: 'k', value: 'v' }),
      /^Cairn error InvalidNamespace \(1006\) in field "namespace"/,
    );
    assert.match(
      await invoke('cairn_remember', { namespace: 'project.someone-else', key: 'k', value: 'v' }),
      /^Cairn error InvalidParams \(1001\).*outside this session's scope/s,
    );
    assert.match(await invoke('cairn_forget', { key: uniq('never-stored') }), /^Cairn error NotFound \(1002\)/);
    assert.match(await invoke('cairn_search', {}), /^Cairn error InvalidParams \(1001\) in field "query"/);
  });

  test('cairn_forget asks for confirmation naming the memory, then forgets it', async () => {
    const key = uniq('to-forget');
    await c.client.request('upsert', { namespace: ns, key, value: 'Temporary: the walrus flag is on.', actor: 'e2e' });
    const tool = x.agents.tools.get('cairn_forget');
    assert.ok(tool);
    const none = new vscode.CancellationTokenSource().token;
    const prepared = await tool.prepareInvocation({ input: { key } });
    assert.equal(prepared.confirmationMessages?.title, 'Forget a Cairn memory?');
    const msg = prepared.confirmationMessages?.message;
    assert.match(typeof msg === 'string' ? msg : (msg?.value ?? ''), new RegExp(`${ns}/${key}[\\s\\S]*walrus flag`));
    // vscode.lm.invokeTool outside a chat shows that confirmation as a modal dialog, which the extension host
    // cannot answer: invoke the registered tool object itself, as VS Code does once the user confirmed.
    const r = await tool.invoke({ input: { key, reason: 'e2e' }, toolInvocationToken: undefined }, none);
    assert.match((r.content[0] as vscode.LanguageModelTextPart).value, new RegExp(`^Forgot ${ns}/${key}`));
    assert.ok((await c.client.request('get', { namespace: ns, key, includeDeleted: true })).deletedAt);
  });

  test('the Agent Tasks checkbox changes what injectionBlock returns, and the injected memories show under the task', async () => {
    const task = await x.createTask(uniq('e2e inject task'));
    tasks.push(task.id);
    assert.equal(task.dontInject, false);
    assert.deepEqual(task.scope, x.workspaceScope());

    const before = await x.injectionBlock(task.id, PROMPT);
    assert.equal(before.skipped, undefined);
    assert.ok(before.memoryIds.includes(seeded.id), JSON.stringify(before));
    assert.match(before.block, /^<workspace_memories>/);
    assert.match(before.block, /quokka harbor deployment/);

    const view = x.agents.tasksView;
    const nodeOf = async (want: boolean) =>
      waitFor(`task ${task.id} in the view with dontInject=${want}`, async () => {
        view.refresh();
        const n = (await view.tasks()).find((k) => k.kind === 'task' && k.task.id === task.id);
        return n && n.kind === 'task' && n.task.dontInject === want ? n : undefined;
      });
    const unchecked = await nodeOf(false);
    const item = view.getTreeItem(unchecked);
    assert.equal((item.checkboxState as { state: vscode.TreeItemCheckboxState }).state, vscode.TreeItemCheckboxState.Unchecked);

    // Check it, through the view's own checkbox handler.
    const [updated] = await view.onCheckboxChange([[unchecked, vscode.TreeItemCheckboxState.Checked]]);
    assert.equal(updated?.dontInject, true);
    assert.equal((await c.client.request('tasksGet', { id: task.id })).dontInject, true, 'the daemon has it at once');
    const after = await x.injectionBlock(task.id, PROMPT);
    assert.equal(after.skipped, 'disabled');
    assert.equal(after.block, '');
    assert.deepEqual(after.memoryIds, []);
    const checked = await nodeOf(true);
    assert.equal(
      (view.getTreeItem(checked).checkboxState as { state: vscode.TreeItemCheckboxState }).state,
      vscode.TreeItemCheckboxState.Checked,
    );

    // Uncheck: memories come back.
    await view.onCheckboxChange([[checked, vscode.TreeItemCheckboxState.Unchecked]]);
    const again = await x.injectionBlock(task.id, PROMPT);
    assert.ok(again.memoryIds.includes(seeded.id));

    // The injected memory is listed under the task and opens with the open-memory command.
    const kids = (await view.getChildren(await nodeOf(false))) as TaskNode[];
    const inj = kids.find((k) => k.kind === 'injected' && k.memoryId === seeded.id);
    assert.ok(inj && inj.kind === 'injected', JSON.stringify(kids));
    assert.equal(inj.count, 2);
    const injItem = view.getTreeItem(inj);
    assert.equal(injItem.label, seeded.key);
    assert.deepEqual(injItem.command?.arguments, [seeded.id]);
    assert.equal(injItem.command?.command, 'cairn.openMemory');
    const doc = (await vscode.commands.executeCommand(
      injItem.command.command,
      ...(injItem.command.arguments ?? []),
    )) as vscode.TextDocument;
    assert.match(doc.getText(), /quokka harbor/);
    await vscode.commands.executeCommand('workbench.action.closeActiveEditor');

    // "Used by": the memory knows the task.
    const log = await c.client.request('injectLog', { memoryId: seeded.id });
    assert.ok(
      log.usedBy.some((u) => u.taskId === task.id && u.count === 2),
      JSON.stringify(log.usedBy),
    );
  });

  test('a task change made by another client (tasks/didChange) reaches the view', async () => {
    const task = await x.createTask(uniq('e2e notified task'));
    tasks.push(task.id);
    assert.notEqual(x.agents.service.taskNotifications, 'none', 'subscribed to tasks/didChange');
    const seen = new Promise<void>((resolve) => {
      const d = x.agents.service.onDidChangeTasks((ch) => {
        if (ch?.id === task.id && ch.task?.dontInject) {
          d.dispose();
          resolve();
        }
      });
    });
    // Straight to the daemon, not through the service: only the notification can tell the view.
    await c.client.request('tasksUpdate', { id: task.id, dontInject: true });
    await Promise.race([seen, new Promise((_, rej) => setTimeout(() => rej(new Error('no tasks/didChange within 10 s')), 10_000))]);
    const n = await waitFor('the view showing the change', async () =>
      (await x.agents.tasksView.tasks()).find((k) => k.kind === 'task' && k.task.id === task.id && k.task.dontInject),
    );
    assert.ok(n);
  });

  test('New Agent Task, Set Active, Toggle and Delete Task commands (and a failure path)', async () => {
    const title = uniq('cmd task');
    let cap = stubUi(c, { inputs: [title] });
    let task: Task;
    try {
      task = (await vscode.commands.executeCommand('cairn.newTask')) as Task;
    } finally {
      cap.restore();
    }
    assert.equal(task.title, title);
    tasks.push(task.id);
    assert.equal(x.activeTaskId(), task.id, 'a new task becomes the active task');
    const activeNode = (await x.agents.tasksView.tasks()).find((k) => k.kind === 'task' && k.task.id === task.id);
    assert.ok(activeNode && activeNode.kind === 'task' && activeNode.active);
    assert.equal(x.agents.tasksView.getTreeItem(activeNode).contextValue, 'cairnTask.active');

    const toggled = (await vscode.commands.executeCommand('cairn.toggleDontInject', task.id)) as Task;
    assert.equal(toggled.dontInject, true);
    await vscode.commands.executeCommand('cairn.clearActiveTask');
    assert.equal(x.activeTaskId(), undefined);
    await vscode.commands.executeCommand('cairn.setActiveTask', task.id);
    assert.equal(x.activeTaskId(), task.id);

    cap = stubUi(c, { confirm: true });
    try {
      await vscode.commands.executeCommand('cairn.deleteTask', { kind: 'task', task, active: true });
    } finally {
      cap.restore();
    }
    assert.equal(x.activeTaskId(), undefined, 'deleting the active task clears it');
    assert.ok(!(await x.listTasks()).some((t) => t.id === task.id));

    cap = stubUi(c);
    try {
      assert.equal(await vscode.commands.executeCommand('cairn.deleteTask', task.id), undefined);
      assert.equal(cap.error.length, 1, JSON.stringify(cap.error));
      assert.match(cap.error[0], /Delete Task failed: there is no agent task/);
    } finally {
      cap.restore();
    }
  });

  test('@cairn /search answers without a language model; a plain request explains why it cannot chat', async function () {
    this.timeout(30_000);
    const s = recorder();
    const res = await x.agents.chat({ prompt: 'quokka harbor deployment', command: 'search' }, s.stream);
    assert.ok(s.text().includes(`${ns}/${seeded.key}`), s.text());
    assert.ok(res.metadata.memoryIds.includes(seeded.id));
    assert.ok(
      s.out.references.some((r) => r.includes(seeded.id)),
      JSON.stringify(s.out.references),
    );

    // A plain question: no model in this editor (the real vscode.lm.selectChatModels), no hang, no crash.
    const task = await x.createTask(uniq('chat task'), { activate: true });
    tasks.push(task.id);
    const t0 = Date.now();
    const q = recorder();
    const asked = await x.agents.chat({ prompt: PROMPT }, q.stream);
    record('chat.noModelAnswerMs', Date.now() - t0);
    // The harness's editor has no chat model, so this path is always the one under test (never skipped).
    assert.deepEqual(await vscode.lm.selectChatModels(), [], 'the test editor has no language model');
    assert.equal(asked.metadata.noAnswer, 'no-model');
    assert.match(q.text(), /No language model is available/);
    assert.match(q.text(), /\/search/);
    assert.ok(asked.metadata.memoryIds.includes(seeded.id), 'the memories it would have used are listed');
    assert.ok(q.out.references.some((r) => r.includes(seeded.id)));
    assert.equal(asked.metadata.taskId, task.id);

    // The active task's toggle: @cairn says memories are off and uses none.
    await x.setDontInject(task.id, true);
    const off = recorder();
    const skipped = await x.agents.chat({ prompt: PROMPT }, off.stream, async () => []);
    assert.match(off.text(), /"Don't inject memories" is on for the active task/);
    assert.equal(skipped.metadata.skipped, 'disabled');
    assert.deepEqual(skipped.metadata.memoryIds, []);
    await x.setActiveTask(undefined);
  });

  test('@cairn /remember and /forget act through the daemon', async () => {
    const key = uniq('chat-key');
    const r = recorder();
    await x.agents.chat({ prompt: `${key}: The heron service owns the billing queue.`, command: 'remember' }, r.stream);
    assert.match(r.text(), /^Remembered/);
    const m = await c.client.request('get', { namespace: ns, key });
    assert.equal(m.status, 'active', 'a user write from chat is not an agent proposal');
    assert.equal(m.source, 'vscode:chat');
    const f = recorder();
    await x.agents.chat({ prompt: key, command: 'forget' }, f.stream);
    assert.match(f.text(), /^Forgot/);
    assert.equal(f.out.buttons[0]?.command, 'cairn.restoreMemory');
    assert.ok((await c.client.request('get', { namespace: ns, key, includeDeleted: true })).deletedAt);
    const bad = recorder();
    const res = await x.agents.chat({ prompt: uniq('nothing-here'), command: 'forget' }, bad.stream);
    assert.match(bad.text(), /no such memory/i);
    assert.ok(res.errorDetails);
    assert.ok(x.agents.participant, '@cairn is registered with the chat API');
  });

  test('the extension API works from a second extension (fixtures/api-consumer)', async function () {
    this.timeout(60_000);
    const consumer = vscode.extensions.getExtension('cairn-e2e.api-consumer');
    assert.ok(consumer, 'the harness loads test/e2e/fixtures/api-consumer as a second development extension');
    assert.deepEqual(consumer.packageJSON.extensionDependencies, [EXTENSION_ID]);
    const key = uniq('api-consumer');
    const report = (await vscode.commands.executeCommand('cairnApiConsumer.run', {
      key,
      value: 'The consumer extension found the osprey ledger.',
      prompt: PROMPT,
    })) as Record<string, any>;
    assert.ok(report, 'the consumer ran');
    assert.equal(report.apiVersion, 1);
    assert.equal(report.exportsSameObject, true);
    assert.deepEqual(report.scope, x.workspaceScope());
    assert.deepEqual(report.remembered, { id: report.remembered.id, namespace: ns, key, status: 'proposed', source: 'agent:api-consumer' });
    assert.equal(report.recalled, 'The consumer extension found the osprey ledger.');
    assert.ok(report.searchProposed.includes(key), JSON.stringify(report.searchProposed));
    assert.ok(report.searchActive.includes(seeded.key), JSON.stringify(report.searchActive));
    assert.deepEqual(report.task, { id: report.task.id, dontInject: false, listed: true });
    assert.equal(report.before.skipped, null);
    assert.ok(report.before.keys.includes(seeded.key) && report.before.hasBlock, JSON.stringify(report.before));
    assert.equal(report.toggled, true);
    assert.deepEqual(report.after, { skipped: 'disabled', block: '', keys: [] });
    assert.equal(report.forgetMissing.name, 'NotFound');
    assert.equal(report.forgetMissing.code, 1002);
    assert.equal(report.badNamespace.name, 'InvalidNamespace');
    assert.equal(report.badNamespace.field, 'namespace');
    assert.equal(report.forgotten.deleted, true);
    assert.deepEqual(report.events, ['memory', 'task']);
  });

  test('MCP: the server definition runs `cairn mcp` on the same store (registered where the editor supports it)', async function () {
    this.timeout(60_000);
    const hasApi =
      typeof (vscode.lm as unknown as { registerMcpServerDefinitionProvider?: unknown }).registerMcpServerDefinitionProvider === 'function';
    const m = x.agents.mcp;
    // Without the API: unsupported, no error. With it: registered (an editor may refuse it as a proposal: unsupported).
    if (!hasApi) assert.equal(m.state, 'unsupported', JSON.stringify(m));
    else assert.ok(m.state === 'registered' || (m.state === 'unsupported' && /proposal/i.test(m.reason)), JSON.stringify(m));
    record('mcp.registration', `${m.state} (VS Code ${vscode.version})`);
    const spec = await x.agents.mcpServerSpec();
    assert.deepEqual(spec.args.slice(1, 6), ['mcp', '--db', c.client.target.db, '--socket', c.client.target.socket]);
    assert.deepEqual(spec.args.slice(6), ['--root', ns]);
    assert.equal(spec.env.CAIRN_REVIEW_AGENT_WRITES, '1');
    const defs = (await x.agents.mcpDefinitions()) as { label: string; command: string; args: string[] }[];
    if (hasApi)
      assert.deepEqual(
        defs.map((d) => [d.label, d.command, d.args]),
        [[spec.label, spec.command, spec.args]],
      );
    else assert.deepEqual(defs, []);

    // Speak MCP to it over stdio, as VS Code would.
    const child: ChildProcessWithoutNullStreams = spawn(spec.command, spec.args, { env: { ...process.env, ...spec.env }, cwd: spec.cwd });
    try {
      let buf = '';
      const waiting = new Map<number, (v: any) => void>();
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString('utf8');
        let i: number;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i).trim();
          buf = buf.slice(i + 1);
          if (!line) continue;
          const msg = JSON.parse(line);
          if (msg.id !== undefined && waiting.has(msg.id)) waiting.get(msg.id)!(msg);
        }
      });
      let next = 1;
      const rpc = (method: string, params: object) =>
        new Promise<any>((resolve, reject) => {
          const id = next++;
          const timer = setTimeout(() => reject(new Error(`MCP ${method}: no answer in 20 s`)), 20_000);
          waiting.set(id, (m) => {
            clearTimeout(timer);
            resolve(m);
          });
          child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
        });
      const init = await rpc('initialize', {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'cairn-e2e', version: '1' },
      });
      assert.ok(init.result?.serverInfo, JSON.stringify(init));
      child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) + '\n');
      const list = await rpc('tools/list', {});
      const names = (list.result.tools as { name: string }[]).map((t) => t.name);
      for (const t of TOOLS) assert.ok(names.includes(t), `${t} over MCP`);
      const call = await rpc('tools/call', { name: 'cairn_search', arguments: { query: 'quokka harbor deployment' } });
      assert.match(call.result.content[0].text, new RegExp(seeded.key));
    } finally {
      child.kill();
    }
  });
});
