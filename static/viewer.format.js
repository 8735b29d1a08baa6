// Formatting of values, shares and times for the profile page (static/viewer.js).

// ---------------------------------------------------------------------------------------------
// Units, formatted the way google/pprof's measurement.ScaledLabel does.

const UNIT_TYPES = [
  {
    units: [
      ["B", ["b", "byte"], 1],
      ["kB", ["kb", "kbyte", "kilobyte"], 2 ** 10],
      ["MB", ["mb", "mbyte", "megabyte"], 2 ** 20],
      ["GB", ["gb", "gbyte", "gigabyte"], 2 ** 30],
      ["TB", ["tb", "tbyte", "terabyte"], 2 ** 40],
      ["PB", ["pb", "pbyte", "petabyte"], 2 ** 50],
    ],
    fallback: ["B", 1],
  },
  {
    units: [
      ["ns", ["ns", "nanosecond"], 1],
      ["us", ["μs", "us", "microsecond"], 1e3],
      ["ms", ["ms", "millisecond"], 1e6],
      ["s", ["s", "sec", "second"], 1e9],
      ["hrs", ["hour", "hr"], 3600e9],
    ],
    fallback: ["s", 1e9],
  },
];

function findUnit(unit) {
  let u = String(unit || "").toLowerCase();
  if (u.length > 2 && u.endsWith("s")) u = u.slice(0, -1); // "bytes", "nanoseconds"
  for (const type of UNIT_TYPES) {
    const hit = type.units.find((x) => x[1].includes(u));
    if (hit) return { type, factor: hit[2] };
  }
  return null;
}

/** A value with its unit scaled to a readable size: "1.20s", "350ms", "1.50MB", "42". */
export function formatValue(value, unit) {
  if (value < 0) {
    const s = formatValue(-value, unit);
    return s === "0" ? s : "-" + s;
  }
  const found = findUnit(unit);
  let v = value;
  let suffix = "";
  if (found) {
    const base = value * found.factor;
    let best = null;
    for (const u of found.type.units) {
      if (base / u[2] >= 1 && (!best || u[2] >= best[2])) best = u;
    }
    const [name, factor] = best ? [best[0], best[2]] : found.type.fallback;
    v = base / factor;
    suffix = name;
  }
  const text = v.toFixed(2).replace(/\.00$/, "");
  return text === "0" ? "0" : text + suffix;
}

/** A share as google/pprof prints it: two decimals from 1%, two significant digits below. */
export function formatPct(value, total) {
  const ratio = total ? Math.abs(value / total) * 100 : 0;
  if (ratio >= 99.95 && ratio <= 100.05) return "100%";
  if (ratio >= 1) return ratio.toFixed(2) + "%";
  return String(Number(ratio.toPrecision(2))) + "%";
}

/** A time given as epoch seconds or an RFC 3339 string, as UTC "2024-05-01 12:00:00Z". */
export function formatTime(t) {
  if (t == null || t === "") return null;
  const date = typeof t === "number" ? new Date(t * 1000) : new Date(t);
  if (Number.isNaN(date.getTime())) return String(t);
  return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

/** Time left until t (epoch seconds or RFC 3339), rounded: "in 29 days", "in 3 hours". */
export function formatRemaining(t, nowMs = Date.now()) {
  const at = typeof t === "number" ? t * 1000 : Date.parse(t);
  if (Number.isNaN(at)) return null;
  const secs = (at - nowMs) / 1000;
  if (secs <= 0) return "expired";
  if (secs < 60) return "in under a minute";
  const plural = (n, unit) => `in ${n} ${unit}${n === 1 ? "" : "s"}`;
  // Hours up to two days and days up to two years: "in 36 hours" says more than "in 2 days".
  const minutes = Math.round(secs / 60);
  if (minutes < 60) return plural(minutes, "minute");
  const hours = Math.round(secs / 3600);
  if (hours < 48) return plural(hours, "hour");
  const days = Math.round(secs / 86400);
  if (days < 730) return plural(days, "day");
  return plural(Math.round(days / 365), "year");
}
