// "Compare with…" and "Merge with…" on the profile page, and the head of a diff page that names
// both sides. The page's query string holds server parameters verbatim (/ID?diff_base=OTHER&
// normalize=1): they go with every API request the page makes, so a diff page is a link that
// reopens as the same diff. The fragment keeps what only the page knows (zoom, search).
// Everything from a profile (titles, names) reaches the page through textContent only.
import { diffTotalText, renderLegend } from "./viewer.diff.js";
import { formatTime, formatValue } from "./viewer.format.js";

const UPLOADS_KEY = "pprof-share:uploads"; // static/index.js keeps the browser's uploads here
const DIFF_KEYS = ["diff_base", "base", "normalize"];
const PROFILE_ID = /^[A-Za-z0-9_-]{16}$/;

/** The page's query (server parameters) joined with the page's own: "?a=1&si=cpu" or "". */
export function apiQuery(params = []) {
  const own = location.search.replace(/^\?/, "");
  const all = [own, ...params].filter(Boolean).join("&");
  return all ? "?" + all : "";
}

/** The diff the query string asks for: {mode, refs, normalize}, or null. */
export function diffParams(search = location.search) {
  const q = new URLSearchParams(search);
  for (const mode of ["diff_base", "base"]) {
    const value = (q.get(mode) || "").trim();
    if (value) {
      const refs = value.split(",").map((r) => r.trim()).filter(Boolean);
      const normalize = ["", "1", "t", "true", "yes", "on"].includes((q.get("normalize") ?? "0").toLowerCase());
      return { mode, refs, normalize };
    }
  }
  return null;
}

/** The id a reference names (an id, or a link holding one), as share/analysis/options.py reads it. */
export function profileId(text) {
  const t = String(text || "").trim();
  if (PROFILE_ID.test(t)) return t;
  let path = t.split("?")[0].split("#")[0];
  try {
    if (t.includes("://")) path = new URL(t).pathname;
  } catch {
    return null;
  }
  return path.split("/").find((seg) => PROFILE_ID.test(seg)) || null;
}

/** The uploads this browser made (index.js's list), newest first, not expired. */
function yourUploads(except) {
  let list = [];
  try {
    list = JSON.parse(localStorage.getItem(UPLOADS_KEY) || "[]");
  } catch {
    list = [];
  }
  const now = Date.now() / 1000;
  return (Array.isArray(list) ? list : []).filter(
    (u) => u && typeof u.id === "string" && u.id !== except && (u.expires_at == null || u.expires_at > now),
  );
}

function remember(body) {
  try {
    const list = JSON.parse(localStorage.getItem(UPLOADS_KEY) || "[]");
    const old = Array.isArray(list) ? list.filter((u) => u && u.id !== body.id) : [];
    const entry = {
      id: body.id,
      url: body.url,
      title: body.title || "",
      token: body.delete_token || null,
      created_at: Date.parse(body.created_at) / 1000 || Date.now() / 1000,
      expires_at: body.expires_at ? Date.parse(body.expires_at) / 1000 : null,
    };
    localStorage.setItem(UPLOADS_KEY, JSON.stringify([entry, ...old]));
  } catch {
    // storage disabled: the merge still worked, the list just does not know it
  }
}

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

class Compare {
  constructor(root) {
    this.root = root;
    this.id = root.dataset.id;
    // The app may be mounted under a prefix: the record URL is PREFIX/api/v1/profiles/ID.
    const rec = root.dataset.recordUrl;
    this.prefix = rec.slice(0, rec.length - `/api/v1/profiles/${this.id}`.length);
    this.diff = diffParams();
  }

  /** A URL of this app: PREFIX/<id>, with the query params and this page's fragment. */
  pageUrl(id, params, keepHash = true) {
    const q = params.toString();
    return `${this.prefix}/${id}${q ? "?" + q : ""}${keepHash ? location.hash : ""}`;
  }

  /** The page's query without its diff parameters (refine parameters stay). */
  plainParams() {
    const q = new URLSearchParams(location.search);
    for (const k of DIFF_KEYS) q.delete(k);
    return q;
  }

  setup() {
    // A collection's page compares selections (collection.js): no forms of profile links.
    if (this.root.dataset.compare === "off") return;
    const head = this.root.querySelector(".vw-head");
    this.tools = el("div", { id: "compare-tools", className: "cmp-tools" });
    this.tools.append(this.compareForm(), this.mergeForm());
    head.append(this.tools);
    if (this.diff) this.diffHead(head);
  }

