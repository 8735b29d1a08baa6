// Callers and callees of the selected function (the peek JSON): a table per matching node, and
// a sandwich: its callers' flame graph above (root at the bottom), its callees' below.
import { FlameGraph } from "./viewer.flame.js";
import { formatPct, formatValue } from "./viewer.format.js";

/** A sandwich tree of the peek JSON as a flame graph document (name -1, the root, becomes 0). */
function flameDoc(peek, tree) {
  return {
    names: ["", ...peek.names],
    files: ["", ...(peek.files || [])],
    unit: peek.unit,
    total: peek.total,
    nodes: {
      name: tree.name.map((n) => n + 1),
      depth: tree.depth,
      value: tree.value,
      self: tree.self,
    },
  };
}

export class PeekView {
  /** opts: tables (div), title (span), callers / callees ({canvas, scroller, spacer}), tooltip,
   * onPick(name, event), onMenu(name, x, y) */
  constructor(opts) {
    Object.assign(this, opts);
    this.peek = null;
    // The root row (every stack through the function) is "all", as the flame graph's root.
    const graph = (part, inverted) => new FlameGraph({ ...part, tooltip: this.tooltip, inverted });
    this.callersGraph = graph(this.callers, true);
    this.calleesGraph = graph(this.callees, false);
    // A click on a frame of the sandwich puts that function in the middle.
    for (const g of [this.callersGraph, this.calleesGraph]) {
      g.scroller.addEventListener("click", (e) => this.pickFrame(g, e), true);
      g.scroller.addEventListener("contextmenu", (e) => {
        const name = this.frameName(g, e);
        if (name == null) return;
        e.preventDefault();
        this.onMenu(name, e.clientX, e.clientY);
      });
    }
    this.tables.addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-name]");
      if (tr) this.onPick(tr.dataset.name, e);
    });
    this.tables.addEventListener("contextmenu", (e) => {
      const tr = e.target.closest("tr[data-name]");
      if (!tr) return;
      e.preventDefault();
      this.onMenu(tr.dataset.name, e.clientX, e.clientY);
    });
  }

  frameName(g, e) {
    const rect = g.canvas.getBoundingClientRect();
    const i = g.nodeAtPoint(e.clientX - rect.left, e.clientY - rect.top);
    return i > 0 ? g.data.names[g.data.name[i]] : null;
  }

  pickFrame(g, e) {
    const name = this.frameName(g, e);
    if (name != null) {
      e.stopPropagation(); // no zoom: the sandwich is redrawn around the picked function
      this.onPick(name, e);
    }
  }

  /** Shows the peek JSON (or a message when there is nothing to show). */
  show(peek, message) {
    this.peek = peek;
    const matches = peek ? peek.matches : [];
    this.title.textContent = message || "";
    const parts = matches.map((m) => this.matchTable(peek, m));
    this.tables.replaceChildren(...parts);
    const sw = peek && peek.sandwich;
    this.sandwich.hidden = !sw;
    if (sw) {
      this.callersGraph.setData(flameDoc(peek, sw.callers));
      this.calleesGraph.setData(flameDoc(peek, sw.callees));
    }
  }

  /** pprof's peek block of one node: callers above it, callees below, with edge weights. */
  matchTable(peek, m) {
    const unit = peek.unit;
    const total = peek.total;
    const table = document.createElement("table");
    table.className = "top-table peek-table";
    const head = table.createTHead().insertRow();
    for (const [text, cls] of [["", ""], ["weight", "num"], ["%", "num"], ["name", ""]]) {
      const th = document.createElement("th");
      th.className = cls;
      th.textContent = text;
      head.append(th);
    }
    const body = table.createTBody();
    const row = (role, name, weight, pctOf, extra) => {
      const tr = body.insertRow();
      tr.className = `peek-${role}`;
      tr.dataset.name = peek.names[name];
      const cells = [role === "self" ? "" : role, formatValue(weight, unit), formatPct(weight, pctOf)];
      cells.forEach((text, k) => {
        const td = tr.insertCell();
        td.textContent = text;
        td.className = k ? "num" : "vw-muted";
      });
      const td = tr.insertCell();
      td.className = "name mono";
      td.textContent = peek.names[name] + (extra || "");
      return tr;
    };
    const edges = (list, role) => {
      for (let k = 0; k < list.name.length; k++) {
        const marks = (list.inline[k] ? " (inline)" : "") + (list.residual[k] ? " …" : "");
        row(role, list.name[k], list.weight[k], m.cum, marks);
      }
    };
    edges(m.callers, "caller");
    const self = row("self", m.name, m.cum, total);
    self.classList.add("selected");
    self.cells[0].textContent = `flat ${formatValue(m.flat, unit)} (${formatPct(m.flat, total)}) · cum`;
    edges(m.callees, "callee");
    return table;
  }
}
