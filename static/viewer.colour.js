// Colours: one per package, so a package keeps its colour across zooms, views and reloads.

/** The package part of a function name: Go import path, C++ namespace, or the name itself. */
export function packageOf(name) {
  if (name.includes("::")) return name.slice(0, name.indexOf("::"));
  const slash = name.lastIndexOf("/", name.indexOf("(") >= 0 ? name.indexOf("(") : undefined);
  const rest = name.slice(slash + 1);
  const dot = rest.search(/[.(]/);
  return dot > 0 ? name.slice(0, slash + 1 + dot) : name;
}

function hash32(text) {
  let h = 0x811c9dc5; // FNV-1a
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The theme's flame colours, from CSS variables of static/base.css (light or dark). */
export function palette() {
  const css = getComputedStyle(document.documentElement);
  const get = (name, fallback) => css.getPropertyValue(name).trim() || fallback;
  return {
    text: get("--flame-text", "#1d2330"),
    textDim: get("--flame-text-dim", "#7b8494"),
    dim: get("--flame-dim", "#dfe2e7"),
    hover: get("--flame-hover", "#1d2330"),
    sat: Number(get("--flame-sat", "65")) || 65,
    light: Number(get("--flame-light", "62")) || 62,
  };
}

const colourCache = new Map(); // "sat/light/package" -> colour
export function colourOf(name, pal) {
  const pkg = packageOf(name);
  const key = `${pal.sat}/${pal.light}/${pkg}`;
  let c = colourCache.get(key);
  if (!c) {
    const h = hash32(pkg);
    // Warm flame hues (red .. yellow) with a little spread in lightness for neighbours.
    const hue = (h % 55) + 5;
    const sat = pal.sat + ((h >>> 8) % 20);
    const light = pal.light + ((h >>> 16) % 14);
    c = `hsl(${hue} ${sat}% ${light}%)`;
    colourCache.set(key, c);
  }
  return c;
}
