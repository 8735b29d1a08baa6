// The profile page: flame graph on a canvas, top table, sample type selector, metadata.
// Everything from the profile (names, files, comments, mappings) is data: it reaches the page
// through textContent, attribute values and canvas fillText only, never through innerHTML.
import { apiQuery, diffParams, setupCompare } from "./viewer.compare.js";
import { describeDiffMatch, diffTopCells, diffTopHead, diffTotalText } from "./viewer.diff.js";
import { FlameGraph } from "./viewer.flame.js";
import { formatPct, formatRemaining, formatTime, formatValue } from "./viewer.format.js";
import { watchProgress } from "./viewer.progress.js";

const root = document.getElementById("viewer");
const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------------
// Page state, kept in the URL fragment: #si=<sample type>&q=<search>&zoom=<names joined by ;>

const dom = {
  select: $("sample-type"),
  total: $("total"),
  trimmed: $("trimmed"),
  trimmedText: $("trimmed-text"),
  detail: $("detail"),
  status: $("status"),
  flame: $("flame"),
  empty: $("no-samples"),
  emptyType: $("no-samples-type"),
  crumbs: $("breadcrumb"),
  search: $("search"),
  share: $("search-share"),
  top: $("top"),
  topBody: $("top-table").tBodies[0],
  topHead: $("top-table").tHead,
  topFilter: $("top-filter"),
  topCount: $("top-count"),
  meta: $("meta-list"),
};

const state = {
  types: [],
  si: -1, // index of the shown sample type
  q: "",
  zoomPath: [],
  fg: null,
  top: null,
  sortKey: "flat",
  sortDesc: true,
  full: false, // every frame, not only those over the server's node fraction
};
const cache = new Map(); // request URL -> Promise of its JSON

const graph = new FlameGraph({
  canvas: $("fg-canvas"),
  scroller: $("fg-scroll"),
  spacer: $("fg-spacer"),
  tooltip: $("tooltip"),
  onZoom: (z) => {
    state.zoomPath = graph.pathOf(z);
    renderCrumbs(z);
    saveUrl();
  },
});

function readUrl() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const zoom = params.get("zoom");
  return {
    si: params.get("si"),
    q: params.get("q") || "",
    zoom: zoom ? zoom.split(";") : [],
    full: params.get("all") === "1",
  };
}

/** Percent-encodes a fragment value but leaves the characters of function names readable. */
function encodeValue(v) {
  return encodeURIComponent(v).replace(/%(3B|2F|3A|28|29|2C|40|24|5B|5D|2A)/g, (m) =>
    decodeURIComponent(m),
  );
}

function saveUrl() {
  const parts = [];
  if (state.si >= 0 && state.types.length) parts.push("si=" + encodeValue(siParam(state.si)));
  if (state.q) parts.push("q=" + encodeValue(state.q));
  if (state.zoomPath.length) parts.push("zoom=" + encodeValue(state.zoomPath.join(";")));
  if (state.full) parts.push("all=1");
  const hash = parts.join("&");
  const url = location.pathname + location.search + (hash ? "#" + hash : "");
  if (url !== location.pathname + location.search + location.hash) {
    history.replaceState(null, "", url);
  }
}

/** How the API and the URL name a sample type: its name, or its index if the name is ambiguous. */
function siParam(i) {
  const name = state.types[i].type;
  const unique = name && state.types.filter((t) => t.type === name).length === 1;
  return unique ? name : String(i);
}

function siFromParam(param, fallback) {
  if (param == null) return fallback;
  const byName = state.types.findIndex((t) => t.type === param);
  if (byName >= 0) return byName;
  const n = Number(param);
  return Number.isInteger(n) && n >= 0 && n < state.types.length ? n : fallback;
}

async function getJSON(url) {
  const res = await fetch(url, { headers: { Accept: "application/json" } });
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) {
    const msg = body && body.error ? body.error.message : `${res.status} ${res.statusText}`;
    throw new Error(msg);
  }
  return body;
}

