import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, suite, test } from 'node:test';
import { deriveProjectNamespace, gitConfigPath, remoteUrls, repoNameFromUrl } from '../../project';

suite('project namespace', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cairn-project-'));
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test('remote URLs: origin first, quoted values, other sections ignored', () => {
    const cfg = [
      '[core]',
      '\turl = not-a-remote',
      '[remote "upstream"]',
      '\turl = https://example.com/up/Upstream.git',
      '[remote "origin"]',
      '\tfetch = +refs/heads/*:refs/remotes/origin/*',
      '\turl = "git@github.com:acme/Web-App.git"',
      '[branch "main"]',
      '\tremote = origin',
    ].join('\n');
    assert.deepEqual(remoteUrls(cfg), ['git@github.com:acme/Web-App.git', 'https://example.com/up/Upstream.git']);
  });

  test('repository names from every URL shape', () => {
    assert.equal(repoNameFromUrl('git@github.com:acme/Web-App.git'), 'Web-App');
    assert.equal(repoNameFromUrl('https://github.com/acme/cairn'), 'cairn');
    assert.equal(repoNameFromUrl('https://github.com/acme/cairn.git/'), 'cairn');
    assert.equal(repoNameFromUrl('ssh://git@host:2222/group/sub/My Repo.git'), 'My Repo');
    assert.equal(repoNameFromUrl('/srv/git/local-repo'), 'local-repo');
  });

  test('setting wins, then git remote, then folder name', () => {
    const repo = path.join(tmp, 'Checkout Dir');
    fs.mkdirSync(path.join(repo, '.git'), { recursive: true });
    fs.writeFileSync(path.join(repo, '.git', 'config'), '[remote "origin"]\n\turl = git@github.com:acme/Web-App.git\n');
    assert.deepEqual(deriveProjectNamespace(repo, 'team.web'), { namespace: 'team.web', source: 'setting' });
    assert.deepEqual(deriveProjectNamespace(repo, ''), { namespace: 'project.web-app', source: 'git-remote' });
    // An invalid setting is ignored here (config validation reports it).
    assert.deepEqual(deriveProjectNamespace(repo, 'Not Valid'), { namespace: 'project.web-app', source: 'git-remote' });
    const plain = path.join(tmp, 'My Folder');
    fs.mkdirSync(plain);
    assert.deepEqual(deriveProjectNamespace(plain, ''), { namespace: 'project.my-folder', source: 'folder' });
    assert.equal(deriveProjectNamespace(undefined, ''), null);
  });

  test('worktrees: a .git file pointing at the common dir', () => {
    const main = path.join(tmp, 'main');
    fs.mkdirSync(path.join(main, '.git', 'worktrees', 'wt'), { recursive: true });
    fs.writeFileSync(path.join(main, '.git', 'config'), '[remote "origin"]\n\turl = https://x/acme/Main-Repo.git\n');
    fs.writeFileSync(path.join(main, '.git', 'worktrees', 'wt', 'commondir'), '../..\n');
    const wt = path.join(tmp, 'wt');
    fs.mkdirSync(wt);
    fs.writeFileSync(path.join(wt, '.git'), `gitdir: ${path.join(main, '.git', 'worktrees', 'wt')}\n`);
    assert.equal(gitConfigPath(wt), path.join(main, '.git', 'config'));
    assert.equal(deriveProjectNamespace(wt, '')?.namespace, 'project.main-repo');
  });
});
