// /<id>/embed: the flame graph of static/viewer.flame.js and a sample-type switch, nothing
// else, for an iframe. The embed's query string (filters, diff_base…) goes to the API as it
// stands. Names reach the page through the canvas and textContent only.
import { diffTotalText } from "./viewer.diff.js";
import { FlameGraph } from "./viewer.flame.js";
import { formatValue } from "./viewer.format.js";

const root = document.getElementById("embed");
const $ = (id) => document.getElementById(id);
const select = $("sample-type");
const status = $("status");

const graph = new FlameGraph({
  canvas: $("fg-canvas"),
  scroller: $("fg-scroll"),
  spacer: $("fg-spacer"),
  tooltip: $("tooltip"),
  onZoom: () => {},
});

async function load(si) {
  const params = new URLSearchParams(root.dataset.query);
  if (si != null) params.set("si", si);
  const query = params.toString();
  const url = root.dataset.flamegraphUrl + (query ? `?${query}` : "");
  const res = await fetch(url, { headers: { Accept: "application/json" } });
  const body = await res.json().catch(() => null);
  if (!res.ok) throw new Error(body && body.error ? body.error.message : `${res.status}`);
  return body;
}

function fill(fg) {
  select.replaceChildren();
  fg.sample_types.forEach((t, i) => {
    const opt = document.createElement("option");
    opt.value = String(i);
    opt.textContent = t.unit ? `${t.type || "?"} (${t.unit})` : t.type || `#${i}`;
    select.append(opt);
  });
  select.disabled = fg.sample_types.length < 2;
}

function show(fg) {
  if (fg.sample_index != null) select.value = String(fg.sample_index);
  $("total").textContent = fg.no_samples
    ? "no samples"
    : fg.diff
      ? diffTotalText(fg)
      : `total ${formatValue(fg.total, fg.unit)}`;
  $("filters").textContent = (fg.filters || []).join(" · ");
  status.hidden = !fg.no_samples;
  status.textContent = fg.no_samples ? "This profile has no samples of this type." : "";
  if (!fg.no_samples) graph.setData(fg);
  root.dataset.state = "ready";
}

select.addEventListener("change", () => {
  root.dataset.state = "loading";
  load(select.value).then(show, (err) => (status.textContent = err.message));
});
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && graph.data) graph.setZoom(0);
});

load(null)
  .then((fg) => {
    fill(fg);
    show(fg);
  })
  .catch((err) => {
    status.textContent = `Could not load this profile: ${err.message}`;
    root.dataset.state = "error";
  });