function cachedJSON(url) {
  if (!cache.has(url)) {
    const promise = getJSON(url);
    promise.catch(() => cache.delete(url)); // a failure may be retried
    cache.set(url, promise);
  }
  return cache.get(url);
}

/** Promises of the flame graph and of the top table of sample type si (-1: the default). */
function load(si) {
  const query = apiQuery; // the page's query (server parameters such as diff_base) goes along
  const base = si < 0 ? [] : ["si=" + encodeURIComponent(siParam(si))];
  const fgParams = state.full ? [...base, "nf=0"] : base;
  return [
    cachedJSON(root.dataset.flamegraphUrl + query(fgParams)),
    cachedJSON(root.dataset.topUrl + query(base)),
  ];
}

function setStatus(text, isError) {
  dom.status.textContent = text;
  dom.status.hidden = !text;
  dom.status.classList.toggle("vw-error", Boolean(isError));
}

let showing = 0; // the latest show(): an older one still waiting for its JSON gives way

/** Shows sample type si: the flame graph as soon as its JSON is in, then the top table (its
 * JSON lists every function and can be far larger, so the graph does not wait for it). */
async function show(si, opts) {
  const call = ++showing;
  const [fgPromise, topPromise] = load(si);
  topPromise.catch(() => {}); // reported below, once the flame graph is up
  const fg = await fgPromise;
  if (call !== showing) return;
  if (!state.types.length) {
    state.types = fg.sample_types || [];
    fillSelect(fg);
  }
  state.si = state.types.length ? fg.sample_index : -1;
  if (state.si >= 0) dom.select.value = String(state.si);
  state.fg = fg;
  const type = fg.sample_type;
  const typeName = type ? `${type.type || "?"}` : "";
  dom.total.textContent = fg.no_samples
    ? "no samples"
    : fg.diff
      ? diffTotalText(fg)
      : `${formatValue(fg.total, fg.unit)}${typeName ? " " + typeName : ""}`;
  dom.total.dataset.total = String(fg.total);
  dom.empty.hidden = !fg.no_samples;
  dom.emptyType.textContent = type ? ` of type ${typeName}` : "";
  dom.flame.hidden = fg.no_samples;
  dom.top.hidden = fg.no_samples;
  dom.trimmed.hidden = fg.no_samples || (!hidesWeight(fg) && !state.full);
  dom.trimmedText.textContent = fg.no_samples ? "" : trimNote(fg);
  dom.detail.textContent = state.full ? "Hide small frames" : "Show every frame";
  compare.show(fg, graph);
  if (!fg.no_samples) {
    const t0 = performance.now();
    graph.setData(fg);
    const z = graph.nodeAt(opts.zoomPath || []);
    applySearch(state.q, { keepUrl: true });
    graph.setZoom(z);
    root.dataset.paintMs = (performance.now() - t0).toFixed(1);
    if (!root.dataset.flamePaintedAt) markFirstPaint();
  } else {
    state.zoomPath = [];
    saveUrl();
  }
  if (!state.top || state.top.sample_index !== fg.sample_index) {
    state.top = null;
    renderTop();
  }
  // Let the flame graph reach the screen before the top table's rows are built and laid out.
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const top = await topPromise;
  if (call !== showing) return;
  state.top = { ...top, rows: rowObjects(top.rows) };
  renderTop();
  root.dataset.state = "ready";
  root.dataset.sampleType = typeName;
  showHeader(fg.sample_index);
}

