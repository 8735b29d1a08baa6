"""Each view of a profile encoded as served: flame graph and top table JSON, the -top text, the
summary (kind, header, heaviest functions) and the link preview PNG.

Pure functions of parsed profiles and a view's options (options.py), shared by the compute tier
(whose bytes the web tier caches and serves) and the CLI. VIEWS names every view; render() is
the one entry point. VERSION is part of every cache key: bump it when a view's bytes change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from ..pprof import ParsedProfile
from . import flame, preview, summary, text
from .graph import Graph, graph
from .tables import tables
from .top import top


def graph_of(parsed: ParsedProfile, index: int | None) -> Graph:
    """The Graph of one sample type (tables and stacks cached on the parsed profile)."""
    return graph(tables(parsed), index)


def encode(doc: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8 (the encoding of every JSON view)."""
    return orjson.dumps(doc)


def _encode(doc: dict[str, Any]) -> bytes:
    """Compact JSON, UTF-8 (orjson: 10x the standard library's speed on these number lists)."""
    return orjson.dumps(doc)


def flamegraph_json(
    parsed: ParsedProfile,
    index: int | None,
    node_fraction: float = 0.0,
    budget: int = flame.FLAME_NODE_BUDGET,
) -> bytes:
    """The flame graph view, encoded."""
    doc = flame.flamegraph(graph_of(parsed, index), node_fraction, budget)
    doc["warnings"] = []
    return _encode(doc)


def top_json(parsed: ParsedProfile, index: int | None, node_count: int) -> bytes:
    """The top table view, encoded: every row unless node_count limits them."""
    g = graph_of(parsed, index)
    return _encode(top_doc(g, top(g, node_count=node_count)))


def top_doc(g: Graph, t: Any) -> dict[str, Any]:
    """The top table JSON of a graph's top.Top (README); sum_pct runs in the rows' order."""
    rows = t.rows
    # By column, as the flame graph's nodes: no dict per row to build, nor keys to repeat.
    columns = {
        "name": rows.names,
        "file": rows.files,
        "inline": [i.strip("()") for i in rows.inline],
        "flat": rows.flat.tolist(),
        "flat_pct": _pcts(rows.flat, t.total),
        "sum_pct": _pcts(np.cumsum(rows.flat, dtype=np.int64), t.total),  # wraps as pprof's
        "cum": rows.cum.tolist(),
        "cum_pct": _pcts(rows.cum, t.total),
    }
    doc = {
        "sample_type": {"type": g.sample_type[0], "unit": g.sample_type[1]},
        "sample_index": g.index,
        "sample_types": [{"type": a, "unit": b} for a, b in g.tables.sample_types],
        "default_sample_index": g.tables.sample_index(None),
        "total": t.total,
        "unit": g.sample_type[1],
        "nodes": t.orig_count,
        "rows": columns,
        "no_samples": not bool(g.weights.any()),
        "warnings": [],
    }
    return doc


def _pcts(values: np.ndarray, total: int) -> list[float]:
    """|value / total| in percent, as pprof computes it (0 when the total is 0)."""
    if not total:
        return [0.0] * len(values)
    return (np.abs(values.astype(np.float64) / float(total)) * 100).tolist()


def top_text(parsed: ParsedProfile, index: int | None, node_count: int) -> bytes:
    """`go tool pprof -top -nodefraction=0` as text."""
    t = top(graph_of(parsed, index), node_count=node_count)
    return text.top_text(t.header, t.total, t.rows, orig_count=t.orig_count).encode()


def summary_json(parsed: ParsedProfile, index: int | None) -> bytes:
    """The summary view (summary.py), encoded."""
    return _encode(summary.summary(parsed, index))


VERSION = "v5"

# name -> (render(profiles, options) -> bytes, mimetype); profiles[0] is the profile shown.
VIEWS: dict[str, tuple[Callable[[Sequence[ParsedProfile], Mapping[str, Any]], bytes], str]] = {
    "flamegraph": (
        lambda ps, o: flamegraph_json(ps[0], o["sample_index"], o["node_fraction"], o["budget"]),
        "application/json",
    ),
    "top": (lambda ps, o: top_json(ps[0], o["sample_index"], o["node_count"]), "application/json"),
    "toptext": (lambda ps, o: top_text(ps[0], o["sample_index"], o["node_count"]), "text/plain"),
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
