"""The flame graph of one sample type: stacks merged into a call tree, as JSON.

The tree is built level by level from the root: at each depth the frames of the stacks still
followed are grouped by (parent, node) with np.unique. Once every followed stack has a tree node
of its own, the rest of each stack is a chain and is laid out in one step. Nodes whose |value|
falls under node_fraction of pprof's total are cut off with their subtree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import pbcolumns as pc
from .report import abs64, go_int64, wrap64

if TYPE_CHECKING:
    from .analysis import Graph

_I64 = np.int64
FLAME_NODE_FRACTION = 0.001  # the browser's default: hide nodes under 0.1% of the total


def flamegraph(g: Graph, node_fraction: float = FLAME_NODE_FRACTION) -> dict[str, Any]:
    """The call tree of one sample type as the flame graph JSON (see README "JSON API")."""
    st = g.stacks
    w = g.stack_weights
    tree = _tree(st.frame_node, st.frame_off, w, g.total, len(st.names), node_fraction)
    parent, node, value, self_, depth, trimmed = tree
    order = _preorder(parent, node, value, depth, st.names)
    used, name_of = np.unique(node[1:], return_inverse=True)
    name_index = np.zeros(len(node), dtype=_I64)
    name_index[1:] = name_of + 1
    t = g.tables
    return {
        "sample_type": {"type": g.sample_type[0], "unit": g.sample_type[1]},
        "sample_index": g.index,
        "sample_types": [{"type": a, "unit": b} for a, b in t.sample_types],
        "default_sample_index": t.sample_index(None),
        "total": g.total,
        "names": [""] + [st.names[n] for n in used.tolist()],
        "files": [""] + [st.files[n] for n in used.tolist()],
        "nodes": {
            "name": name_index[order].tolist(),
            "depth": depth[order].tolist(),
            "value": value[order].tolist(),
            "self": self_[order].tolist(),
        },
        "trimmed": {"nodes": trimmed[0], "value": trimmed[1], "node_fraction": node_fraction},
        "unit": g.sample_type[1],
        "no_samples": not bool(g.weights.any()),
    }


def _tree(
    frame_node: np.ndarray,
    frame_off: np.ndarray,
    w: np.ndarray,
    total: int,
    n_nodes: int,
    node_fraction: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, tuple[int, int]]:
    """Merge stacks into a tree level by level: (parent, node, value, self, depth, trimmed).

    Tree node 0 is the root (node -1). A node whose |value| is under the cutoff is dropped with
    everything beneath it; trimmed counts those dropped subtrees and their summed value. Once
    every stack still being followed has a tree node of its own, the rest of each stack is a
    chain and is laid out in one step.
    """
    cutoff = abs64(go_int64(float(total) * node_fraction))
    length = np.diff(frame_off)
    root_value = wrap64(int(w.sum(dtype=_I64))) if len(w) else 0
    root_self = wrap64(int(w[length == 0].sum(dtype=_I64))) if len(w) else 0
    parents = [np.array([-1], dtype=_I64)]
    nodes = [np.array([-1], dtype=_I64)]
    values = [np.array([root_value], dtype=_I64)]
    selfs = [np.array([root_self], dtype=_I64)]
    depths = [np.array([0], dtype=_I64)]
    next_id = 1
    dropped_nodes = dropped_value = 0
    active = np.flatnonzero(length > 0)
    par = np.zeros(len(active), dtype=_I64)
    d = 0
    while len(active):
        key = par * n_nodes + frame_node[frame_off[active] + d]
        uniq, inv = np.unique(key, return_inverse=True)
        wa = w[active]
        val = np.zeros(len(uniq), dtype=_I64)
        np.add.at(val, inv, wa)
        keep = np.abs(val) >= cutoff if cutoff > 0 else np.ones(len(uniq), dtype=bool)
        ends = length[active] == d + 1
        own = np.zeros(len(uniq), dtype=_I64)
        np.add.at(own, inv[ends], wa[ends])
        dropped_nodes += int((~keep).sum())
        dropped_value = wrap64(dropped_value + int(val[~keep].sum(dtype=_I64)))
        ids = np.full(len(uniq), -1, dtype=_I64)
        ids[keep] = next_id + np.arange(int(keep.sum()))
        next_id += int(keep.sum())
        parents.append(uniq[keep] // n_nodes)
        nodes.append(uniq[keep] % n_nodes)
        values.append(val[keep])
        selfs.append(own[keep])
        depths.append(np.full(int(keep.sum()), d + 1, dtype=_I64))
        go_on = keep[inv] & ~ends
        singletons = len(uniq) == len(active)
        active, par = active[go_on], ids[inv[go_on]]
        d += 1
        if singletons and len(active):
            # Every stack left has its own parent: the rest of each is a chain of its own.
            n_left = length[active] - d
            total_left = int(n_left.sum())
            chain_ids = next_id + np.arange(total_left, dtype=_I64)
            first = pc.offsets(n_left)[:-1]
            chain_parent = chain_ids - 1
            chain_parent[first] = par
            chain_self = np.zeros(total_left, dtype=_I64)
            chain_self[first + n_left - 1] = w[active]
            parents.append(chain_parent)
            nodes.append(frame_node[pc.ranges(frame_off[active] + d, n_left)].astype(_I64))
            values.append(np.repeat(w[active], n_left))
            selfs.append(chain_self)
            depths.append(pc.ranges(np.full(len(active), d + 1, dtype=_I64), n_left))
            break
    return (
        np.concatenate(parents),
        np.concatenate(nodes),
        np.concatenate(values),
        np.concatenate(selfs),
        np.concatenate(depths),
        (dropped_nodes, dropped_value),
    )


def _preorder(
    parent: np.ndarray, node: np.ndarray, value: np.ndarray, depth: np.ndarray, names: list[str]
) -> np.ndarray:
    """Tree node ids in preorder, children by value (descending), then name."""
    n = len(parent)
    if n == 1:
        return np.zeros(1, dtype=_I64)
    rank = np.zeros(len(names) + 1, dtype=_I64)  # rank[0]: the root
    rank[1 + np.array(sorted(range(len(names)), key=names.__getitem__), dtype=_I64)] = np.arange(
        1, len(names) + 1
    )
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    levels = [by_depth[bounds[k] : bounds[k + 1]] for k in range(1, len(bounds) - 1)]
    size = np.ones(n, dtype=_I64)
    for ids in reversed(levels):
        np.add.at(size, parent[ids], size[ids])
    sib = np.lexsort((rank[node + 1], ~value, parent))[1:]  # the root sorts first (parent -1)
    sz = size[sib]
    before = np.cumsum(sz) - sz  # sizes of the siblings sorted before, plus earlier groups
    group = np.ones(len(sib), dtype=bool)
    group[1:] = parent[sib][1:] != parent[sib][:-1]
    start = np.maximum.accumulate(np.where(group, np.arange(len(sib)), 0))
    step = np.empty(n, dtype=_I64)
    step[sib] = 1 + before - before[start]
    pos = np.zeros(n, dtype=_I64)
    for ids in levels:
        pos[ids] = pos[parent[ids]] + step[ids]
    order = np.empty(n, dtype=_I64)
    order[pos] = np.arange(n)
    return order
