/**
 * The anchor re-location algorithm (daemon/src/text/anchor-locate.ts): unit cases, then a corpus of edits generated
 * deterministically (moves, insertions above and below, symbol renames, deletions, reformatting, copies of the
 * anchored lines, edits inside them, rewrites). Each line of a generated file carries an identity that survives edits
 * of its text, so the right answer is known: the span of the anchored lines that survive, or stale when none does.
 * Asserted: at least 95% re-located exactly right, and no anchor pointing at lines that are not its own.
 */
import * as assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkAt, fingerprint, locate, type AnchorFacts } from '../../daemon/src/text/anchor-locate';

const lines = (...l: string[]) => l.join('\n') + '\n';

const BASE = lines(
  'import { round } from "./money";',
  '',
  'export function computeTotal(items: Item[]): number {',
  '  let total = 0;',
  '  for (const item of items) total += item.price * item.quantity;',
  '  return round(total, 2);',
  '}',
  '',
  'export function describe(item: Item): string {',
  '  return `${item.name} x${item.quantity}`;',
  '}',
);

function anchorOf(text: string, start: number, end: number, symbol?: string): AnchorFacts {
  const fp = fingerprint(text, start, end);
  assert.ok(fp, 'lines in range');
  return { startLine: start, endLine: end, ...(symbol ? { symbol } : {}), ...fp };
}

describe('anchor fingerprint', () => {
  it('records a hash, the trimmed lines, per-line hashes and the context', () => {
    const fp = fingerprint(BASE, 4, 6)!;
    assert.match(fp.hash, /^[0-9a-f]{16}$/);
    assert.equal(fp.excerpt, 'let total = 0;\nfor (const item of items) total += item.price * item.quantity;\nreturn round(total, 2);');
    assert.equal(fp.lines!.length, 12);
    assert.equal(fp.context.length, 16);
  });

  it('ignores whitespace: re-indented and re-wrapped code has the same hash', () => {
    const a = fingerprint(lines('if (x) {', '  y = 1;', '}'), 1, 3)!;
    const b = fingerprint(lines('if (x)   {', '      y =', '        1;', '}'), 1, 4)!;
    assert.equal(a.hash, b.hash);
  });

  it('is null for lines outside the file', () => {
    assert.equal(fingerprint(BASE, 11, 12), null);
    assert.equal(fingerprint(BASE, 0, 1), null);
    assert.equal(fingerprint(BASE, 5, 4), null);
  });

  it('cuts a long excerpt and marks the cut', () => {
    const long = lines(...Array.from({ length: 40 }, (_, i) => `const value${i} = compute(${i}, "some text that is long");`));
    const fp = fingerprint(long, 1, 40)!;
    assert.equal(fp.excerpt.length, 240);
    assert.ok(fp.excerpt.endsWith('…'));
  });
});

