// Where the profile page keeps its state: the link itself, so a copied URL reopens the screen.
//
// - The query string carries the server's parameters verbatim (pprof's names: focus, ignore,
//   hide, show, show_from, tagfocus, tagignore, tagroot, granularity, …, and the compare
//   page's diff_base / base). The page passes them through to every API request unchanged.
// - The fragment carries what only the page knows: view, search q, zoom path, selected
//   function fn, top sort / filter, the call graph's viewBox gv, and the sample type si (as
//   before filters existed).

/** Fragment keys, in the order they are written. */
const FRAGMENT_KEYS = ["si", "view", "q", "zoom", "fn", "sort", "asc", "filter", "gv", "all"];

/** Server parameters the refine bar shows as chips, with their labels (short names too). */
export const FILTERS = [
  ["focus", "focus", ["f"]],
  ["ignore", "ignore", ["i"]],
  ["hide", "hide", ["h"]],
  ["show", "show", ["s"]],
  ["show_from", "show from", ["sf"]],
  ["prune_from", "prune from", ["prunefrom"]],
  ["tagfocus", "tag focus", ["tf"]],
  ["tagignore", "tag ignore", ["ti"]],
  ["tagshow", "tag show", ["ts"]],
  ["taghide", "tag hide", ["th"]],
  ["tagroot", "group by", []],
  ["tagleaf", "leaf labels", []],
];

/** The fragment as an object of strings (absent keys are missing). */
export function readFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  const out = {};
  for (const [k, v] of params) out[k] = v;
  return out;
}

/** Percent-encodes a fragment value but leaves the characters of function names readable. */
function encodeValue(v) {
  return encodeURIComponent(v).replace(/%(3B|2F|3A|28|29|2C|40|24|5B|5D|2A)/g, (m) =>
    decodeURIComponent(m),
  );
}

/** Writes the fragment (replaceState: client state changes are not history steps). */
export function writeFragment(values) {
  const parts = [];
  for (const k of FRAGMENT_KEYS) {
    const v = values[k];
    if (v != null && v !== "") parts.push(`${k}=${encodeValue(String(v))}`);
  }
  const hash = parts.length ? "#" + parts.join("&") : "";
  const url = location.pathname + location.search + hash;
  if (url !== location.pathname + location.search + location.hash) history.replaceState(null, "", url);
}

/** The server parameters of the page's URL. */
export function serverParams() {
  return new URLSearchParams(location.search);
}

/** The value of a server parameter, under its long name or any short one. */
export function getParam(params, name) {
  const entry = FILTERS.find((f) => f[0] === name);
  for (const key of [name, ...(entry ? entry[2] : [])]) {
    if (params.has(key)) return params.get(key);
  }
  if (name === "granularity" && params.has("g")) return params.get("g");
  return null;
}

/** Sets (or, with value null or "", removes) server parameters: a new history step. The
 * fragment stays; the caller refetches. */
export function setParams(changes) {
  const params = serverParams();
  for (const [name, value] of Object.entries(changes)) {
    const entry = FILTERS.find((f) => f[0] === name);
    for (const alias of entry ? entry[2] : name === "granularity" ? ["g"] : []) params.delete(alias);
    if (value == null || value === "") params.delete(name);
    else params.set(name, value);
  }
  const query = params.toString();
  history.pushState(null, "", location.pathname + (query ? "?" + query : "") + location.hash);
}

/** An API URL: base, then the page's server parameters, then the page's own (si, zoom, …). */
export function apiUrl(base, extra = {}) {
  const params = serverParams();
  if (extra.si != null) {
    params.delete("sample_index");
    params.delete("si");
  }
  for (const [k, v] of Object.entries(extra)) {
    if (v != null) params.set(k, v);
  }
  const query = params.toString();
  return base + (query ? "?" + query : "");
}

/** A regular expression matching exactly this text (RE2 and JavaScript alike). */
export function exactRegex(text) {
  return "^" + text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "$";
}

/** The text an exact regex of exactRegex() matches, or null if re is no such regex. */
export function unexact(re) {
  const m = /^\^(.*)\$$/s.exec(re || "");
  if (!m) return null;
  const text = m[1].replace(/\\(.)/g, "$1");
  return exactRegex(text) === re ? text : null;
}

/** The regex a filter on a frame uses: the frame's function (or file) name, exactly. Names at
 * the coarser or finer granularities carry a file, line or address that pprof's name filters
 * do not see, so it is taken off. */
export function frameRegex(name, file, granularity) {
  let n = name;
  if (granularity === "addresses") n = n.replace(/^[0-9a-f]+ /, "");
  if (granularity === "lines" || granularity === "addresses") n = n.replace(/ \S+:\d+$/, "");
  else if (granularity === "filefunctions" && file && n.endsWith(" " + file)) {
    n = n.slice(0, -file.length - 1);
  }
  return exactRegex(n);
}
