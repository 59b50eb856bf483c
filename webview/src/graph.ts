/**
 * The relations graph, a separate bundle (cytoscape is most of its size) that the dashboard loads only when a
 * graph is first opened. Layout is cytoscape's own (concentric around the memory); labels are canvas text.
 */
import cytoscape from 'cytoscape';

export interface GraphNode {
  id: string;
  label: string;
  center?: boolean;
}
export interface GraphEdge {
  from: string;
  to: string;
  type: string;
}
export interface GraphApi {
  draw(container: HTMLElement, nodes: GraphNode[], edges: GraphEdge[], onSelect: (id: string) => void): { destroy(): void };
}

function color(name: string, fallback: string): string {
  const v = getComputedStyle(document.body).getPropertyValue(name).trim();
  return v || fallback;
}

const api: GraphApi = {
  draw(container, nodes, edges, onSelect) {
    const cy = cytoscape({
      container,
      elements: [
        ...nodes.map((n) => ({ data: { id: n.id, label: n.label }, classes: n.center ? 'center' : '' })),
        ...edges.map((e) => ({ data: { id: `${e.from}>${e.to}:${e.type}`, source: e.from, target: e.to, label: e.type } })),
      ],
      style: themed(),
      layout: {
        name: 'concentric',
        concentric: (n: cytoscape.NodeSingular) => (n.hasClass('center') ? 2 : 1),
        levelWidth: () => 1,
        minNodeSpacing: 40,
        animate: false,
      },
      userZoomingEnabled: true,
      boxSelectionEnabled: false,
    });
    cy.on('tap', 'node', (e) => onSelect(e.target.id()));
    // Where each node was drawn (container pixels), for people's tools and the UI tests that click nodes.
    container.dataset.nodes = JSON.stringify(cy.nodes().map((n) => ({ id: n.id(), label: n.data('label'), ...n.renderedPosition() })));
    // Canvas colours are read from the theme once; redraw them when the editor's theme changes (body class).
    const theme = new MutationObserver(() => cy.style(themed()));
    theme.observe(document.body, { attributes: true, attributeFilter: ['class'] });
    return {
      destroy: () => {
        theme.disconnect();
        cy.destroy();
      },
    };
  },
};

/** The graph's style from the current theme's colours. */
function themed(): cytoscape.StylesheetJson {
  const fg = color('--vscode-foreground', '#333');
  const accent = color('--vscode-focusBorder', '#0078d4');
  const node = color('--vscode-button-background', '#0e639c');
  return [
    {
      selector: 'node',
      style: { 'background-color': node, label: 'data(label)', color: fg, 'font-size': 11, 'text-valign': 'bottom', 'text-margin-y': 4 },
    },
    { selector: 'node.center', style: { 'border-width': 3, 'border-color': accent, width: 36, height: 36 } },
    {
      selector: 'edge',
      style: {
        width: 1.5,
        'line-color': fg,
        'target-arrow-color': fg,
        'target-arrow-shape': 'triangle',
        'curve-style': 'bezier',
        label: 'data(label)',
        'font-size': 9,
        color: fg,
        'text-rotation': 'autorotate',
      },
    },
  ];
}

(window as unknown as { cairnGraph?: GraphApi }).cairnGraph = api;
