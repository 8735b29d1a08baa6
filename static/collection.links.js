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
      // summed=1: as the views, which sum a selection's parts rather than merge them.
      const q = new URLSearchParams(location.search);
      q.set("summed", "1");
      found = await getJSON(`${this.root.dataset.selectionUrl}?${q}`);
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
    this.drawSides(sel, base, found);
    if (found.pending || found.base_pending) this.catchUp(call, sel, base, own);
    this.drawSnapshot();
    this.root.dataset.selection = found.profile || "";
    try {
      // A selection summed, not merged (its flame graph and top table need no merge) has no
      // record of its own until its snapshot merges it: the facts alone.
      const rec = found.profile ? await getJSON(`${this.root.dataset.profilesUrl}/${found.profile}`) : null;
      if (call !== this.call) return;
      if (rec) renderMeta(rec);
      else $("meta-list").replaceChildren();
      const list = $("meta-list");
      const facts = [["Members merged", String(found.members)]];
      // Summed selections read windows of members' stacks; merged ones, pre-merged blocks.
      if (found.windows) facts.push(["Summed from time windows", String(found.windows)]);
      if (found.blocks || !found.windows) facts.push(["Pre-merged blocks", String(found.blocks)]);
      if (found.base) facts.push(["Base members", String(found.base_members)]);
      for (const [dt, dd] of facts.reverse()) list.prepend(el("dt", { textContent: dt }), el("dd", { textContent: dd }));
    } catch {
      // the record is a courtesy: the views say what went wrong
    }
  }

  drawSides(sel, base, found, merged = null) {
    const main = { members: found.members, url: found.profile_url, blocks: found.blocks, windows: found.windows, pending: found.pending };
    if (merged && (merged.profile !== found.profile || merged.members !== found.members)) main.merged = merged.members;
    this.side($("sel-main"), "Selection", sel, main);
    if (!base) return;
    const other = { members: found.base_members, url: found.base_url, pending: found.base_pending };
    if (merged && (merged.base !== found.base || merged.base_members !== found.base_members)) other.merged = merged.base_members;
    this.side($("sel-base"), "Base", base, other);
  }

  /** Recent times of a collection a fleet feeds are shown as merged so far (pending), not
   * after seconds of merges: the selection is then asked once more with wait=1, which merges
   * the rest in, and the line offers to show it (the views change only when asked: the
   * reader may be zoomed in). */
  async catchUp(call, sel, base, own) {
    const q = new URLSearchParams(location.search);
    q.set("wait", "1");
    const summed = !this.found.profile; // summed (not merged): asked summed again, with all
    if (summed) q.set("summed", "1");
    let merged;
    try {
      // Asked again quietly when it outlasts the server's wait: the views on show are fine.
      merged = await getJSON(`${this.root.dataset.selectionUrl}?${q}`, () => {});
    } catch {
      return; // the views stand as shown; a reload tries again
    }
    if (call !== this.call || !newer(this.found, merged)) return;
    this.drawSides(sel, base, this.found, merged);
    for (const button of this.root.querySelectorAll(".cl-show-merged")) {
      button.addEventListener("click", () => {
        // A sum keeps nothing the next views would find: they ask with wait=1 from now on.
        if (summed) {
          const now = new URLSearchParams(location.search);
          now.set("wait", "1");
          history.replaceState(null, "", `${location.pathname}?${now}${location.hash}`);
        }
        this.show(sel, base, own);
        this.root.dispatchEvent(new CustomEvent("selectionmerged"));
      });
    }
  }

  /** "Selection: 12:00:00Z – 12:05:00Z · pod="api-1" · 4 profiles → merged profile", and
   * what is pending, or merged since with a button to show it (f.merged: members then). */
  side(p, label, s, f) {
    const parts = [rangeText(s.from, s.to)];
    if (s.matchers.length) parts.push(matchText(s.matchers));
    if (s.kind) parts.push(s.kind);
    const plural = (n) => (n === 1 ? "" : "s");
    if (f && f.members != null) {
      let from = "";
      if (f.windows) from = ` (summed from ${f.windows} time window${plural(f.windows)})`;
      else if (f.blocks) from = ` (read from ${f.blocks} pre-merged block${plural(f.blocks)})`;
      parts.push(`${f.members} profile${plural(f.members)} merged${from}`);
      if (f.merged != null) {
        const n = f.merged - f.members;
        parts.push(`${n} newer one${plural(n)} merged in since`);
      } else if (f.pending) parts.push(`${f.pending} newer one${f.pending === 1 ? " is" : "s are"} being merged in`);
    }
    p.replaceChildren(el("strong", { textContent: `${label}: ` }), parts.join(" · "));
    if (f && f.merged != null) {
      p.append(" ", el("button", { type: "button", textContent: `Show all ${f.merged}`, className: "cl-show-merged" }));
    }
    if (f && f.url) p.append(" ", el("a", { href: f.url, textContent: "merged profile", className: "cl-merged" }));
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
    // Not merged yet (summed): the collection's snapshot link merges it, then leads there.
    let at = `${prefix}/${f.profile}`;
    if (!f.profile) {
      at = this.root.dataset.rawUrl.split("?")[0].replace(/\/raw$/, "/snapshot");
      for (const [k, v] of new URLSearchParams(location.search)) q.set(k, v);
    }
    const query = (extra) => (extra.size ? `?${extra}` : "");
    const page = `${at}${query(q)}`;
    this.snapshot = page;
    $("snapshot-link").href = page + location.hash;
    if (this.view.sampleIndex) q.set("si", this.view.sampleIndex);
    $("embed-link-sel").href = `${at}/embed${query(q)}`;
    const si = new URLSearchParams(f.profile ? {} : new URLSearchParams(location.search));
    if (this.view.sampleIndex) si.set("si", this.view.sampleIndex);
    $("preview-link").href = `${at}/preview.png${query(si)}`;
    $("preview-link").hidden = Boolean(f.base); // the picture is of one profile, never a diff
  }
}

/** Whether the selection asked with wait=1 holds more than the one shown: another merged
 * profile, or (summed) more members. */
function newer(found, merged) {
  return merged.profile !== found.profile || merged.base !== found.base
    || merged.members !== found.members || merged.base_members !== found.base_members;
}
