// The profile page's wiring: the views (flame graph, top, call graph, peek, labels), the refine
// bar, the sample type selector and the URL that carries all of it (see viewer.state.js).
// Everything from the profile (names, files, labels, comments) is data: it reaches the page
// through textContent, attribute values and canvas fillText only, never through innerHTML.
import { cached, forgetCached, getJSON } from "./viewer.api.js";
import { diffParams, setupCompare } from "./viewer.compare.js";
import { diffTotalText } from "./viewer.diff.js";
import { initialState, pageElements } from "./viewer.dom.js";
import { FlameView } from "./viewer.flameview.js";
import { formatPct, formatValue } from "./viewer.format.js";
import { GraphView } from "./viewer.graph.js";
import { showTypeHint } from "./viewer.hint.js";
import { LabelsPanel } from "./viewer.labels.js";
import { renderMeta, setupWaysOut } from "./viewer.meta.js";
import { PeekView } from "./viewer.peek.js";
import { watchProgress } from "./viewer.progress.js";
import { bindKeys } from "./viewer.keys.js";
import { showCommand } from "./viewer.cmd.js";
import { addedValue, frameMenuAt, RefineBar, VIEWS } from "./viewer.refine.js";
import * as url from "./viewer.state.js";
import { TopTable } from "./viewer.top.js";
import { viewLoader } from "./viewer.views.js";
import * as types from "./viewer.types.js";
import { hidesWeight, markFirstPaint, trimNote } from "./viewer.trim.js";

const root = document.getElementById("viewer");
const $ = (id) => document.getElementById(id);
const dom = pageElements();
const state = initialState();

const flame = new FlameView(
  {
    canvas: $("fg-canvas"), scroller: $("fg-scroll"), spacer: $("fg-spacer"), tooltip: $("tooltip"),
    crumbs: $("breadcrumb"), share: $("search-share"), root,
  },
  {
    zoomUrl: (path) => url.apiUrl(root.dataset.flamegraphUrl, { si: siArg(), zoom: JSON.stringify(path) }),
    searchUrl: (q) => url.apiUrl(root.dataset.searchUrl, { si: siArg(), q }),
    onZoomPath: () => saveUrl(),
    onPick: (name) => select(name),
    onMenu: (name, file, x, y) => frameMenu(name, file, x, y),
    onDetail: () => showTrimNote(),
    onError: (err) => refine.showNotes([], err.message),
  },
);
const top = new TopTable({
  table: $("top-table"), filter: dom.topFilter, count: $("top-count"), more: $("top-more"),
  onChange: () => saveUrl(),
  onPick: (name) => {
    // A row searches for exactly its function (a second click clears), and selects it.
    const q = url.exactRegex(name);
    applySearch(state.q === q ? "" : q);
    select(name);
    if (state.q && state.view === "flame") dom.flame.scrollIntoView({ block: "nearest" });
  },
  onMenu: (name, file, x, y) => frameMenu(name, file, x, y),
});
const refine = new RefineBar({
  chips: $("chips"), granularity: $("granularity"), views: $("views"), notes: $("refine-notes"),
  onParams: (changes) => changeParams(changes),
  onView: (view) => setView(view),
});
const graphView = new GraphView({
  box: $("graph-box"),
  onPick: (name) => addFilter("focus", name, ""),
  onMenu: (name, x, y) => frameMenu(name, "", x, y),
  onView: () => saveUrl(),
});
const peekView = new PeekView({
  tables: $("peek-tables"), title: $("peek-title"), sandwich: $("sandwich"), tooltip: $("tooltip"),
  callers: { canvas: $("sw-callers-canvas"), scroller: $("sw-callers-scroll"), spacer: $("sw-callers-spacer") },
  callees: { canvas: $("sw-callees-canvas"), scroller: $("sw-callees-scroll"), spacer: $("sw-callees-spacer") },
  onPick: (name) => select(name),
  onMenu: (name, x, y) => frameMenu(name, "", x, y),
});
const labels = new LabelsPanel({
  box: $("labels-box"),
  onFilter: (param, value) => changeParams({ [param]: value }),
  onGroup: (keys) => changeParams({ tagroot: keys.join(",") || null }),
});