describe('anchor locate', () => {
  const a = anchorOf(BASE, 4, 6, 'computeTotal');

  it('exact at the same place', () => {
    assert.deepEqual(locate(a, BASE), { status: 'exact', startLine: 4, endLine: 6 });
  });

  it('follows lines inserted above', () => {
    const text = '// header\n// another\n' + BASE;
    assert.deepEqual(locate(a, text), { status: 'moved', startLine: 6, endLine: 8 });
  });

  it('follows a function moved below another', () => {
    const l = BASE.split('\n');
    const moved = [l[0], l[1], ...l.slice(8, 11), '', ...l.slice(2, 7), ''].join('\n');
    assert.deepEqual(locate(a, moved), { status: 'moved', startLine: 8, endLine: 10 });
  });

  it('finds code with a renamed variable as similar, at its place', () => {
    const text = BASE.replace(/\btotal\b/g, 'sum');
    const r = locate(a, text);
    assert.equal(r.status, 'similar');
    assert.deepEqual(r.status === 'similar' && [r.startLine, r.endLine], [4, 6]);
  });

  it('grows with a line inserted inside the anchored lines', () => {
    const text = BASE.replace('  let total = 0;\n', '  let total = 0;\n  if (items.length === 0) return 0;\n');
    const r = locate(a, text);
    assert.deepEqual(r.status === 'similar' && [r.startLine, r.endLine], [4, 7]);
  });

  it('is stale when the anchored lines are deleted', () => {
    const text = BASE.split('\n')
      .filter((_, i) => i < 3 || i > 5)
      .join('\n');
    const r = locate(a, text);
    assert.equal(r.status, 'stale');
  });

  it('is stale when the code changed beyond recognition', () => {
    const text = BASE.replace(
      / {2}let total[\s\S]*?return round\(total, 2\);/,
      '  const xs = await fetchPrices(items.map((i) => i.sku));\n  return xs.reduce(add, 0n);',
    );
    const r = locate(a, text);
    assert.equal(r.status, 'stale');
    assert.ok(r.status === 'stale' && r.reason.includes('no longer'));
  });

  it('picks the copy whose neighbours agree when the lines appear twice', () => {
    const l = BASE.split('\n');
    const text = [...l.slice(0, 1), '', 'function copy() {', ...l.slice(3, 6), '}', ...l.slice(1)].join('\n');
    assert.deepEqual(locate(a, text), { status: 'moved', startLine: 10, endLine: 12 });
  });

  it('does not take short common code found elsewhere for the anchored line', () => {
    const text = lines('function a() {', '  return total;', '}', '', 'function b() {', '  log("b");', '  return total;', '}');
    const one = anchorOf(text, 2, 2);
    const without = lines('function a() {', '}', '', 'function other() {', '  log("b");', '  return total;', '}');
    assert.equal(locate(one, without).status, 'stale');
  });

  it('falls back to the symbol when a whole function moved and changed', () => {
    const fn = [
      'function computeTotal(items) {',
      '  const subtotal = items.reduce((s, i) => s + i.price, 0);',
      '  const taxed = subtotal * 1.2;',
      '  return taxed;',
      '}',
    ];
    const text = lines('function other() {', '  return 1;', '}', ...fn, 'function last() {', '  return 2;', '}');
    const b = anchorOf(text, 4, 8, 'computeTotal');
    const changed = lines(
      ...fn.map((l) => l.replace('const taxed = subtotal * 1.2;', 'const withTax = applyTax(subtotal, region, rates);')),
      'function other() {',
      '  return 1;',
      '}',
      'function last() {',
      '  return 2;',
      '}',
    );
    const r = locate(b, changed);
    assert.equal(r.status, 'symbol', JSON.stringify(r));
    assert.deepEqual(r.status === 'symbol' && [r.startLine, r.endLine], [1, 5]);
    // without the symbol the same change is stale: moved and changed, its neighbours gone
    assert.equal(locate({ ...b, symbol: undefined }, changed).status, 'stale');
  });

  it('symbol-only anchors: present while the symbol is in the file, stale when it is gone', () => {
    assert.deepEqual(locate({ symbol: 'Billing.computeTotal' }, BASE), { status: 'present' });
    assert.equal(locate({ symbol: 'computeTotal' }, BASE.replace(/computeTotal/g, 'sum')).status, 'stale');
    assert.deepEqual(locate({}, BASE), { status: 'present' });
  });

  it('anchors without a fingerprint are unknown', () => {
    assert.deepEqual(locate({ startLine: 3, endLine: 4 }, BASE), { status: 'unknown' });
  });

  it('checkAt: exact, similar, mismatch at the recorded lines', () => {
    assert.equal(checkAt(a, BASE), 'exact');
    assert.equal(checkAt(a, BASE.replace('round(total, 2)', 'round(total, 3)')), 'similar');
    assert.equal(checkAt(a, '// moved\n' + BASE), 'mismatch');
    assert.equal(checkAt(a, 'x\n'), 'mismatch');
    assert.equal(checkAt({ startLine: 1 }, BASE), 'unknown');
  });
});

// ---------------------------------------------------------------------------
// the corpus
// ---------------------------------------------------------------------------
interface Line {
  id: number;
  text: string;
}
let nextId = 1;
const L = (text: string): Line => ({ id: nextId++, text });

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const VERBS = ['compute', 'load', 'save', 'parse', 'render', 'validate', 'fetch', 'update', 'build', 'apply', 'merge', 'resolve'];
const NOUNS = ['Invoice', 'Order', 'Customer', 'Session', 'Token', 'Report', 'Ledger', 'Payment', 'Cart', 'Address', 'Policy', 'Quote'];
const VARS = ['total', 'count', 'result', 'items', 'entry', 'value', 'rows', 'limit', 'offset', 'buffer', 'cache', 'state'];
const FIELDS = ['price', 'quantity', 'name', 'id', 'createdAt', 'status', 'amount', 'region', 'owner', 'weight'];
const TYPES = ['number', 'string', 'boolean', 'Item[]', 'Record<string, number>', 'Promise<void>'];

