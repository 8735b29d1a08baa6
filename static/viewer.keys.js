// The profile page's keys: / searches, 1–5 switch views, f i h s F filter on the selected
// function (focus, ignore, hide, show, show from), p shows its callers and callees, Esc resets.
import { FRAME_FILTERS, VIEWS } from "./viewer.refine.js";

/** opts: search, topFilter (inputs), selected() (the selected function), onFilter(param),
 * onView(view), onTopFilterCleared(), onEscape() */
export function bindKeys(opts) {
  document.addEventListener("keydown", (e) => {
    const typing = e.target.closest && e.target.closest("input, textarea, select");
    const plain = !typing && !e.ctrlKey && !e.metaKey && !e.altKey;
    const filter = FRAME_FILTERS.find((f) => f[2] === e.key);
    if (e.key === "/" && plain) {
      e.preventDefault();
      opts.search.focus();
      opts.search.select();
    } else if (plain && filter && opts.selected()) {
      opts.onFilter(filter[0]);
    } else if (plain && e.key === "p" && opts.selected()) {
      opts.onView("peek");
    } else if (plain && /^[1-5]$/.test(e.key)) {
      opts.onView(VIEWS[Number(e.key) - 1]);
    } else if (e.key === "Escape" && e.target === opts.topFilter) {
      opts.topFilter.value = "";
      opts.onTopFilterCleared();
    } else if (e.key === "Escape") {
      if (e.target === opts.search) opts.search.blur();
      opts.onEscape();
    }
  });
}
