"""The views of a diff: the differential flame graph and the top table with both sides.

pprof's own numbers are kept as they are: every node's signed value (new less base) and the
top rows in pprof's order (|flat| first) with pprof's total. Beside them come the two sides,
`before` (the base, in its own sign) and `after`, per node and per row. A frame's width is
before + after, as pprof's newer flame graph (stacks view) and Grafana draw it, so a frame that
vanished or appeared still has the width it had on the side where it ran, and a parent is never
narrower than its children; the node budget and node fraction weigh nodes by that width.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..combine.combine import Shown
from ..flame import flame, zoom
from ..flame.tree import Tree
from ..measure.units import wrap64
from ..model.graph import Graph, graph, node_sums, stack_node_sums, view_header
from ..reports.top import columns, top

_I64 = np.int64


def _sides(s: Shown, g: Graph) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample before and after of the graph's sample type (zeros without one)."""
    assert s.before is not None and s.after is not None
    if g.index is None:
        zero = np.zeros(s.tables.n_samples, dtype=_I64)
        return zero, zero
    return s.before[:, g.index], s.after[:, g.index]


def _side_sums(s: Shown, g: Graph) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...]]:
    """graph.node_sums of each side (per stack, flat, cum), kept with the diff: its flame
    graph and top table ask for the same."""
    found = s.sums.get(g.index)
    if found is None:
        before, after = _sides(s, g)
        found = s.sums[g.index] = (node_sums(g.stacks, before), node_sums(g.stacks, after))
    return found


def _header(s: Shown, g: Graph, before: np.ndarray, after: np.ndarray) -> dict[str, Any]:
    return {
        **view_header(g),
        "no_samples": not (bool(before.any()) or bool(after.any())),  # on either side
        "diff": True,
        "diff_mode": s.mode,
        "normalize": s.normalize,
        "before_total": int(before.sum(dtype=_I64)),
        "after_total": int(after.sum(dtype=_I64)),
    }


def sides_header(s: Shown, g: Graph) -> dict[str, Any]:
    """What a diff's JSON says of its sides (mode, totals) beside pprof's own fields."""
    before, after = _sides(s, g)
    head = _header(s, g, before, after)
    return {k: head[k] for k in ("diff_mode", "normalize", "before_total", "after_total")}


def flamegraph(s: Shown, index: int | None, node_fraction: float, budget: int) -> dict[str, Any]:
    """The differential flame graph JSON (README "Diffs")."""
    g = graph(s.tables, index)
    (before_s, _, _), (after_s, _, _) = _side_sums(s, g)
    return _flame_doc(s, g, (before_s, after_s), node_fraction, budget)


