import { changeOf, diffColour, diffData, diffPaletteName, fillDiffTip } from "./viewer.diff.js";
import { colourOf, palette } from "./viewer.colour.js";
import { formatPct, formatValue } from "./viewer.format.js";

// The flame graph of the profile page: an icicle on a canvas, laid out in typed arrays.

// ---------------------------------------------------------------------------------------------
// Flame graph (icicle: root on top). Nodes arrive in preorder with depths, so a node's subtree
// is the run of following nodes that are deeper than it: end[i] marks where that run stops.

export const ROW = 18;
const MIN_PX = 0.5;

export class FlameGraph {
  constructor(opts) {
    // canvas, scroller, spacer, tooltip, onZoom; inverted: root at the bottom (a sandwich's
    // callers); rootLabel: the root frame's label ("all")
    Object.assign(this, opts);
    this.ctx = this.canvas.getContext("2d");
    this.data = null;
    this.zoom = 0;
    this.match = null; // Uint8Array over names, or null when no search is active
    this.hover = -1;
    this.pending = false;
    this.palette = palette();
    // A new theme (the toggle, or the system's scheme) repaints with its colours.
    const retheme = () => this.retheme();
    document.addEventListener("themechange", retheme);
    window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", retheme);
    this.scroller.addEventListener("scroll", () => this.schedule());
    this.canvas.addEventListener("mousemove", (e) => this.onMove(e));
    this.canvas.addEventListener("mouseleave", () => this.hideTip());
    this.canvas.addEventListener("click", (e) => this.onClick(e));
    // Only a change of width changes the layout; our own height changes must not loop.
    new ResizeObserver(() => {
      if (this.data && this.scroller.clientWidth !== this.width) this.relayout();
    }).observe(this.scroller.parentElement);
  }

  /** Takes the flame graph JSON; builds the typed arrays every later step reads, then lays
   * them out and draws them, unless opts.layout is false: a caller that sets a search and a
   * zoom next has them laid out and drawn once, by setZoom. */
  setData(fg, opts = {}) {
    const nodes = fg.nodes;
    const n = nodes.name.length;
    const d = {
      n,
      names: fg.names,
      files: fg.files,
      unit: fg.unit,
      total: fg.total,
      name: Int32Array.from(nodes.name),
      depth: Int32Array.from(nodes.depth),
      value: Float64Array.from(nodes.value),
      self: Float64Array.from(nodes.self),
      end: new Int32Array(n),
      parent: new Int32Array(n),
      x: new Float64Array(n), // left edge, as a fraction of the zoomed frame's width
      w: new Float64Array(n), // width, same scale
      shown: new Int32Array(n), // == layout generation when laid out in the current view
      order: new Int32Array(n), // laid-out nodes in preorder
      count: 0,
      gen: 0,
      rows: 1,
      colour: new Array(fg.names.length),
      diff: Boolean(fg.diff),
    };
    // A frame is as wide as its value, or, in a diff, as before + after (README "Compare and
    // merge"): a frame that appeared or vanished keeps the width it had where it ran.
    if (d.diff) Object.assign(d, diffData(fg));
    else d.width = d.value.map(Math.abs);
    const stack = [];
    for (let i = 0; i < n; i++) {
      while (stack.length && d.depth[stack[stack.length - 1]] >= d.depth[i]) {
        d.end[stack.pop()] = i;
      }
      d.parent[i] = stack.length ? stack[stack.length - 1] : -1;
      stack.push(i);
    }
    for (const i of stack) d.end[i] = n;
    this.data = d;
    this.paintColours();
    this.zoom = 0;
    this.charW = 0;
    if (opts.layout !== false) this.relayout();
  }

  paintColours() {
    const d = this.data;
    if (d.diff) {
      const name = diffPaletteName();
      const light = this.palette.light;
      for (let i = 0; i < d.n; i++) {
        d.nodeColour[i] = diffColour(changeOf(d.before[i], d.after[i]), name, light);
      }
      return;
    }
    for (let k = 0; k < d.names.length; k++) d.colour[k] = colourOf(d.names[k] || "root", this.palette);
  }

  /** Re-reads the palette (after a theme change) and redraws. */
  retheme() {
    this.palette = palette();
    if (!this.data) return;
    this.paintColours();
    this.draw();
  }

  *children(i) {
    const d = this.data;
    for (let j = i + 1; j < d.end[i]; j = d.end[j]) yield j;
  }

