/** The MCP session scope: project namespace derivation and the session boundary. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { boundedScope, checkNamespace, inScope, projectNamespaceFor, repoNameFromUrl, resolveMcpScope } from '../../daemon/src/mcp/scope';
import { tempDir } from '../helpers';
import { fakeRepo, rmDir } from './harness';

test('repository names from remote URLs', () => {
  assert.equal(repoNameFromUrl('git@github.com:acme/Web-App.git'), 'Web-App');
  assert.equal(repoNameFromUrl('https://gitlab.example.com/group/sub/api-server.git/'), 'api-server');
  assert.equal(repoNameFromUrl('ssh://git@host:2222/x/My.Repo'), 'My.Repo');
  assert.equal(repoNameFromUrl('/srv/git/tools.git'), 'tools');
});

test('project namespace: origin remote first, then any remote, then the repository folder, from any subdirectory', () => {
  const dir = tempDir('cairn-scope-');
  try {
    const a = fakeRepo(dir, 'clone-a', 'git@github.com:acme/Web-App.git');
    fs.mkdirSync(path.join(a, 'src', 'x'), { recursive: true });
    assert.deepEqual(projectNamespaceFor(path.join(a, 'src', 'x')), { namespace: 'project.web-app', source: 'git-remote' });

    const b = path.join(dir, 'clone-b');
    fs.mkdirSync(path.join(b, '.git'), { recursive: true });
    fs.writeFileSync(
      path.join(b, '.git', 'config'),
      '[remote "upstream"]\n\turl = https://example.com/u/Upstream-Name.git\n[remote "origin"]\n\turl = https://example.com/me/Fork_Name.git\n',
    );
    assert.equal(projectNamespaceFor(b).namespace, 'project.fork_name');

    const c = fakeRepo(dir, 'No Remote Here');
    assert.deepEqual(projectNamespaceFor(path.join(c)), { namespace: 'project.no-remote-here', source: 'folder' });

    // A worktree: .git is a file pointing at <main>/.git/worktrees/<name>, whose commondir holds the config.
    const wt = path.join(dir, 'wt');
    const gitdir = path.join(a, '.git', 'worktrees', 'wt');
    fs.mkdirSync(gitdir, { recursive: true });
    fs.writeFileSync(path.join(gitdir, 'commondir'), '../..\n');
    fs.mkdirSync(wt);
    fs.writeFileSync(path.join(wt, '.git'), `gitdir: ${gitdir}\n`);
    assert.equal(projectNamespaceFor(wt).namespace, 'project.web-app');

    const plain = path.join(dir, 'Plain Folder!');
    fs.mkdirSync(plain);
    // tempDir has no .git above it, so the folder itself names the project.
    assert.equal(projectNamespaceFor(plain).namespace, 'project.plain-folder');
  } finally {
    rmDir(dir);
  }
});

test('resolveMcpScope: --root, then CAIRN_SCOPE_ROOT, then the project; malformed roots are InvalidNamespace', () => {
  const dir = tempDir('cairn-scope-');
  try {
    const repo = fakeRepo(dir, 'svc', 'git@h:o/Billing.git');
    assert.deepEqual(resolveMcpScope({ root: 'team.a', cwd: repo, env: { CAIRN_SCOPE_ROOT: 'team.b' } }), {
      root: 'team.a',
      source: 'option',
    });
    assert.deepEqual(resolveMcpScope({ cwd: repo, env: { CAIRN_SCOPE_ROOT: 'team.b' } }), { root: 'team.b', source: 'env' });
    assert.deepEqual(resolveMcpScope({ cwd: repo, env: {} }), { root: 'project.billing', source: 'git-remote', dir: repo });
    assert.throws(
      () => resolveMcpScope({ root: 'Team A', env: {} }),
      (e: { data?: { name: string; field: string } }) => e.data?.name === 'InvalidNamespace' && e.data.field === '--root',
    );
    assert.throws(
      () => resolveMcpScope({ env: { CAIRN_SCOPE_ROOT: 'a..b' } }),
      (e: { data?: { name: string; field: string } }) => e.data?.name === 'InvalidNamespace' && e.data.field === 'CAIRN_SCOPE_ROOT',
    );
  } finally {
    rmDir(dir);
  }
});

test('the session boundary: the root subtree and user, by segment, never by string prefix', () => {
  const s = { root: 'project.web', source: 'option' as const };
  assert.ok(inScope(s, 'project.web'));
  assert.ok(inScope(s, 'project.web.api'));
  assert.ok(inScope(s, 'user'));
  assert.ok(inScope(s, 'user.preferences'));
  assert.ok(!inScope(s, 'project.webapp'));
  assert.ok(!inScope(s, 'project'));
  assert.ok(!inScope(s, 'users'));
  assert.throws(
    () => checkNamespace(s, 'project.webapp', 'namespace'),
    (e: { data?: { name: string } }) => e.data?.name === 'InvalidParams',
  );
  assert.throws(
    () => checkNamespace(s, 'project.web.%', 'namespace'),
    (e: { data?: { name: string } }) => e.data?.name === 'InvalidNamespace',
  );

  assert.deepEqual(boundedScope(s, undefined), { root: 'project.web', includeUser: true });
  assert.deepEqual(boundedScope(s, { includeUser: false }), { root: 'project.web', includeUser: false });
  assert.deepEqual(boundedScope(s, { root: 'project.web.api' }), { root: 'project.web.api' });
  assert.deepEqual(boundedScope(s, { namespaces: ['user', 'project.web'] }), { namespaces: ['user', 'project.web'] });
  assert.throws(
    () => boundedScope(s, { root: 'project' }),
    (e: { data?: { field: string } }) => e.data?.field === 'scope.root',
  );
  assert.throws(
    () => boundedScope(s, { namespaces: ['project.web', 'other'] }),
    (e: { data?: { field: string } }) => e.data?.field === 'scope.namespaces[1]',
  );
});
