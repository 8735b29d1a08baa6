// The profile page's elements and its initial state: what viewer.js wires together.

const $ = (id) => document.getElementById(id);

/** The elements every part of the viewer reads, by role. */
export function pageElements() {
  return {
    select: $("sample-type"),
    total: $("total"),
    trimmed: $("trimmed"),
    trimmedText: $("trimmed-text"),
    detail: $("detail"),
    status: $("status"),
    flame: $("flame"),
    empty: $("no-samples"),
    emptyType: $("no-samples-type"),
    search: $("search"),
    top: $("top"),
    topFilter: $("top-filter"),
    sections: { flame: $("flame"), top: $("top"), graph: $("graph"), peek: $("peek"), labels: $("labels") },
  };
}

/** The page's state before the URL and the first view fill it in. */
export function initialState() {
  return {
    types: [],
    si: -1, // index of the shown sample type
    q: "",
    fn: "", // the selected function
    view: "flame",
    full: false, // every frame, not only the server's node budget
    fg: null,
    warnings: { base: [], view: [] },
  };
}
