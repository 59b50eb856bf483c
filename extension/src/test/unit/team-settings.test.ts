import * as assert from 'node:assert/strict';
import { suite, test } from 'node:test';
import { parseRoots, teamMismatch } from '../../../../daemon/src/team/roots';

/** The extension offers a restart when the daemon it uses does not serve the cairn.team.* settings. */
suite('team settings vs the running daemon', () => {
  const running = { url: 'postgres://alice:***@db.example:5432/cairn', roots: ['team', 'project.shared'] };
  test('no team URL set: nothing to check', () => {
    assert.equal(teamMismatch({ url: '', roots: 'team' }, undefined), null);
    assert.equal(teamMismatch({ url: '', roots: 'team' }, running), null);
  });
  test('same database (password and default port aside) and the same roots in any order: fine', () => {
    assert.equal(teamMismatch({ url: 'postgres://alice@db.example/cairn', roots: 'project.shared.*, team' }, running), null);
    assert.equal(teamMismatch({ url: 'postgres://alice:secret@db.example:5432/cairn', roots: 'team project.shared' }, running), null);
  });
  test('a daemon without team memory, another database or user, other roots: says which', () => {
    assert.match(teamMismatch({ url: 'postgres://alice@db.example/cairn', roots: 'team' }, undefined) ?? '', /no team database/);
    assert.match(
      teamMismatch({ url: 'postgres://alice@db.example/other', roots: 'team, project.shared' }, running) ?? '',
      /another team database/,
    );
    assert.match(
      teamMismatch({ url: 'postgres://bob@db.example/cairn', roots: 'team, project.shared' }, running) ?? '',
      /another team database/,
    );
    const roots = teamMismatch({ url: 'postgres://alice@db.example/cairn', roots: 'team' }, running) ?? '';
    assert.match(roots, /serves team roots project\.shared, team, the settings ask for team/);
  });
  test('roots parse as the daemon parses them', () => {
    assert.deepEqual(parseRoots('team.*, project.shared'), ['team', 'project.shared']);
    assert.deepEqual(parseRoots(''), ['team']);
  });
});
