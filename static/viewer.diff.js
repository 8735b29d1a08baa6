// The differential flame graph's colours, legend, tooltip and totals (README "Compare and
// merge"). A diff's frames are before + after wide; the colour says which way they changed:
// the hue by the sign of after - before, the saturation by how much of the frame changed.
import { formatPct, formatValue } from "./viewer.format.js";

const STORE_KEY = "pprof-share:diff-palette";

/** Hues of "grew" and "shrank". Red/green is how Grafana and most tools draw a diff; blue/orange
 * stays apart for the common colour-vision deficiencies (deuteranopia, protanopia), where red
 * and green look alike. */
export const DIFF_PALETTES = {
  redgreen: { label: "red / green", grew: 0, shrank: 125 },
  blueorange: { label: "blue / orange (colour-blind safe)", grew: 30, shrank: 212 },
};

let chosen = null; // this page's choice, should the browser's storage refuse it

export function diffPaletteName() {
  if (chosen) return chosen;
  try {
    const name = localStorage.getItem(STORE_KEY);
    return name && DIFF_PALETTES[name] ? name : "redgreen";
  } catch {
    return "redgreen"; // storage disabled: the default palette
  }
}

function saveDiffPalette(name) {
  chosen = name;
  try {
    localStorage.setItem(STORE_KEY, name);
  } catch {
    // storage disabled or full: the choice holds for this page only
  }
}

const STEPS = 24; // saturation steps: few enough to cache a colour per step
const colourCache = new Map();

/** How much of a frame changed: |after - before| / (|before| + |after|), 0 to 1 (1: new or
 * gone), with its sign. Relative to the frame rather than to the total, so a small function that
 * doubled shows at every zoom, as Grafana's diff view colours it. */
export function changeOf(before, after) {
  const width = Math.abs(before) + Math.abs(after);
  const delta = after - before;
  return width && delta ? Math.sign(delta) * Math.min(1, Math.abs(delta) / width) : 0;
}

const NEUTRAL = 0.001; // under 0.1% of a frame changed (normalize's rounding, say): grey

/** The fill of a frame whose share of change is `change` (-1 .. 1; about 0: neutral grey). */
export function diffColour(change, name, light) {
  if (Math.abs(change) < NEUTRAL) change = 0;
  const step = Math.round(Math.abs(change) * STEPS);
  const key = `${name}/${light}/${Math.sign(change)}/${step}`;
  let c = colourCache.get(key);
  if (!c) {
    const pal = DIFF_PALETTES[name] || DIFF_PALETTES.redgreen;
    if (!change) {
      c = `hsl(220 6% ${light + 12}%)`;
    } else {
      // Even a small change shows a tint; a new or gone frame is the fullest colour.
      const t = Math.max(step, 1) / STEPS;
      const hue = change > 0 ? pal.grew : pal.shrank;
      c = `hsl(${hue} ${Math.round(18 + 72 * t)}% ${Math.round(light + 14 * (1 - t))}%)`;
    }
    colourCache.set(key, c);
  }
  return c;
}

/** "+100%", "−50%", "new", "gone": after / before - 1, as the tooltip and the table say it. */
export function relativeChange(before, after) {
  if (before === after) return "no change";
  if (!before) return "new";
  if (!after) return "gone";
  const r = (after / before - 1) * 100;
  const text = Math.abs(r) >= 10 ? r.toFixed(0) : r.toFixed(1);
  return `${r > 0 ? "+" : ""}${text}%`;
}

/** A signed delta with its unit: "+1.20s", "-350ms", "0". */
export function formatDelta(delta, unit) {
  const text = formatValue(delta, unit);
  return delta > 0 ? "+" + text : text;
}

/** The text of the page's total for a diff: both sides and the change. */
export function diffTotalText(fg) {
  const type = fg.sample_type && fg.sample_type.type ? " " + fg.sample_type.type : "";
  const b = fg.before_total;
  const a = fg.after_total;
  const change = `${formatDelta(a - b, fg.unit)}, ${relativeChange(b, a)}`;
  return `${formatValue(b, fg.unit)} → ${formatValue(a, fg.unit)}${type} (${change})`;
}

/** The search share of a diff: both sides of the matched stacks, each of its own side's total
 * (so neither exceeds 100%), and the share of the graph's width they cover. */
export function describeDiffMatch(sides, fg) {
  const { before, after } = sides;
  const part = (v, total) => `${formatValue(v, fg.unit)} (${formatPct(v, total)})`;
  return {
    text: `matched ${part(before, fg.before_total)} → ${part(after, fg.after_total)}`,
    share: fg.width_total ? (Math.abs(before) + Math.abs(after)) / fg.width_total : 0,
  };
}

/** The typed arrays FlameGraph.setData adds for a diff: both sides per node, and the width. */
export function diffData(fg) {
  const nodes = fg.nodes;
  const before = Float64Array.from(nodes.before);
  const after = Float64Array.from(nodes.after);
  return {
    before,
    after,
    beforeSelf: Float64Array.from(nodes.before_self),
    afterSelf: Float64Array.from(nodes.after_self),
    width: before.map((b, i) => Math.abs(b) + Math.abs(after[i])),
    beforeTotal: fg.before_total,
    afterTotal: fg.after_total,
    widthTotal: fg.width_total,
    nodeColour: new Array(before.length),
  };
}

