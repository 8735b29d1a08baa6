"""The flame graph under one frame path, with a node budget of its own (?zoom=[...]).

The whole profile's flame graph keeps its heaviest nodes; zooming into a frame whose subtree
was cut would show only what survived. This view takes the stacks that start with the path
(frame names from the root), builds the tree of what lies under its last frame with a fresh
budget, and puts the path's frames above it with their real values: the same JSON as the flame
graph (README), so the page can draw it as it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..pprof import columns as pc
from .flame import _tree
from .graph import Graph, view_header
from .treeorder import preorder
from .units import wrap64

_I64 = np.int64


def zoomed(g: Graph, path: list[str], node_fraction: float, budget: int) -> dict[str, Any]:
    """The flame graph document (flame.flamegraph's keys) of the subtree under path."""
    st = g.stacks
    names = st.names
    off = st.frame_off
    length = np.diff(off)
    w = g.stack_weights
    k = len(path)
    by_name: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        by_name.setdefault(name, []).append(i)
    ok = length >= 1
    chain_value, chain_self = [], []
    for j, name in enumerate(path):
        wanted = np.zeros(len(names) + 1, dtype=bool)
        wanted[by_name.get(name, [])] = True
        at = np.where(length > j, off[:-1] + j, len(st.frame_node))
        node = np.append(st.frame_node, len(names))[at]
        ok &= (length > j) & wanted[node]
        chain_value.append(wrap64(int(w[ok].sum(dtype=_I64))))
        chain_self.append(wrap64(int(w[ok & (length == j + 1)].sum(dtype=_I64))))
    found = bool(ok.any())
    stacks_in = np.flatnonzero(ok)
    # The subtree's stacks: from the path's last frame down to the leaf.
    start = off[:-1][stacks_in] + k - 1
    counts = off[1:][stacks_in] - start
    frames = st.frame_node[pc.ranges(start, counts)].astype(_I64)
    sub_off = pc.offsets(counts)
    # The subtree's own root stands for the path's last frame: the budget is for what is under.
    fresh = budget + 1 if budget > 0 else 0
    t = _tree(frames, sub_off, w[stacks_in], g.total, len(names), node_fraction, fresh)
    order = preorder(t.parent, t.node, t.value, t.depth, st.name_ranks()[0])[1:]  # no root
    sub_nodes = t.node[order]
    # The path's frames above the subtree: one node each (the subtree's top is the last).
    top_nodes = [by_name[name][0] if name in by_name else 0 for name in path[:-1]]
    used, inverse = np.unique(np.concatenate((np.array(top_nodes, dtype=_I64), sub_nodes)),
                              return_inverse=True)  # fmt: skip
    name_index = np.concatenate(([0], inverse + 1))
    root_value = wrap64(int(w.sum(dtype=_I64))) if len(w) else 0
    root_self = wrap64(int(w[length == 0].sum(dtype=_I64))) if len(w) else 0
    chain = len(top_nodes)
    return {
        **view_header(g),
        "names": [""] + [names[n] for n in used.tolist()],
        "files": [""] + [st.files[n] for n in used.tolist()],
        "nodes": {
            "name": name_index.tolist(),
            "depth": list(range(chain + 1)) + (t.depth[order] + chain).tolist(),
            "value": [root_value, *chain_value[:-1]] + t.value[order].tolist(),
            "self": [root_self, *chain_self[:-1]] + t.self_[order].tolist(),
        },
        "trimmed": {
            "nodes": t.hidden_nodes,
            "value": t.hidden_value,
            "max": t.hidden_max,
            "node_fraction": node_fraction,
            "budget": budget,
        },
        "no_samples": not bool(g.weights.any()),
        "zoom": {"path": path, "found": found},
    }
