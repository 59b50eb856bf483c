/**
 * The relations graph, a separate bundle (cytoscape is most of its size) that the dashboard loads only when a
 * graph is first opened. Layout is dagre (layered, left to right); colours, labels and spacing are in graphstyle.ts.
 */
import cytoscape from 'cytoscape';
import dagre from 'cytoscape-dagre';
import { graphLayout, graphStyle, nodeClasses } from './graphstyle';

cytoscape.use(dagre);

export interface GraphNode {
  id: string;
  label: string;
  kind?: string;
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

function color(name: string): string {
  return getComputedStyle(document.body).getPropertyValue(name).trim();
}

const api: GraphApi = {
  draw(container, nodes, edges, onSelect) {
    const cy = cytoscape({
      container,
      elements: [
        ...nodes.map((n) => ({ data: { id: n.id, label: n.label }, classes: nodeClasses(n.kind, !!n.center) })),
        ...edges.map((e) => ({ data: { id: `${e.from}>${e.to}:${e.type}`, source: e.from, target: e.to, label: e.type } })),
      ],
      style: themed(),
      layout: graphLayout() as cytoscape.LayoutOptions,
      maxZoom: 1.5,
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
  return graphStyle(color) as unknown as cytoscape.StylesheetJson;
}

(window as unknown as { cairnGraph?: GraphApi }).cairnGraph = api;
