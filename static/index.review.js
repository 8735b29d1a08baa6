// "Before sharing" on the index page: draws what the chosen files hold (index.inspect.js's
// findings) as boxes to tick, and turns the ticked boxes into the upload's strip= value.
// Everything from the files reaches the page through textContent only.

function el(tag, props = {}, ...children) {
  const node = Object.assign(document.createElement(tag), props);
  node.append(...children);
  return node;
}

function box(name, value, text, extra) {
  const input = el("input", { type: "checkbox", name, value });
  const label = el("label", { className: "review-item" }, input, " ", text);
  if (extra) label.append(el("span", { className: "muted" }, " ", extra));
  return label;
}

export function renderReview(panel, panelBody, waiting, findings) {
  const labels = new Map();
  const comments = new Set();
  const dirs = new Set();
  const types = new Map();
  let paths = 0;
  let buildIds = 0;
  for (const f of findings) {
    for (const l of f.labels) {
      const e = labels.get(l.key) || { samples: 0, values: 0, numeric: 0, examples: [] };
      e.samples += l.samples;
      e.values += l.values;
      e.numeric += l.numeric;
      e.examples = [...new Set([...e.examples, ...l.examples])].slice(0, 3);
      labels.set(l.key, e);
    }
    f.comments.forEach((c) => comments.add(c));
    f.dirs.forEach((d) => dirs.add(d));
    f.types.forEach((t) => types.set(t.type, t.unit));
    paths += f.paths;
    buildIds += f.buildIds;
  }
  const parts = [];
  if (labels.size) {
    const group = el("fieldset", { className: "review-group", id: "review-labels" });
    group.append(el("legend", {}, "Labels"));
    const all = box("strip-labels-all", "labels", "Remove every label");
    group.append(all);
    for (const [key, e] of [...labels].sort()) {
      const what = e.values
        ? `${e.values} value${e.values === 1 ? "" : "s"}, e.g. ${e.examples.join(", ")}`
        : `${e.numeric} numeric`;
      const item = box("strip-label", key, el("code", {}, key), `: ${e.samples} samples, ${what}`);
      item.dataset.key = key;
      group.append(item);
    }
    const allBox = all.querySelector("input");
    allBox.addEventListener("change", () => {
      for (const b of group.querySelectorAll("input[name=strip-label]")) b.checked = allBox.checked;
    });
    parts.push(group);
  }
  if (comments.size) {
    const group = el("fieldset", { className: "review-group", id: "review-comments" });
    group.append(el("legend", {}, "Comments"), box("strip-comments", "comments", "Remove comments"));
    group.append(el("ul", {}, ...[...comments].map((c) => el("li", { className: "mono" }, c))));
    parts.push(group);
  }
  if (paths) {
    const group = el("fieldset", { className: "review-group", id: "review-paths" });
    const shown = [...dirs].slice(0, 5);
    group.append(
      el("legend", {}, "File paths"),
      box("strip-paths", "paths", "Remove directories, keep file names", `: ${paths} file names`),
      el("ul", {}, ...shown.map((d) => el("li", { className: "mono" }, d))),
    );
    if (dirs.size > shown.length) group.append(el("p", { className: "muted" }, `and ${dirs.size - shown.length} more directories`));
    parts.push(group);
  }
  if (buildIds) {
    const group = el("fieldset", { className: "review-group", id: "review-build-ids" });
    group.append(el("legend", {}, "Build IDs"), box("strip-build-ids", "build_ids", "Remove build IDs", `: ${buildIds} mappings`));
    parts.push(group);
  }
  if (types.size > 1) {
    const group = el("fieldset", { className: "review-group", id: "review-types" });
    group.append(el("legend", {}, "Sample types"));
    for (const [type, unit] of types) {
      group.append(box("strip-type", type, `Drop ${type}`, unit ? ` (${unit})` : ""));
    }
    parts.push(group);
  }
  const names = waiting.map((f) => f.name).join(", ");
  document.getElementById("review-files").textContent =
    `${names}: what ${waiting.length === 1 ? "this file holds" : "these files hold"}. ` +
    "Tick what to remove; the server stores the profile without it.";
  panelBody.replaceChildren(...parts);
  panel.hidden = false;
  document.getElementById("review-upload").focus();
}

/** The strip= value of the ticked boxes ("labels:a,b;comments;paths"). */
export function stripSpec(panel) {
  const ticked = (name) =>
    Array.from(panel.querySelectorAll(`input[name=${name}]:checked`), (b) => b.value);
  const items = [];
  const keys = ticked("strip-label");
  const allKeys = panel.querySelectorAll("input[name=strip-label]").length;
  // Keys with a separator in them cannot be named one by one: remove every label then.
  if (ticked("strip-labels-all").length || (keys.length && keys.length === allKeys)) items.push("labels");
  else if (keys.some((k) => /[,;\s]/.test(k))) items.push("labels");
  else if (keys.length) items.push("labels:" + keys.join(","));
  items.push(...ticked("strip-comments"), ...ticked("strip-paths"), ...ticked("strip-build-ids"));
  const types = ticked("strip-type");
  if (types.length) items.push("types:" + types.join(","));
  return items.join(";");
}