def stack_sides(s: Shown, g: Graph, sample_stack: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per stack of a refined graph (explore.Report: sample_stack -1 for a dropped sample),
    each side's weight: the filters keep, drop and reshape stacks, the sides follow them."""
    before, after = _sides(s, g)
    kept = np.flatnonzero(sample_stack >= 0)
    n = len(g.stacks.frame_off) - 1
    out = []
    for side in (before, after):
        ws = np.zeros(n, dtype=_I64)
        np.add.at(ws, sample_stack[kept], side[kept])
        out.append(ws)
    return tuple(out)


def refined_flamegraph(
    s: Shown, g: Graph, sample_stack: np.ndarray, node_fraction: float, budget: int
) -> dict[str, Any]:
    """The differential flame graph of a diff with pprof's filters (g: the refined graph)."""
    before_s, after_s = stack_sides(s, g, sample_stack)
    doc = _flame_doc(s, g, (before_s, after_s), node_fraction, budget)
    doc["no_samples"] = not (bool(before_s.any()) or bool(after_s.any()))
    return doc


def zoomed_flamegraph(
    s: Shown,
    g: Graph,
    sample_stack: np.ndarray,
    path: list[str],
    node_fraction: float,
    budget: int,
) -> dict[str, Any]:
    """The differential flame graph under a frame path (?zoom=, as zoom.zoomed for one
    profile): the subtree laid out by before + after with a budget of its own, both sides
    summed over it, and the path's frames above it with their real sides."""
    before_s, after_s = stack_sides(s, g, sample_stack)
    st = g.stacks
    width = np.abs(before_s) + np.abs(after_s)
    root_width = int(width.sum(dtype=_I64))
    sub = zoom.subtree(st, path)
    t, order = zoom.subtree_tree(st, sub, width, root_width, node_fraction, budget)
    cum, own, hidden = flame.sums(t, np.column_stack((before_s, after_s))[sub.stacks])
    cum, own = cum[order], own[order]
    (b_top, b_top_self), (a_top, a_top_self) = sub.above(before_s), sub.above(after_s)
    before, after = np.array(b_top + cum[:, 0].tolist()), np.array(a_top + cum[:, 1].tolist())
    before_self = np.array(b_top_self + own[:, 0].tolist())
    after_self = np.array(a_top_self + own[:, 1].tolist())
    named = zoom.chain_names(st, sub, t.node[order])
    doc = _header(s, g, *_sides(s, g))
    doc.update(
        {
            "no_samples": not (bool(before_s.any()) or bool(after_s.any())),
            "width_total": root_width,
            "names": named["names"],
            "files": named["files"],
            "nodes": {
                "name": named["name"],
                "depth": sub.depths(t, order),
                "value": (after - before).tolist(),
                "self": (after_self - before_self).tolist(),
                "before": before.tolist(),
                "after": after.tolist(),
                "before_self": before_self.tolist(),
                "after_self": after_self.tolist(),
            },
            "trimmed": _trimmed(t, hidden, node_fraction, budget),
            "zoom": {"path": path, "found": sub.found},
        }
    )
    return doc


def _trimmed(t: Tree, hidden: np.ndarray, node_fraction: float, budget: int) -> dict[str, Any]:
    """What a diff's tree left out: counted by width, with both sides' sums."""
    return {
        "nodes": t.hidden_nodes,
        "value": wrap64(int(hidden[1]) - int(hidden[0])),
        "max": t.hidden_max,
        "width": t.hidden_value,
        "before": int(hidden[0]),
        "after": int(hidden[1]),
        "node_fraction": node_fraction,
        "budget": budget,
    }


def refined_top_columns(
    s: Shown, g: Graph, sample_stack: np.ndarray, nodes: np.ndarray
) -> dict[str, list[int]]:
    """Both sides' flat and cum of a refined diff's top rows (nodes of the refined graph)."""
    out: dict[str, list[int]] = {}
    for name, ws in zip(("before", "after"), stack_sides(s, g, sample_stack), strict=True):
        flat, cum = stack_node_sums(g.stacks, ws)
        out[f"{name}_flat"] = flat[nodes].tolist()
        out[f"{name}_cum"] = cum[nodes].tolist()
    return out


def _flame_doc(
    s: Shown,
    g: Graph,
    per_stack: tuple[np.ndarray, np.ndarray],
    node_fraction: float,
    budget: int,
) -> dict[str, Any]:
    """The differential flame graph of a graph's stacks, from each side's weight per stack."""
    before, after = _sides(s, g)
    st = g.stacks
    before_s, after_s = per_stack
    width = np.abs(before_s) + np.abs(after_s)
    root_width = int(width.sum(dtype=_I64))
    t, order, names, files, name_index = flame.layout(
        st, width, root_width, node_fraction, budget, track=True
    )
    # The sides summed over the same tree; pprof's signed values are after - before, stack by
    # stack (the merge summed the same int64s), so the tree's are too.
    cum, own, hidden = flame.sums(t, np.column_stack((before_s, after_s)))
    value, own = cum[order], own[order]
    doc = _header(s, g, before, after)
    doc.update(
        {
            "width_total": root_width,
            "names": names,
            "files": files,
            "nodes": {
                "name": name_index.tolist(),
                "depth": t.depth[order].tolist(),
                "value": (value[:, 1] - value[:, 0]).tolist(),
                "self": (own[:, 1] - own[:, 0]).tolist(),
                "before": value[:, 0].tolist(),
                "after": value[:, 1].tolist(),
                "before_self": own[:, 0].tolist(),
                "after_self": own[:, 1].tolist(),
            },
            "trimmed": _trimmed(t, hidden, node_fraction, budget),
        }
    )
    return doc


def top_table(s: Shown, index: int | None, node_count: int) -> dict[str, Any]:
    """The diff top table JSON: pprof's rows and order, with both sides' flat and cum."""
    g = graph(s.tables, index)
    before, after = _sides(s, g)
    t = top(g, node_count=node_count)
    (_, before_flat, before_cum), (_, after_flat, after_cum) = _side_sums(s, g)
    rows = columns(t)
    nodes = t.nodes
    rows.update(
        {
            "before_flat": before_flat[nodes].tolist(),
            "after_flat": after_flat[nodes].tolist(),
            "before_cum": before_cum[nodes].tolist(),
            "after_cum": after_cum[nodes].tolist(),
        }
    )
    doc = _header(s, g, before, after)
    doc.update({"nodes": t.orig_count, "rows": rows})
    return doc
