// The refine bar: the active filters as removable chips, the granularity and view switches,
// and what the server said about the filters (warnings, a refused regex).
import { tagFilter } from "./viewer.labels.js";
import { openMenu } from "./viewer.menu.js";
import { FILTERS, frameRegex, getParam, serverParams, unexact } from "./viewer.state.js";

export const VIEWS = ["flame", "top", "graph", "peek", "labels"];
export const GRANULARITIES = ["functions", "filefunctions", "files", "lines", "addresses"];

/** The filters a frame can get, with their keys: [param, menu label, key]. */
export const FRAME_FILTERS = [
  ["focus", "Focus on", "f"],
  ["ignore", "Ignore", "i"],
  ["hide", "Hide", "h"],
  ["show", "Show only", "s"],
  ["show_from", "Show from", "F"],
];

/** A regex's top-level alternatives: "^a$|^b\|c$" -> ["^a$", "^b\|c$"]; groups and classes
 * stay whole. */
export function alternatives(re) {
  const out = [];
  let depth = 0;
  let inClass = false;
  let start = 0;
  for (let i = 0; i < re.length; i++) {
    const c = re[i];
    if (c === "\\") i++;
    else if (inClass) inClass = c !== "]";
    else if (c === "[") inClass = true;
    else if (c === "(") depth++;
    else if (c === ")") depth--;
    else if (c === "|" && depth === 0) {
      out.push(re.slice(start, i));
      start = i + 1;
    }
  }
  out.push(re.slice(start));
  return out.filter((a) => a !== "");
}

/** The new value of a filter param when a frame's regex is added to it: ignore, hide and show
 * take one more alternative; focus and show_from take the new frame alone. */
export function addedValue(param, current, regex) {
  if (!current || param === "focus" || param === "show_from") return regex;
  const alts = alternatives(current);
  return alts.includes(regex) ? current : [...alts, regex].join("|");
}

/** The context menu of a frame (name, file) at (x, y). opts: granularity, onFilter(param,
 * value), onPeek(), onSearch(). A frame tagroot or tagleaf made is a label value whose file is
 * the key: it filters by that label instead. */
export function frameMenuAt(x, y, name, file, opts) {
  const params = serverParams();
  const labelKeys = ["tagroot", "tagleaf"].flatMap((k) => (getParam(params, k) || "").split(","));
  if (file && labelKeys.includes(file)) {
    const tag = tagFilter(file, name, false);
    return openMenu(x, y, `${file}=${name}`, [
      { id: "tagfocus", label: "Only these samples", action: () => opts.onFilter("tagfocus", tag) },
      { id: "tagignore", label: "Without these samples", action: () => opts.onFilter("tagignore", tag) },
    ]);
  }
  const what = opts.granularity === "files" ? "file" : "function";
  const regex = frameRegex(name, file, opts.granularity);
  const items = FRAME_FILTERS.map(([param, label, key]) => ({
    id: param,
    label: `${label} this ${what}`,
    key,
    action: () => opts.onFilter(param, addedValue(param, getParam(serverParams(), param), regex)),
  }));
  items.push(null, { id: "peek", label: "Callers and callees", key: "p", action: opts.onPeek });
  items.push({ id: "search", label: "Search for it", action: opts.onSearch });
  return openMenu(x, y, name, items);
}

export class RefineBar {
  /** opts: chips, granularity (select), views (nav), notes (p), onParams(changes), onView(v) */
  constructor(opts) {
    Object.assign(this, opts);
    for (const g of GRANULARITIES) {
      this.granularity.append(Object.assign(document.createElement("option"), { value: g, textContent: g }));
    }
    this.granularity.addEventListener("change", () => {
      const g = this.granularity.value;
      this.onParams({ granularity: g === "functions" ? null : g });
    });
    this.views.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-view]");
      if (b) this.onView(b.dataset.view);
    });
  }

  /** Redraws the chips and the granularity from the page's query string. */
  render() {
    const params = serverParams();
    this.granularity.value = getParam(params, "granularity") || "functions";
    const chips = [];
    for (const [param, label] of FILTERS) {
      const value = getParam(params, param);
      if (!value) continue;
      // One chip per alternative of a name filter, so one frame can be taken out of several.
      const alts = param.startsWith("tag") || param === "prune_from" ? [value] : alternatives(value);
      for (const alt of alts) {
        const rest = alts.filter((a) => a !== alt).join("|");
        chips.push(this.chip(param, label, alt, () => this.onParams({ [param]: rest || null })));
      }
    }
    this.chips.replaceChildren(...chips);
    this.chips.hidden = !chips.length;
  }

  chip(param, label, value, remove) {
    const span = document.createElement("span");
    span.className = "chip";
    span.dataset.param = param;
    span.dataset.value = value;
    // An exact regex reads as its name: "main.sortInts", "worker=1".
    const tag = param.startsWith("tag") && /^([^=]+)=(.*)$/s.exec(value);
    const tagName = tag ? unexact(tag[2]) : null;
    const name = tagName != null ? `${tag[1]}=${tagName}` : unexact(value);
    const kind = Object.assign(document.createElement("span"), { className: "chip-kind", textContent: label });
    const text = Object.assign(document.createElement("span"), {
      className: "chip-value mono",
      textContent: name != null ? name : value,
    });
    text.title = value;
    const x = document.createElement("button");
    x.type = "button";
    x.className = "chip-remove";
    x.textContent = "×";
    x.setAttribute("aria-label", `Remove ${label} ${value}`);
    x.addEventListener("click", remove);
    span.append(kind, text, x);
    return span;
  }

  setView(view) {
    for (const b of this.views.querySelectorAll("button[data-view]")) {
      b.setAttribute("aria-pressed", String(b.dataset.view === view));
    }
  }

  /** The server's warnings (a filter that matched nothing) or its refusal (a 400's line). */
  showNotes(warnings, error) {
    const lines = [...(warnings || [])];
    if (error) lines.push(error);
    this.notes.textContent = lines.join("\n");
    this.notes.hidden = !lines.length;
    this.notes.classList.toggle("vw-error", Boolean(error));
  }
}
