// The views fetched on demand: the call graph (an SVG), the labels (tags JSON) and peek (peek
// JSON for the selected function), each request once per URL (viewer.api.js caches them).
import { cached, getText } from "./viewer.api.js";
import * as url from "./viewer.state.js";

export function viewLoader(ctx) {
  const { root, state, siArg, graphView, labels, peekView, refine, showNotes } = ctx;
  let viewCall = 0;
  return async function loadView() {
    const call = ++viewCall;
    const view = state.view;
    const si = siArg();
    state.warnings.view = [];
    try {
      if (view === "graph") {
        const graphUrl = url.apiUrl(root.dataset.graphUrl, { si });
        // Graphviz takes a second on a large profile: say so rather than show an empty box.
        if (graphView.url !== graphUrl) {
          graphView.clear("Laying out the call graph…");
          graphView.text = null; // drawn again when it comes, even if it is the same SVG
        }
        graphView.url = graphUrl;
        const { text, warnings } = await cached(graphUrl, getText);
        if (call !== viewCall) return;
        state.warnings.view = warnings;
        if (graphView.text !== text) {
          graphView.show(text, state.gv); // the URL's pan and zoom, the first time
          state.gv = "";
          graphView.text = text;
        }
      } else if (view === "labels") {
        const tags = await cached(url.apiUrl(root.dataset.tagsUrl, { si }));
        if (call !== viewCall) return;
        const grouped = (url.getParam(url.serverParams(), "tagroot") || "").split(",").filter(Boolean);
        labels.show(tags, grouped);
        state.warnings.view = tags.warnings;
      } else if (view === "peek") {
        if (!state.fn) {
          peekView.show(null, "Select a function: click it in the flame graph, the top table or the sandwich, or right-click it.");
          return;
        }
        const peek = await cached(url.apiUrl(root.dataset.peekUrl, { si, peek: url.exactRegex(state.fn) }));
        if (call !== viewCall) return;
        peekView.show(peek, peek.matches.length ? state.fn : `${state.fn}: not in this view (filters or granularity)`);
        state.warnings.view = peek.warnings;
      }
      if (call === viewCall) showNotes();
    } catch (err) {
      if (call !== viewCall) return;
      if (view === "graph") {
        graphView.text = null;
        graphView.url = null;
        graphView.clear(err.status === 501 ? "The call graph needs Graphviz's dot on the server, which is not installed (501)." : err.message);
      } else refine.showNotes(state.warnings.base, err.message);
    } finally {
      // What tests wait for: this view drawn for these server parameters.
      if (call === viewCall) root.dataset.viewLoaded = `${view}${location.search}`;
    }
  };
}