/** pprof's header lines (Type:, Duration: ... Total) follow the sample type shown. */
let headerIndex = null; // whose lines #pprof-header shows; null: the default type's (server's)
async function showHeader(si) {
  const pre = $("pprof-header");
  if (!pre || si == null) return;
  const shown = headerIndex === null ? state.fg.default_sample_index : headerIndex;
  // The page renders before any analysis: the default type's lines may not be there yet.
  if (si === shown && pre.textContent.trim()) return;
  headerIndex = si;
  try {
    const s = await cachedJSON(root.dataset.summaryUrl + apiQuery([`si=${encodeURIComponent(siParam(si))}`]));
    if (headerIndex === si) pre.textContent = s.header.join("\n");
  } catch {
    // the previous lines stay; the flame graph and the table are what matter
  }
}

/** The top JSON's rows come by column ({name: [...], flat: [...], ...}): one object per row. */
function rowObjects(columns) {
  const keys = Object.keys(columns);
  return columns.name.map((_, i) => Object.fromEntries(keys.map((k) => [k, columns[k][i]])));
}

/** Whether the server left out frames that carry any weight (zero-valued ones draw nothing). */
function hidesWeight(fg) {
  const t = fg.trimmed || { nodes: 0 };
  return Boolean(t.nodes && (t.value || t.max));
}

/** What the server left out of the flame graph (fg.trimmed), and why it hardly shows. */
function trimNote(fg) {
  const t = fg.trimmed || { nodes: 0 };
  const count = (n) => n.toLocaleString("en-US");
  const shown = fg.nodes.name.length - 1;
  if (!hidesWeight(fg)) return `Every frame shown (${count(shown)}).`;
  // A diff's frames are before + after wide: what is hidden is a share of that width.
  const whole = fg.diff ? fg.width_total : fg.total;
  const hidden = fg.diff ? t.width : t.value;
  const limits = [];
  if (t.budget) limits.push(`the ${count(shown)} heaviest frames`);
  if (t.node_fraction) limits.push(`frames over ${formatPct(t.node_fraction, 1)} of the total`);
  let text = `Showing ${limits.join(" and ") || `${count(shown)} frames`}; `;
  text += `${count(t.nodes)} smaller call trees are hidden`;
  if (t.max != null) {
    text += `, each at most ${formatValue(t.max, fg.unit)}`;
    // Their width when zoomed out: under a pixel means the picture is the same without them.
    const px = whole ? (Math.abs(t.max) / whole) * $("fg-scroll").clientWidth : 0;
    if (px < 1) text += " (under a pixel wide unzoomed)";
  }
  return `${text}: ${formatValue(hidden, fg.unit)}, ${formatPct(hidden, whole)} of the ${fg.diff ? "width" : "total"}.`;
}

/** Marks the flame graph's first paint for bench/paint.py (times from navigation start). */
function markFirstPaint() {
  performance.mark("flame-drawn");
  root.dataset.flamePaintedAt = "pending";
  // The canvas was drawn synchronously; it is on screen once the next frame has been produced,
  // which is when a task queued from that frame's animation callback runs.
  requestAnimationFrame(() =>
    setTimeout(() => {
      const mark = performance.mark("flame-painted");
      root.dataset.flamePaintedAt = mark.startTime.toFixed(1);
    }, 0),
  );
}

function fillSelect(fg) {
  dom.select.replaceChildren();
  state.types.forEach((t, i) => {
    const opt = document.createElement("option");
    opt.value = String(i);
    const label = t.type || `(unnamed #${i})`;
    opt.textContent = t.unit ? `${label} (${t.unit})` : label;
    if (i === fg.default_sample_index) opt.textContent += " — default";
    dom.select.append(opt);
  });
  dom.select.disabled = state.types.length < 2;
}

// ---------------------------------------------------------------------------------------------
// Search: a regular expression over function names (plain text if it does not compile).

function compile(q) {
  if (!q) return null;
  try {
    return new RegExp(q);
  } catch {
    return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  }
}

