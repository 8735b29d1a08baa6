// The labels panel (the tags JSON): each label key with its values and their weights as bars.
// A value click keeps only its samples (tagfocus), with Alt or Shift drops them (tagignore);
// "Group by" makes the key a frame above each stack (tagroot), so the flame graph splits by it.
import { formatPct, formatValue } from "./viewer.format.js";

// Units of formatted numeric labels (viewer.format.js's scale), in pprof's base units.
const SCALES = {
  B: [1, "b"], kB: [2 ** 10, "b"], MB: [2 ** 20, "b"], GB: [2 ** 30, "b"], TB: [2 ** 40, "b"],
  ns: [1, "ns"], us: [1e3, "ns"], ms: [1e6, "ns"], s: [1e9, "ns"], hrs: [3600e9, "ns"],
};

/** pprof's tag filter for one value of a key: an exact regex for a string label (commas, which
 * pprof splits the list on, written as \x2c); for a number, the value itself (pprof reads it as
 * an equality range), or the range its two decimals round from ("1.50MB"). */
export function tagFilter(key, value, numeric) {
  if (numeric) {
    const m = /^(-?\d+)\.(\d+)([a-zA-Z]+)$/.exec(value);
    const scale = m && SCALES[m[3]];
    if (!scale) return `${key}=${value}`;
    const x = Number(`${m[1]}.${m[2]}`);
    const lo = Math.ceil((x - 0.005) * scale[0]);
    const hi = Math.floor((x + 0.005) * scale[0]);
    return `${key}=${lo}${scale[1]}:${hi}${scale[1]}`;
  }
  const exact = "^" + value.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/,/g, "\\x2c") + "$";
  return `${key}=${exact}`;
}

export class LabelsPanel {
  /** opts: box (div), onFilter(param, value), onGroup(keys) */
  constructor(opts) {
    Object.assign(this, opts);
    this.box.addEventListener("click", (e) => {
      const b = e.target.closest("button");
      if (!b || !this.box.contains(b)) return;
      if (b.dataset.group != null) this.toggleGroup(b.dataset.group);
      else if (b.dataset.key != null) {
        const param = e.altKey || e.shiftKey ? "tagignore" : "tagfocus";
        this.onFilter(param, tagFilter(b.dataset.key, b.dataset.value, b.dataset.numeric === "1"));
      }
    });
  }

  toggleGroup(key) {
    const keys = this.grouped.includes(key) ? this.grouped.filter((k) => k !== key) : [...this.grouped, key];
    this.onGroup(keys);
  }

  /** Draws the tags JSON; grouped: the keys tagroot holds now. */
  show(tags, grouped) {
    this.grouped = grouped;
    const keys = tags ? tags.keys : [];
    if (!keys.length) {
      const p = document.createElement("p");
      p.className = "vw-note";
      p.textContent = "This profile's samples carry no labels" + (tags && tags.filters.length ? " (after the filters)." : ".");
      this.box.replaceChildren(p);
      return;
    }
    this.box.replaceChildren(...keys.map((k) => this.keyBlock(tags, k)));
  }

  keyBlock(tags, k) {
    const section = document.createElement("section");
    section.className = "lb-key";
    section.dataset.key = k.key;
    const head = document.createElement("div");
    head.className = "vw-bar";
    const h3 = Object.assign(document.createElement("h3"), { className: "mono", textContent: k.key });
    const info = Object.assign(document.createElement("span"), {
      className: "vw-muted",
      textContent: `${k.count} value${k.count === 1 ? "" : "s"} · ${formatValue(k.total, tags.unit)} (${formatPct(k.total, tags.total)} of total)`,
    });
    const group = document.createElement("button");
    group.type = "button";
    group.dataset.group = k.key;
    const on = this.grouped.includes(k.key);
    group.setAttribute("aria-pressed", String(on));
    group.textContent = on ? "Ungroup" : "Group by";
    group.title = `tagroot=${k.key}: a frame per value of ${k.key} above each stack`;
    head.append(h3, info, group);
    const list = document.createElement("ul");
    list.className = "lb-values";
    const max = Math.abs(k.total) || 1; // a bar's width is its share of the key's samples
    k.values.value.forEach((value, i) => {
      const weight = k.values.weight[i];
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.type = "button";
      b.className = "lb-value";
      b.dataset.key = k.key;
      b.dataset.value = value;
      b.dataset.numeric = k.numeric ? "1" : "0";
      b.title = "Click: only these samples (tagfocus) · Alt/Shift+click: without them (tagignore)";
      const bar = document.createElement("span");
      bar.className = "lb-bar";
      bar.style.width = ((Math.abs(weight) / max) * 100).toFixed(1) + "%";
      const name = Object.assign(document.createElement("span"), { className: "lb-name mono", textContent: value });
      const w = Object.assign(document.createElement("span"), {
        className: "lb-weight",
        textContent: `${formatValue(weight, tags.unit)} · ${formatPct(weight, tags.total)}`,
      });
      b.append(bar, name, w);
      li.append(b);
      list.append(li);
    });
    section.append(head, list);
    if (k.other && k.other.count) {
      const more = Object.assign(document.createElement("p"), {
        className: "vw-muted",
        textContent: `${k.other.count} more values: ${formatValue(k.other.weight, tags.unit)}`,
      });
      section.append(more);
    }
    return section;
  }
}
