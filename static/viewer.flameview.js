// The flame graph view: the canvas, its breadcrumb, the search, the trim note, and zooms that
// fetch their own detail. The server keeps the heaviest frames of the whole profile (a node
// budget); a zoom into a frame whose subtree lost frames to it asks for that subtree alone
// (flamegraph?zoom=[path], with a budget of its own) and draws that, with the path above it.
import { cached } from "./viewer.api.js";
import { describeDiffMatch } from "./viewer.diff.js";
import { FlameGraph } from "./viewer.flame.js";
import { formatPct, formatValue } from "./viewer.format.js";

/** Search text as a regex: a regular expression, or plain text if it does not compile. */
function compile(q) {
  if (!q) return null;
  try {
    return new RegExp(q);
  } catch {
    return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  }
}

/** The weight of the stacks through a match of re in a flame graph JSON: the topmost match of
 * each stack counts, as a function's cum counts each stack once. */
function matchedValue(doc, re, column = "value") {
  const { name, depth } = doc.nodes;
  const value = doc.nodes[column];
  const hit = doc.names.map((n, k) => k > 0 && re.test(n));
  let sum = 0;
  for (let i = 1; i < name.length; ) {
    if (hit[name[i]]) {
      sum += value[i];
      const d = depth[i];
      for (i++; i < name.length && depth[i] > d; i++);
    } else i++;
  }
  return sum;
}

const samePrefix = (path, prefix) => prefix.every((name, i) => path[i] === name);

export class FlameView {
  /** dom: canvas, scroller, spacer, tooltip, crumbs, share, note, noteText, root (for data-*);
   * zoomUrl(path): the flamegraph URL of a subtree; searchUrl(q): the search view's URL;
   * onZoomPath(path); onPick(name, file);
   * onMenu(name, file, x, y) */
  constructor(dom, opts) {
    this.dom = dom;
    Object.assign(this, opts);
    this.base = null; // the flame graph JSON of the whole profile
    this.zoomDoc = null; // the JSON of a subtree, when drawn
    this.re = null;
    this.switching = false;
    this.wanted = 0; // the latest detail fetch
    this.searched = 0; // the latest search share asked for
    this.searchTimer = 0;
    this.graph = new FlameGraph({
      canvas: dom.canvas,
      scroller: dom.scroller,
      spacer: dom.spacer,
      tooltip: dom.tooltip,
      onZoom: (z) => this.zoomed(z),
    });
    // Capture: before the graph's own click zooms, the frame under the pointer is picked.
    dom.scroller.addEventListener("click", (e) => this.pick(e, (n, f) => this.onPick(n, f)), true);
    dom.scroller.addEventListener("contextmenu", (e) => {
      this.pick(e, (n, f) => {
        e.preventDefault();
        this.graph.hideTip();
        this.onMenu(n, f, e.clientX, e.clientY);
      });
    });
  }

  pick(e, then) {
    const g = this.graph;
    const rect = g.canvas.getBoundingClientRect();
    const i = g.nodeAtPoint(e.clientX - rect.left, e.clientY - rect.top);
    if (i > 0) then(g.data.names[g.data.name[i]], g.data.files[g.data.name[i]] || "");
  }

  /** The zoom path shown, or being fetched. */
  get path() {
    if (this.current) return this.current;
    if (this.want) return this.want; // not laid out yet (the view is hidden)
    return this.graph.data ? this.graph.pathOf(this.graph.zoom) : [];
  }

  /** Draws the whole profile's JSON, zoomed at path (names from the root). */
  setBase(fg, path) {
    this.base = fg;
    this.zoomDoc = null;
    this.wanted++;
    this.want = path;
    this.current = null;
    this.draw(fg, path);
  }

  draw(doc, path) {
    // One layout and one draw, at the zoom, with the search marked: by setZoom below.
    this.switching = true;
    this.graph.setData(doc, { layout: false });
    this.graph.search(this.re, { draw: false });
    this.switching = false;
    this.dom.root.dataset.detail = doc === this.base ? "" : "zoom";
    this.graph.setZoom(this.graph.nodeAt(path));
    this.showShare();
  }

  /** Zooms to a path of names, fetching its detail if the drawn tree lacks it. */
  goTo(path) {
    this.want = path;
    if (this.zoomDoc && !samePrefix(path, this.zoomDoc.zoom.path)) {
      this.zoomDoc = null;
      this.wanted++;
      this.draw(this.base, path);
    } else {
      this.graph.setZoom(this.graph.nodeAt(path));
    }
  }

  /** After every zoom (clicks, breadcrumb, reset): back to the whole tree above the fetched
   * subtree, a fetch below a trimmed frame, then the URL. */
  zoomed(z) {
    if (this.switching) return;
    const g = this.graph;
    const path = g.pathOf(z);
    // A path the drawn tree holds only the start of (from the URL): what the fetch is for.
    const wantPath = this.want;
    this.want = null;
    const root = this.zoomDoc ? this.zoomDoc.zoom.path : null;
    if (root && path.length < root.length) {
      this.zoomDoc = null;
      this.wanted++;
      this.draw(this.base, path); // comes back here with the base tree drawn
      return;
    }
    const want = wantPath && wantPath.length > path.length && samePrefix(wantPath, path) ? wantPath : path;
    const fetched = root && want.length === root.length && samePrefix(want, root);
    if (!fetched && (want.length > path.length || this.trimmedUnder(z))) this.fetchDetail(want);
    this.current = want;
    this.dom.root.dataset.flameRows = String(g.data.rows); // rows drawn, for tests and bench
    this.renderCrumbs(z);
    this.onZoomPath(want);
  }

