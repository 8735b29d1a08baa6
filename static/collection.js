// The collection page: the timeline (collection.timeline.js), the label chips
// (collection.chips.js) and what the selection resolved to (collection.links.js), above the
// profile viewer (viewer.js), which shows the merged selection from the collection's JSON API.
//
// The selection is the query string — from, to, match, kind, base_from, base_to, base_match,
// and group_by for the timeline — which viewer.js passes to every API request as it stands;
// the fragment is the viewer's own state. A change of the selection is a history step
// (pushState) and a popstate event, which viewer.js follows as it follows Back and Forward.
// Label keys and values are data: textContent only.
import { getJSON, retryBusy } from "./viewer.api.js";
import { matchText, parseMatch, renderChips, renderValues, toggled } from "./collection.chips.js";
import { SelectionLinks } from "./collection.links.js";
import { Timeline } from "./collection.timeline.js";
import { parseTime, rangeText, rfc3339 } from "./collection.time.js";

const root = document.getElementById("viewer");
const $ = (id) => document.getElementById(id);
const params = () => new URLSearchParams(location.search);
const OWN = ["from", "to", "match", "kind"]; // the selection; base_* the base's

let record = null; // /api/v1/collections/ID
let loadedKind = params().get("kind") || "";
let timelineKey = null; // the timeline's query drawn, or being fetched
let selectionKey = null;
let sampleType = ""; // the viewer's, when not the default: the timeline plots the same one

const timeline = new Timeline({
  box: $("tl-chart"),
  tip: $("tl-tip"),
  onRange: (r, isBase) => {
    const from = rfc3339(r.from);
    const to = rfc3339(r.to);
    if (isBase) {
      setBaseMode(false);
      const q = params();
      // A base of the same pods as the selection unless the base says otherwise.
      go({ base_from: from, base_to: to, base_match: q.get("base_match") ?? q.get("match") ?? "" });
    } else go({ from, to });
  },
  onOpen: (id, newTab) => {
    const url = `${root.dataset.prefix}/${id}`;
    if (newTab) window.open(url, "_blank", "noopener");
    else location.assign(url);
  },
});
const links = new SelectionLinks(root);

/** A new selection: a history step, and every part of the page follows it. */
function go(changes) {
  const q = params();
  for (const [k, v] of Object.entries(changes)) {
    // group_by= (empty) is kept: it says "no grouping", where no group_by takes the default.
    if (v == null || (v === "" && k !== "group_by")) q.delete(k);
    else q.set(k, v);
  }
  const query = q.toString().replaceAll("%3A", ":"); // times read as times
  const next = location.pathname + (query ? `?${query}` : "") + location.hash;
  if (next === location.pathname + location.search + location.hash) return;
  // Another kind has other sample types: a new page for it, without the viewer's fragment
  // (a sample type, a zoom path of the other kind).
  if ((q.get("kind") || "") !== loadedKind) return location.assign(next.split("#")[0]);
  history.pushState(null, "", next);
  window.dispatchEvent(new PopStateEvent("popstate"));
}

/** The match of the selection after a chip change; a base that had the same match keeps
 * following it. */
function setMatch(matchers) {
  const q = params();
  const text = matchText(matchers);
  const linked = q.has("base_match") && (q.get("base_match") || "") === (q.get("match") || "");
  go(linked ? { match: text, base_match: text } : { match: text });
}

/** The matchers of the URL's match (none when it does not parse: the views say why). */
function matchers() {
  return parseMatch(params().get("match") || "") || [];
}

function groupBy() {
  const q = params();
  if (q.has("group_by")) return q.get("group_by");
  // No choice yet: the first label key that tells several profiles apart.
  const keys = Object.entries((record && record.labels) || {});
  const found = keys.find(([, values]) => Object.keys(values).length > 1);
  return found ? found[0] : "";
}

function selectionOf(q, prefix) {
  return {
    from: parseTime(q.get(prefix + "from")),
    to: parseTime(q.get(prefix + "to")),
    matchers: parseMatch(q.get(prefix + "match") || "") || [],
    kind: prefix ? "" : q.get("kind") || "",
  };
}

function setBaseMode(on) {
  timeline.setBaseMode(on);
  $("compare-toggle").setAttribute("aria-pressed", String(on));
  $("compare-toggle").textContent = on ? "Drag the base range…" : "Compare with…";
}

