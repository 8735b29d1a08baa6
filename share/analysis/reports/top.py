"""Graph -> Top: the rows of `go tool pprof -top` (report.TextItems), with inline marks."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ...pprof import columns as pc
from ..measure.text import Header, Rows
from ..measure.units import abs64, go_int64, wrap64
from ..model.graph import Graph

_I64 = np.int64
EDGE_FRACTION = 0.001  # pprof's default; it decides which edges (and so inline marks) survive


@dataclass
class Top:
    """The rows of `go tool pprof -top` and what its header needs."""

    header: Header
    total: int
    rows: Rows
    orig_count: int
    dropped_nodes: int
    node_cutoff_label: int  # the value named in "Dropped N nodes (cum <= X)"
    nodes: np.ndarray  # the graph node of each row


def top(
    g: Graph,
    *,
    node_count: int = 0,
    node_fraction: float = 0.0,
    edge_fraction: float = EDGE_FRACTION,
    cum: bool = False,
) -> Top:
    """report.TextItems: nodes sorted by |flat|, name, |cum| (-cum: by |cum|, name, |flat|),
    as -top with these options."""
    st = g.stacks
    nodes = g.present
    flat_total = wrap64(int(g.flat[nodes].sum(dtype=_I64)))
    dropped = 0
    node_cutoff = abs64(go_int64(float(flat_total) * node_fraction))
    if node_cutoff > 0:
        kept = nodes[np.abs(g.cum[nodes]) >= node_cutoff]  # np.abs leaves MIN negative: abs64
        dropped = len(nodes) - len(kept)
        nodes = kept
    orig_count = len(nodes)
    nodes = nodes[name_order(g, nodes, cum=cum)]
    trimmed = dropped > 0
    if 0 < node_count < len(nodes):
        nodes = nodes[:node_count]
        trimmed = True
    edge_cutoff = abs64(go_int64(float(flat_total) * edge_fraction))
    # Without trimming the graph is built over every node, zero-valued ones included: their
    # edges still reach the nodes shown. A trimmed graph is rebuilt from the kept nodes only.
    shown = nodes.tolist()
    marks = _inline_marks(g, shown if trimmed else None, edge_cutoff) if st.any_inline else {}
    header = replace(g.tables.header, sample_type=g.sample_type[0], sample_unit=g.sample_type[1])
    return Top(
        header=header,
        total=g.total,
        rows=Rows(
            names=[st.names[n] for n in shown],
            inline=[marks.get(n, "") for n in shown] if marks else [""] * len(shown),
            files=[st.files[n] for n in shown],
            flat=g.flat[nodes],
            cum=g.cum[nodes],
        ),
        orig_count=orig_count,
        dropped_nodes=dropped,
        node_cutoff_label=abs64(go_int64(float(g.total) * node_fraction)),
        nodes=nodes,
    )


def _ranks(texts: list[str]) -> np.ndarray:
    """Rank of each string in sorted order; equal strings share a rank."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    ranked = [texts[i] for i in order]
    new = np.ones(len(order), dtype=_I64)
    new[1:] = [a != b for a, b in zip(ranked, ranked[1:], strict=False)]
    ranks = np.empty(len(order), dtype=_I64)
    ranks[order] = np.cumsum(new) - 1
    return ranks


def name_order(g: Graph, nodes: np.ndarray, *, cum: bool = False) -> np.ndarray:
    """graph.FlatNameOrder: |flat| desc, name, |cum| desc, then fmt.Sprint(NodeInfo);
    CumNameOrder (cum): |cum| desc, name, |flat| desc, then the same."""
    name_rank = g.stacks.name_ranks()[1][nodes]
    keys = [np.zeros(len(nodes), dtype=_I64)]
    if len(pc.unique(name_rank)) < len(nodes):  # same printed name, different nodes: Sprint
        keys = [_ranks([g.stacks.keys[n] for n in nodes.tolist()])]
    # ~x orders int64 descending without overflow; np.abs keeps MIN negative, as abs64 does.
    first, third = np.abs(g.flat[nodes]), np.abs(g.cum[nodes])
    if cum:
        first, third = third, first
    return np.lexsort((*keys, ~third, name_rank, ~first))


