// The run graph from GET /api/v1/graph drawn as SVG: nodes in columns by their distance
// from the start, forward edges as lines, loops back (REVISE, REPLAN) as arcs below.
const NS = 'http://www.w3.org/2000/svg';

function svg(tag, attrs = {}, text) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** Column of each node: longest path from the first source, ignoring back edges. */
function layout(edges) {
  const nodes = [];
  const out = new Map();
  for (const e of edges) {
    for (const n of [e.source, e.target]) if (n && !nodes.includes(n)) { nodes.push(n); out.set(n, []); }
    if (e.target) out.get(e.source).push(e.target);
  }
  const back = new Set();
  const state = new Map();
  const visit = (n) => {
    state.set(n, 1);
    for (const t of out.get(n)) {
      if (state.get(t) === 1) back.add(`${n}>${t}`);
      else if (!state.has(t)) visit(t);
    }
    state.set(n, 2);
  };
  for (const n of nodes) if (!state.has(n)) visit(n);
  const col = new Map(nodes.map((n) => [n, 0]));
  for (let pass = 0; pass < nodes.length; pass++) {
    for (const e of edges) {
      if (!e.target || back.has(`${e.source}>${e.target}`)) continue;
      col.set(e.target, Math.max(col.get(e.target), col.get(e.source) + 1));
    }
  }
  return { nodes, col, back };
}

/** An <svg> of the graph's edges ({source, outcome, target, when}), top to bottom. */
export function drawGraph(all) {
  // Parallel edges (approve and reject to the finalizer) become one with both labels.
  const merged = new Map();
  for (const e of all) {
    const key = `${e.source}>${e.target}`;
    const seen = merged.get(key);
    if (!seen) merged.set(key, { ...e });
    else if (e.outcome && !seen.outcome.split(' / ').includes(e.outcome)) seen.outcome += ` / ${e.outcome}`;
  }
  const edges = [...merged.values()];
  const { nodes, col, back } = layout(edges);
  const W = 108, H = 32, GX = 26, GY = 34;
  const perRow = new Map();
  const pos = new Map();
  for (const n of nodes) {
    const depth = col.get(n);
    const index = perRow.get(depth) || 0;
    perRow.set(depth, index + 1);
    pos.set(n, { x: 10 + index * (W + GX), y: 12 + depth * (H + GY) });
  }
  const right = Math.max(...[...pos.values()].map((p) => p.x + W));
  const loops = edges.filter((e) => e.target && back.has(`${e.source}>${e.target}`)).length;
  const width = right + 30 + loops * 16 + 60;
  const height = 24 + (Math.max(...col.values(), 0) + 1) * (H + GY);
  const root = svg('svg', { viewBox: `0 0 ${width} ${height}`, width, height, class: 'graph', role: 'img', 'aria-label': 'agent graph' });
  const defs = svg('defs');
  const marker = svg('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
  marker.append(svg('path', { d: 'M0 0L10 5L0 10z', class: 'arrow' }));
  defs.append(marker);
  root.append(defs);
  let bend = 0;
  for (const e of edges) {
    if (!e.target) continue;
    const a = pos.get(e.source), b = pos.get(e.target);
    const isBack = back.has(`${e.source}>${e.target}`);
    let d, lx, ly;
    if (isBack) {
      bend += 16;
      const x = right + 14 + bend;
      d = `M${a.x + W} ${a.y + H / 2} C${x} ${a.y + H / 2}, ${x} ${b.y + H / 2}, ${b.x + W} ${b.y + H / 2}`;
      lx = x - 8; ly = (a.y + b.y) / 2 + H / 2;
    } else {
      d = `M${a.x + W / 2} ${a.y + H} L${b.x + W / 2} ${b.y}`;
      lx = (a.x + b.x) / 2 + W / 2; ly = (a.y + H + b.y) / 2 + 3;
    }
    const path = svg('path', { d, class: isBack ? 'edge back' : 'edge', 'marker-end': 'url(#arrow)' });
    path.append(svg('title', {}, [e.source, e.outcome, e.target, e.when].filter(Boolean).join(' · ')));
    root.append(path);
    if (e.outcome) root.append(svg('text', { x: lx, y: ly, class: 'edge-label', 'text-anchor': 'middle' }, e.outcome));
  }
  for (const n of nodes) {
    const p = pos.get(n);
    const g = svg('g', { class: `node node-${n}` });
    g.append(svg('rect', { x: p.x, y: p.y, width: W, height: H, rx: 8 }), svg('text', { x: p.x + W / 2, y: p.y + H / 2 + 4, 'text-anchor': 'middle' }, n));
    root.append(g);
  }
  return root;
}

/** A team document's edges as drawGraph reads them: a route on a field and a loop's bound
 * in the label and the tooltip. */
export function teamEdges(document) {
  return document.edges.map((e) => ({
    source: e.from,
    outcome: e.match ? `${e.on} ${e.match.field}=${e.match.equals}` : e.on,
    target: e.to,
    when: [e.when, e.attempts ? `at most ${e.attempts}` : null].filter(Boolean).join(', ') || null,
  }));
}