  /** Path of names from the root (excluded) down to node i. */
  pathOf(i) {
    const d = this.data;
    const names = [];
    for (let k = i; k > 0; k = d.parent[k]) names.push(d.names[d.name[k]]);
    return names.reverse();
  }

  /** The node at a path of names, or the deepest node that matched a prefix of it. */
  nodeAt(path) {
    let at = 0;
    for (const want of path) {
      let next = -1;
      for (const j of this.children(at)) {
        if (this.data.names[this.data.name[j]] === want) {
          next = j;
          break;
        }
      }
      if (next < 0) break;
      at = next;
    }
    return at;
  }

  setZoom(i) {
    this.zoom = i;
    this.relayout();
  }

  /** Lays out the zoomed frame's subtree and its ancestors for the current width, once. */
  relayout() {
    const d = this.data;
    if (!d || this.scroller.parentElement.hidden) return;
    const width = Math.max(1, this.scroller.clientWidth);
    const z = this.zoom;
    const gen = ++d.gen;
    let count = 0;
    let rows = d.depth[z] + 1;
    for (let a = d.parent[z]; a >= 0; a = d.parent[a]) {
      d.x[a] = 0;
      d.w[a] = 1;
      d.shown[a] = gen;
    }
    // Ancestors first (in root-to-leaf order), then the subtree in preorder.
    const anc = [];
    for (let a = d.parent[z]; a >= 0; a = d.parent[a]) anc.push(a);
    for (let k = anc.length - 1; k >= 0; k--) d.order[count++] = anc[k];
    const scale = d.width[z] || 1;
    const cursor = new Map(); // parent -> next free x (only frames with children use it)
    d.x[z] = 0;
    d.w[z] = 1;
    d.shown[z] = gen;
    d.order[count++] = z;
    cursor.set(z, 0);
    const minW = MIN_PX / width;
    for (let i = z + 1; i < d.end[z]; ) {
      const p = d.parent[i];
      const left = cursor.get(p);
      const room = d.x[p] + d.w[p] - left;
      const w = Math.min(d.width[i] / scale, room);
      if (w < minW) {
        // Too thin to see, and so is everything under it.
        cursor.set(p, left + Math.max(w, 0));
        i = d.end[i];
        continue;
      }
      d.x[i] = left;
      d.w[i] = w;
      d.shown[i] = gen;
      d.order[count++] = i;
      cursor.set(p, left + w);
      cursor.set(i, left);
      if (d.depth[i] + 1 > rows) rows = d.depth[i] + 1;
      i++;
    }
    d.count = count;
    d.rows = rows;
    this.width = width;
    const total = rows * ROW;
    const view = Math.min(total, Math.max(8 * ROW, Math.round(window.innerHeight * 0.7)));
    this.viewH = view;
    this.scroller.style.height = view + "px";
    this.spacer.style.height = total - view + "px";
    if (this.inverted) this.scroller.scrollTop = this.scroller.scrollHeight;
    this.draw();
    if (this.onZoom) this.onZoom(z);
  }

