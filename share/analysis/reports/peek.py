"""`go tool pprof -peek=RE`: callers and callees of the functions a regex matches.

printTree over the untrimmed graph (peek turns trimming off), nodes in flat (or -cum) order;
the regex is matched, unanchored, against each node's printable name. The JSON gives the same
per matched node, plus a sandwich of the first: its callers' tree (the paths from each outermost
occurrence to the root) and its callees' tree (the subtrees under them), as speedscope draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...pprof import columns as pc
from ..flame.flame import FLAME_NODE_BUDGET
from ..flame.tree import build
from ..flame.treeorder import preorder
from ..measure.text import report_lines
from ..measure.units import formatter, output_unit, percentage, wrap64
from ..model import goregexp
from .callgraph import Edges, edge_order, edges, sort_nodes
from .explore import Report, ReportError

_I64 = np.int64
SEPARATOR = "----------------------------------------------------------+-------------"
LEGEND = "      flat  flat%   sum%        cum   cum%   calls calls% + context \t \t "


def compile_peek(pattern: str) -> Any:
    """The -peek argument as pprof compiles it (an error carries its text)."""
    try:
        return goregexp.compile(pattern)
    except goregexp.RegexpError as exc:
        raise ReportError(f"parsing argument regexp {pattern}: {exc}") from None


def peek_graph(rep: Report, cum: bool) -> tuple[np.ndarray, Edges]:
    """The untrimmed graph's nodes in report order, and its edges."""
    g = rep.graph
    e = edges(g)
    return sort_nodes(g, g.present, e, visual=False, cum=cum), e


def matched(rep: Report, nodes: np.ndarray, pattern: str) -> np.ndarray:
    """The nodes whose printable name the regex matches, in report order."""
    rx = compile_peek(pattern)
    names = rep.graph.stacks.names
    return np.array([n for n in nodes.tolist() if rx.search(names[n])], dtype=_I64)


def peek_text(rep: Report, pattern: str, cum: bool = False) -> str:
    """The whole -peek output; no match is pprof's error (a 400)."""
    rx = compile_peek(pattern)
    g = rep.graph
    nodes, e = peek_graph(rep, cum)
    unit = output_unit(rep.header.sample_unit, g.total, g.flat[nodes], g.cum[nodes])
    fmt = formatter(rep.header.sample_unit, unit)
    total = g.total
    flat_sum = wrap64(int(g.flat[nodes].sum(dtype=_I64)))
    lines = report_lines(
        rep.header, total, fmt, filters=rep.filters, flat_sum=flat_sum,
        shown=len(nodes), orig_count=len(nodes),
    )  # fmt: skip
    lines += [SEPARATOR, LEGEND]
    names = g.stacks.names
    by_dst, by_src = _index(e.dst), _index(e.src)
    running = 0
    hits = 0
    for n in nodes.tolist():
        if not rx.search(names[n]):
            continue
        hits += 1
        flat, cum_value = int(g.flat[n]), int(g.cum[n])
        lines.append(SEPARATOR)
        for k in edge_order(g, e, by_dst.get(n, _EMPTY)).tolist():
            lines.append(_context(e, k, int(e.src[k]), names, cum_value, fmt))
        running = wrap64(running + flat)
        lines.append(
            f"{fmt(flat):>10} {percentage(flat, total)} {percentage(running, total)} "
            f"{fmt(cum_value):>10} {percentage(cum_value, total)}                | {names[n]}"
        )
        for k in edge_order(g, e, by_src.get(n, _EMPTY)).tolist():
            lines.append(_context(e, k, int(e.dst[k]), names, cum_value, fmt))
    if len(nodes):
        lines.append(SEPARATOR)
    if not hits:
        raise ReportError(f"no matches found for regexp: {pattern}")
    return "\n".join(lines) + "\n"


_EMPTY = np.zeros(0, dtype=_I64)


def _index(ends: np.ndarray) -> dict[int, np.ndarray]:
    """Edge indices by node."""
    order = np.argsort(ends, kind="stable")
    uniq, starts = np.unique(ends[order], return_index=True)
    bounds = np.append(starts, len(order))
    return {int(u): order[bounds[i] : bounds[i + 1]] for i, u in enumerate(uniq.tolist())}


