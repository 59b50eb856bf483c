/** The relations graph's look (webview/src/graphstyle.ts): a colour per kind, readable labels, a layered layout. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MEMORY_KINDS } from '../../daemon/src/protocol/types';
import { graphLayout, graphStyle, KIND_COLORS, LABEL_WIDTH, nodeClasses } from '../../webview/src/graphstyle';

const theme: Record<string, string> = {
  '--vscode-charts-blue': '#0000ff',
  '--vscode-charts-purple': '#800080',
  '--vscode-charts-orange': '#ffa500',
  '--vscode-charts-green': '#008000',
  '--vscode-charts-yellow': '#ffff00',
  '--vscode-charts-red': '#ff0000',
  '--vscode-editor-background': '#101010',
  '--vscode-foreground': '#eeeeee',
};
const read = (n: string) => theme[n] ?? '';
const rule = (sel: string) => {
  const r = graphStyle(read).find((x) => x.selector === sel);
  assert.ok(r, `no rule for ${sel}`);
  return r.style;
};

describe('relations graph style', () => {
  it('gives every kind its own theme colour, used for its nodes', () => {
    assert.deepEqual(Object.keys(KIND_COLORS).sort(), [...MEMORY_KINDS].sort());
    const colours = MEMORY_KINDS.map((k) => rule(`node.kind-${k}`)['background-color']);
    assert.equal(new Set(colours).size, MEMORY_KINDS.length);
    assert.equal(rule('node.kind-fact')['background-color'], '#0000ff');
    assert.equal(rule('node.kind-note')['background-color'], '#ff0000');
  });

  it('puts node names and edge labels on the editor background, edge labels along their edge', () => {
    for (const sel of ['node', 'edge']) {
      const s = rule(sel);
      assert.equal(s['text-background-color'], '#101010');
      assert.ok(Number(s['text-background-opacity']) >= 0.8, `${sel} label background is nearly opaque`);
      assert.equal(s.color, '#eeeeee');
    }
    assert.equal(rule('edge')['text-rotation'], 'autorotate');
    assert.equal(rule('edge')['target-arrow-shape'], 'triangle');
    assert.equal(rule('node')['text-valign'], 'bottom');
    assert.equal(rule('node')['text-wrap'], 'ellipsis');
  });

  it('falls back to fixed colours when the page has no theme variables', () => {
    const s = graphStyle(() => '');
    const fact = s.find((x) => x.selector === 'node.kind-fact')!.style['background-color'];
    assert.match(String(fact), /^#[0-9a-f]{6}$/);
    assert.notEqual(fact, s.find((x) => x.selector === 'node.kind-note')!.style['background-color']);
  });

  it('classes a node by its kind, and marks the centre; an unknown kind gets no colour class', () => {
    assert.equal(nodeClasses('decision', true), 'kind-decision center');
    assert.equal(nodeClasses('fact', false), 'kind-fact');
    assert.equal(nodeClasses('bogus', false), '');
    assert.equal(nodeClasses(undefined, true), 'center');
  });

  it('lays out left to right with room for a cut node name between ranks', () => {
    const l = graphLayout();
    assert.equal(l.name, 'dagre');
    assert.equal(l.rankDir, 'LR');
    assert.ok(l.rankSep > LABEL_WIDTH, 'a node name (cut at LABEL_WIDTH) fits between two ranks');
    assert.ok(l.nodeSep >= 30, 'a name under a node and the next node of its rank do not touch');
  });
});
