// The "go tool pprof" command beside the page opens the same view in pprof's own web UI: the
// profile's raw link, the page's diff (-diff_base/-base, -normalize), its refine filters and
// granularity as pprof's flags (README's table), and the sample type when it is not the default.
// "Embed" beside it links to the same view's flame graph alone, for an iframe.
import { diffParams, profileId } from "./viewer.compare.js";

// Query parameters (and their short names) that are pprof flags with the same value.
const VALUED = {
  focus: "focus", f: "focus", ignore: "ignore", i: "ignore", hide: "hide", h: "hide",
  show: "show", s: "show", show_from: "show_from", sf: "show_from",
  prune_from: "prune_from", prunefrom: "prune_from",
  tagfocus: "tagfocus", tf: "tagfocus", tagignore: "tagignore", ti: "tagignore",
  tagshow: "tagshow", ts: "tagshow", taghide: "taghide", th: "taghide",
  tagroot: "tagroot", tagleaf: "tagleaf",
};
const SWITCHES = { noinlines: "noinlines", relative_percentages: "relative_percentages", rel: "relative_percentages" };
const GRANULARITIES = ["lines", "files", "addresses", "filefunctions"];

/** A word as a POSIX shell reads it back: bare when nothing in it is special, else quoted. */
export function shellWord(text) {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`;
}

const on = (v) => v !== "" && !/^(0|false|f|no|off)$/i.test(v);

/** pprof's flags for the page's query (URLSearchParams); sampleIndex: the sample type's name
 * when it is not the profile's default; raw(id): the raw link of a profile id. */
export function pprofFlags(params, sampleIndex, raw) {
  const flags = [];
  const diff = diffParams(params.toString()); // the page's own reading of its diff
  if (diff) {
    const bases = diff.refs.map(profileId).filter(Boolean).map((id) => shellWord(raw(id)));
    flags.push(`-${diff.mode}=${bases.join(",")}`);
    if (diff.normalize) flags.push("-normalize");
  }
  if (sampleIndex) flags.push(`-sample_index=${shellWord(sampleIndex)}`);
  const granularity = params.get("granularity") || params.get("g") || "";
  if (GRANULARITIES.includes(granularity)) flags.push(`-${granularity}`);
  for (const [name, value] of params) {
    if (VALUED[name] && value) flags.push(`-${VALUED[name]}=${shellWord(value)}`);
    else if (SWITCHES[name] && on(value)) flags.push(`-${SWITCHES[name]}`);
  }
  return flags;
}

/** A collection's page (data-selection-params names the selection's parameters): its link
 * with the selection's parameters, the base selection's link (base_from -> from, …) for
 * -diff_base, and the view's other parameters; null on a profile's page. */
function selectionSources(root, params) {
  const names = (root.dataset.selectionParams || "").split(" ").filter(Boolean);
  if (!names.length) return null;
  const link = new URL(root.dataset.link, location.href).href;
  const own = new URLSearchParams();
  const base = new URLSearchParams();
  const rest = new URLSearchParams();
  for (const [k, v] of params) {
    if (!names.includes(k)) rest.append(k, v);
    else if (k.startsWith("base_")) base.set(k.slice(5), v);
    else own.set(k, v);
  }
  if (base.size && own.has("kind")) base.set("kind", own.get("kind"));
  const at = (q) => (q.size ? `${link}?${q.toString().replaceAll("%3A", ":")}` : link);
  return { source: at(own), base: base.size ? at(base) : null, rest };
}

/** Writes the command into #pprof-cmd, and points "Embed" at this view's embed (the same
 * query, and the sample type when it is not the default). root: the viewer (data-raw-url,
 * data-id). A "viewcommand" event on root hands the view's pprof options on. */
export function showCommand(root, params, sampleIndex) {
  const sel = selectionSources(root, params);
  const view = sel ? sel.rest : params;
  const embed = document.getElementById("embed-link");
  if (embed && !sel) {
    const q = new URLSearchParams(params);
    if (sampleIndex) q.set("si", sampleIndex);
    const query = q.toString();
    embed.href = embed.href.split("?")[0] + (query ? `?${query}` : "");
  }
  root.dispatchEvent(new CustomEvent("viewcommand", { detail: { params: view, sampleIndex } }));
  const cmd = document.getElementById("pprof-cmd");
  if (!cmd) return;
  const own = new URL(root.dataset.rawUrl, location.href).href;
  const raw = (id) => own.slice(0, own.length - `${root.dataset.id}/raw`.length) + `${id}/raw`;
  const flags = pprofFlags(view, sampleIndex, raw);
  if (sel && sel.base) flags.unshift(`-diff_base=${shellWord(sel.base)}`);
  cmd.value = ["go tool pprof -http=:", ...flags, shellWord(sel ? sel.source : own)].join(" ");
}
