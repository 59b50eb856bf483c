/**
 * Facts the settings descriptions (daemon/src/protocol/settings.ts, copied into extension/package.json) and the
 * docs state about the embedding models must agree with the models themselves: the built-in model's teacher is
 * what its config.json records, and every "distilled from X" anywhere names it (a description once said
 * all-MiniLM-L6-v2); a model id a setting defaults to is the one the README documents.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { Settings } from '../../daemon/src/protocol/settings';

const ROOT = path.resolve(__dirname, '..', '..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

/** The teacher's short name from the built-in model's own config (`sentence-transformers/all-mpnet-base-v2 (…)`). */
function builtinTeacher(): string {
  const cfg = JSON.parse(read('daemon/models/cairn-mpnet-static/config.json')) as unknown;
  const found = JSON.stringify(cfg).match(/"teacher":"(?:[\w.-]+\/)?([\w.-]+)/);
  assert.ok(found, 'the built-in model records its teacher');
  return found[1];
}

/** Every model named after "distilled from" in a text (case-insensitive, across a line break). */
function distilledFrom(text: string): string[] {
  return [...text.matchAll(/distill(?:ed|s)\s+(?:\S+\s+)?from\s+(?:the\s+)?`?([\w./-]+?)`?(?=[\s,;.)]|$)/gi)].map((m) =>
    m[1].replace(/^[\w.-]+\//, ''),
  );
}

const DOCS = [
  'README.md',
  'ARCHITECTURE.md',
  'daemon/models/cairn-mpnet-static/README.md',
  ...fs
    .readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

describe('doc facts: embedding models', () => {
  const teacher = builtinTeacher();

  it('the detector reads "distilled from" phrases', () => {
    assert.equal(teacher, 'all-mpnet-base-v2');
    assert.deepEqual(distilledFrom('a static model distilled from all-MiniLM-L6-v2). And distilled\nfrom `sentence-transformers/x-y`.'), [
      'all-MiniLM-L6-v2',
      'x-y',
    ]);
  });

  it("every settings description (and so the extension manifest) names the built-in model's real teacher", () => {
    const texts: [string, string][] = Object.entries(Settings).map(([k, d]) => [`settings ${k}`, d.description]);
    const manifest = JSON.parse(read('extension/package.json')) as {
      contributes: { configuration: { properties: Record<string, { markdownDescription?: string }> } };
    };
    for (const [k, p] of Object.entries(manifest.contributes.configuration.properties))
      texts.push([`extension/package.json ${k}`, p.markdownDescription ?? '']);
    let seen = 0;
    for (const [where, text] of texts)
      for (const name of distilledFrom(text)) {
        seen++;
        assert.equal(name, teacher, `${where} says the built-in model is distilled from ${name}`);
      }
    assert.ok(seen >= 2, 'the model setting states the teacher, in settings.ts and in the manifest');
  });

  it('the docs name the same teacher', () => {
    for (const f of DOCS)
      for (const name of distilledFrom(read(f))) assert.equal(name, teacher, `${f} says the built-in model is distilled from ${name}`);
  });

  it('the default transformer model of the settings is the one the README documents', () => {
    const readme = read('README.md');
    const d = Settings['cairn.embeddings.model'].default;
    assert.ok(readme.includes(d), `README.md does not mention the default model ${d}`);
  });
});
