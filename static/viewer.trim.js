// What the flame graph's JSON says about itself: what the server's budget left out (the note
// above the canvas), and the paint marks bench/paint.py reads.
import { formatPct, formatValue } from "./viewer.format.js";

/** An integer with commas between groups of three digits, as toLocaleString("en-US") writes
 * it: that call's first use loads the locale's data, some 20 ms before the first paint. */
function groupDigits(n) {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** Whether the server left out frames that carry any weight (zero-valued ones draw nothing). */
export function hidesWeight(fg) {
  const t = fg.trimmed || { nodes: 0 };
  return Boolean(t.nodes && (t.value || t.max));
}

/** What the server left out of the flame graph (fg.trimmed), and why it hardly shows. */
export function trimNote(fg, width) {
  const t = fg.trimmed || { nodes: 0 };
  const shown = fg.nodes.name.length - 1;
  const where = fg.zoom ? "Zoomed in with a budget of its own: " : "";
  if (!hidesWeight(fg)) return `${where}Every frame shown (${groupDigits(shown)}).`;
  // A diff's frames are before + after wide: what is hidden is a share of that width.
  const whole = fg.diff ? fg.width_total : fg.total;
  const hidden = fg.diff ? t.width : t.value;
  const limits = [];
  if (t.budget) limits.push(`the ${groupDigits(shown)} heaviest frames`);
  if (t.node_fraction) limits.push(`frames over ${formatPct(t.node_fraction, 1)} of the total`);
  let text = `${where}Showing ${limits.join(" and ") || `${groupDigits(shown)} frames`}; `;
  text += `${groupDigits(t.nodes)} smaller call trees are hidden`;
  if (t.max != null) {
    text += `, each at most ${formatValue(t.max, fg.unit)}`;
    // Their width when zoomed out: under a pixel means the picture is the same without them.
    const px = whole ? (Math.abs(t.max) / whole) * width : 0;
    if (px < 1 && !fg.zoom) text += " (under a pixel wide unzoomed)";
  }
  return `${text}: ${formatValue(hidden, fg.unit)}, ${formatPct(hidden, whole)} of the ${fg.diff ? "width" : "total"}.`;
}

/** Marks the flame graph's first paint for bench/paint.py (times from navigation start). */
export function markFirstPaint(root) {
  performance.mark("flame-drawn");
  root.dataset.flamePaintedAt = "pending";
  // The canvas was drawn synchronously; it is on screen once the next frame has been produced,
  // which is when a task queued from that frame's animation callback runs.
  requestAnimationFrame(() =>
    setTimeout(() => {
      const mark = performance.mark("flame-painted");
      root.dataset.flamePaintedAt = mark.startTime.toFixed(1);
    }, 0),
  );
}