async function drawTimeline() {
  const q = params();
  const t = new URLSearchParams();
  for (const k of ["kind", "match"]) if (q.get(k)) t.set(k, q.get(k));
  if (sampleType) t.set("si", sampleType);
  const group = groupBy();
  if (group) t.set("group_by", group);
  const key = t.toString();
  if (key === timelineKey) return;
  timelineKey = key;
  const status = $("tl-status");
  try {
    const doc = await getJSON(`${root.dataset.timelineUrl}?${key}`);
    if (key !== timelineKey) return;
    timeline.show(doc);
    drawBands();
    const type = doc.sample_type ? doc.sample_type.type : "";
    $("tl-unit").textContent = doc.series.length
      ? `${doc.kind} · ${type} in ${doc.y_unit}${doc.rate ? " (per second of profile)" : " (mean per label set, summed)"}`
      : "";
    const empty = record && !record.members;
    status.textContent = doc.series.length
      ? ""
      : empty
        ? `No profiles yet: add some with curl -H 'X-Collection-Token: TOKEN' -F file=@cpu.pb.gz -F label=pod=api-1 ${root.dataset.link}`
        : "No profiles match: take a label off.";
    status.hidden = Boolean(doc.series.length);
    status.classList.remove("vw-error");
  } catch (err) {
    if (key !== timelineKey) return;
    timelineKey = null;
    status.textContent = `Could not draw the timeline: ${err.message}`;
    status.hidden = false;
    status.classList.add("vw-error");
  }
}

function drawBands() {
  const q = params();
  const band = (prefix) => {
    const from = parseTime(q.get(prefix + "from"));
    const to = parseTime(q.get(prefix + "to"));
    return from == null && to == null ? null : { from, to };
  };
  const base = band("base_");
  timeline.setBands(band(""), base || (q.get("base_match") ? { from: null, to: null } : null));
}

function drawLabels() {
  const ms = matchers();
  const text = params().get("match") || "";
  const parsed = parseMatch(text);
  renderChips($("match-chips"), parsed, (i) => setMatch(ms.filter((_, k) => k !== i)), text);
  renderValues($("label-values"), record ? record.labels : {}, ms, (key, value, negate) =>
    setMatch(toggled(matchers(), key, value, negate)),
  );
  const input = $("match-input");
  if (document.activeElement !== input) input.value = params().get("match") || "";
}

/** The page follows the URL: on load, after go(), on Back and Forward. */
function sync() {
  const q = params();
  if ((q.get("kind") || "") !== loadedKind) return location.reload();
  $("group-by").value = groupBy();
  $("clear-range").hidden = !(q.get("from") || q.get("to"));
  $("clear-base").hidden = !["base_from", "base_to", "base_match"].some((k) => q.has(k));
  drawLabels();
  drawBands();
  drawTimeline();
  const own = new URLSearchParams();
  for (const k of OWN) if (q.get(k)) own.set(k, q.get(k));
  const hasBase = ["base_from", "base_to", "base_match"].some((k) => q.get(k));
  const key = location.search;
  if (key !== selectionKey) {
    selectionKey = key;
    links.show(selectionOf(q, ""), hasBase ? selectionOf(q, "base_") : null, own);
  }
}

$("group-by").addEventListener("change", () => go({ group_by: $("group-by").value }));
$("kind").addEventListener("change", () => go({ kind: $("kind").value }));
$("clear-range").addEventListener("click", () => go({ from: null, to: null }));
$("clear-base").addEventListener("click", () => go({ base_from: null, base_to: null, base_match: null }));
$("compare-toggle").addEventListener("click", () => setBaseMode(!timeline.baseMode));
$("match-form").addEventListener("submit", (e) => {
  e.preventDefault();
  go({ match: $("match-input").value.trim() });
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && timeline.baseMode) setBaseMode(false);
});
window.addEventListener("popstate", () => sync());
root.addEventListener("viewcommand", (e) => {
  if ((e.detail.sampleIndex || "") === sampleType) return;
  sampleType = e.detail.sampleIndex || "";
  drawTimeline();
});

/** The kind shown: the URL's, else the server's default (the one with the most profiles,
 * the select's first). */
function showKind() {
  const first = $("kind").options.length ? $("kind").options[0].value : "";
  $("kind").value = loadedKind || first;
}
// Back to this page from the cache: the select may still show the kind chosen on the way out.
window.addEventListener("pageshow", (e) => e.persisted && showKind());

// A first look at a long range merges for a while: the server answers 503 (its merges go on)
// and the page asks again, saying so.
retryBusy((message, seconds) => {
  const status = $("status");
  status.dataset.note = `${message} (the page asks again every ${seconds} s)`; // for watchProgress
  status.textContent = status.dataset.note;
  status.hidden = false;
  status.classList.remove("vw-error");
});

async function start() {
  showKind();
  try {
    // The record as the page was rendered with it (the API's /api/v1/collections/ID).
    record = root.dataset.record ? JSON.parse(root.dataset.record) : await getJSON(root.dataset.collectionUrl);
    const span = record.from ? `, ${rangeText(parseTime(record.from), parseTime(record.to))}` : "";
    const kinds = Object.entries(record.kinds).map(([k, n]) => `${n} ${k}`).join(", ");
    const n = record.members;
    $("cl-facts").textContent = `${n} profile${n === 1 ? "" : "s"}${kinds ? ` (${kinds})` : ""}${span}.`;
  } catch (err) {
    $("tl-status").textContent = `Could not load the collection: ${err.message}`;
    $("tl-status").classList.add("vw-error");
  }
  sync();
}

start();