// ---------------------------------------------------------------------------------------------
// The URL: server parameters in the query string, the page's own state in the fragment.

function saveUrl() {
  url.writeFragment({
    si: state.si >= 0 && state.types.length ? siParam(state.si) : "",
    view: state.view === "flame" ? "" : state.view,
    q: state.q,
    zoom: flame.graph.data ? flame.path.join(";") : "",
    fn: state.fn,
    ...top.urlState(),
    gv: state.view === "graph" ? graphView.viewParam() : "",
    all: state.full ? "1" : "",
  });
}

const siParam = (i) => types.siParam(state.types, i);
const siFromParam = (param, fallback) => types.siFromParam(state.types, param, fallback);
const fillSelect = (fg) => types.fillSelect(dom.select, state.types, fg);
const summaryUrl = () => types.summaryUrl(root, url.serverParams());
const showHeader = (si) => si != null && types.showHeader(summaryUrl(), state.fg, si, siParam(si));

/** The si of API requests: null (the query's or the default) until a type is chosen. */
const siArg = () => (state.si >= 0 && state.types.length ? siParam(state.si) : null);

function granularity() {
  return url.getParam(url.serverParams(), "granularity") || "functions";
}

/** A new set of server parameters: a history step, then every view again. */
function changeParams(changes) {
  url.setParams(changes);
  paramsChanged();
}

function paramsChanged() {
  lastQuery = url.serverParams().toString();
  refine.render();
  refresh({ zoomPath: flame.path })
    .then(() => setStatus(""))
    .catch(() => {}); // refresh() reported it
}

function addFilter(param, name, file) {
  const regex = url.frameRegex(name, file, granularity());
  const current = url.getParam(url.serverParams(), param);
  changeParams({ [param]: addedValue(param, current, regex) });
}

// ---------------------------------------------------------------------------------------------
// Selection, context menu, views.

function select(name) {
  state.fn = name || "";
  top.select(state.fn);
  saveUrl();
  if (state.view === "peek") loadView();
}

function frameMenu(name, file, x, y) {
  frameMenuAt(x, y, name, file, {
    granularity: granularity(),
    onFilter: (param, value) => changeParams({ [param]: value }),
    onPeek: () => {
      select(name);
      setView("peek");
    },
    onSearch: () => applySearch(url.exactRegex(name)),
  });
}

function setView(view) {
  state.view = VIEWS.includes(view) ? view : "flame";
  refine.setView(state.view);
  const noSamples = Boolean(state.fg && state.fg.no_samples);
  for (const [name, section] of Object.entries(dom.sections)) {
    const onPage = name === state.view || (name === "top" && state.view === "flame");
    const wasHidden = section.hidden;
    section.hidden = !onPage || (noSamples && (name === "flame" || name === "top"));
    // A tree set while its section was hidden was not laid out: lay it out now it shows.
    if (name === "flame" && wasHidden && !section.hidden && flame.graph.data) flame.graph.relayout();
  }
  saveUrl();
  return loadView();
}

/** Fetches and draws the data of the graph, peek or labels view (each URL once). */
const loadView = viewLoader({ root, state, siArg, graphView, labels, peekView, refine, showNotes });

function showNotes() {
  refine.showNotes([...new Set([...state.warnings.base, ...state.warnings.view])]);
}

// ---------------------------------------------------------------------------------------------
// Loading: the flame graph first, then the top table, then the shown view.

function setStatus(text, isError) {
  dom.status.textContent = text;
  dom.status.hidden = !text;
  dom.status.classList.toggle("vw-error", Boolean(isError));
}

let showing = 0; // the latest refresh(): an older one still waiting for its JSON gives way

