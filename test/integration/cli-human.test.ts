/**
 * The CLI's human output: errors as sentences with the code in a details line, hints as flags, "did you mean",
 * per-command help, search output without markers or ids, colour rules, the project namespace, a missing root,
 * import and re-embed progress. --json output stays the protocol's objects.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CAIRN_BIN, spawnDaemon, tempDir, type SpawnedDaemon } from '../helpers';

function cli(args: string[], env: NodeJS.ProcessEnv = {}, opts: { cwd?: string; input?: string } = {}) {
  // NO_COLOR / FORCE_COLOR of the environment running the tests must not leak in: each test sets what it means.
  const base = { ...process.env };
  delete base.NO_COLOR;
  delete base.FORCE_COLOR;
  const r = spawnSync(process.execPath, [CAIRN_BIN, ...args], {
    encoding: 'utf8',
    env: { ...base, ...env },
    cwd: opts.cwd,
    input: opts.input,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const ESC = '\x1b[';
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

describe('cli human output (--direct)', () => {
  let dir: string;
  let repo: string;
  let env: NodeJS.ProcessEnv;
  const direct = (args: string[], e: NodeJS.ProcessEnv = {}, o: { cwd?: string; input?: string } = {}) =>
    cli([...args, '--direct'], { ...env, ...e }, o);
  before(() => {
    dir = tempDir();
    env = { CAIRN_DB: path.join(dir, 'h.db'), XDG_RUNTIME_DIR: dir };
    // A checkout whose origin is acme/Web-App: the editor's "This project" is project.web-app.
    repo = path.join(dir, 'checkout');
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    fs.mkdirSync(path.join(repo, 'src'));
    fs.writeFileSync(path.join(repo, '.git', 'config'), '[remote "origin"]\n\turl = git@github.com:acme/Web-App.git\n');
    assert.equal(direct(['add', 'project.cli', 'retryPolicy', 'The HTTP client uses maxRetries of 3', '--kind', 'decision']).code, 0);
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a mistyped command gets the nearest one, exit 2', () => {
    const r = direct(['serch', 'retries']);
    assert.equal(r.code, 2);
    assert.match(r.err, /unknown command "serch"; did you mean search\?/);
    assert.match(direct(['rebuild']).err, /did you mean rebuild-index\?/);
    const far = direct(['frobnicate']);
    assert.equal(far.code, 2);
    assert.doesNotMatch(far.err, /did you mean/);
    const option = direct(['add', 'user', 'k', 'v', '--tag', 'x']);
    assert.equal(option.code, 2);
    assert.match(option.err, /unknown option --tag; did you mean --tags\?/);
  });

  it('cairn add --help is the help of add, not the whole usage', () => {
    const r = cli(['add', '--help']);
    assert.equal(r.code, 0);
    assert.match(r.out, /^Usage: cairn add <namespace> <key>/);
    assert.match(r.out, /--restore +write a key that was deleted/);
    assert.doesNotMatch(r.out, /verify-receipt|rebuild-index|retention/, 'other commands are not listed');
    assert.ok(r.out.split('\n').length < cli(['--help']).out.split('\n').length / 2);
    assert.match(cli(['help', 'search']).out, /^Usage: cairn search <query\.\.\.>/);
    const sub = cli(['retention', '--help']).out;
    assert.match(sub, /retention set <ROOT>/, 'sub-command lines belong to the command');
    assert.equal(cli(['serch', '--help']).code, 2);
  });

  it('a Cairn error is a sentence with the hint as a flag, the code in a details line; exit 1', () => {
    assert.equal(direct(['add', 'project.cli', 'gone', 'soon']).code, 0);
    assert.equal(direct(['delete', 'project.cli', 'gone']).code, 0);
    const r = direct(['add', 'project.cli', 'gone', 'back']);
    assert.equal(r.code, 1);
    const [first, second] = r.err.split('\n');
    assert.match(first, /^error: project\.cli\/gone was deleted at \S+ by user; pass --restore to write it again\.$/);
    assert.equal(second, '  (code Deleted 1003, field key)');
    assert.doesNotMatch(r.err, /restore: true/);
    // The protocol's --json error path is not involved: the hint is data, the sentence is the CLI's.
    assert.equal(direct(['add', 'project.cli', 'gone', 'back', '--restore']).code, 0);
  });

  it('a validation error names the real problem in words', () => {
    const colour = direct(['list', '--filter', '{"field":"colour","op":"eq","value":"red"}']);
    assert.equal(colour.code, 1);
    assert.match(colour.err, /^error: "colour" is not a field a filter can test; the fields are kind, source/);
    assert.match(colour.err, /\(code InvalidFilter 1010, field filter\.field, in memory\/list\)/);
    assert.doesNotMatch(colour.err, /filter\.and|expected array/);
    const noList = direct(['list', '--filter', '{"and":{"field":"kind","op":"eq","value":"note"}}']);
    assert.match(noList.err, /^error: "and" needs a list of filters/);
    const andAsOp = direct(['search', 'x', '--filter', '{"op":"and","value":[]}']);
    assert.match(andAsOp.err, /"and" is not an op but a node of its own/);
    const badImportance = direct(['search', 'x', '--filter', '{"field":"importance","op":"gt","value":"high"}']);
    assert.match(badImportance.err, /the value for field importance \(op gt\) must be a number, not a string/);
  });

  it('search output: no «markers» and no ids when piped; bold matches with FORCE_COLOR; --json unchanged', () => {
    const plain = direct(['search', 'retries']);
    assert.equal(plain.code, 0, plain.err);
    assert.match(plain.out, /1\. project\.cli\/retryPolicy/);
    assert.match(plain.out, /maxRetries of 3/);
    assert.doesNotMatch(plain.out, /[«»]/);
    assert.doesNotMatch(plain.out, UUID);
    assert.ok(!plain.out.includes(ESC), 'no colour into a pipe');
    const forced = direct(['search', 'retries'], { FORCE_COLOR: '1' });
    assert.ok(forced.out.includes(`${ESC}1m${ESC}33mmaxRetries${ESC}39m${ESC}22m`), JSON.stringify(forced.out));
    const noColour = direct(['search', 'retries'], { FORCE_COLOR: '0', NO_COLOR: '1' });
    assert.ok(!noColour.out.includes(ESC));
    const json = JSON.parse(direct(['search', 'retries', '--json'], { FORCE_COLOR: '1' }).out);
    assert.match(json.hits[0].snippet, /«maxRetries»/);
    assert.match(json.hits[0].memory.id, UUID);
  });

  it('writes say what happened without "at position N" (kept in --json)', () => {
    const add = direct(['add', 'project.cli', 'pos', 'v']);
    assert.equal(add.out.split('\n')[0], 'created project.cli/pos v1');
    assert.doesNotMatch(direct(['delete', 'project.cli', 'pos']).out, /position/);
    assert.equal(typeof JSON.parse(direct(['add', 'project.cli', 'pos2', 'v', '--json']).out).position, 'number');
  });

  it('status names the project namespace the editor uses, and "." writes there', () => {
    const s = direct(['status'], {}, { cwd: path.join(repo, 'src') });
    assert.match(s.out, /^project: +project\.web-app \(from the git remote of .*src\): the editor's "This project"/m);
    assert.equal(JSON.parse(direct(['status', '--json'], {}, { cwd: repo }).out).project.namespace, 'project.web-app');
    const add = direct(['add', '.', 'db-choice', 'PostgreSQL 16', '--json'], {}, { cwd: repo });
    assert.equal(JSON.parse(add.out).memory.namespace, 'project.web-app');
    const sub = direct(['add', '.api', 'style', 'REST', '--json'], {}, { cwd: repo });
    assert.equal(JSON.parse(sub.out).memory.namespace, 'project.web-app.api');
    assert.equal(add.err, '', 'a write to the project namespace: no note');
    const slip = direct(['add', 'project.myapp', 'test-runner', 'node:test'], {}, { cwd: repo });
    assert.equal(slip.code, 0);
    assert.match(
      slip.err,
      /^note: this repository's project namespace \(the editor's "This project"\) is project\.web-app, so project\.myapp will not show there; "\." writes to project\.web-app\n$/,
    );
    assert.equal(direct(['add', 'project.myapp', 'other', 'x'], {}, { cwd: dir }).err, '', 'outside a repository: no note');
    const list = direct(['list', '--root', '.', '--no-user', '--json'], {}, { cwd: repo });
    assert.deepEqual(
      JSON.parse(list.out)
        .items.map((m: { key: string }) => m.key)
        .sort(),
      ['db-choice', 'style'],
    );
  });

  it('a root that names no namespace is a warning with the nearest existing one', () => {
    assert.equal(direct(['add', 'user', 'editor', 'vim']).code, 0);
    const typo = direct(['list', '--root', 'project.clj']);
    assert.equal(typo.code, 0);
    assert.match(typo.err, /^warning: no namespace project\.clj exists; did you mean project\.cli\? \(only user\.\* memories can match/m);
    const none = direct(['search', 'retries', '--root', 'project.doesnotexist', '--no-user']);
    assert.match(none.err, /warning: no namespace project\.doesnotexist exists/);
    assert.doesNotMatch(none.err, /user\.\*/);
    assert.equal(direct(['list', '--root', 'project.cli']).err, '', 'an existing root: no warning');
  });

  it('an import from a file counts N/total', () => {
    const file = path.join(dir, 'all.jsonl');
    assert.equal(direct(['export', file]).code, 0);
    const total = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{"type":"memory"')).length;
    assert.ok(total >= 3);
    const r = cli(['import', file, '--direct'], { CAIRN_DB: path.join(dir, 'other.db'), XDG_RUNTIME_DIR: dir });
    assert.equal(r.code, 0, r.err);
    assert.match(r.err, new RegExp(`imported ${total}/${total} memories`));
  });
});

describe('cli rebuild-index follows the re-embed', () => {
  let d: SpawnedDaemon;
  before(async () => {
    d = await spawnDaemon({ args: [] }); // with embeddings (CAIRN_MODEL=builtin in the test environment)
  });
  after(async () => d.stop());

  it('returns when the vector index is ready and says so', () => {
    const env = { CAIRN_DB: d.db, XDG_RUNTIME_DIR: d.dir };
    for (let i = 0; i < 40; i++) assert.equal(cli(['add', 'project.re', `k${i}`, `memory number ${i} about retries`], env).code, 0);
    const r = cli(['rebuild-index'], env);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /^re-embedding \d+ memories with \S+\nvector index ready: 40 memories with \S+\n$/);
    const st = JSON.parse(cli(['status', '--json'], env).out);
    assert.equal(st.embeddings.state, 'ready');
    assert.equal(st.embeddings.pending, 0);
  });
});