function tipField(tip, name) {
  let el = tip.querySelector(`[data-field="${name}"]`);
  if (!el) {
    el = document.createElement("div");
    el.dataset.field = name;
    el.dataset.diff = "";
    tip.append(el);
  }
  return el;
}

/** Fills the tooltip of node i of a diff (d: FlameGraph data), or hides its diff lines. */
export function fillDiffTip(tip, d, i) {
  const on = Boolean(d.diff);
  for (const f of ["value", "self"]) tipField(tip, f).hidden = on;
  for (const f of ["before", "after", "delta", "diffself"]) tipField(tip, f).hidden = !on;
  if (!on) return;
  const u = d.unit;
  const b = d.before[i];
  const a = d.after[i];
  const whole = d.widthTotal;
  tipField(tip, "before").textContent =
    `before ${formatValue(b, u)} (${formatPct(b, d.beforeTotal)} of before)`;
  tipField(tip, "after").textContent =
    `after ${formatValue(a, u)} (${formatPct(a, d.afterTotal)} of after)`;
  tipField(tip, "delta").textContent =
    `delta ${formatDelta(a - b, u)} (${relativeChange(b, a)}) · ${formatPct(d.width[i], whole)} of the width`;
  const bs = d.beforeSelf[i];
  const as = d.afterSelf[i];
  tipField(tip, "diffself").textContent =
    `self ${formatValue(bs, u)} → ${formatValue(as, u)} (${formatDelta(as - bs, u)})`;
  tip.dataset.change = String(changeOf(b, a));
}

/** The legend above a diff's flame graph, with the palette choice; onPalette(name) repaints. */
export function renderLegend(container, light, onPalette) {
  const name = diffPaletteName();
  const swatch = (change, label) => {
    const s = document.createElement("span");
    s.className = "dl-swatch";
    s.style.background = diffColour(change, name, light);
    s.title = label;
    return s;
  };
  const text = (t) => Object.assign(document.createElement("span"), { textContent: t });
  const scale = document.createElement("span");
  scale.className = "dl-scale";
  scale.append(
    text("shrank"),
    swatch(-1, "gone"),
    swatch(-0.5, "halved"),
    swatch(-0.15, "shrank a little"),
    swatch(0, "no change"),
    swatch(0.15, "grew a little"),
    swatch(0.5, "grew by half of its width"),
    swatch(1, "new"),
    text("grew"),
  );
  const note = document.createElement("span");
  note.className = "vw-muted";
  note.textContent =
    "Width: before + after. Colour: how much of the frame changed (full colour: new or gone; grey: under 0.1%).";
  const select = document.createElement("select");
  select.id = "diff-palette";
  select.setAttribute("aria-label", "Diff colours");
  for (const [key, pal] of Object.entries(DIFF_PALETTES)) {
    select.append(Object.assign(document.createElement("option"), { value: key, textContent: pal.label }));
  }
  select.value = name;
  select.addEventListener("change", () => {
    saveDiffPalette(select.value);
    renderLegend(container, light, onPalette);
    onPalette(select.value);
    container.querySelector("#diff-palette").focus();
  });
  const label = Object.assign(document.createElement("label"), { className: "dl-choice" });
  label.append("Colours ", select);
  container.replaceChildren(scale, label, note);
  container.dataset.palette = name;
  container.hidden = false;
}

// ---------------------------------------------------------------------------------------------
// The top table of a diff: each side's flat and cum beside pprof's delta and its share.

const DIFF_COLUMNS = [
  ["before_flat", "flat before"],
  ["after_flat", "flat after"],
  ["flat", "flat Δ"],
  ["flat_pct", "flat%"],
  ["before_cum", "cum before"],
  ["after_cum", "cum after"],
  ["cum", "cum Δ"],
  ["cum_pct", "cum%"],
];

let plainHead = null; // the template's header row, put back when a view is no diff

/** Sets the top table's header row to the diff's columns (on) or back to the plain ones. */
export function diffTopHead(thead, on) {
  if (thead.dataset.diff === String(on)) return;
  if (!plainHead) plainHead = thead.rows[0].cloneNode(true);
  let row = plainHead.cloneNode(true);
  if (on) {
    row = document.createElement("tr");
    for (const [key, label] of [...DIFF_COLUMNS, ["name", "name"]]) {
      const th = document.createElement("th");
      th.dataset.key = key;
      if (key !== "name") th.className = "num";
      if (key === "flat") th.setAttribute("aria-sort", "descending");
      th.title = key === "flat" || key === "cum" ? "after - before; sorted by size, as pprof sorts a diff" : "";
      th.append(Object.assign(document.createElement("button"), { type: "button", textContent: label }));
      row.append(th);
    }
  }
  thead.replaceChildren(row);
  thead.dataset.diff = String(on);
  thead.parentElement.classList.toggle("top-diff", on);
}

/** The number cells of one diff row, in DIFF_COLUMNS' order (shares of pprof's total). */
export function diffTopCells(r, unit, total) {
  return [
    formatValue(r.before_flat, unit),
    formatValue(r.after_flat, unit),
    formatDelta(r.flat, unit),
    formatPct(r.flat, total),
    formatValue(r.before_cum, unit),
    formatValue(r.after_cum, unit),
    formatDelta(r.cum, unit),
    formatPct(r.cum, total),
  ];
}