interface Fn {
  name: string;
  lines: Line[];
}

function makeFunction(r: () => number, name: string): Fn {
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const v = pick(VARS);
  const w = pick(VARS.filter((x) => x !== v));
  const f = pick(FIELDS);
  const n = 1 + Math.floor(r() * 97);
  const body: string[] = [];
  const shape = Math.floor(r() * 4);
  if (shape === 0) {
    // a getter-like near-duplicate: many of these look alike
    body.push(`  return this.${f};`);
  } else {
    body.push(`  let ${v} = ${n};`);
    const stmts = 2 + Math.floor(r() * 8);
    for (let i = 0; i < stmts; i++) {
      const k = Math.floor(r() * 6);
      if (k === 0) body.push(`  for (const ${w} of input.${pick(FIELDS)}s) ${v} += ${w}.${pick(FIELDS)} * ${1 + Math.floor(r() * 9)};`);
      else if (k === 1) body.push(`  if (${v} > ${Math.floor(r() * 1000)}) {`, `    log.warn("${name}: ${v} over limit", ${v});`, '  }');
      else if (k === 2) body.push(`  const ${pick(VARS)}${i} = await ${pick(VERBS)}${pick(NOUNS)}(${v}, "${pick(FIELDS)}");`);
      else if (k === 3) body.push(`  ${v} = Math.max(${v}, input.${pick(FIELDS)} ?? ${Math.floor(r() * 50)});`);
      else if (k === 4) body.push(`  // ${pick(VERBS)} the ${pick(NOUNS).toLowerCase()} before the ${pick(FIELDS)} check`);
      else body.push(`  cache.set(\`${name}:\${input.${pick(FIELDS)}}\`, ${v});`);
    }
    body.push(`  return ${v};`);
  }
  const sig =
    shape === 0 ? `  get ${name}(): ${pick(TYPES)} {` : `export async function ${name}(input: ${pick(NOUNS)}): Promise<${pick(TYPES)}> {`;
  const close = shape === 0 ? '  }' : '}';
  return { name, lines: [sig, ...body, close, ''].map(L) };
}

function makeFile(r: () => number, fns = 12): Fn[] {
  const names = new Set<string>();
  const out: Fn[] = [{ name: '', lines: ['import { log, cache } from "./runtime";', ''].map(L) }];
  while (out.length <= fns) {
    const name = VERBS[Math.floor(r() * VERBS.length)] + NOUNS[Math.floor(r() * NOUNS.length)];
    if (names.has(name)) continue;
    names.add(name);
    out.push(makeFunction(r, name));
  }
  return out;
}

const flat = (fns: Fn[]): Line[] => fns.flatMap((f) => f.lines);
const render = (ls: Line[]): string => ls.map((l) => l.text).join('\n') + '\n';

type EditKind =
  | 'insert-above'
  | 'insert-below'
  | 'delete-other'
  | 'move'
  | 'rename-symbol'
  | 'rename-variable'
  | 'delete-anchored'
  | 'reformat'
  | 'duplicate'
  | 'edit-inside'
  | 'insert-inside'
  | 'rewrite'
  | 'move-and-insert-above'
  | 'insert-above-and-edit-inside';
const KINDS: EditKind[] = [
  'insert-above',
  'insert-below',
  'delete-other',
  'move',
  'rename-symbol',
  'rename-variable',
  'delete-anchored',
  'reformat',
  'duplicate',
  'edit-inside',
  'insert-inside',
  'rewrite',
  'move-and-insert-above',
  'insert-above-and-edit-inside',
];

interface Case {
  kind: EditKind;
  anchor: AnchorFacts;
  after: string;
  /** 1-based [start, end] of the anchored lines after the edit, or null when they are gone. */
  expected: [number, number] | null;
}

