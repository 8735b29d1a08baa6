// Times of the collection page: the URL's from/to (RFC 3339 or unix seconds, as the server
// reads them) to epoch seconds and back, a range snapped to the timeline's step, and the text
// a reader sees (UTC, as the rest of the site shows times).

const UNITS = { s: 1, m: 60, h: 3600, d: 86400, w: 7 * 86400, y: 365 * 86400 };
const RELATIVE_STEP = 10; // the server rounds now-1h down to whole 10 s (selection.py)

/** Epoch seconds of a from/to value (RFC 3339, unix seconds, now or now-1h), or null. */
export function parseTime(text) {
  if (text == null || text === "") return null;
  const t = String(text).trim();
  if (/^\d+(\.\d+)?$/.test(t)) return Number(t);
  if (t === "now") return Date.now() / 1000;
  const ago = /^now-(\d+)\s*([smhdwy])$/i.exec(t);
  if (ago) {
    const at = Date.now() / 1000 - Number(ago[1]) * UNITS[ago[2].toLowerCase()];
    return Math.floor(at / RELATIVE_STEP) * RELATIVE_STEP;
  }
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms / 1000;
}

/** The URL's form of epoch seconds: RFC 3339 in UTC, to the second. */
export function rfc3339(seconds) {
  return new Date(Math.round(seconds) * 1000).toISOString().replace(/\.\d+Z$/, "Z");
}

/** A dragged span [t0, t1] as whole steps: from the first step that starts inside it to the
 * end of the last, so that a drag across points selects exactly those points' steps (a point
 * stands for the members of [t, t + step)). */
export function snapRange(t0, t1, step) {
  const s = step > 0 ? step : 1;
  let from = Math.ceil(t0 / s) * s;
  let to = Math.floor(t1 / s) * s + s;
  if (to <= from) {
    from = Math.floor(t0 / s) * s;
    to = from + s;
  }
  return { from, to };
}

/** "2026-12-01 14:00:05Z", or the date left out when it is the same as `other`'s. */
export function timeText(seconds, other) {
  const full = new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  if (other == null) return full;
  const day = (t) => new Date(t * 1000).toISOString().slice(0, 10);
  return day(seconds) === day(other) ? full.slice(11) : full;
}

/** The text of a range whose ends may be open (null). */
export function rangeText(from, to) {
  if (from == null && to == null) return "all time";
  if (from == null) return `until ${timeText(to)}`;
  if (to == null) return `from ${timeText(from)}`;
  return `${timeText(from)} – ${timeText(to, from)}`;
}
