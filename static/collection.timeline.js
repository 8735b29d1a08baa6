// The collection's timeline, drawn by uPlot (static/vendor/uplot, the global `uPlot`): one line
// per series of the timeline JSON, the selected range and the base range as bands under the
// lines. A drag selects a range (snapped to the timeline's step), Shift+drag or a drag in base
// mode the base; hovering names the nearest point (series, time, value) and a click on it opens
// that member's own link. Series names are label values: uPlot's legend and the tooltip write
// them as textContent.
import { formatValue } from "./viewer.format.js";
import { snapRange, timeText } from "./collection.time.js";

const HEIGHT = 220;
const NEAR_PX = 24; // a point this close to the mouse is the one hovered
const DRAG_PX = 3; // a mouse that moved less between down and up clicked
const MIN_STEPS = 20;
// The x axis' tick spacings: whole seconds and round minutes, hours and days.
const TICKS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800];
// Distinct hues in order; the lines of one chart are told apart by these, not by the theme.
const COLOURS = ["#2b6cb0", "#dd6b20", "#2f855a", "#c53030", "#6b46c1", "#b7791f", "#00838f", "#d53f8c", "#4a5568", "#718096"];

/** The timeline JSON's series on one x axis: the union of their times, null where a series
 * has no point; ids and member counts alike. */
export function aligned(doc) {
  const xs = [...new Set(doc.series.flatMap((s) => s.times))].sort((a, b) => a - b);
  const at = new Map(xs.map((t, i) => [t, i]));
  const column = (s, field) => {
    const out = new Array(xs.length).fill(null);
    s.times.forEach((t, k) => (out[at.get(t)] = s[field][k]));
    return out;
  };
  return {
    xs,
    ys: doc.series.map((s) => column(s, "values")),
    ids: doc.series.map((s) => column(s, "ids")),
    members: doc.series.map((s) => column(s, "members")),
  };
}

/** A y value as the timeline's unit says: cores, a rate, or a snapshot's bytes or count. */
export function valueText(doc, v) {
  if (v == null) return "–";
  const unit = doc.sample_type ? doc.sample_type.unit : "";
  const num = (x) => (Math.abs(x) >= 100 ? x.toFixed(0) : Math.abs(x) >= 10 ? x.toFixed(1) : x.toFixed(2));
  if (doc.rate && unit === "nanoseconds") return `${num(v)} cores`;
  const text = unit && unit !== "count" ? formatValue(Math.round(v), unit) : num(v);
  return doc.rate ? `${text}/s` : text;
}

/** The x axis' labels, in UTC: hh:mm:ss (hh:mm for steps of minutes), and the date under the
 * first label of each day. */
function timeTicks(splits, incr) {
  let day = null;
  return splits.map((v) => {
    const iso = new Date(v * 1000).toISOString();
    const time = incr >= 60 ? iso.slice(11, 16) : iso.slice(11, 19);
    const text = iso.slice(0, 10) !== day ? `${time}\n${iso.slice(0, 10)}` : time;
    day = iso.slice(0, 10);
    return text;
  });
}

const css = (name) => getComputedStyle(document.documentElement).getPropertyValue(name).trim();

export class Timeline {
  /** box: the chart's container; tip: the tooltip (data-field series, time, value, open);
   * onRange({from, to}, isBase) after a drag; onOpen(id, newTab) after a click on a point. */
  constructor({ box, tip, onRange, onOpen }) {
    Object.assign(this, { box, tip, onRange, onOpen });
    this.plot = null;
    this.range = null; // {from, to}, either may be null (open)
    this.base = null;
    this.baseMode = false;
    this.hot = null; // the hovered point: {s, i}
    this.down = null;
    new ResizeObserver(() => this.plot && this.plot.setSize(this.size())).observe(box);
    document.addEventListener("themechange", () => this.doc && this.show(this.doc));
  }

  size() {
    return { width: Math.max(this.box.clientWidth, 200), height: HEIGHT };
  }

