"""The call graph of a (refined) profile as pprof's report builds it: edges, trimming, order.

graph.newGraph counts, per sample, each edge parent -> child once (seenEdge), never a self
edge; an edge is inline when the callee is an inlined line of the caller's location, and
residual when nodes between the two were left out of a rebuilt graph (KeptNodes). Edges are
computed from the Stacks' frames in bulk. trimmed() is report.newTrimmedGraph: the node
fraction, the node count (with tags counted as nodes in the DOT), the edge fraction, and in
the DOT the entropy order and RemoveRedundantEdges.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..measure.units import MIN64, abs64, go_int64, wrap64
from ..model.graph import Graph
from ..model.stacks import Stacks
from .top import name_order

_I64 = np.int64
MAX_NODELETS = 4


@dataclass
class Edges:
    """Call edges of a graph (parallel arrays)."""

    src: np.ndarray
    dst: np.ndarray
    weight: np.ndarray  # int64
    residual: np.ndarray  # bool
    inline: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.src)

    def take(self, sel: np.ndarray) -> Edges:
        return Edges(self.src[sel], self.dst[sel], self.weight[sel], self.residual[sel],
                     self.inline[sel])  # fmt: skip


def edges(g: Graph, kept: np.ndarray | None = None) -> Edges:
    """The edges of the graph over every node (cached on g), or rebuilt over the kept nodes
    (bool per node)."""
    if kept is None and "edges" in g.memo:
        return g.memo["edges"]
    st = g.stacks
    owner, parent, child, residual, inline = _edge_frames(st, kept)
    live = g.stack_live[owner]
    if not live.all():  # a sample pprof skips (all its values 0) adds no edge
        owner, parent, child, residual, inline = (
            a[live] for a in (owner, parent, child, residual, inline)
        )
    weight = g.stack_weights[owner]
    n_nodes = len(st.names)
    if n_nodes * n_nodes <= BINCOUNT_PAIRS:
        out = _by_code(parent * n_nodes + child, weight, residual, inline, n_nodes)
    else:
        out = _by_sort(parent, child, weight, residual, inline)
    if kept is None:
        g.memo["edges"] = out
    return out


def _edge_frames(st: Stacks, kept: np.ndarray | None) -> tuple[np.ndarray, ...]:
    """(stack, parent, child, residual, inline) of every frame that adds to an edge: each
    (parent, child) pair's first frame in its stack, self edges left out. Over every node
    it depends on the frames only, so it is kept with them for every sample type and filter
    that selects samples."""
    if kept is None and "edge_frames" in st.memo:
        return st.memo["edge_frames"]
    node, owner = st.frame_node, st.frame_owner
    # Consecutive frames (of the kept nodes): one gather each, then slices.
    pos = np.arange(len(node)) if kept is None else np.flatnonzero(kept[node])
    node_k = node if kept is None else node[pos]
    owner_k = owner if kept is None else owner[pos]
    at = np.flatnonzero((owner_k[1:] == owner_k[:-1]) & (node_k[1:] != node_k[:-1]))
    idx = pos[at + 1]
    residual = np.zeros(len(idx), dtype=bool) if kept is None else pos[at] != idx - 1
    child = node_k[at + 1].astype(_I64)
    parent = node_k[at].astype(_I64)
    first = _first_pairs(st.groups(), idx, parent, len(st.names))
    owner_e = owner_k[at + 1]
    if not first.all():
        owner_e = owner_e[first]
        idx, child, parent, residual = idx[first], child[first], parent[first], residual[first]
    out = (owner_e, parent, child, residual, st.frame_inline[idx])
    if kept is None:
        st.memo["edge_frames"] = out
    return out


BINCOUNT_PAIRS = 1 << 22  # node pairs up to which edges are summed by counting, not sorting


def _by_code(
    code: np.ndarray, weight: np.ndarray, residual: np.ndarray, inline: np.ndarray, n: int
) -> Edges:
    """Edges summed per (parent, child) code with np.bincount: exact int64 sums (wrapping as
    Go's), counted in pieces of 21, 21 and 22 bits that float64 adds without rounding."""
    size = n * n
    bits = weight.view(np.uint64)
    total = np.zeros(size, dtype=np.uint64)
    for shift, width in ((0, 21), (21, 21), (42, 22)):
        piece = ((bits >> np.uint64(shift)) & np.uint64((1 << width) - 1)).astype(np.float64)
        sums = np.bincount(code, weights=piece, minlength=size).astype(np.uint64)
        total += sums << np.uint64(shift)
    seen = np.bincount(code, minlength=size)
    codes = np.flatnonzero(seen)
    plain = np.bincount(code[~inline], minlength=size)[codes]
    resid = np.bincount(code[residual], minlength=size)[codes]
    return Edges(
        src=codes // n,
        dst=codes % n,
        weight=total[codes].view(_I64),
        residual=resid > 0,
        inline=plain == 0,
    )


def _by_sort(
    parent: np.ndarray, child: np.ndarray, weight: np.ndarray, residual: np.ndarray,
    inline: np.ndarray,
) -> Edges:  # fmt: skip
    """Edges summed per (parent, child) after sorting by them (large node tables)."""
    if len(parent) and int(max(parent.max(), child.max())) < 1 << 16:
        by_child = np.argsort(child.astype(np.uint16), kind="stable")
        order = by_child[np.argsort(parent[by_child].astype(np.uint16), kind="stable")]
    else:
        order = np.lexsort((child, parent))
    ps, cs = parent[order], child[order]
    if not len(ps):
        empty = np.zeros(0, dtype=_I64)
        return Edges(empty, empty, empty, np.zeros(0, bool), np.zeros(0, bool))
    new = np.ones(len(ps), dtype=bool)
    new[1:] = (ps[1:] != ps[:-1]) | (cs[1:] != cs[:-1])
    starts = np.flatnonzero(new)
    return Edges(
        src=ps[starts],
        dst=cs[starts],
        weight=np.add.reduceat(weight[order], starts),
        residual=np.logical_or.reduceat(residual[order], starts),
        inline=np.logical_and.reduceat(inline[order], starts),
    )


def _first_pairs(
    frame_group: np.ndarray | None, idx: np.ndarray, parent: np.ndarray, n_nodes: int
) -> np.ndarray:
    """Which of these edge frames (idx, with their parents) is the first of its (parent,
    child) pair in its stack (seenEdge).

    A pair can recur only where its child does: among the frames of a (stack, node) group
    that recurs, the first frame per parent is the one that counts."""
    out = np.ones(len(idx), dtype=bool)
    if frame_group is None or not len(idx):
        return out
    group = frame_group[idx]
    again = group != idx
    if not again.any():
        return out
    recurring = np.zeros(len(frame_group), dtype=bool)
    recurring[group[again]] = True
    cand = np.flatnonzero(recurring[group])  # every edge frame of a recurring group
    key = group[cand].astype(_I64) * (n_nodes + 1) + parent[cand]
    order = np.argsort(key, kind="stable")  # stable: frame order within a (group, parent)
    ks = key[order]
    dup = np.zeros(len(order), dtype=bool)
    dup[1:] = ks[1:] == ks[:-1]
    out[cand[order[dup]]] = False
    return out


def entropy_scores(g: Graph, nodes: np.ndarray, e: Edges) -> np.ndarray:
    """graph.entropyScore per node: edge entropies in and out (self weight counted out), times
    cum, plus flat; nodes without in (out) edges get 1 for that side."""
    n_all, n = len(g.stacks.names), len(nodes)
    score = np.zeros(n)
    pos_of = np.full(n_all, n, dtype=_I64)  # edges to nodes outside the list: one spare slot
    pos_of[nodes] = np.arange(n)
    w = e.weight
    # Each edge counts at both of its ends (an edge to a node pprof left out of the node list,
    # one whose flat and cum are 0, still counts at the other end, as in Go).
    for ends, self_w in ((e.dst, None), (e.src, g.flat)):
        at = pos_of[ends]
        has = (np.bincount(at, minlength=n + 1) > 0)[:n]
        total = np.zeros(n + 1, dtype=_I64)
        np.add.at(total, at, np.where(w > 0, np.abs(w), 0))
        own = np.zeros(n, dtype=_I64) if self_w is None else self_w[nodes]
        total = total[:n] + own
        with np.errstate(divide="ignore", invalid="ignore"):
            ft = total.astype(np.float64)
            frac = np.abs(w).astype(np.float64) / np.append(ft, 1.0)[at]
            terms = -frac * np.log2(frac)
            part = np.zeros(n + 1)
            np.add.at(part, at, terms)
            part = part[:n]
            if self_w is not None:
                sf = np.abs(own).astype(np.float64) / ft
                part += np.where(own > 0, -sf * np.log2(sf), 0.0)
        part = np.where(total != 0, part, 0.0)
        score += np.where(has, part, 1.0)
    with np.errstate(invalid="ignore", over="ignore"):
        product = score * g.cum[nodes].astype(np.float64)
    ints = [go_int64(x) for x in product.tolist()]
    return np.array([wrap64(a + f) for a, f in zip(ints, g.flat[nodes].tolist(), strict=True)],
                    dtype=_I64)  # fmt: skip


def _abs_go(values: np.ndarray) -> np.ndarray:
    """abs64 on an array: the minimum int64 stays negative (np.abs does the same)."""
    return np.abs(values)


def sort_nodes(g: Graph, nodes: np.ndarray, e: Edges, *, visual: bool, cum: bool) -> np.ndarray:
    """Graph.SortNodes: EntropyOrder in the DOT, else CumNameOrder (cum) or FlatNameOrder."""
    if not visual:
        return nodes[name_order(g, nodes, cum=cum)]
    score = entropy_scores(g, nodes, e)
    name_rank = g.stacks.name_ranks()[1][nodes]
    keys = np.zeros(len(nodes), dtype=_I64)
    if len(np.unique(name_rank)) < len(nodes):
        texts = [g.stacks.keys[n] for n in nodes.tolist()]
        rank = {x: i for i, x in enumerate(sorted(set(texts)))}
        keys = np.array([rank[x] for x in texts], dtype=_I64)
    magnitude = _abs_go(score)
    order = np.lexsort((keys, ~_abs_go(g.flat[nodes]), name_rank, ~magnitude))
    return nodes[order]


@dataclass
class Trimmed:
    """newTrimmedGraph's result: nodes in report order, their edges, and the header counts."""

    nodes: np.ndarray
    edges: Edges
    orig_count: int
    dropped_nodes: int
    dropped_edges: int
    node_cutoff: int


def trimmed(
    g: Graph,
    *,
    node_count: int,
    node_fraction: float,
    edge_fraction: float,
    visual: bool = False,
    cum: bool = False,
    tag_counts: Callable[[np.ndarray, int], np.ndarray] | None = None,
) -> Trimmed:
    """report.newTrimmedGraph (not the call-tree form). tag_counts(nodes, cutoff) gives the
    visual mode's nodelet count per node (tags with a non-zero flat after trimming)."""
    nodes = g.present
    total_value = wrap64(int(g.flat[nodes].sum(dtype=_I64)))
    node_cutoff = abs64(go_int64(float(total_value) * node_fraction))
    edge_cutoff = abs64(go_int64(float(total_value) * edge_fraction))
    kept: np.ndarray | None = None
    dropped = 0
    if node_cutoff > 0:
        big = nodes[_abs_go(g.cum[nodes]) >= node_cutoff]
        if len(big) != len(nodes):
            dropped = len(nodes) - len(big)
            nodes, kept = big, _mask(len(g.stacks.names), big)
    orig_count = len(nodes)
    e = edges(g, kept)
    nodes = sort_nodes(g, nodes, e, visual=visual, cum=cum)
    if node_count > 0:
        e = e.take(~_light(e, nodes, edge_cutoff, len(g.stacks.names)))
        count = node_count
        if visual:
            tags = tag_counts(nodes[:node_count], node_cutoff) if tag_counts else None
            total = 0
            for i in range(min(node_count, len(nodes))):
                total += 1 + (min(int(tags[i]), MAX_NODELETS) if tags is not None else 0)
                if total >= node_count:
                    count = i + 1
                    break
        if count < len(nodes):
            nodes = nodes[:count]
            e = edges(g, _mask(len(g.stacks.names), nodes))
            nodes = sort_nodes(g, nodes, e, visual=visual, cum=cum)
    light = _light(e, nodes, edge_cutoff, len(g.stacks.names))
    dropped_edges = int(light.sum())
    e = e.take(~light)
    if visual:
        e = remove_redundant(g, nodes, e)
    return Trimmed(nodes, e, orig_count, dropped, dropped_edges, node_cutoff)


def _light(e: Edges, nodes: np.ndarray, cutoff: int, n: int) -> np.ndarray:
    """TrimLowFrequencyEdges' victims: edges under the cutoff into a listed node (pprof walks
    the listed nodes' in-edges only; an edge into a node it left out, one whose flat and cum
    are 0, stays)."""
    return (_abs_go(e.weight) < cutoff) & _mask(n, nodes)[e.dst]


def _mask(n: int, nodes: np.ndarray) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[nodes] = True
    return m


def edge_order(g: Graph, e: Edges, sel: np.ndarray | None = None) -> np.ndarray:
    """edgeList.Less: |weight| desc, then source name, then destination name (indices of e)."""
    idx = np.arange(len(e)) if sel is None else sel
    ranks = g.stacks.name_ranks()[1]
    return idx[np.lexsort((ranks[e.dst[idx]], ranks[e.src[idx]], ~_abs_go(e.weight[idx])))]


def remove_redundant(g: Graph, nodes: np.ndarray, e: Edges) -> Edges:
    """Graph.RemoveRedundantEdges: residual in-edges, lightest first, go when their
    destination stays reachable from their source another way (walking in-edges)."""
    if not e.residual.any():
        return e
    alive = np.ones(len(e), dtype=bool)
    ins: dict[int, list[int]] = {}
    for k, d in enumerate(e.dst.tolist()):
        ins.setdefault(d, []).append(k)
    src, dst = e.src.tolist(), e.dst.tolist()
    for n in nodes[::-1].tolist():
        mine = [k for k in ins.get(n, []) if alive[k]]
        if not mine:
            continue
        for k in edge_order(g, e, np.array(mine, dtype=_I64))[::-1].tolist():
            if not e.residual[k]:
                break
            if _reachable_without(k, src[k], dst[k], ins, src, alive):
                alive[k] = False
    return e.take(alive)


def _reachable_without(
    edge: int, target: int, start: int, ins: dict[int, list[int]], src: list[int], alive: Any
) -> bool:
    """isRedundantEdge: a breadth-first walk up the in-edges from the edge's destination."""
    seen = {start}
    queue = [start]
    while queue:
        n = queue.pop(0)
        for k in ins.get(n, []):
            if k == edge or not alive[k] or src[k] in seen:
                continue
            if src[k] == target:
                return True
            seen.add(src[k])
            queue.append(src[k])
    return False


__all__ = ["MIN64", "Edges", "Trimmed", "edge_order", "edges", "sort_nodes", "trimmed"]