async function refresh(opts = {}) {
  const call = ++showing;
  const si = siArg();
  const fgUrl = url.apiUrl(root.dataset.flamegraphUrl, state.full ? { si, nf: "0" } : { si });
  const topPromise = cached(url.apiUrl(root.dataset.topUrl, { si }));
  topPromise.catch(() => {}); // reported below, once the flame graph is up
  let fg;
  try {
    fg = await cached(fgUrl);
  } catch (err) {
    if (call !== showing) return;
    // A refused filter (400): pprof's message in the status line; the chips stay, so the
    // filter can go.
    refine.showNotes([]);
    setStatus(err.message, true);
    for (const s of Object.values(dom.sections)) s.hidden = true;
    root.dataset.state = "error";
    throw err;
  }
  if (call !== showing) return;
  if (!state.types.length) {
    state.types = fg.sample_types || [];
    fillSelect(fg);
  }
  state.si = state.types.length ? fg.sample_index : -1;
  if (state.si >= 0) dom.select.value = String(state.si);
  state.fg = fg;
  const custom = state.types.length && fg.sample_index !== fg.default_sample_index;
  showCommand(root, url.serverParams(), custom && fg.sample_type ? fg.sample_type.type : "");
  state.warnings.base = fg.warnings || [];
  showNotes();
  const type = fg.sample_type;
  const typeName = type ? `${type.type || "?"}` : "";
  dom.total.textContent = fg.no_samples
    ? "no samples"
    : fg.diff
      ? diffTotalText(fg)
      : `${formatValue(fg.total, fg.unit)}${typeName ? " " + typeName : ""}`;
  dom.total.dataset.total = String(fg.total);
  dom.empty.hidden = !fg.no_samples;
  const filtered = (fg.filters || []).length > 0;
  // pprof's total is the profile's, before the filters: say how much of it they keep.
  const kept = filtered && !fg.diff && !fg.no_samples ? fg.nodes.value[0] : null;
  $("kept").hidden = kept == null;
  $("kept").textContent = kept == null ? "" : `· the filters keep ${formatValue(kept, fg.unit)} (${formatPct(kept, fg.total)})`;
  dom.emptyType.textContent = (type ? ` of type ${typeName}` : "") + (filtered ? " after the filters" : "");
  setView(state.view);
  if (!fg.no_samples) {
    const t0 = performance.now();
    flame.re = null;
    flame.search(state.q); // the search of the URL: drawn with the new tree
    compare.show(fg, flame.graph);
    flame.setBase(fg, opts.zoomPath || []);
    root.dataset.paintMs = (performance.now() - t0).toFixed(1);
    if (!root.dataset.flamePaintedAt) markFirstPaint(root);
  }
  showTrimNote();
  showTypeHint($("type-hint"), fg, summaryUrl(), siParam, (i) => switchType(i));
  top.setData(null);
  // Let the flame graph reach the screen before the top table's rows are built and laid out.
  await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
  const topDoc = await topPromise;
  if (call !== showing) return;
  top.setData(topDoc);
  top.select(state.fn);
  root.dataset.state = "ready";
  root.dataset.loaded = location.search;
  root.dataset.sampleType = typeName;
  showHeader(fg.sample_index);
}

function showTrimNote() {
  const fg = flame.doc;
  const hidden = !fg || fg.no_samples || (!hidesWeight(fg) && !state.full);
  dom.trimmed.hidden = hidden;
  dom.trimmedText.textContent = hidden ? "" : trimNote(fg, $("fg-scroll").clientWidth);
  dom.detail.textContent = state.full ? "Hide small frames" : "Show every frame";
}

function switchType(si) {
  state.si = si;
  setStatus("Loading…");
  refresh({ zoomPath: flame.path })
    .then(() => setStatus(""))
    .catch((err) => setStatus(`Could not load this sample type: ${err.message}`, true));
}

function applySearch(q, opts = {}) {
  state.q = q;
  if (dom.search.value !== q) dom.search.value = q;
  flame.search(q);
  if (!opts.keepUrl) saveUrl();
}

// ---------------------------------------------------------------------------------------------
// Events.

dom.select.addEventListener("change", () => switchType(Number(dom.select.value)));

let searchTimer = 0;
dom.search.addEventListener("input", () => {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(() => applySearch(dom.search.value), 120);
});

$("reset").addEventListener("click", () => flame.graph.setZoom(0));
$("graph-in").addEventListener("click", () => graphView.zoom(1.4));
$("graph-out").addEventListener("click", () => graphView.zoom(1 / 1.4));
$("graph-fit").addEventListener("click", () => graphView.fit());

