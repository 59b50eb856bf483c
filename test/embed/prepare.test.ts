import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { prepareText } from '../../daemon/src/embed';
import { isBlank } from '../../daemon/src/embed/prepare';

describe('prepareText: identifier splitting', () => {
  it('splits camelCase and PascalCase', () => {
    assert.equal(prepareText('getUserById'), 'get User By Id');
    assert.equal(prepareText('UserService.findAll()'), 'User Service.find All()');
  });

  it('splits acronyms from the following word', () => {
    assert.equal(prepareText('HTTPServer'), 'HTTP Server');
    assert.equal(prepareText('XMLHttpRequest'), 'XML Http Request');
    assert.equal(prepareText('parseJSONResponse'), 'parse JSON Response');
  });

  it('splits after digits but keeps letter+digit runs', () => {
    assert.equal(prepareText('utf8Decode base64 v2Api'), 'utf8 Decode base64 v2 Api');
  });

  it('turns underscores into spaces (snake_case, SCREAMING_CASE, dunder)', () => {
    assert.equal(prepareText('user_id MAX_RETRY_COUNT __init__'), 'user id MAX RETRY COUNT  init ');
    assert.equal(prepareText('http_status_code'), 'http status code');
  });

  it('leaves plain words, kebab-case, paths and non-ASCII text alone', () => {
    assert.equal(prepareText('The daemon uses WAL mode.'), 'The daemon uses WAL mode.');
    assert.equal(prepareText('cache-control src/embed/worker.ts'), 'cache-control src/embed/worker.ts');
    assert.equal(prepareText('café Ünïcode 日本語'), 'café Ünïcode 日本語');
  });

  it('keeps runs the model knows as one word', () => {
    const known = new Set(['javascript', 'github']);
    assert.equal(
      prepareText('JavaScript on GitHub with TypeScript', (w) => known.has(w)),
      'JavaScript on GitHub with Type Script',
    );
    assert.equal(prepareText('JavaScript'), 'Java Script');
  });

  it('handles empty input and rejects non-strings', () => {
    assert.equal(prepareText(''), '');
    assert.ok(isBlank(prepareText(' _ \n\t')));
    assert.throws(() => prepareText(undefined as unknown as string), TypeError);
  });
});
