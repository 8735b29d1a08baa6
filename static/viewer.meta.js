// The metadata panel (from the record JSON) and the ways out: raw download, speedscope, the
// go tool pprof command.
import { formatRemaining, formatTime, formatValue } from "./viewer.format.js";

const $ = (id) => document.getElementById(id);

// ---------------------------------------------------------------------------------------------
// Metadata panel (from the record JSON).

export function renderMeta(rec) {
  const m = rec.metadata || {};
  const items = [];
  const add = (label, value) => {
    if (value == null || value === "" || (Array.isArray(value) && !value.length)) return;
    items.push([label, value]);
  };
  const types = (rec.sample_types || []).map((t) => `${t.type}/${t.unit}`);
  add("Converted from", rec.converted_from);
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
  $("meta-list").replaceChildren(frag);
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

export function setupWaysOut(root) {
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