def _context(e: Edges, k: int, other: int, names: list[str], cum: int, fmt: Any) -> str:
    inline = " (inline)" if e.inline[k] else ""
    w = int(e.weight[k])
    return f"{fmt(w):>50} {percentage(w, cum)} |   {names[other]}{inline}"


def peek_doc(rep: Report, pattern: str, cum: bool, budget: int = FLAME_NODE_BUDGET) -> dict:
    """The peek data as JSON (see README): matched nodes with their callers and callees, and
    the first match's sandwich."""
    g = rep.graph
    nodes, e = peek_graph(rep, cum)
    hits = matched(rep, nodes, pattern)
    names = g.stacks.names
    by_dst, by_src = _index(e.dst), _index(e.src)
    table: dict[int, int] = {}

    def name_id(n: int) -> int:
        return table.setdefault(n, len(table))

    def side(idx: np.ndarray, ends: np.ndarray) -> dict[str, list]:
        order = edge_order(g, e, idx)
        return {
            "name": [name_id(int(x)) for x in ends[order].tolist()],
            "weight": e.weight[order].tolist(),
            "inline": e.inline[order].tolist(),
            "residual": e.residual[order].tolist(),
        }

    matches = []
    for n in hits.tolist():
        matches.append(
            {
                "name": name_id(n),
                "flat": int(g.flat[n]),
                "cum": int(g.cum[n]),
                "callers": side(by_dst.get(n, _EMPTY), e.src),
                "callees": side(by_src.get(n, _EMPTY), e.dst),
            }
        )
    sandwich = None
    if len(hits):
        focal = int(hits[0])
        place = g.stacks.name_ranks()[0]
        sandwich = {
            "name": name_id(focal),
            "callers": _tree_doc(*_callers(rep, focal), g.total, budget, place, name_id),
            "callees": _tree_doc(*_callees(rep, focal), g.total, budget, place, name_id),
        }
    ordered = sorted(table, key=table.__getitem__)
    return {
        "names": [names[n] for n in ordered],
        "files": [g.stacks.files[n] for n in ordered],
        "matches": matches,
        "sandwich": sandwich,
    }


def _outermost(rep: Report, focal: int) -> tuple[np.ndarray, np.ndarray]:
    """(stacks with the node, position of its outermost frame in each) among live stacks."""
    st = rep.graph.stacks
    hit = np.flatnonzero((st.frame_node == focal) & st.firsts())
    owner = st.frame_owner[hit].astype(_I64)
    keep = rep.graph.stack_live[owner]
    return owner[keep], hit[keep]


def _callers(rep: Report, focal: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames of the callers' tree: from each outermost occurrence up to the root."""
    st = rep.graph.stacks
    owner, at = _outermost(rep, focal)
    start = st.frame_off[owner]
    counts = at - start + 1
    # Reversed: the focal frame first, then its caller, ... the root last.
    src = pc.ranges(at, counts)
    within = src - np.repeat(at, counts)
    src = np.repeat(at, counts) - within
    return st.frame_node[src].astype(_I64), pc.offsets(counts), rep.graph.stack_weights[owner]


def _callees(rep: Report, focal: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Frames of the callees' tree: each outermost occurrence's subtree, down to the leaf."""
    st = rep.graph.stacks
    owner, at = _outermost(rep, focal)
    counts = st.frame_off[owner + 1] - at
    src = pc.ranges(at, counts)
    return st.frame_node[src].astype(_I64), pc.offsets(counts), rep.graph.stack_weights[owner]


def _tree_doc(
    frame_node: np.ndarray, frame_off: np.ndarray, w: np.ndarray, total: int, budget: int,
    place: np.ndarray, name_id: Any,
) -> dict:  # fmt: skip
    """A flame-graph-shaped tree of given stacks (the flame graph JSON's "nodes"); place is
    each node's place in name order (siblings: by value, then name)."""
    t = build(frame_node, frame_off, w, total, len(place), 0.0, budget)
    order = preorder(t.parent, t.node, t.value, t.depth, place)
    return {
        "name": [-1] + [name_id(int(x)) for x in t.node[order][1:].tolist()],
        "depth": t.depth[order].tolist(),
        "value": t.value[order].tolist(),
        "self": t.self_[order].tolist(),
        "trimmed": {"nodes": t.hidden_nodes, "value": t.hidden_value, "max": t.hidden_max},
    }
