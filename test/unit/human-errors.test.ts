/**
 * Errors and CLI text a person reads: validation failures said in words (fromZodError, explainFilter), hints as
 * data spelled per client (errorSentence), "did you mean", per-command help and the colour rules.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { colourFor, highlight, paint } from '../../daemon/src/cli/colour';
import { errorLines, flagSpelling } from '../../daemon/src/cli/error-text';
import { commandEntry, commandHelp } from '../../daemon/src/cli/help';
import { usageCommands } from '../../daemon/src/cli/main';
import { editDistance, nearest, unknownOption } from '../../daemon/src/cli/suggest';
import { CairnError, errorSentence, fromZodError } from '../../daemon/src/protocol/errors';
import { explainFilter } from '../../daemon/src/protocol/filter-explain';
import { Filter, UpsertParams } from '../../daemon/src/protocol/types';
import { refuseStaleVersion } from '../../daemon/src/store/write-rules';

const withFilter = z.object({ filter: Filter.optional() }).strict();
function filterError(filter: unknown): CairnError {
  const r = withFilter.safeParse({ filter });
  assert.ok(!r.success, 'the filter is invalid');
  return fromZodError(r.error, 'memory/list', { input: { filter }, explain: (f, v) => (f === 'filter' ? explainFilter(v) : null) });
}

describe('validation errors say what is wrong, in words', () => {
  it('a params field: type, range, enum, date, emptiness; data.request names the method', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ namespace: 'user', key: 'k', value: 'v', importance: 'high' }, 'importance', /^importance must be a number, not a string$/],
      [{ namespace: 'user', key: 'k', value: 'v', kind: 'thought' }, 'kind', /^kind must be one of "fact", .*"note", not "thought"$/],
      [
        { namespace: 'user', key: 'k', value: 'v', expiresAt: 'tomorrow' },
        'expiresAt',
        /^expiresAt must be an ISO 8601 date .*not "tomorrow"$/,
      ],
      [{ namespace: 'user', key: 'k' }, 'value', /^value is missing: it must be a string$/],
    ];
    for (const [params, field, message] of cases) {
      const r = UpsertParams.safeParse(params);
      assert.ok(!r.success);
      const e = fromZodError(r.error, 'memory/upsert', { input: params });
      assert.equal(e.data.name, 'InvalidParams');
      assert.equal(e.data.field, field);
      assert.equal(e.data.request, 'memory/upsert');
      assert.match(e.message, message);
      assert.doesNotMatch(e.message, /Invalid input|expected .*, received/);
    }
  });

  it('a filter blames the node the caller wrote, not the union branch that got furthest', () => {
    const cases: [unknown, string, RegExp][] = [
      [{ field: 'colour', op: 'eq', value: 'red' }, 'filter.field', /^"colour" is not a field a filter can test; the fields are kind, /],
      [{ and: null }, 'filter.and', /^"and" needs a list of filters, e.g\. .*, not null$/],
      [{ or: [] }, 'filter.or', /^"or" needs at least one filter in its list$/],
      [{ op: 'and', value: [] }, 'filter.op', /^"and" is not an op but a node of its own/],
      [
        {
          and: [
            { field: 'kind', op: 'eq', value: 'note' },
            { field: 'kind', op: 'like', value: 'n%' },
          ],
        },
        'filter.and[1].op',
        /^op "like" does not apply to field kind; use one of eq, ne, in$/,
      ],
      [{ not: { field: 'tags', op: 'has' } }, 'filter.not.value', /^the filter on field tags \(op has\) has no "value"$/],
      [
        { field: 'createdAt', op: 'lt', value: 'yesterday' },
        'filter.value',
        /^the value for field createdAt \(op lt\) must be an ISO 8601 date/,
      ],
      [{ field: 'kind', op: 'eq', value: 'fact', x: 1 }, 'filter.x', /takes only "field", "op" and "value", not "x"$/],
      [{ property: 'team', op: 'near', value: 1 }, 'filter.op', /^op "near" does not apply to property "team"; use one of eq, ne, lt/],
      [7, 'filter', /^filter must be a filter object/],
    ];
    for (const [filter, field, message] of cases) {
      const e = filterError(filter);
      assert.equal(e.data.name, 'InvalidFilter', JSON.stringify(filter));
      assert.equal(e.data.field, field, JSON.stringify(filter));
      assert.match(e.message, message);
    }
  });

  it('explainFilter finds nothing wrong in a valid tree', () => {
    const ok: Filter = { and: [{ field: 'kind', op: 'in', value: ['note'] }, { not: { property: 'x', op: 'exists', value: true } }] };
    assert.ok(withFilter.safeParse({ filter: ok }).success);
    assert.equal(explainFilter(ok), null);
  });
});

describe('write refusals are sentences', () => {
  it('VersionConflict says which memory and what happened', () => {
    const p = { namespace: 'project.web', key: 'db', value: 'v' };
    const row = (version: number, deleted_at: number | null = null) =>
      ({ id: 'm1', version, deleted_at }) as unknown as Parameters<typeof refuseStaleVersion>[1];
    const message = (ifVersion: number, existing: Parameters<typeof refuseStaleVersion>[1]) => {
      try {
        refuseStaleVersion({ ...p, ifVersion }, existing);
      } catch (e) {
        assert.ok(e instanceof CairnError && e.data.name === 'VersionConflict');
        return e.message;
      }
      assert.fail('no conflict');
    };
    assert.equal(message(2, row(3)), 'project.web/db changed since it was read: it is at version 3, not 2');
    assert.equal(message(0, row(3)), 'project.web/db already exists (version 3)');
    assert.match(message(4, undefined), /^project\.web\/db is not there \(deleted, or never written\), but the write expected version 4$/);
    assert.match(message(1, row(1, 5)), /is not there/);
  });
});

describe('hints are data; each client spells them', () => {
  const deleted = new CairnError('Deleted', 'user/k was deleted at 2026-01-01T00:00:00.000Z by user', {
    field: 'key',
    hint: { param: 'restore', value: true, effect: 'to write it again' },
  });
  it('as the request param by default, as the CLI flag in the CLI', () => {
    assert.equal(errorSentence(deleted), 'user/k was deleted at 2026-01-01T00:00:00.000Z by user; pass restore: true to write it again');
    const flags = new Set(['restore', 'if-version']);
    assert.equal(flagSpelling(flags)('restore', true), '--restore');
    assert.equal(flagSpelling(flags)('ifVersion', 3), '--if-version 3');
    assert.equal(flagSpelling(flags)('idempotencyKey', 'x'), 'idempotencyKey: "x"', 'no such flag: the param');
    assert.equal(errorSentence(new CairnError('NotFound', 'no such memory')), 'no such memory');
  });
  it('the CLI: a sentence, then the code in a dim details line', () => {
    assert.deepEqual(errorLines(deleted, paint(false), new Set(['restore'])), [
      'error: user/k was deleted at 2026-01-01T00:00:00.000Z by user; pass --restore to write it again.',
      '  (code Deleted 1003, field key)',
    ]);
    const [, details] = errorLines(deleted, paint(true), new Set(['restore']));
    assert.equal(details, '\x1b[2m  (code Deleted 1003, field key)\x1b[22m');
  });
});

describe('cli: did you mean, per-command help, colour', () => {
  it('nearest command within a third of the word, prefixes count, far words get nothing', () => {
    assert.equal(editDistance('serach', 'search'), 1);
    const cmds = usageCommands();
    for (const c of ['add', 'search', 'rebuild-index', 'verify-receipt', 'delete', 'purge', 'help']) assert.ok(cmds.includes(c), c);
    assert.equal(nearest('serch', cmds), 'search');
    assert.equal(nearest('lsit', cmds), 'list');
    assert.equal(nearest('rebuild', cmds), 'rebuild-index');
    assert.equal(nearest('frobnicate', cmds), undefined);
    assert.equal(nearest('project.clj', ['project.cli', 'project.web', 'user']), 'project.cli');
  });

  it('an unknown --option gets the nearest known one; values and arguments after -- are not options', () => {
    const known = ['tags', 'kind', 'root', 'no-user', 'json'];
    assert.deepEqual(unknownOption(['add', 'user', 'k', 'v', '--tag', 'x'], known), { option: '--tag', near: '--tags' });
    assert.deepEqual(unknownOption(['list', '--rot=project.x'], known), { option: '--rot', near: '--root' });
    assert.deepEqual(unknownOption(['list', '--colour'], known), { option: '--colour' });
    assert.equal(unknownOption(['search', '--json', '--', '--tag'], known), undefined);
    assert.equal(unknownOption(['add', 'user', 'k', '-'], known), undefined);
    assert.equal(
      unknownOption(['add', 'user', 'k', 'v', '--tags', '--odd-tag'], known, (n) => n === 'tags'),
      undefined,
    );
  });

  it('a command entry is its lines of the usage text, sub-command lines included', () => {
    const usage = `x\n\nCommands:\n  add <a>      do a\n      [--flag]\n  delete|restore <id>  remove\n  ret [list]   rules\n  ret set R    set\n      [--n N]\n  other        o\n\nGlobal: --json\nExit codes: 0`;
    assert.equal(commandEntry(usage, 'add'), '  add <a>      do a\n      [--flag]');
    assert.equal(commandEntry(usage, 'restore'), '  delete|restore <id>  remove');
    assert.equal(commandEntry(usage, 'ret'), '  ret [list]   rules\n  ret set R    set\n      [--n N]');
    assert.equal(commandEntry(usage, 'nope'), undefined);
    assert.equal(commandHelp(usage, 'other'), 'Usage: cairn other        o\n\nGlobal: --json\nExit codes: 0');
  });

  it('colour: a TTY unless NO_COLOR; FORCE_COLOR wins; never on a dumb terminal', () => {
    assert.equal(colourFor({ isTTY: true }, {}), true);
    assert.equal(colourFor({ isTTY: false }, {}), false);
    assert.equal(colourFor({}, {}), false);
    assert.equal(colourFor({ isTTY: true }, { NO_COLOR: '1' }), false);
    assert.equal(colourFor({ isTTY: true }, { NO_COLOR: '' }), true, 'an empty NO_COLOR is unset (no-color.org)');
    assert.equal(colourFor({ isTTY: false }, { FORCE_COLOR: '1' }), true);
    assert.equal(colourFor({ isTTY: true }, { FORCE_COLOR: '0' }), false);
    assert.equal(colourFor({ isTTY: true }, { TERM: 'dumb' }), false);
  });

  it('highlights: bold on a terminal, unmarked otherwise', () => {
    assert.equal(highlight('uses «maxRetries» of «3»', paint(false)), 'uses maxRetries of 3');
    assert.equal(highlight('a «b» c', paint(true)), 'a \x1b[1m\x1b[33mb\x1b[39m\x1b[22m c');
  });
});