def _inline_marks(g: Graph, shown: list[int] | None, edge_cutoff: int) -> dict[int, str]:
    """ "(inline)" / "(partial-inline)" per node, from the graph's incoming call edges.

    An edge is inline when every sample that first reaches the callee from that caller does so
    through an inlined frame; edges lighter than the edge cutoff are trimmed first, as pprof does.
    """
    st = g.stacks
    # Only nodes entered through an inlined frame somewhere can get a mark.
    candidates = np.flatnonzero(
        np.bincount(st.frame_node[st.frame_inline], minlength=len(st.names))
    )
    if shown is not None:
        candidates = np.intersect1d(candidates, shown)
    if not len(candidates):
        return {}
    is_candidate = np.zeros(len(st.names), dtype=bool)
    is_candidate[candidates] = True
    idx = np.flatnonzero(is_candidate[st.frame_node])
    if shown is None:
        # The graph over all nodes: a frame's caller is the frame before it.
        prev = idx - 1
    else:
        # A graph rebuilt from the shown nodes: the caller is the previous shown frame.
        kept = np.zeros(len(st.names), dtype=bool)
        kept[shown] = True
        positions = np.where(kept[st.frame_node], np.arange(len(st.frame_node)), -1)
        last_kept = np.maximum.accumulate(positions)
        prev = np.where(idx > 0, last_kept[np.maximum(idx - 1, 0)], -1)
    own = st.frame_owner[idx]
    nodes = st.frame_node[idx].astype(_I64)
    has_parent = (prev >= 0) & (st.frame_owner[np.maximum(prev, 0)] == own)
    parent = st.frame_node[np.maximum(prev, 0)].astype(_I64)
    sel = np.flatnonzero(has_parent & (parent != nodes) & g.stack_live[own])
    n_nodes = len(st.names)
    # Each edge counts once per stack, at its first frame. A frame whose node occurs once in
    # its stack is surely its edge's first; the repeated ones (recursion) are sorted out.
    pair = own.astype(_I64) * n_nodes + nodes  # ascending by stack already: a cheap stable sort
    by_pair = np.argsort(pair, kind="stable")
    ps = pair[by_pair]
    twin = np.zeros(len(ps), dtype=bool)
    twin[1:] = ps[1:] == ps[:-1]
    twin[:-1] |= twin[1:]
    repeated = np.empty(len(ps), dtype=bool)
    repeated[by_pair] = twin
    repeated = repeated[sel]
    if repeated.any():
        r = sel[repeated]
        pair = parent[r] * n_nodes + nodes[r]
        order = np.lexsort((pair, own[r]))  # by stack, then edge; stable: frame order
        ps, os_ = pair[order], own[r][order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = (ps[1:] != ps[:-1]) | (os_[1:] != os_[:-1])
        sel = np.concatenate((sel[~repeated], r[order[first]]))
    # Group the first frames by edge (two stable radix passes when node ids fit 16 bits).
    p_sel, n_sel = parent[sel], nodes[sel]
    if n_nodes <= 1 << 16:
        by_node = np.argsort(n_sel.astype(np.uint16), kind="stable")
        order = by_node[np.argsort(p_sel[by_node].astype(np.uint16), kind="stable")]
    else:
        order = np.lexsort((n_sel, p_sel))
    ps, ns = p_sel[order], n_sel[order]
    if not len(ps):
        return {}
    new_edge = np.ones(len(ps), dtype=bool)
    new_edge[1:] = (ps[1:] != ps[:-1]) | (ns[1:] != ns[:-1])
    starts = np.flatnonzero(new_edge)
    weight = np.add.reduceat(g.stack_weights[own[sel]][order], starts)
    inline = np.logical_and.reduceat(st.frame_inline[idx[sel]][order], starts)
    kept = np.abs(weight) >= edge_cutoff  # np.abs leaves MIN negative: trimmed, as in Go
    dest = ns[starts]
    inline_in = np.zeros(n_nodes, dtype=bool)
    plain_in = np.zeros(n_nodes, dtype=bool)
    inline_in[dest[kept & inline]] = True
    plain_in[dest[kept & ~inline]] = True
    return {
        n: "(partial-inline)" if plain_in[n] else "(inline)"
        for n in np.flatnonzero(inline_in).tolist()
    }


def columns(t: Top) -> dict[str, list[Any]]:
    """The rows by column, as the top JSON serves them (percentages of the total, as pprof's:
    |value / total|, 0 when the total is 0; sum% wraps as pprof's running sum)."""
    rows = t.rows
    return {
        "name": rows.names,
        "file": rows.files,
        "inline": [i.strip("()") for i in rows.inline],
        "flat": rows.flat.tolist(),
        "flat_pct": _pcts(rows.flat, t.total),
        "sum_pct": _pcts(np.cumsum(rows.flat, dtype=np.int64), t.total),
        "cum": rows.cum.tolist(),
        "cum_pct": _pcts(rows.cum, t.total),
    }


def _pcts(values: np.ndarray, total: int) -> list[float]:
    if not total:
        return [0.0] * len(values)
    return (np.abs(values.astype(np.float64) / float(total)) * 100).tolist()
