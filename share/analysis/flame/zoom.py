"""The flame graph under one frame path, with a node budget of its own (?zoom=[...]).

The whole profile's flame graph keeps its heaviest nodes; zooming into a frame whose subtree
was cut would show only what survived. This view takes the stacks that start with the path
(frame names from the root), builds the tree of what lies under its last frame with a fresh
budget, and puts the path's frames above it with their real values: the same JSON as the flame
graph (README), so the page can draw it as it is. A diff's zoom (diffview.zoomed_flamegraph)
selects the stacks the same way (Subtree) and weighs them by its two sides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...pprof import columns as pc
from ..measure.units import wrap64
from ..model.graph import Graph, view_header
from ..model.stacks import Stacks
from .tree import Tree, build
from .treeorder import preorder

_I64 = np.int64


@dataclass
class Subtree:
    """The stacks under a frame path, and the frames drawn above the subtree: the root and
    the path's frames but its last (which is the subtree's top)."""

    path: list[str]
    through: list[np.ndarray]  # per frame above: the stacks that pass it (bool per stack)
    ends: list[np.ndarray]  # per frame above: the stacks that end on it
    stacks: np.ndarray  # the stacks under the whole path (ids)
    frames: np.ndarray  # their frames from the path's last frame down (graph node ids)
    offsets: np.ndarray  # where each of those stacks starts in frames
    top_nodes: list[int]  # a graph node for each path frame above the last

    @property
    def found(self) -> bool:
        return len(self.stacks) > 0

    def above(self, w: np.ndarray) -> tuple[list[int], list[int]]:
        """(value, self) of each frame above the subtree under per-stack weights w."""
        values = [wrap64(int(w[m].sum(dtype=_I64))) for m in self.through]
        selfs = [wrap64(int(w[m].sum(dtype=_I64))) for m in self.ends]
        return values, selfs

    def depths(self, t: Tree, order: np.ndarray) -> list[int]:
        """Every node's depth: the frames above, then the subtree's nodes in order below."""
        chain = len(self.top_nodes)
        return list(range(chain + 1)) + (t.depth[order] + chain).tolist()


def subtree(st: Stacks, path: list[str]) -> Subtree:
    """The stacks of st that start with path (frame names from the root)."""
    names, off = st.names, st.frame_off
    length = np.diff(off)
    by_name: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        by_name.setdefault(name, []).append(i)
    ok = length >= 1
    through, ends = [np.ones(len(length), dtype=bool)], [length == 0]  # the root first
    for j, name in enumerate(path):
        wanted = np.zeros(len(names) + 1, dtype=bool)
        wanted[by_name.get(name, [])] = True
        at = np.where(length > j, off[:-1] + j, len(st.frame_node))
        node = np.append(st.frame_node, len(names))[at]
        ok = ok & (length > j) & wanted[node]
        through.append(ok)
        ends.append(ok & (length == j + 1))
    stacks_in = np.flatnonzero(ok)
    # The subtree's stacks: from the path's last frame down to the leaf.
    start = off[:-1][stacks_in] + len(path) - 1
    counts = off[1:][stacks_in] - start
    frames = st.frame_node[pc.ranges(start, counts)].astype(_I64)
    top_nodes = [by_name[name][0] if name in by_name else 0 for name in path[:-1]]
    k = len(path)  # the path's last frame is the subtree's own top, not above it
    return Subtree(path, through[:k], ends[:k], stacks_in, frames, pc.offsets(counts), top_nodes)


def subtree_tree(
    st: Stacks, sub: Subtree, w: np.ndarray, total: int, node_fraction: float, budget: int
) -> tuple[Tree, np.ndarray]:
    """The tree under the path's last frame, weighed by w (per stack of st, tracked), and its
    preorder without its root (which stands for the last frame)."""
    fresh = budget + 1 if budget > 0 else 0  # the budget is for what is under the last frame
    t = build(sub.frames, sub.offsets, w[sub.stacks], total, len(st.names), node_fraction, fresh,
              True)  # fmt: skip
    return t, preorder(t.parent, t.node, t.value, t.depth, st.name_ranks()[0])[1:]


def chain_names(st: Stacks, sub: Subtree, sub_nodes: np.ndarray) -> dict[str, Any]:
    """names, files and each node's name index (the root, the path, then sub_nodes)."""
    used, inverse = np.unique(np.concatenate((np.array(sub.top_nodes, dtype=_I64), sub_nodes)),
                              return_inverse=True)  # fmt: skip
    return {
        "names": [""] + [st.names[n] for n in used.tolist()],
        "files": [""] + [st.files[n] for n in used.tolist()],
        "name": np.concatenate(([0], inverse + 1)).tolist(),
    }


def zoomed(g: Graph, path: list[str], node_fraction: float, budget: int) -> dict[str, Any]:
    """The flame graph document (flame.flamegraph's keys) of the subtree under path."""
    st = g.stacks
    w = g.stack_weights
    sub = subtree(st, path)
    top_value, top_self = sub.above(w)
    t, order = subtree_tree(st, sub, w, g.total, node_fraction, budget)
    named = chain_names(st, sub, t.node[order])
    return {
        **view_header(g),
        "names": named["names"],
        "files": named["files"],
        "nodes": {
            "name": named["name"],
            "depth": sub.depths(t, order),
            "value": top_value + t.value[order].tolist(),
            "self": top_self + t.self_[order].tolist(),
        },
        "trimmed": {
            "nodes": t.hidden_nodes,
            "value": t.hidden_value,
            "max": t.hidden_max,
            "node_fraction": node_fraction,
            "budget": budget,
        },
        "no_samples": not bool(g.weights.any()),
        "zoom": {"path": path, "found": sub.found},
    }