  schedule() {
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.draw();
    });
  }

  draw() {
    const d = this.data;
    if (!d) return;
    const dpr = window.devicePixelRatio || 1;
    const cssW = this.width;
    const cssH = this.viewH;
    if (this.canvas.width !== Math.round(cssW * dpr) || this.canvas.height !== Math.round(cssH * dpr)) {
      this.canvas.width = Math.round(cssW * dpr);
      this.canvas.height = Math.round(cssH * dpr);
      this.canvas.style.width = cssW + "px";
      this.canvas.style.height = cssH + "px";
    }
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssW, cssH);
    ctx.font = '12px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace';
    ctx.textBaseline = "middle";
    if (!this.charW) this.charW = ctx.measureText("m").width || 7;
    const top = this.scroller.scrollTop;
    const firstRow = Math.floor(top / ROW);
    const lastRow = Math.ceil((top + cssH) / ROW);
    const match = this.match;
    const z = this.zoom;
    const pal = this.palette;
    for (let k = 0; k < d.count; k++) {
      const i = d.order[k];
      const row = this.inverted ? d.rows - 1 - d.depth[i] : d.depth[i];
      if (row < firstRow || row > lastRow) continue;
      const x = d.x[i] * cssW;
      const w = d.w[i] * cssW;
      const y = row * ROW - top;
      const nameIdx = d.name[i];
      const hit = !match || match[nameIdx];
      ctx.fillStyle = !hit ? pal.dim : d.diff ? d.nodeColour[i] : d.colour[nameIdx];
      ctx.globalAlpha = i !== z && d.shown[i] === d.gen && isAncestor(d, i, z) ? 0.55 : 1;
      ctx.fillRect(x, y, Math.max(w - (w > 2 ? 1 : 0), MIN_PX), ROW - 1);
      if (i === this.hover) {
        ctx.strokeStyle = pal.hover;
        ctx.lineWidth = 1;
        ctx.strokeRect(x + 0.5, y + 0.5, Math.max(w - 2, 1), ROW - 2);
      }
      const room = Math.floor((w - 6) / this.charW);
      if (room >= 3) {
        const label = i === 0 ? this.rootLabel ?? "all" : d.names[nameIdx];
        const text = label.length > room ? label.slice(0, room - 1) + "…" : label;
        ctx.fillStyle = hit ? pal.text : pal.textDim;
        ctx.fillText(text, x + 3, y + ROW / 2);
      }
    }
    ctx.globalAlpha = 1;
  }

  /** The laid-out node under a point of the canvas, found by walking down from the root. */
  nodeAtPoint(px, py) {
    const d = this.data;
    if (!d) return -1;
    const shownRow = Math.floor((py + this.scroller.scrollTop) / ROW);
    const row = this.inverted ? d.rows - 1 - shownRow : shownRow;
    const fx = px / this.width;
    let at = 0;
    if (d.shown[0] !== d.gen) return -1;
    for (;;) {
      if (d.depth[at] === row) return fx >= d.x[at] && fx < d.x[at] + d.w[at] ? at : -1;
      let next = -1;
      for (const j of this.children(at)) {
        if (d.shown[j] === d.gen && fx >= d.x[j] && fx < d.x[j] + d.w[j]) {
          next = j;
          break;
        }
      }
      if (next < 0) return -1;
      at = next;
    }
  }

  onMove(e) {
    const rect = this.canvas.getBoundingClientRect();
    const i = this.nodeAtPoint(e.clientX - rect.left, e.clientY - rect.top);
    if (i !== this.hover) {
      this.hover = i;
      this.canvas.style.cursor = i >= 0 ? "pointer" : "default";
      this.schedule();
    }
    if (i < 0) return this.hideTip();
    this.showTip(i, e.clientX, e.clientY);
  }

  showTip(i, cx, cy) {
    const d = this.data;
    const tip = this.tooltip;
    const field = (f) => tip.querySelector(`[data-field="${f}"]`);
    const name = i === 0 ? this.rootLabel ?? "all" : d.names[d.name[i]];
    field("name").textContent = name;
    field("file").textContent = d.files[d.name[i]] || "";
    fillDiffTip(tip, d, i); // a diff's lines (before, after, delta), or hides them
    if (!d.diff) {
      field("value").textContent =
        `${formatValue(d.value[i], d.unit)} (${formatPct(d.value[i], d.total)} of total)`;
      field("self").textContent =
        `self ${formatValue(d.self[i], d.unit)} (${formatPct(d.self[i], d.total)})`;
    }
    tip.hidden = false;
    const pad = 14;
    const r = tip.getBoundingClientRect();
    let left = cx + pad;
    let top = cy + pad;
    if (left + r.width > window.innerWidth - 4) left = Math.max(4, cx - r.width - pad);
    if (top + r.height > window.innerHeight - 4) top = Math.max(4, cy - r.height - pad);
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  }

  hideTip() {
    this.tooltip.hidden = true;
    if (this.hover !== -1) {
      this.hover = -1;
      this.schedule();
    }
  }

  onClick(e) {
    const rect = this.canvas.getBoundingClientRect();
    const i = this.nodeAtPoint(e.clientX - rect.left, e.clientY - rect.top);
    if (i >= 0) this.setZoom(i);
  }

  /** Marks names matching re; returns the matched value, counting each stack once. Redraws,
   * unless opts.draw is false. */
  search(re, opts = {}) {
    const d = this.data;
    const redraw = opts.draw !== false;
    if (!re) {
      this.match = null;
      if (redraw) this.draw();
      return null;
    }
    const match = new Uint8Array(d.names.length);
    for (let k = 1; k < d.names.length; k++) match[k] = re.test(d.names[k]) ? 1 : 0;
    let sum = 0;
    for (let i = 1; i < d.n; ) {
      if (match[d.name[i]]) {
        sum += d.value[i]; // the topmost match covers every deeper match on its stacks
        i = d.end[i];
      } else {
        i++;
      }
    }
    this.match = match;
    if (redraw) this.draw();
    return sum;
  }
}

function isAncestor(d, a, z) {
  return a < z && d.end[a] > z;
}