function applySearch(q, opts = {}) {
  state.q = q;
  if (dom.search.value !== q) dom.search.value = q;
  const fg = state.fg;
  if (!fg || fg.no_samples) return;
  const matched = graph.search(compile(q));
  if (matched == null) {
    dom.share.textContent = "";
    dom.share.dataset.share = "";
  } else if (fg.diff) {
    const m = describeDiffMatch(graph.matchedSides, fg);
    dom.share.textContent = m.text;
    dom.share.dataset.share = String(m.share);
  } else {
    dom.share.textContent = `matched ${formatValue(matched, fg.unit)} · ${formatPct(matched, fg.total)} of total`;
    dom.share.dataset.share = String(fg.total ? matched / fg.total : 0);
  }
  markSelectedRow();
  if (!opts.keepUrl) saveUrl();
}

// ---------------------------------------------------------------------------------------------
// Breadcrumb of the zoomed frame.

function renderCrumbs(z) {
  const d = graph.data;
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
    b.addEventListener("click", () => graph.setZoom(k));
    parts.push(b);
  });
  dom.crumbs.replaceChildren(...parts);
  dom.crumbs.dataset.depth = String(chain.length - 1);
}

// ---------------------------------------------------------------------------------------------
// Top table.

const MAX_ROWS = 500;

function renderTop() {
  const top = state.top;
  const rows = top && top.rows ? top.rows.slice() : [];
  const key = state.sortKey;
  const dir = state.sortDesc ? -1 : 1;
  const diff = Boolean(top && top.diff);
  diffTopHead(dom.topHead, diff);
  // A diff sorts its deltas by size, as pprof does (|flat|), and keeps pprof's order on ties.
  const val = diff && (key === "flat" || key === "cum") ? (r) => Math.abs(r[key]) : (r) => r[key];
  rows.sort((a, b) => {
    const av = val(a);
    const bv = val(b);
    if (typeof av === "string") return dir * av.localeCompare(bv);
    return dir * (av - bv) || (diff ? 0 : a.name.localeCompare(b.name));
  });
  // sum% is a running total of flat% down the table, as in pprof's top, whatever the order.
  let sum = 0;
  const withSum = rows.map((r) => {
    sum += r.flat;
    return { ...r, sum };
  });
  const filter = dom.topFilter.value.trim().toLowerCase();
  const visible = filter ? withSum.filter((r) => r.name.toLowerCase().includes(filter)) : withSum;
  const unit = state.fg ? state.fg.unit : "";
  const total = top ? top.total : 0;
  const frag = document.createDocumentFragment();
  for (const r of visible.slice(0, MAX_ROWS)) {
    const tr = document.createElement("tr");
    tr.dataset.name = r.name;
    const cells = diff ? diffTopCells(r, unit, total) : [
      formatValue(r.flat, unit),
      formatPct(r.flat, total),
      formatPct(r.sum, total),
      formatValue(r.cum, unit),
      formatPct(r.cum, total),
    ];
    for (const text of cells) {
      const td = document.createElement("td");
      td.className = "num";
      td.textContent = text;
      tr.append(td);
    }
    const td = document.createElement("td");
    td.className = "name mono";
    td.textContent = r.name;
    if (r.file) td.title = r.file;
    tr.append(td);
    frag.append(tr);
  }
  dom.topBody.replaceChildren(frag);
  dom.topCount.textContent = !top
    ? "loading…"
    : visible.length > MAX_ROWS
      ? `first ${MAX_ROWS} of ${visible.length} functions`
      : `${visible.length} function${visible.length === 1 ? "" : "s"}`;
  for (const th of dom.topHead.querySelectorAll("th")) {
    if (th.dataset.key === key) th.setAttribute("aria-sort", state.sortDesc ? "descending" : "ascending");
    else th.removeAttribute("aria-sort");
  }
  markSelectedRow();
}

function exactRegex(name) {
  return "^" + name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$";
}

function markSelectedRow() {
  const q = state.q;
  for (const tr of dom.topBody.rows) {
    tr.classList.toggle("selected", Boolean(q) && exactRegex(tr.dataset.name) === q);
  }
}