  /** Draws the timeline JSON (a new chart: the series may differ). */
  show(doc) {
    this.doc = doc;
    this.data = aligned(doc);
    if (this.plot) this.plot.destroy();
    this.plot = null;
    this.box.replaceChildren();
    this.box.dataset.series = String(doc.series.length);
    this.hideTip();
    if (!doc.series.length) return;
    const { xs, ys } = this.data;
    const step = doc.step || 1;
    // At least MIN_STEPS steps across, so one point or a short span still reads as times.
    let [lo, hi] = [xs[0] - step / 2, xs[xs.length - 1] + step];
    const pad = Math.max(0, MIN_STEPS * step - (hi - lo)) / 2;
    [lo, hi] = [lo - pad, hi + pad];
    const muted = css("--muted") || "#5b6475";
    const grid = css("--line") || "#dde1e7";
    const axis = { stroke: muted, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 } };
    const opts = {
      ...this.size(),
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), "Etc/UTC"),
      scales: {
        x: { time: true, range: () => [lo, hi] },
        y: { range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : 1] },
      },
      series: [
        { label: "time (UTC)", value: (u, v) => (v == null ? "–" : timeText(v)) },
        ...doc.series.map((s, k) => ({
          label: s.name === "" ? `(no ${doc.group_by})` : s.name,
          stroke: COLOURS[k % COLOURS.length],
          width: 1.5,
          spanGaps: true,
          points: { show: true, size: 5 },
          value: (u, v) => valueText(doc, v),
        })),
      ],
      axes: [
        { ...axis, space: 80, incrs: TICKS, values: (u, splits, ai, space, incr) => timeTicks(splits, incr) },
        { ...axis, size: 80, values: (u, vals) => vals.map((v) => valueText(doc, v)) },
      ],
      cursor: { y: false, drag: { x: true, y: false, setScale: false }, focus: { prox: NEAR_PX } },
      focus: { alpha: 0.35 },
      legend: { live: true },
      hooks: {
        drawClear: [(u) => this.drawBands(u)],
        setSelect: [(u) => this.selected(u)],
        setCursor: [(u) => this.hover(u)],
      },
    };
    this.plot = new uPlot(opts, [xs, ...ys], this.box);
    this.box.plot = this.plot; // for tests and the console
    const over = this.plot.over;
    over.addEventListener("mousedown", (e) => (this.down = { x: e.clientX, y: e.clientY, shift: e.shiftKey }));
    over.addEventListener("click", (e) => this.clicked(e));
    over.addEventListener("mouseleave", () => this.hideTip());
    over.classList.toggle("tl-base-mode", this.baseMode);
    this.box.dataset.drawn = String(Date.now());
  }

  /** The selected range and the base range, drawn as bands (null: none). */
  setBands(range, base) {
    this.range = range;
    this.base = base;
    if (this.plot) this.plot.redraw(false);
  }

  setBaseMode(on) {
    this.baseMode = on;
    if (this.plot) this.plot.over.classList.toggle("tl-base-mode", on);
  }

  drawBands(u) {
    const { left, top, width, height } = u.bbox;
    const bands = [
      [this.base, "rgba(221, 107, 32, 0.18)", "rgba(221, 107, 32, 0.9)"],
      [this.range, "rgba(43, 108, 176, 0.16)", "rgba(43, 108, 176, 0.9)"],
    ];
    const ctx = u.ctx;
    for (const [band, fill, edge] of bands) {
      if (!band) continue;
      const x0 = band.from == null ? left : Math.max(left, u.valToPos(band.from, "x", true));
      const x1 = band.to == null ? left + width : Math.min(left + width, u.valToPos(band.to, "x", true));
      if (x1 <= x0) continue;
      ctx.save();
      ctx.fillStyle = fill;
      ctx.fillRect(x0, top, x1 - x0, height);
      ctx.fillStyle = edge;
      ctx.fillRect(x0, top, 2, height);
      ctx.fillRect(x1 - 2, top, 2, height);
      ctx.restore();
    }
  }

  selected(u) {
    const { left, width } = u.select;
    if (width < DRAG_PX) return;
    const t0 = u.posToVal(left, "x");
    const t1 = u.posToVal(left + width, "x");
    const isBase = Boolean(this.down && this.down.shift) || this.baseMode;
    u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
    this.down = null;
    this.onRange(snapRange(t0, t1, this.doc.step || 1), isBase);
  }

  /** The point nearest the mouse, within NEAR_PX: {s, i}, or null. */
  nearest(u) {
    const { left, top } = u.cursor;
    const { xs, ys } = this.data;
    if (left == null || left < 0 || !xs.length) return null;
    const x = u.posToVal(left, "x");
    let lo = 0;
    let hi = xs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (xs[mid] < x) lo = mid + 1;
      else hi = mid;
    }
    let best = null;
    for (let i = Math.max(0, lo - 3); i <= Math.min(xs.length - 1, lo + 3); i++) {
      for (let s = 0; s < ys.length; s++) {
        const v = ys[s][i];
        if (v == null || !u.series[s + 1].show) continue;
        const d = Math.hypot(u.valToPos(xs[i], "x") - left, u.valToPos(v, "y") - top);
        if (!best || d < best.d) best = { d, s, i };
      }
    }
    return best && best.d <= NEAR_PX ? best : null;
  }

  hover(u) {
    this.hot = this.nearest(u);
    if (!this.hot) return this.hideTip();
    const { s, i } = this.hot;
    const { xs, ys, members } = this.data;
    const field = (name) => this.tip.querySelector(`[data-field="${name}"]`);
    field("series").textContent = u.series[s + 1].label;
    field("time").textContent = `${timeText(xs[i])} (a step of ${this.doc.step}s)`;
    field("value").textContent = `${valueText(this.doc, ys[s][i])} · ${members[s][i]} profile${members[s][i] === 1 ? "" : "s"}`;
    field("open").textContent = "Click to open this profile";
    this.tip.hidden = false;
    this.tip.dataset.series = u.series[s + 1].label;
    const over = u.over.getBoundingClientRect();
    const parent = this.tip.offsetParent ? this.tip.offsetParent.getBoundingClientRect() : { left: 0, top: 0 };
    const x = over.left - parent.left + u.valToPos(xs[i], "x");
    const y = over.top - parent.top + u.valToPos(ys[s][i], "y");
    const flip = x + this.tip.offsetWidth + 16 > parent.width;
    this.tip.style.left = `${flip ? x - this.tip.offsetWidth - 12 : x + 12}px`;
    this.tip.style.top = `${Math.max(0, y - this.tip.offsetHeight - 8)}px`;
  }

  hideTip() {
    this.tip.hidden = true;
  }

  clicked(e) {
    const down = this.down;
    this.down = null;
    if (!down || Math.hypot(e.clientX - down.x, e.clientY - down.y) > DRAG_PX || !this.hot) return;
    const id = this.data.ids[this.hot.s][this.hot.i];
    if (id) this.onOpen(id, e.ctrlKey || e.metaKey);
  }
}