dom.detail.addEventListener("click", () => {
  state.full = !state.full;
  setStatus(state.full ? "Loading every frame…" : "");
  refresh({ zoomPath: flame.path })
    .then(() => setStatus(""))
    .catch((err) => setStatus(`Could not load the frames: ${err.message}`, true));
});

bindKeys({
  search: dom.search,
  topFilter: dom.topFilter,
  selected: () => state.fn,
  onFilter: (param) => addFilter(param, state.fn, ""),
  onView: (view) => setView(view),
  onTopFilterCleared: () => {
    top.render();
    saveUrl();
  },
  onEscape: () => {
    clearTimeout(searchTimer);
    flame.graph.hideTip();
    applySearch("");
    if (flame.graph.data) flame.graph.setZoom(0);
  },
});

/** The URL changed under the page (back/forward, an edited fragment): follow it. */
function followUrl() {
  const want = url.readFragment();
  const si = siFromParam(want.si, state.si);
  const full = want.all === "1";
  state.fn = want.fn || "";
  top.restore(want);
  top.render();
  top.select(state.fn);
  state.view = want.view || "flame";
  if (si !== state.si || full !== state.full || url.serverParams().toString() !== lastQuery) {
    state.si = si;
    state.full = full;
    state.q = want.q || "";
    lastQuery = url.serverParams().toString();
    refine.render();
    refresh({ zoomPath: zoomOf(want) })
      .then(() => setStatus(""))
      .catch(() => {}); // refresh() reported it
  } else {
    setView(state.view);
    applySearch(want.q || "", { keepUrl: true });
    if (flame.graph.data) flame.goTo(zoomOf(want));
  }
}
let lastQuery = url.serverParams().toString();
window.addEventListener("hashchange", followUrl);
window.addEventListener("popstate", followUrl);
// A collection's selection merged anew under the same URL (collection.links.js): views again.
root.addEventListener("selectionmerged", () => (forgetCached(), paramsChanged()));

const zoomOf = (frag) => (frag.zoom ? frag.zoom.split(";") : []);

const compare = setupCompare(root);

async function start() {
  setupWaysOut(root);
  // pprof's header lines describe this profile alone (the summary view takes no base): on a
  // diff page, the diff's head names both sides instead.
  if (diffParams() && $("pprof-header")) $("pprof-header").hidden = true;
  const want = url.readFragment();
  state.q = want.q || "";
  dom.search.value = state.q;
  state.fn = want.fn || "";
  state.view = VIEWS.includes(want.view) ? want.view : "flame";
  state.full = want.all === "1";
  state.gv = want.gv || "";
  top.restore(want);
  refine.render();
  refine.setView(state.view);
  // A collection's page has no record of its own: collection.js shows its selection's.
  if (root.dataset.recordUrl) {
    getJSON(root.dataset.recordUrl)
      .then(renderMeta)
      .catch((err) => {
        $("meta-list").replaceChildren(Object.assign(document.createElement("dd"), { textContent: err.message }));
      });
  }
  const progressUrl = root.dataset.progressUrl ?? root.dataset.recordUrl + "/progress";
  const stopProgress = watchProgress(dom.status, progressUrl);
  try {
    // The default view first: it names the sample types the URL's si refers to.
    const base = url.apiUrl(root.dataset.flamegraphUrl, state.full ? { nf: "0" } : {});
    const fg = await cached(base).finally(stopProgress);
    state.types = fg.sample_types || [];
    fillSelect(fg);
    const si = siFromParam(want.si, fg.sample_index);
    state.si = si === fg.sample_index && want.si == null ? -1 : si;
    await refresh({ zoomPath: zoomOf(want) });
    setStatus("");
  } catch (err) {
    setStatus(`Could not load this profile: ${err.message}`, true);
    // A parameter pprof refuses (400): the chips stay, to take it off.
    if (err.status === 400) for (const section of Object.values(dom.sections)) section.hidden = true;
    root.dataset.state = "error";
  }
}

start();