dom.topHead.addEventListener("click", (e) => {
  const th = e.target.closest("th");
  if (!th) return;
  const key = th.dataset.key;
  if (state.sortKey === key) state.sortDesc = !state.sortDesc;
  else {
    state.sortKey = key;
    state.sortDesc = key !== "name";
  }
  renderTop();
});

dom.topBody.addEventListener("click", (e) => {
  const tr = e.target.closest("tr");
  if (!tr) return;
  const q = exactRegex(tr.dataset.name);
  applySearch(state.q === q ? "" : q);
  if (state.q) dom.flame.scrollIntoView({ block: "nearest" });
});

dom.topFilter.addEventListener("input", () => renderTop());

// ---------------------------------------------------------------------------------------------
// Metadata panel (from the record JSON).

function renderMeta(rec) {
  const m = rec.metadata || {};
  const items = [];
  const add = (label, value) => {
    if (value == null || value === "" || (Array.isArray(value) && !value.length)) return;
    items.push([label, value]);
  };
  const types = (rec.sample_types || []).map((t) => `${t.type}/${t.unit}`);
  add("Sample types", types.join(", "));
  add("Default type", rec.default_sample_type);
  if (m.period_type && (m.period_type.type || m.period_type.unit)) {
    add("Period type", `${m.period_type.type}/${m.period_type.unit}`);
    add("Period", m.period ? formatValue(m.period, m.period_type.unit) : null);
  } else if (m.period) {
    add("Period", String(m.period));
  }
  add("Duration", m.duration_nanos ? formatValue(m.duration_nanos, "nanoseconds") : null);
  add("Taken", m.time_nanos ? formatTime(m.time_nanos / 1e9) : null);
  add("Samples", rec.n_samples != null ? String(rec.n_samples) : null);
  if (rec.n_locations != null) add("Locations", `${rec.n_locations} (${rec.n_functions} functions)`);
  add("Size", rec.size_bytes != null ? formatValue(rec.size_bytes, "bytes") : null);
  add("Uploaded", formatTime(rec.created_at));
  add("Expires", rec.expires_at ? expiresText(rec.expires_at) : "never");
  add("Comments", m.comments);
  add(
    "Mappings",
    (m.mappings || []).map((mp) => (mp.build_id ? `${mp.filename || "?"}  [${mp.build_id}]` : mp.filename || "?")),
  );
  add("Drop frames", m.drop_frames);
  add("Keep frames", m.keep_frames);
  add("Doc URL", m.doc_url);
  const frag = document.createDocumentFragment();
  for (const [label, value] of items) {
    const dt = document.createElement("dt");
    dt.textContent = label;
    const dd = document.createElement("dd");
    if (Array.isArray(value)) {
      const ul = document.createElement("ul");
      for (const v of value) {
        const li = document.createElement("li");
        li.className = "mono";
        li.textContent = v;
        ul.append(li);
      }
      dd.append(ul);
    } else {
      dd.textContent = value;
    }
    if (label === "Expires") dd.id = "meta-expires";
    frag.append(dt, dd);
  }
  dom.meta.replaceChildren(frag);
  // The page may stay open for hours: keep the time left true.
  if (rec.expires_at) {
    const timer = setInterval(() => {
      const dd = $("meta-expires");
      if (!dd) return clearInterval(timer);
      dd.textContent = expiresText(rec.expires_at);
    }, 30_000);
  }
}

/** "in 29 days (2024-06-01 12:00:00Z)": the time left first, as that is what a reader wants. */
function expiresText(t) {
  return `${formatRemaining(t)} (${formatTime(t)})`;
}

// ---------------------------------------------------------------------------------------------
// Ways out.

