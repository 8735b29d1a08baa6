// What the collection page's selection resolved to (/api/v1/collections/ID/selection): the
// line that names the selection and its base, the merged profile's record in the metadata
// panel, and the ways out of it — the merged download and speedscope (the collection's raw
// link with the selection), and the snapshot: the merged profile's own link, embed and preview,
// which stay as they are when the collection grows.
import { getJSON } from "./viewer.api.js";
import { renderMeta } from "./viewer.meta.js";
import { rangeText } from "./collection.time.js";
import { matchText } from "./collection.chips.js";

const $ = (id) => document.getElementById(id);

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

export class SelectionLinks {
  constructor(root) {
    this.root = root;
    this.view = { params: new URLSearchParams(), sampleIndex: "" }; // viewer.cmd.js says
    this.found = null;
    this.call = 0;
    // The fragment (the viewer's zoom, search, view) changes without events: taken on the way out.
    $("snapshot-link").addEventListener("click", (e) => (e.currentTarget.href = this.snapshot + location.hash));
    root.addEventListener("viewcommand", (e) => {
      this.view = e.detail;
      this.drawSnapshot();
    });
  }

  /** The selection of the URL: sel {from, to, matchers, kind} and base (or null); own: the
   * query of the selection alone (from, to, match, kind). */
  async show(sel, base, own) {
    const call = ++this.call;
    const raw = this.root.dataset.rawUrl.split("?")[0] + (own.size ? `?${own}` : "");
    this.root.dataset.rawUrl = raw;
    $("raw-link").href = raw;
    const speedscope = this.root.dataset.speedscopeUrl || "https://www.speedscope.app/";
    $("speedscope-link").href = speedscope + "#profileURL=" + encodeURIComponent(new URL(raw, location.href).href);
    this.side($("sel-main"), "Selection", sel, null);
    $("sel-base").hidden = !base;
    if (base) this.side($("sel-base"), "Base", base, null);
    $("sel-error").hidden = true;
    let found;
    try {
      found = await getJSON(this.root.dataset.selectionUrl + location.search);
    } catch (err) {
      if (call !== this.call) return;
      this.found = null;
      $("sel-error").textContent = err.message;
      $("sel-error").hidden = false;
      this.drawSnapshot();
      $("meta-list").replaceChildren();
      return;
    }
    if (call !== this.call) return;
    this.found = found;
    this.side($("sel-main"), "Selection", sel, found.members, found.profile_url, found.blocks, found.pending);
    if (base) this.side($("sel-base"), "Base", base, found.base_members, found.base_url);
    this.drawSnapshot();
    this.root.dataset.selection = found.profile;
    try {
      const rec = await getJSON(`${this.root.dataset.profilesUrl}/${found.profile}`);
      if (call !== this.call) return;
      renderMeta(rec);
      const list = $("meta-list");
      const facts = [["Members merged", String(found.members)], ["Pre-merged blocks", String(found.blocks)]];
      if (found.base) facts.push(["Base members", String(found.base_members)]);
      for (const [dt, dd] of facts.reverse()) list.prepend(el("dt", { textContent: dt }), el("dd", { textContent: dd }));
    } catch {
      // the record is a courtesy: the views say what went wrong
    }
  }

  /** "Selection: 12:00:00Z – 12:05:00Z · pod="api-1" · 4 profiles → merged profile". */
  side(p, label, s, members, url, blocks, pending) {
    const parts = [rangeText(s.from, s.to)];
    if (s.matchers.length) parts.push(matchText(s.matchers));
    if (s.kind) parts.push(s.kind);
    if (members != null) {
      const from = blocks ? ` (read from ${blocks} pre-merged block${blocks === 1 ? "" : "s"})` : "";
      parts.push(`${members} profile${members === 1 ? "" : "s"} merged${from}`);
      // Recent times of a collection a fleet feeds are shown as merged so far, not after seconds of merges.
      if (pending) parts.push(`${pending} newer one${pending === 1 ? " is" : "s are"} being merged in`);
    }
    p.replaceChildren(el("strong", { textContent: `${label}: ` }), parts.join(" · "));
    if (url) p.append(" ", el("a", { href: url, textContent: "merged profile", className: "cl-merged" }));
  }

  /** The snapshot links: the merged profile with the view's options (and the base as
   * diff_base), as its own page, embed and preview. */
  drawSnapshot() {
    const f = this.found;
    for (const id of ["snapshot-link", "embed-link-sel", "preview-link"]) $(id).hidden = !f;
    if (!f) return;
    const prefix = this.root.dataset.prefix;
    const q = new URLSearchParams(this.view.params);
    if (f.base) q.set("diff_base", f.base);
    const page = `${prefix}/${f.profile}${q.size ? `?${q}` : ""}`;
    this.snapshot = page;
    $("snapshot-link").href = page + location.hash;
    if (this.view.sampleIndex) q.set("si", this.view.sampleIndex);
    $("embed-link-sel").href = `${prefix}/${f.profile}/embed${q.size ? `?${q}` : ""}`;
    const si = this.view.sampleIndex ? `?si=${encodeURIComponent(this.view.sampleIndex)}` : "";
    $("preview-link").href = `${prefix}/${f.profile}/preview.png${si}`;
    $("preview-link").hidden = Boolean(f.base); // the picture is of one profile, never a diff
  }
}