  compareForm() {
    const summary = el("summary", { textContent: "Compare with…" });
    const details = el("details", { id: "compare", className: "cmp" }, summary);
    const input = el("input", {
      id: "compare-ref", type: "text", className: "mono", placeholder: "link or id of the base profile",
      autocomplete: "off", spellcheck: false, required: true,
    });
    input.setAttribute("aria-label", "Base profile (link or id)");
    const mine = yourUploads(this.id);
    const pick = el("select", { id: "compare-pick" });
    pick.setAttribute("aria-label", "Your uploads");
    pick.append(el("option", { value: "", textContent: "Your uploads…" }));
    for (const u of mine) {
      const when = formatTime(u.created_at);
      pick.append(el("option", { value: u.id, textContent: `${u.title || u.id}${when ? " · " + when : ""}` }));
    }
    pick.hidden = !mine.length;
    pick.addEventListener("change", () => {
      if (pick.value) input.value = pick.value;
    });
    const mode = el("select", { id: "compare-mode" });
    mode.setAttribute("aria-label", "How to compare");
    mode.append(
      el("option", { value: "diff_base", textContent: "less the base (-diff_base: % of the base)" }),
      el("option", { value: "base", textContent: "less the base (-base: % of the difference)" }),
    );
    const normalize = el("input", { id: "compare-normalize", type: "checkbox" });
    const error = el("p", { id: "compare-error", className: "vw-error cmp-error", hidden: true });
    error.setAttribute("role", "alert");
    const form = el(
      "form", { id: "compare-form", className: "cmp-form" },
      input, pick, mode,
      el("label", {}, normalize, " normalize (scale this profile to the base's total)"),
      el("button", { type: "submit", textContent: "Compare" }),
      error,
    );
    if (this.diff) {
      input.value = this.diff.refs.join(",");
      mode.value = this.diff.mode;
      normalize.checked = this.diff.normalize;
    }
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      const refs = input.value.split(/[\s,]+/).filter(Boolean);
      const ids = refs.map(profileId);
      if (!refs.length || ids.includes(null)) {
        error.textContent = `${refs[ids.indexOf(null)] || "(nothing)"} is neither a profile id nor a link to one`;
        error.hidden = false;
        return;
      }
      const q = this.plainParams();
      q.set(mode.value, ids.join(","));
      if (normalize.checked) q.set("normalize", "1");
      location.assign(this.pageUrl(this.id, q));
    });
    details.append(form);
    return details;
  }

  mergeForm() {
    const summary = el("summary", { textContent: "Merge with…" });
    const details = el("details", { id: "merge", className: "cmp" }, summary);
    const input = el("textarea", {
      id: "merge-refs", className: "mono", rows: 2, spellcheck: false,
      placeholder: "links or ids, separated by spaces or new lines",
    });
    input.setAttribute("aria-label", "Profiles to merge with this one");
    const error = el("p", { id: "merge-error", className: "vw-error cmp-error", hidden: true });
    error.setAttribute("role", "alert");
    const button = el("button", { type: "submit", textContent: "Merge into a new link" });
    const form = el("form", { id: "merge-form", className: "cmp-form" }, input, button, error);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const refs = input.value.split(/[\s,]+/).filter(Boolean);
      if (!refs.length) {
        error.textContent = "Paste the link or id of at least one profile to merge with this one.";
        error.hidden = false;
        return;
      }
      error.hidden = true;
      button.disabled = true;
      button.textContent = "Merging…";
      try {
        const res = await fetch(`${this.prefix}/api/v1/merge`, {
          method: "POST",
          headers: { "Content-Type": "application/json", Accept: "application/json" },
          body: JSON.stringify({ profiles: [this.id, ...refs] }),
        });
        let body = null;
        try {
          body = await res.json();
        } catch {
          body = null;
        }
        if (!res.ok || !body || !body.url) {
          throw new Error(body && body.error ? body.error.message : `${res.status} ${res.statusText}`);
        }
        remember(body);
        location.assign(body.url);
      } catch (err) {
        error.textContent = `Could not merge: ${err.message}`;
        error.hidden = false;
        button.disabled = false;
        button.textContent = "Merge into a new link";
      }
    });
    details.append(form);
    return details;
  }

  /** The head of a diff page: both sides named, the swap, the way back to the plain profile. */
  diffHead(head) {
    const { mode, refs, normalize } = this.diff;
    const section = el("section", { id: "diff-head", className: "cmp-head" });
    section.setAttribute("aria-label", "What is compared");
    const after = el("div", { id: "diff-after", className: "cmp-side" });
    const before = el("div", { id: "diff-before", className: "cmp-side" });
    const how =
      mode === "diff_base"
        ? "this profile less its base (pprof -diff_base: percentages of the base)"
        : "this profile less the base (pprof -base: percentages of the difference)";
    const scaled = normalize ? ", this profile scaled to the base's total (-normalize)." : ".";
    const swap = el("a", { id: "diff-swap", className: "cmp-button", textContent: "⇄ Swap sides" });
    const q = this.plainParams();
    q.set(mode, this.id);
    if (normalize) q.set("normalize", "1");
    if (refs.length === 1 && profileId(refs[0])) {
      swap.href = this.pageUrl(profileId(refs[0]), q);
      swap.title = "Show the base less this profile: every sign reverses";
    } else {
      swap.hidden = true; // several bases merged: no single profile to put first
    }
    const plain = el("a", {
      id: "diff-plain",
      className: "cmp-button",
      textContent: "Plain profile",
      href: this.pageUrl(this.id, this.plainParams()),
    });
    this.totals = el("span", { id: "diff-totals", className: "cmp-totals" });
    section.append(
      el("p", { className: "cmp-how" }, el("strong", { textContent: "Diff: " }), how + scaled),
      after, before,
      el("p", { className: "cmp-actions" }, this.totals, swap, plain),
    );
    head.after(section);
    const sides = [this.side(after, "After", this.id, this.root.dataset.recordUrl)];
    refs.forEach((ref, k) => {
      const id = profileId(ref);
      const target = k ? el("div", { className: "cmp-side" }) : before;
      if (k) section.insertBefore(target, section.lastChild);
      const label = refs.length > 1 ? `Before (${k + 1} of ${refs.length})` : "Before";
      sides.push(this.side(target, label, id, id && `${this.prefix}/api/v1/profiles/${id}`));
    });
    // The tab says what is compared: "after − before · pprof-share".
    Promise.all(sides).then((names) => {
      document.title = `${names[0]} − ${names.slice(1).join(" + ")} · pprof-share`;
    });
  }

  /** One side of the diff: its title (a link to it), then what its record says; resolves to
   * the title. */
  async side(box, label, id, recordUrl) {
    const href = id ? this.pageUrl(id, new URLSearchParams(), false) : "#";
    const link = el("a", { className: "cmp-title", textContent: id || "?", href });
    const facts = el("span", { className: "vw-muted cmp-facts" });
    box.replaceChildren(el("span", { className: "cmp-label", textContent: label + ": " }), link, " ", facts);
    box.dataset.id = id || "";
    if (!recordUrl) return link.textContent;
    try {
      const res = await fetch(recordUrl, { headers: { Accept: "application/json" } });
      const rec = await res.json();
      if (!res.ok) throw new Error(rec && rec.error ? rec.error.message : res.statusText);
      link.textContent = rec.title || rec.id;
      const m = rec.metadata || {};
      const parts = [];
      if (rec.default_sample_type || (rec.sample_types || []).length) {
        parts.push((rec.sample_types || []).map((t) => t.type).join(", "));
      }
      if (m.time_nanos) parts.push("taken " + formatTime(m.time_nanos / 1e9));
      if (m.duration_nanos) parts.push("over " + formatValue(m.duration_nanos, "nanoseconds"));
      facts.textContent = parts.length ? `(${parts.join(" · ")})` : "";
    } catch (err) {
      facts.textContent = `(${err.message})`;
    }
    box.dataset.loaded = "1";
    return link.textContent;
  }

  /** Per view of the flame graph: the legend and the totals of a diff (fg.diff), or neither. */
  show(fg, graph) {
    const flame = document.getElementById("flame");
    let legend = document.getElementById("diff-legend");
    if (!legend && fg.diff) {
      legend = el("div", { id: "diff-legend", className: "diff-legend" });
      flame.insertBefore(legend, document.getElementById("fg-scroll"));
    }
    this.root.dataset.diff = fg.diff ? fg.diff_mode : "";
    if (!fg.diff) {
      if (legend) legend.hidden = true;
      document.querySelector("#diff-head[data-stored]")?.remove(); // a collection's new selection
      return;
    }
    const repaint = () => graph.retheme();
    renderLegend(legend, graph.palette.light, repaint);
    if (!this.themed) {
      this.themed = true;
      // The legend's swatches follow the theme's lightness, once the graph has re-read it.
      const redraw = () => renderLegend(legend, graph.palette.light, repaint);
      document.addEventListener("themechange", () => setTimeout(redraw));
    }
    if (this.totals) this.totals.textContent = diffTotalText(fg);
    // A stored diff's note (a collection's selection may have one, then not): kept current.
    const stored = document.querySelector("#diff-head[data-stored]");
    if (stored && fg.diff_mode !== "labels") stored.remove();
    else if (stored) stored.querySelector(".cmp-totals").textContent = diffTotalText(fg);
    if (fg.diff_mode === "labels" && !document.getElementById("diff-head")) {
      const note = el("section", { id: "diff-head", className: "cmp-head" });
      note.dataset.stored = "1";
      const p = el("p", { className: "cmp-how" });
      note.append(p);
      p.append(
        el("strong", { textContent: "Diff: " }),
        "this profile is itself a diff (go tool pprof -proto -diff_base): samples labelled " +
          "pprof::base=true are the base (before), the others the new profile (after).",
      );
      note.append(el("p", { className: "cmp-totals", textContent: diffTotalText(fg) }));
      this.root.querySelector(".vw-head").after(note);
    }
  }
}

/** Builds the compare and merge forms (and a diff page's head); returns the per-view hook. */
export function setupCompare(root) {
  const c = new Compare(root);
  c.setup();
  return c;
}