function setupWaysOut() {
  const raw = new URL(root.dataset.rawUrl, location.href).href;
  const speedscope = root.dataset.speedscopeUrl || "https://www.speedscope.app/";
  $("speedscope-link").href = speedscope + "#profileURL=" + encodeURIComponent(raw);
  const cmd = $("pprof-cmd");
  const button = $("copy-cmd");
  button.addEventListener("click", async () => {
    let ok = false;
    try {
      await navigator.clipboard.writeText(cmd.value);
      ok = true;
    } catch {
      // No clipboard API outside secure contexts: fall back to selecting the text.
      cmd.select();
      ok = document.execCommand && document.execCommand("copy");
    }
    button.textContent = ok ? "Copied" : "Press Ctrl+C";
    setTimeout(() => (button.textContent = "Copy"), 1500);
  });
  cmd.addEventListener("focus", () => cmd.select());
}

// ---------------------------------------------------------------------------------------------
// Wiring.

dom.select.addEventListener("change", () => {
  const si = Number(dom.select.value);
  const path = state.zoomPath;
  setStatus("Loading…");
  show(si, { zoomPath: path })
    .then(() => setStatus(""))
    .catch((err) => setStatus(`Could not load this sample type: ${err.message}`, true));
});

let searchTimer = 0;
dom.search.addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => applySearch(dom.search.value), 120);
});

$("reset").addEventListener("click", () => graph.setZoom(0));

dom.detail.addEventListener("click", () => {
  state.full = !state.full;
  setStatus(state.full ? "Loading every frame…" : "");
  show(state.si, { zoomPath: state.zoomPath })
    .then(() => setStatus(""))
    .catch((err) => setStatus(`Could not load the frames: ${err.message}`, true));
});

document.addEventListener("keydown", (e) => {
  const typing = e.target.closest && e.target.closest("input, textarea, select");
  if (e.key === "/" && !typing && !e.ctrlKey && !e.metaKey && !e.altKey) {
    e.preventDefault();
    dom.search.focus();
    dom.search.select();
  } else if (e.key === "Escape" && e.target === dom.topFilter) {
    dom.topFilter.value = "";
    renderTop();
  } else if (e.key === "Escape") {
    clearTimeout(searchTimer);
    graph.hideTip();
    if (e.target === dom.search) {
      dom.search.blur();
    }
    applySearch("");
    if (graph.data) graph.setZoom(0);
  }
});

window.addEventListener("hashchange", () => {
  const want = readUrl();
  const si = siFromParam(want.si, state.si);
  state.q = want.q;
  if (si !== state.si || want.full !== state.full) {
    state.full = want.full;
    show(si, { zoomPath: want.zoom }).catch((err) => setStatus(err.message, true));
  } else if (graph.data) {
    applySearch(want.q, { keepUrl: true });
    graph.setZoom(graph.nodeAt(want.zoom));
  }
});

const compare = setupCompare(root);

async function start() {
  setupWaysOut();
  // pprof's header lines describe this profile alone (the summary view takes no base): on a
  // diff page, the diff's head names both sides instead.
  if (diffParams() && $("pprof-header")) $("pprof-header").hidden = true;
  const want = readUrl();
  state.q = want.q;
  getJSON(root.dataset.recordUrl)
    .then(renderMeta)
    .catch((err) => {
      dom.meta.replaceChildren(Object.assign(document.createElement("dd"), { textContent: err.message }));
    });
  const stopProgress = watchProgress(dom.status, root.dataset.recordUrl + "/progress");
  try {
    // The default view first: it names the sample types the URL's si refers to.
    state.full = want.full;
    const fg = await load(-1)[0].finally(stopProgress);
    state.types = fg.sample_types || [];
    fillSelect(fg);
    const si = siFromParam(want.si, fg.sample_index);
    await show(si === fg.sample_index ? -1 : si, { zoomPath: want.zoom });
    setStatus("");
  } catch (err) {
    setStatus(`Could not load this profile: ${err.message}`, true);
    root.dataset.state = "error";
  }
}

start();