function makeCase(seed: number, kind: EditKind): Case | null {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  let fns = makeFile(r, 8 + Math.floor(r() * 10));
  // the anchor: a whole function, a few lines inside one, or one line
  const fi = 1 + Math.floor(r() * (fns.length - 1));
  const fn = fns[fi];
  const shape = r();
  const bodyEnd = fn.lines.length - 2; // index of the closing brace
  let from: number;
  let to: number;
  if (shape < 0.35 || bodyEnd < 3) {
    from = 0;
    to = bodyEnd;
  } else if (shape < 0.75) {
    from = 1 + Math.floor(r() * (bodyEnd - 1));
    to = Math.min(bodyEnd - 1, from + 1 + Math.floor(r() * 3));
  } else {
    from = 1 + Math.floor(r() * (bodyEnd - 1));
    to = from;
  }
  const anchored = new Set(fn.lines.slice(from, to + 1).map((l) => l.id));
  const before = flat(fns);
  const startLine = before.findIndex((l) => l.id === fn.lines[from].id) + 1;
  const endLine = startLine + (to - from);
  const anchor: AnchorFacts = { startLine, endLine, symbol: fn.name, ...fingerprint(render(before), startLine, endLine)! };

  const others = () => fns.map((_, i) => i).filter((i) => i > 0 && i !== fns.indexOf(fn));
  const insertAt = (at: number, count: number) => {
    const extra: Fn[] = [];
    for (let i = 0; i < count; i++) extra.push(makeFunction(r, `added${seed}x${i}`));
    fns = [...fns.slice(0, at), ...extra, ...fns.slice(at)];
  };
  const renameEverywhere = (from: string, to: string) => {
    const re = new RegExp(`\\b${from}\\b`, 'g');
    for (const f of fns) for (const l of f.lines) l.text = l.text.replace(re, to);
  };
  const moveFn = () => {
    const rest = fns.filter((f) => f !== fn);
    const at = 1 + Math.floor(r() * (rest.length - 1));
    if (rest[at - 1] === fns[fns.indexOf(fn) - 1]) return false;
    fns = [...rest.slice(0, at), fn, ...rest.slice(at)];
    return true;
  };

  switch (kind) {
    case 'insert-above':
      insertAt(1 + Math.floor(r() * fns.indexOf(fn)), 1 + Math.floor(r() * 3));
      break;
    case 'insert-below':
      insertAt(fns.indexOf(fn) + 1 + Math.floor(r() * (fns.length - fns.indexOf(fn))), 1 + Math.floor(r() * 3));
      break;
    case 'delete-other': {
      const o = others();
      const drop = new Set([pick(o), pick(o)]);
      fns = fns.filter((_, i) => !drop.has(i));
      break;
    }
    case 'move':
      if (!moveFn()) return null;
      break;
    case 'move-and-insert-above':
      if (!moveFn()) return null;
      insertAt(1, 1);
      break;
    case 'rename-symbol':
      renameEverywhere(
        fn.name,
        fn.name.replace(/^[a-z]+/, (v) => (v === 'compute' ? 'calculate' : 'handle')),
      );
      break;
    case 'rename-variable': {
      const words = render(fn.lines.slice(from, to + 1)).match(
        /\b(total|count|result|items|entry|value|rows|limit|offset|buffer|cache|state)\b/,
      );
      if (!words) return null;
      for (const l of fn.lines) l.text = l.text.replace(new RegExp(`\\b${words[0]}\\b`, 'g'), words[0] + 'Next');
      break;
    }
    case 'delete-anchored':
      fn.lines = fn.lines.filter((l) => !anchored.has(l.id));
      break;
    case 'reformat':
      for (const l of fn.lines) {
        l.text = l.text.replace(/^( +)/, (s) => s + s).replace(/, /g, ',  ');
        // wrap a long line in two (both halves keep the line's identity)
      }
      {
        const i = fn.lines.findIndex((l) => anchored.has(l.id) && l.text.includes(' = ') && l.text.length > 30);
        if (i >= 0) {
          const [head, tail] = fn.lines[i].text.split(/ = (.*)/s);
          fn.lines.splice(i, 1, { id: fn.lines[i].id, text: head + ' =' }, { id: fn.lines[i].id, text: '      ' + tail });
        }
      }
      break;
    case 'duplicate': {
      // copy and paste, then rename the copy (two definitions of one name do not compile)
      const re = new RegExp(`\\b${fn.name}\\b`, 'g');
      const copy: Fn = { name: fn.name + 'Copy', lines: fn.lines.map((l) => L(l.text.replace(re, fn.name + 'Copy'))) };
      const o = others();
      const at = pick(o);
      fns = [...fns.slice(0, at), copy, ...fns.slice(at)];
      break;
    }
    case 'edit-inside':
    case 'insert-above-and-edit-inside': {
      const i = fn.lines.findIndex((l) => anchored.has(l.id) && /\d/.test(l.text));
      if (i < 0) return null;
      fn.lines[i].text = fn.lines[i].text.replace(/\d+/, (d) => String(Number(d) + 7));
      if (kind === 'insert-above-and-edit-inside') insertAt(1 + Math.floor(r() * fns.indexOf(fn)), 1);
      break;
    }
    case 'insert-inside': {
      if (to === from) return null;
      const i = fn.lines.findIndex((l) => l.id === [...anchored][1]);
      fn.lines.splice(i, 0, L('  assertInvariant(input, "checked before the loop");'));
      break;
    }
    case 'rewrite': {
      const i = fn.lines.findIndex((l) => anchored.has(l.id));
      const n = anchored.size;
      const fresh = Array.from({ length: Math.max(1, n) }, (_, k) =>
        L(`  telemetry.record(${seed}${k}, new Date().toISOString()) // rewritten`),
      );
      fn.lines.splice(i, n, ...fresh);
      break;
    }
  }
  const after = flat(fns);
  const pos = after.map((l, i) => (anchored.has(l.id) ? i + 1 : -1)).filter((i) => i > 0);
  return { kind, anchor, after: render(after), expected: pos.length ? [Math.min(...pos), Math.max(...pos)] : null };
}

