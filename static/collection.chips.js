// The label selector of a collection's selection (match=, Prometheus' syntax, as
// share/collections/selection.py reads it): parsed into matchers, written back, and drawn as
// chips with × to remove and the record's label values to click (key="value"; Alt+click:
// key!="value"). Label keys and values are data: they reach the page as textContent only.

const OPS = ["=~", "!~", "!=", "="];

/** `pod="api-1", version=~"v2.*"` -> [{key, op, value}]; null if it does not parse (the
 * server then says why). */
export function parseMatch(text) {
  let s = (text || "").trim();
  if (s.startsWith("{") && s.endsWith("}")) s = s.slice(1, -1);
  const out = [];
  let i = 0;
  for (;;) {
    while (i < s.length && " \t\n,".includes(s[i])) i++;
    if (i >= s.length) return out;
    const key = /^[A-Za-z_][A-Za-z0-9_]*/.exec(s.slice(i));
    if (!key) return null;
    i += key[0].length;
    while (s[i] === " ") i++;
    const op = OPS.find((o) => s.startsWith(o, i));
    if (!op) return null;
    i += op.length;
    while (s[i] === " ") i++;
    const quote = s[i];
    if (!quote || !"\"'`".includes(quote)) return null;
    let value = "";
    i++;
    for (;;) {
      if (i >= s.length) return null;
      const c = s[i];
      if (c === quote) break;
      if (c === "\\" && quote !== "`" && i + 1 < s.length) {
        const n = s[i + 1];
        value += { n: "\n", t: "\t", r: "\r" }[n] || n;
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    i++;
    out.push({ key: key[0], op, value });
  }
}

/** One matcher as the server writes it: key op "value" with \, " and newlines escaped. */
export function matcherText(m) {
  const v = m.value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
  return `${m.key}${m.op}"${v}"`;
}

export const matchText = (matchers) => matchers.map(matcherText).join(", ");

/** The matchers after a click on value of key: key="value" (another = on the key gives way;
 * a second click takes it off), or with negate key!="value". */
export function toggled(matchers, key, value, negate) {
  const op = negate ? "!=" : "=";
  const same = (m) => m.key === key && m.value === value && m.op === op;
  if (matchers.some(same)) return matchers.filter((m) => !same(m));
  const rest = matchers.filter(
    (m) => !(m.key === key && (m.op === "=" || (m.value === value && m.op === "!="))),
  );
  return [...rest, { key, op, value }];
}

const el = (tag, props = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
};

/** Draws the active matchers as chips into `box`; onRemove(i) takes matcher i off. A match
 * that does not parse (matchers null) is one chip of its text, whose × takes it all off. */
export function renderChips(box, matchers, onRemove, text = "") {
  box.replaceChildren();
  if (!matchers) {
    const x = el("button", { type: "button", className: "chip-remove", textContent: "×" });
    x.setAttribute("aria-label", "Remove the selector");
    x.addEventListener("click", () => onRemove(-1));
    box.append(el("span", { className: "chip cl-chip cl-neg" }, el("span", { className: "mono", textContent: text }), x));
    return;
  }
  if (!matchers.length) box.append(el("span", { className: "vw-muted", textContent: "every profile" }));
  matchers.forEach((m, i) => {
    const x = el("button", { type: "button", className: "chip-remove", textContent: "×" });
    x.setAttribute("aria-label", `Remove ${matcherText(m)}`);
    x.addEventListener("click", () => onRemove(i));
    const chip = el("span", { className: `chip cl-chip${m.op.startsWith("!") ? " cl-neg" : ""}` });
    chip.dataset.key = m.key;
    chip.dataset.op = m.op;
    chip.dataset.value = m.value;
    chip.append(el("span", { className: "mono", textContent: matcherText(m) }), x);
    box.append(chip);
  });
}

/** Draws each label key with its values and counts (the record's labels) into `box`;
 * onPick(key, value, negate) on a click. */
export function renderValues(box, labels, matchers, onPick) {
  box.replaceChildren();
  for (const [key, values] of Object.entries(labels || {})) {
    const row = el("div", { className: "cl-key" }, el("span", { className: "cl-label-name mono", textContent: key }));
    row.dataset.key = key;
    for (const [value, count] of Object.entries(values)) {
      const on = matchers.find((m) => m.key === key && m.value === value && (m.op === "=" || m.op === "!="));
      const b = el(
        "button",
        { type: "button", className: "cl-value" + (on ? (on.op === "=" ? " cl-on" : " cl-off") : "") },
        el("span", { className: "mono", textContent: value === "" ? "(empty)" : value }),
        el("span", { className: "vw-muted", textContent: ` ${count}` }),
      );
      b.dataset.key = key;
      b.dataset.value = value;
      b.setAttribute("aria-pressed", String(Boolean(on)));
      b.title = `Alt+click: every profile but ${key}="${value}"`;
      b.addEventListener("click", (e) => onPick(key, value, e.altKey));
      row.append(b);
    }
    box.append(row);
  }
}
