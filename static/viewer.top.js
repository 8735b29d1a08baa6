// The top table: sortable, filterable, paged ("Show more") so that every row can be reached.
import { diffTopCells, diffTopHead } from "./viewer.diff.js";
import { formatPct, formatValue } from "./viewer.format.js";

const PAGE = 500;
const DIFF_KEYS = ["before_flat", "after_flat", "before_cum", "after_cum"];
// Percentage columns sort as their values do; sum% as its values in pprof's order.
const SORT_KEYS = { flat_pct: "flat", cum_pct: "cum", sum_pct: "index" };

export class TopTable {
  /** opts: table, filter (input), count (span), more (button), onChange(), onPick(name, event),
   * onMenu(name, file, x, y) */
  constructor(opts) {
    Object.assign(this, opts);
    this.body = this.table.tBodies[0];
    this.head = this.table.tHead;
    this.doc = null; // {rows: [objects], total, unit}
    this.sortKey = "flat";
    this.sortDesc = true;
    this.limit = PAGE;
    this.selected = null; // name of the selected function
    this.head.addEventListener("click", (e) => {
      const th = e.target.closest("th");
      if (!th) return;
      this.sortBy(th.dataset.key);
      this.onChange();
    });
    this.body.addEventListener("click", (e) => {
      const tr = e.target.closest("tr");
      if (tr) this.onPick(tr.dataset.name, e);
    });
    this.body.addEventListener("contextmenu", (e) => {
      const tr = e.target.closest("tr");
      if (!tr) return;
      e.preventDefault();
      this.onMenu(tr.dataset.name, tr.lastElementChild.title || "", e.clientX, e.clientY);
    });
    this.filter.addEventListener("input", () => {
      this.limit = PAGE;
      this.render();
      this.onChange();
    });
    this.more.addEventListener("click", () => {
      this.limit += PAGE;
      this.render();
    });
  }

  sortBy(key) {
    if (this.sortKey === key) this.sortDesc = !this.sortDesc;
    else {
      this.sortKey = key;
      this.sortDesc = key !== "name";
    }
    this.render();
  }

  /** The fragment's part: sort key, direction, filter. */
  urlState() {
    const defaultDesc = this.sortKey !== "name";
    return {
      sort: this.sortKey === "flat" && this.sortDesc ? "" : this.sortKey,
      asc: this.sortDesc === defaultDesc ? "" : this.sortDesc ? "0" : "1",
      filter: this.filter.value.trim(),
    };
  }

  restore(frag) {
    // A diff's columns come with its JSON, after the URL is read: their keys count too.
    const keys = [...this.head.querySelectorAll("th")].map((th) => th.dataset.key).concat(DIFF_KEYS);
    this.sortKey = keys.includes(frag.sort) ? frag.sort : "flat";
    const defaultDesc = this.sortKey !== "name";
    this.sortDesc = frag.asc === "1" ? false : frag.asc === "0" ? true : defaultDesc;
    this.filter.value = frag.filter || "";
  }

  /** Takes the top JSON (rows by column), or null while it loads. */
  setData(top) {
    this.doc = top ? { ...top, rows: rowObjects(top.rows) } : null;
    this.limit = PAGE;
    this.render();
  }

  /** The rows as shown: filtered, sorted, with sum% running down them in that order. */
  shownRows() {
    const rows = this.doc ? this.doc.rows.slice() : [];
    const key = SORT_KEYS[this.sortKey] || this.sortKey;
    const dir = this.sortDesc ? -1 : 1;
    // pprof's orders: by |flat| (or |cum| for -cum), then name, then the other value; pprof's
    // own row order settles what is left (sum% then runs as in pprof's -top and -top -cum).
    const other = key === "cum" ? "flat" : "cum";
    rows.sort((a, b) => {
      if (key === "name") return dir * a.name.localeCompare(b.name) || a.index - b.index;
      const by = (k) => Math.abs(a[k]) - Math.abs(b[k]);
      const name = a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
      return dir * by(key) || name || -by(other) || a.index - b.index;
    });
    const filter = this.filter.value.trim().toLowerCase();
    const visible = filter ? rows.filter((r) => r.name.toLowerCase().includes(filter)) : rows;
    let sum = 0;
    return visible.map((r) => {
      sum += r.flat;
      return { ...r, sum };
    });
  }

  render() {
    const rows = this.shownRows();
    const unit = this.doc ? this.doc.unit : "";
    const total = this.doc ? this.doc.total : 0;
    // A diff's columns: each side beside pprof's delta (sum% of signed deltas would mean little).
    const diff = Boolean(this.doc && this.doc.diff);
    diffTopHead(this.head, diff);
    const frag = document.createDocumentFragment();
    for (const r of rows.slice(0, this.limit)) {
      const tr = document.createElement("tr");
      tr.dataset.name = r.name;
      const cells = diff ? diffTopCells(r, unit, total) : [
        formatValue(r.flat, unit),
        formatPct(r.flat, total),
        formatPct(r.sum, total),
        formatValue(r.cum, unit),
        formatPct(r.cum, total),
      ];
      for (const text of cells) {
        const td = document.createElement("td");
        td.className = "num";
        td.textContent = text;
        tr.append(td);
      }
      const td = document.createElement("td");
      td.className = "name mono";
      td.textContent = r.name;
      if (r.file) td.title = r.file;
      tr.append(td);
      if (r.name === this.selected) tr.classList.add("selected");
      frag.append(tr);
    }
    this.body.replaceChildren(frag);
    const n = rows.length;
    const plural = `${n} function${n === 1 ? "" : "s"}`;
    this.count.textContent = !this.doc ? "loading…" : n > this.limit ? `first ${this.limit} of ${plural}` : plural;
    this.more.hidden = !(n > this.limit);
    this.more.textContent = `Show ${Math.min(PAGE, n - this.limit)} more`;
    for (const th of this.head.querySelectorAll("th")) {
      if (th.dataset.key === this.sortKey) th.setAttribute("aria-sort", this.sortDesc ? "descending" : "ascending");
      else th.removeAttribute("aria-sort");
    }
  }

  select(name) {
    this.selected = name;
    for (const tr of this.body.rows) tr.classList.toggle("selected", tr.dataset.name === name);
  }
}

/** The top JSON's rows come by column ({name: [...], flat: [...], ...}): one object per row,
 * with its index in pprof's order. */
function rowObjects(columns) {
  const keys = Object.keys(columns);
  return columns.name.map((_, i) => ({ index: i, ...Object.fromEntries(keys.map((k) => [k, columns[k][i]])) }));
}
