// "The default type holds almost nothing": a heap profile of a short program opens, as pprof
// opens it, on inuse_space, which may hold a few kB while alloc_space holds the program's
// allocations. The page keeps pprof's default and says so next to the selector, with a switch.
import { cached } from "./viewer.api.js";
import { formatValue } from "./viewer.format.js";
import { withSi } from "./viewer.types.js";

const TINY = 0.01; // under 1% of another type in the same unit

/** Fills `box` with the hint for the flame graph JSON fg, or empties it. siParam(i) names type
 * i for the API; onSwitch(i) shows type i. Totals come from the summary (cached per type). */
export async function showTypeHint(box, fg, summaryUrl, siParam, onSwitch) {
  box.replaceChildren();
  box.hidden = true;
  const types = fg.sample_types || [];
  const shown = fg.sample_index;
  // A diff's totals are of two profiles: the hint is about one profile's types.
  if (fg.diff || types.length < 2 || shown == null || shown !== fg.default_sample_index) return;
  const unit = types[shown].unit;
  // Only the types in the same unit compare (bytes with bytes); with nothing at all, any does.
  const empty = !fg.total;
  const others = types.map((t, i) => i).filter((i) => i !== shown && (empty || types[i].unit === unit));
  if (!others.length) return;
  const total = async (i) => (await cached(withSi(summaryUrl, siParam(i)))).total;
  let totals;
  try {
    totals = await Promise.all([shown, ...others].map(total));
  } catch {
    return; // a courtesy: the views report real failures
  }
  const mine = Math.abs(totals[0]);
  let best = -1;
  others.forEach((i, k) => {
    if (best < 0 || Math.abs(totals[k + 1]) > Math.abs(totals[others.indexOf(best) + 1])) best = i;
  });
  const theirs = Math.abs(totals[others.indexOf(best) + 1]);
  if (!theirs || mine >= TINY * theirs) return;
  const name = (i) => types[i].type || `type ${i}`;
  const text = document.createElement("span");
  text.textContent = mine
    ? `${name(shown)}, pprof's default, holds ${formatValue(mine, unit)}: under 1% of ${name(best)} (${formatValue(theirs, types[best].unit)}).`
    : `${name(shown)}, pprof's default, holds nothing; ${name(best)} holds ${formatValue(theirs, types[best].unit)}.`;
  const button = document.createElement("button");
  button.type = "button";
  button.id = "type-hint-switch";
  button.textContent = `Show ${name(best)}`;
  button.addEventListener("click", () => onSwitch(best));
  box.append(text, button);
  box.hidden = false;
}
