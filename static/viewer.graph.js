// The call graph view: the server's Graphviz SVG, rebuilt element by element from an allow-list
// (nothing of it runs, links nowhere, or loads anything), with pan (drag) and zoom (wheel,
// buttons) through its viewBox. A click on a node reports the node's function name.

const SVG_NS = "http://www.w3.org/2000/svg";
const XLINK_NS = "http://www.w3.org/1999/xlink";

// Graphviz's SVG output uses these; an <a> becomes a <g> (it keeps no link).
const ELEMENTS = new Set([
  "svg", "g", "a", "title", "desc", "polygon", "polyline", "path", "ellipse", "circle", "rect",
  "line", "text", "tspan",
]);
// No id: the page's own ids must stay the page's (Graphviz's node1, graph0 are not needed).
const ATTRIBUTES = new Set([
  "class", "viewBox", "width", "height", "transform", "points", "d", "x", "y", "x1", "y1",
  "x2", "y2", "cx", "cy", "r", "rx", "ry", "dx", "dy", "fill", "fill-opacity", "stroke",
  "stroke-width", "stroke-dasharray", "stroke-opacity", "stroke-linecap", "stroke-linejoin",
  "opacity", "text-anchor", "font-family", "font-size", "font-weight", "font-style",
  "text-decoration", "preserveAspectRatio",
]);
// Values that could reach out of the SVG (url(...) paints, javascript:) are dropped.
const UNSAFE_VALUE = /url\s*\(|javascript:|expression\s*\(/i;

/** A clean copy of a parsed SVG element: allow-listed elements and attributes, text as text. A
 * link's tooltip (xlink:title, where pprof's dot puts "name (cum)") is kept as data-tip. */
export function sanitize(node) {
  const name = node.localName;
  if (node.namespaceURI !== SVG_NS || !ELEMENTS.has(name)) return null;
  const out = document.createElementNS(SVG_NS, name === "a" ? "g" : name);
  for (const attr of node.attributes) {
    if (attr.namespaceURI === XLINK_NS && attr.localName === "title") {
      out.setAttribute("data-tip", attr.value);
    } else if (!attr.namespaceURI && ATTRIBUTES.has(attr.name) && !UNSAFE_VALUE.test(attr.value)) {
      out.setAttribute(attr.name, attr.value);
    }
  }
  for (const child of node.childNodes) {
    if (child.nodeType === Node.TEXT_NODE) out.append(document.createTextNode(child.data));
    else if (child.nodeType === Node.ELEMENT_NODE) {
      const clean = sanitize(child);
      if (clean) out.append(clean);
    }
  }
  return out;
}

/** The function name of a Graphviz node group: pprof writes "name (cum)" as the tooltip of its
 * link (the <title> holds the node id "N3"). */
function nodeName(g) {
  const tipped = g.querySelector("[data-tip]");
  const tip = tipped ? tipped.getAttribute("data-tip") : "";
  const m = /^([\s\S]*) \([^()]*\)$/.exec(tip);
  return m ? m[1] : tip || null;
}

export class GraphView {
  /** opts: box (container), onPick(name, event), onMenu(name, x, y), onView() after a pan or
   * zoom */
  constructor(opts) {
    Object.assign(this, opts);
    this.svg = null;
    this.view = null; // [x, y, w, h]
    this.full = null;
    this.drag = null;
    this.box.addEventListener("wheel", (e) => this.onWheel(e), { passive: false });
    this.box.addEventListener("pointerdown", (e) => this.onDown(e));
    this.box.addEventListener("pointermove", (e) => this.onMove(e));
    this.box.addEventListener("pointerup", (e) => this.onUp(e));
    this.box.addEventListener("contextmenu", (e) => {
      const g = e.target.closest && e.target.closest("g.node[data-name]");
      if (!g) return;
      e.preventDefault();
      this.onMenu(g.dataset.name, e.clientX, e.clientY);
    });
  }

  /** Parses, cleans and shows an SVG document's text, at viewBox `initial` ("x,y,w,h") if given. */
  show(text, initial) {
    const doc = new DOMParser().parseFromString(text, "image/svg+xml");
    const root = doc.documentElement;
    const svg = root && root.localName === "svg" ? sanitize(root) : null;
    if (!svg) throw new Error("the server's graph is no SVG");
    for (const g of svg.querySelectorAll("g.node")) {
      // pprof's nodes are N1, N2, …; the legend box ("File: gen") is no function.
      const title = g.querySelector(":scope > title");
      const name = title && /^N\d+$/.test(title.textContent.trim()) ? nodeName(g) : null;
      if (name) g.dataset.name = name;
    }
    // Hovering shows what pprof meant as the tooltip ("name (cum)"), not Graphviz's node id.
    for (const g of svg.querySelectorAll("g.node, g.edge")) {
      const title = g.querySelector(":scope > title");
      const tipped = g.querySelector("[data-tip]");
      if (title && tipped) title.textContent = tipped.getAttribute("data-tip");
    }
    const vb = (svg.getAttribute("viewBox") || "").split(/[\s,]+/).map(Number);
    this.full = vb.length === 4 && vb.every(Number.isFinite) ? vb : [0, 0, 1000, 1000];
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    this.svg = svg;
    this.box.replaceChildren(svg);
    const want = String(initial || "").split(",").map(Number);
    this.setView(want.length === 4 && want.every(Number.isFinite) && want[2] > 0 ? want : this.full.slice());
  }

  /** The view as the URL keeps it: "" when it is the whole graph. */
  viewParam() {
    if (!this.svg || this.view.every((n, k) => Math.abs(n - this.full[k]) < 0.5)) return "";
    return this.view.map((n) => Math.round(n)).join(",");
  }

  clear(message) {
    this.svg = null;
    const p = Object.assign(document.createElement("p"), { className: "vw-note", textContent: message || "" });
    this.box.replaceChildren(p);
  }

  setView(v, moved = true) {
    this.view = v;
    this.svg.setAttribute("viewBox", v.map((n) => n.toFixed(2)).join(" "));
    this.box.dataset.viewBox = this.svg.getAttribute("viewBox");
    if (moved && this.onView) this.onView();
  }

  /** Zooms by factor (>1: in) around a point of the box (client coordinates), or its centre. */
  zoom(factor, cx, cy) {
    if (!this.svg) return;
    const r = this.box.getBoundingClientRect();
    const [x, y, w, h] = this.view;
    const fx = cx == null ? 0.5 : (cx - r.left) / r.width;
    const fy = cy == null ? 0.5 : (cy - r.top) / r.height;
    const nw = Math.min(Math.max(w / factor, this.full[2] / 50), this.full[2] * 4);
    const nh = (nw / w) * h;
    this.setView([x + (w - nw) * fx, y + (h - nh) * fy, nw, nh]);
  }

  fit() {
    if (this.svg) this.setView(this.full.slice());
  }

  /** SVG units per screen pixel (meet: the larger of the two ratios). */
  scale() {
    const r = this.box.getBoundingClientRect();
    return Math.max(this.view[2] / r.width, this.view[3] / r.height);
  }

  onWheel(e) {
    if (!this.svg) return;
    e.preventDefault();
    this.zoom(Math.exp(-e.deltaY / 300), e.clientX, e.clientY);
  }

  onDown(e) {
    if (!this.svg || e.button !== 0) return;
    this.drag = { x: e.clientX, y: e.clientY, view: this.view.slice(), moved: false };
    this.box.setPointerCapture(e.pointerId);
  }

  onMove(e) {
    const d = this.drag;
    if (!d) return;
    const dx = e.clientX - d.x;
    const dy = e.clientY - d.y;
    if (!d.moved && Math.hypot(dx, dy) < 4) return;
    d.moved = true;
    this.box.classList.add("dragging");
    const s = this.scale();
    this.setView([d.view[0] - dx * s, d.view[1] - dy * s, d.view[2], d.view[3]]);
  }

  onUp(e) {
    const d = this.drag;
    this.drag = null;
    this.box.classList.remove("dragging");
    if (!d || d.moved) return;
    // A click, not a drag: the node under the pointer (pointer capture retargets the event).
    const hit = document.elementFromPoint(e.clientX, e.clientY);
    const g = hit && hit.closest && hit.closest("g.node[data-name]");
    if (g && this.box.contains(g)) this.onPick(g.dataset.name, e);
  }
}