describe('anchor corpus of generated edits', () => {
  it('re-locates at least 95% exactly and never points at wrong lines', () => {
    const byKind = new Map<EditKind, { n: number; right: number; safe: number; wrong: string[] }>();
    let total = 0;
    let right = 0;
    const wrong: string[] = [];
    for (let seed = 1; total < 1300; seed++) {
      const kind = KINDS[seed % KINDS.length];
      const c = makeCase(seed, kind);
      if (!c) continue;
      total++;
      const k = byKind.get(kind) ?? { n: 0, right: 0, safe: 0, wrong: [] };
      byKind.set(kind, k);
      k.n++;
      const got = locate(c.anchor, c.after);
      const span =
        got.status === 'exact' || got.status === 'moved' || got.status === 'similar' || got.status === 'symbol'
          ? [got.startLine, got.endLine]
          : null;
      if (c.expected === null ? got.status === 'stale' : span !== null && span[0] === c.expected[0] && span[1] === c.expected[1]) {
        right++;
        k.right++;
        continue;
      }
      // Not exactly right: acceptable only when it says stale, or covers most of the right lines (a boundary line off).
      if (span === null) {
        k.safe++;
        continue;
      }
      const e = c.expected;
      const overlap = e ? Math.max(0, Math.min(span[1], e[1]) - Math.max(span[0], e[0]) + 1) : 0;
      const union = e ? Math.max(span[1], e[1]) - Math.min(span[0], e[0]) + 1 : 1;
      if (overlap / union >= 0.5) {
        k.safe++;
        continue;
      }
      const why = `seed ${seed} ${kind}: expected ${JSON.stringify(c.expected)} got ${JSON.stringify(got)}`;
      wrong.push(why);
      k.wrong.push(why);
    }
    const table = [...byKind.entries()].map(([kind, k]) => `${kind}: ${k.right}/${k.n} right, ${k.safe} safe, ${k.wrong.length} wrong`);
    const share = right / total;
    console.log(`anchor corpus: ${right}/${total} = ${(share * 100).toFixed(1)}% re-located right\n  ${table.join('\n  ')}`);
    assert.deepEqual(wrong, [], 'anchors pointing at lines that are not theirs');
    assert.ok(share >= 0.95, `${(share * 100).toFixed(1)}% re-located right`);
    // every kind of edit is in the corpus, and deletions and rewrites are most of the stale verdicts
    assert.equal(byKind.size, KINDS.length);
  });
});
