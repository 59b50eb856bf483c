/**
 * How the relations graph looks, apart from cytoscape (so it is plain data the unit tests read): one chart colour
 * per memory kind (the legend under the graph uses the same ones), node names under their nodes and edge labels
 * on a background of the editor's own colour so a line or an arrow never runs through text, and a left-to-right
 * layered layout (dagre) that puts what links to the memory on its left and what it links to on its right.
 */
// types only: the protocol module's values would bring zod into the graph bundle
import type { MemoryKind } from '../../daemon/src/protocol/types';

/** The theme colour (a VS Code chart colour) of each kind; the legend's swatches use the same variables. */
export const KIND_COLORS: Record<MemoryKind, string> = {
  fact: '--vscode-charts-blue',
  preference: '--vscode-charts-purple',
  decision: '--vscode-charts-orange',
  procedure: '--vscode-charts-green',
  episode: '--vscode-charts-yellow',
  note: '--vscode-charts-red',
};
const KINDS = Object.keys(KIND_COLORS) as MemoryKind[];

/** Fallbacks for a page without VS Code's theme variables (VS Code's dark+ chart colours). */
const FALLBACK: Record<string, string> = {
  '--vscode-charts-blue': '#3794ff',
  '--vscode-charts-purple': '#b180d7',
  '--vscode-charts-orange': '#d18616',
  '--vscode-charts-green': '#89d185',
  '--vscode-charts-yellow': '#cca700',
  '--vscode-charts-red': '#f14c4c',
  '--vscode-foreground': '#cccccc',
  '--vscode-descriptionForeground': '#9d9d9d',
  '--vscode-editor-background': '#1e1e1e',
  '--vscode-focusBorder': '#0078d4',
};

/** Reads a theme variable (by name) as a colour; '' when the page does not define it. */
export type ThemeReader = (name: string) => string;

/** A cytoscape stylesheet (as plain data) for the current theme. */
export type GraphStyle = { selector: string; style: Record<string, string | number> }[];

/** Node names longer than this (px) are cut with an ellipsis; the full name is in the list under the graph. */
export const LABEL_WIDTH = 150;

export function graphStyle(read: ThemeReader): GraphStyle {
  const c = (name: string) => read(name) || FALLBACK[name] || '#888888';
  const fg = c('--vscode-foreground');
  const dim = c('--vscode-descriptionForeground');
  const bg = c('--vscode-editor-background');
  const label = {
    'text-background-color': bg,
    'text-background-opacity': 0.9,
    'text-background-padding': 2,
    'text-background-shape': 'roundrectangle',
  };
  return [
    {
      selector: 'node',
      style: {
        width: 18,
        height: 18,
        'background-color': dim,
        'border-width': 1,
        'border-color': bg,
        label: 'data(label)',
        color: fg,
        'font-size': 11,
        'text-valign': 'bottom',
        'text-halign': 'center',
        'text-margin-y': 4,
        'text-wrap': 'ellipsis',
        'text-max-width': `${LABEL_WIDTH}px`,
        ...label,
      },
    },
    ...KINDS.map((k) => ({ selector: `node.kind-${k}`, style: { 'background-color': c(KIND_COLORS[k]) } })),
    {
      selector: 'node.center',
      style: { width: 26, height: 26, 'border-width': 3, 'border-color': c('--vscode-focusBorder'), 'font-weight': 'bold' },
    },
    {
      selector: 'edge',
      style: {
        width: 1.5,
        'line-color': dim,
        'target-arrow-color': dim,
        'target-arrow-shape': 'triangle',
        'arrow-scale': 1.2,
        'curve-style': 'bezier',
        label: 'data(label)',
        'font-size': 10,
        color: fg,
        // along the edge, on the editor's background: the line never runs through the text
        'text-rotation': 'autorotate',
        ...label,
      },
    },
    { selector: 'node:active, node:selected', style: { 'overlay-opacity': 0.15 } },
  ];
}

/**
 * The layout: dagre, left to right. Ranks are far enough apart for a cut node name and an edge label between
 * them, and nodes of one rank far enough apart that two names or two edge labels never share a line.
 */
export function graphLayout(): {
  name: 'dagre';
  rankDir: 'LR';
  rankSep: number;
  nodeSep: number;
  edgeSep: number;
  padding: number;
  animate: false;
  fit: true;
} {
  return { name: 'dagre', rankDir: 'LR', rankSep: LABEL_WIDTH + 40, nodeSep: 46, edgeSep: 20, padding: 24, animate: false, fit: true };
}

/** The class list of a node: its kind's colour, and whether it is the memory the graph is about. */
export function nodeClasses(kind: string | undefined, center: boolean): string {
  return [kind && (KINDS as string[]).includes(kind) ? `kind-${kind}` : '', center ? 'center' : ''].filter(Boolean).join(' ');
}
