"""Each view of a profile encoded as served: flame graph and top table JSON, the -top text, the
summary (kind, header, heaviest functions) and the link preview PNG.

Pure functions of parsed profiles and a view's options (options.py), shared by the compute tier
(whose bytes the web tier caches and serves) and the CLI. VIEWS names every view; render() is
the one entry point. VERSION is part of every cache key: bump it when a view's bytes change.

profiles[0] is the profile shown; with the options diff_base or base, the others are its bases
and the flame graph, top table and text show the diff (combine.py); a stored profile that is a
diff shows as one too. The summary and the preview are of profiles[0] alone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...pprof import ParsedProfile
from ..combine import summed
from ..flame import flame
from ..measure import text
from ..model.graph import Graph, graph
from ..model.tables import Tables, tables
from ..reports import summary
from ..reports.top import top
from . import diffview, preview
from .docs import encode, shown, top_doc_of
from .options import bases


def graph_of(parsed: ParsedProfile, index: int | None) -> Graph:
    """The Graph of one sample type (tables and stacks cached on the parsed profile)."""
    return graph(tables(parsed), index)


def flamegraph_doc(
    t: Tables, index: int | None, node_fraction: float = 0.0, budget: int = flame.FLAME_NODE_BUDGET
) -> dict[str, Any]:
    doc = flame.flamegraph(graph(t, index), node_fraction, budget)
    doc["diff"] = False
    doc["warnings"] = []
    return doc


def flamegraph_json(
    parsed: ParsedProfile,
    index: int | None,
    node_fraction: float = 0.0,
    budget: int = flame.FLAME_NODE_BUDGET,
) -> bytes:
    """The flame graph view, encoded."""
    return encode(flamegraph_doc(tables(parsed), index, node_fraction, budget))


def top_doc(t: Tables, index: int | None, node_count: int) -> dict[str, Any]:
    """The top table: every row unless node_count limits them, by column (as the flame
    graph's nodes: no dict per row to build, nor keys to repeat)."""
    g = graph(t, index)
    return top_doc_of(g, top(g, node_count=node_count))


def top_json(parsed: ParsedProfile, index: int | None, node_count: int) -> bytes:
    """The top table view, encoded."""
    return encode(top_doc(tables(parsed), index, node_count))


def top_text_of(t: Tables, index: int | None, node_count: int) -> bytes:
    """`go tool pprof -top -nodefraction=0` as text."""
    result = top(graph(t, index), node_count=node_count)
    return text.top_text(
        result.header, result.total, result.rows, orig_count=result.orig_count
    ).encode()


def top_text(parsed: ParsedProfile, index: int | None, node_count: int) -> bytes:
    return top_text_of(tables(parsed), index, node_count)


def _flamegraph(ps: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    s, index = shown(ps, o)
    if s.diff:
        return encode(diffview.flamegraph(s, index, o["node_fraction"], o["budget"]))
    return encode(flamegraph_doc(s.tables, index, o["node_fraction"], o["budget"]))


def _top(ps: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    s, index = shown(ps, o)
    if s.diff:
        return encode(diffview.top_table(s, index, o["node_count"]))
    return encode(top_doc(s.tables, index, o["node_count"]))


def _toptext(ps: Sequence[ParsedProfile], o: Mapping[str, Any]) -> bytes:
    s, index = shown(ps, o)
    return top_text_of(s.tables, index, o["node_count"])


def summary_json(parsed: ParsedProfile, index: int | None) -> bytes:
    """The summary view (summary.py), encoded."""
    return encode(summary.summary(parsed, index))


VERSION = "v9"

# name -> (render(profiles, options) -> bytes, mimetype); profiles[0] is the profile shown.
VIEWS: dict[str, tuple[Callable[[Sequence[ParsedProfile], Mapping[str, Any]], bytes], str]] = {
    "flamegraph": (_flamegraph, "application/json"),
    "top": (_top, "application/json"),
    "toptext": (_toptext, "text/plain"),
    "summary": (lambda ps, o: summary_json(ps[0], o["sample_index"]), "application/json"),
    "preview": (lambda ps, o: preview.render(ps[0], o["sample_index"]), "image/png"),
}


def _register_pprof_views() -> None:
    """The views with pprof's options (pprofviews.py); flame graph and top take them too."""
    from . import pprofviews

    VIEWS.update(pprofviews.VIEWS)
    for name in ("flamegraph", "top", "toptext"):
        plain = VIEWS[name][0]
        VIEWS[name] = (pprofviews.with_options(name, plain), VIEWS[name][1])


_register_pprof_views()


def render(name: str, profiles: Sequence[ParsedProfile], options: Mapping[str, Any]) -> bytes:
    """The bytes of view `name` of profiles with options (as options.parse made them)."""
    return VIEWS[name][0](profiles, options)


def mimetype(name: str) -> str:
    return VIEWS[name][1]


# --- a sum of stack summaries (combine.summed): a collection range's flame graph and top -------
SUMMED_VIEWS = ("flamegraph", "top")


def summed_viewable(name: str, options: Mapping[str, Any]) -> bool:
    """Whether view `name` with these options reads only a summary: the flame graph and top
    table without pprof's options, not a diff."""
    from . import pprofviews

    return name in SUMMED_VIEWS and pprofviews.is_plain(name, options) and not bases(options)


def render_summed(name: str, s: summed.Summary, options: Mapping[str, Any]) -> bytes:
    """The bytes of view `name` (summed_viewable) of a summed summary, as render() gives them
    for the merged profile (the flame graph's names numbered in the sum's own order)."""
    g = summed.graph(s, options["sample_index"])
    if name == "flamegraph":
        doc = flame.flamegraph(g, options["node_fraction"], options["budget"])
        doc["diff"] = False
        doc["warnings"] = []
    else:
        doc = top_doc_of(g, top(g, node_count=options["node_count"]))
    return encode(doc)