  /** Whether frames with weight were cut from node z's subtree: its value (a diff's: its
   * width, before + after) is more than the self values drawn under it. */
  trimmedUnder(z) {
    const d = this.graph.data;
    const doc = this.zoomDoc || this.base;
    if (!doc || !doc.trimmed || !doc.trimmed.nodes || z <= 0) return false;
    const own = d.diff ? (i) => Math.abs(d.beforeSelf[i]) + Math.abs(d.afterSelf[i]) : (i) => d.self[i];
    const whole = d.diff ? d.width[z] : d.value[z];
    let self = 0;
    for (let i = z; i < d.end[z]; i++) self += own(i);
    const missing = Math.abs(whole - self);
    return missing > 1e-9 * Math.abs(whole) && missing > 0;
  }

  async fetchDetail(path) {
    const call = ++this.wanted;
    this.dom.root.dataset.detail = "loading";
    let doc;
    try {
      doc = await cached(this.zoomUrl(path));
    } catch (err) {
      if (call === this.wanted) this.dom.root.dataset.detail = "";
      this.onError(err);
      return;
    }
    if (call !== this.wanted) return;
    if (!doc.zoom || !doc.zoom.found) {
      // No stack goes down that path (after a new filter, say): the URL keeps what is drawn.
      this.dom.root.dataset.detail = "";
      this.current = null;
      this.onZoomPath(this.path);
      return;
    }
    this.zoomDoc = doc;
    this.draw(doc, path);
    this.onDetail(doc);
  }

  /** The drawn JSON: the subtree's when zoomed into fetched detail, else the whole profile's. */
  get doc() {
    return this.zoomDoc || this.base;
  }

  search(q) {
    this.re = compile(q);
    if (!this.graph.data) return;
    this.graph.search(this.re);
    this.showShare();
  }

  /** The share of the search's matches, always over the whole profile's tree (a fetched
   * subtree holds only part of the matches). */
  showShare() {
    const share = this.dom.share;
    const doc = this.base;
    const re = this.re;
    clearTimeout(this.searchTimer);
    this.searched++;
    if (!re || !doc) {
      share.textContent = "";
      share.dataset.share = "";
      return;
    }
    const sum = (column) => matchedValue(doc, re, column);
    const local = { value: sum("value"), before: doc.diff ? sum("before") : 0, after: doc.diff ? sum("after") : 0 };
    // Frames the budget left out are not in doc: the server counts every stack (?q=).
    const trimmed = Boolean(doc.trimmed && doc.trimmed.nodes && this.searchUrl);
    this.drawShare(doc, local, trimmed);
    if (!trimmed) return;
    const call = this.searched;
    this.searchTimer = setTimeout(async () => {
      try {
        const exact = await cached(this.searchUrl(re.source));
        if (call === this.searched) this.drawShare(doc, exact, false);
      } catch {
        if (call === this.searched) this.drawShare(doc, local, false); // the drawn frames' sum
      }
    }, 150);
  }

  /** The search's share: m = {value, before, after}; pending: the exact figure is coming. */
  drawShare(doc, m, pending) {
    const share = this.dom.share;
    share.dataset.exact = pending ? "" : "1";
    const more = pending ? " …" : "";
    if (doc.diff) {
      // Each side of the matched stacks, of its own side's total.
      const d = describeDiffMatch(m, doc);
      share.textContent = d.text + more;
      share.dataset.share = String(d.share);
      return;
    }
    share.textContent = `matched ${formatValue(m.value, doc.unit)} · ${formatPct(m.value, doc.total)} of total${more}`;
    share.dataset.share = String(doc.total ? m.value / doc.total : 0);
  }

  renderCrumbs(z) {
    const d = this.graph.data;
    const chain = [];
    for (let k = z; k >= 0; k = d.parent[k]) chain.push(k);
    chain.reverse();
    // Deep stacks (recursion) would make an endless bar: keep both ends.
    const shown = chain.length > 9 ? [...chain.slice(0, 2), null, ...chain.slice(-6)] : chain;
    const parts = [];
    shown.forEach((k, idx) => {
      if (idx) parts.push(Object.assign(document.createElement("span"), { textContent: "›", className: "sep" }));
      if (k === null) {
        parts.push(Object.assign(document.createElement("span"), { textContent: "…" }));
        return;
      }
      const b = document.createElement("button");
      b.type = "button";
      b.className = "crumb";
      b.textContent = k === 0 ? "all" : d.names[d.name[k]];
      b.title = b.textContent;
      if (k === z) b.setAttribute("aria-current", "true");
      b.addEventListener("click", () => this.graph.setZoom(k));
      parts.push(b);
    });
    this.dom.crumbs.replaceChildren(...parts);
    this.dom.crumbs.dataset.depth = String(chain.length - 1);
  }
}
