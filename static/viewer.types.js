// Sample types: how the API and the URL name one, the selector, and pprof's header lines for
// the type shown.
import { cached } from "./viewer.api.js";

/** How the API and the URL name type i: its name, or its index if the name is ambiguous. */
export function siParam(types, i) {
  const name = types[i].type;
  const unique = name && types.filter((t) => t.type === name).length === 1;
  return unique ? name : String(i);
}

/** The index a URL's si names (a type name or an index), else fallback. */
export function siFromParam(types, param, fallback) {
  if (param == null) return fallback;
  const byName = types.findIndex((t) => t.type === param);
  if (byName >= 0) return byName;
  const n = Number(param);
  return Number.isInteger(n) && n >= 0 && n < types.length ? n : fallback;
}

export function fillSelect(select, types, fg) {
  select.replaceChildren();
  types.forEach((t, i) => {
    const opt = document.createElement("option");
    opt.value = String(i);
    const label = t.type || `(unnamed #${i})`;
    opt.textContent = t.unit ? `${label} (${t.unit})` : label;
    if (i === fg.default_sample_index) opt.textContent += " — default";
    select.append(opt);
  });
  select.disabled = types.length < 2;
}

let headerIndex = null; // whose lines #pprof-header shows; null: the default type's (server's)

/** pprof's header lines (Type:, Duration: ... Total) follow the sample type shown. */
export async function showHeader(summaryUrl, fg, si, param) {
  const pre = document.getElementById("pprof-header");
  if (!pre || si == null) return;
  const shown = headerIndex === null ? fg.default_sample_index : headerIndex;
  // The page renders before any analysis: the default type's lines may not be there yet.
  if (si === shown && pre.textContent.trim()) return;
  headerIndex = si;
  try {
    const s = await cached(withSi(summaryUrl, param));
    if (headerIndex === si) pre.textContent = s.header.join("\n");
  } catch {
    // the previous lines stay; the flame graph and the table are what matter
  }
}

/** The summary view's URL for the page: a profile's takes no parameters; on a collection's
 * page (data-selection-params), the URL's selection less the base. */
export function summaryUrl(root, params) {
  const names = (root.dataset.selectionParams || "").split(" ").filter((n) => n && !n.startsWith("base_"));
  const q = new URLSearchParams();
  for (const [k, v] of params) if (names.includes(k)) q.set(k, v);
  return root.dataset.summaryUrl + (q.size ? `?${q}` : "");
}

/** The summary URL of one sample type. */
export function withSi(summaryUrl, param) {
  return `${summaryUrl}${summaryUrl.includes("?") ? "&" : "?"}si=${encodeURIComponent(param)}`;
}
