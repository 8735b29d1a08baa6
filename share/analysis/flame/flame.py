"""The flame graph of one sample type: stacks merged into a call tree, as JSON.

The tree is built level by level from the root: at each depth the frames of the stacks still
followed are grouped by (parent, node) with np.unique. Once every followed stack has a tree node
of its own, the rest of each stack is a chain and is laid out in one step.

Two limits keep the JSON small enough for a browser, each cutting off nodes with their subtree:
node_fraction drops nodes whose |value| is under that fraction of pprof's total, and the node
budget keeps the heaviest nodes only, ties going to the shallower node (the tops of many towers
say more than the tips of a few), then to the node whose first stack comes first. A node's
weight for the budget is the smallest |value| on its path from the root: that is its |value|
unless values of both signs meet, and it makes the heaviest nodes a connected tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..model.graph import view_header
from . import tree as trees
from . import trie
from .tree import Tree
from .treeorder import preorder

if TYPE_CHECKING:
    from ..model.graph import Graph
    from ..model.stacks import Stacks

_I64 = np.int64
# The page's default: the heaviest 50 000 nodes. On the large CPU profiles of bench/ that is
# 0.8-1.8 MB of JSON (110-160 KiB gzipped) against 9-21 MB for every node; the page parses and
# draws either in well under a second (bench/paint.py), so the bytes on the wire decide, and
# twice the budget nearly doubles them while the zoomed-out picture stays the same.
FLAME_NODE_BUDGET = 50_000


def flamegraph(
    g: Graph, node_fraction: float = 0.0, budget: int = FLAME_NODE_BUDGET
) -> dict[str, Any]:
    """The call tree of one sample type as the flame graph JSON (see README "JSON API").

    Both limits apply; 0 turns one off (node_fraction=0, budget=0 keeps every node).
    """
    t, order, names, files, name_index = layout(
        g.stacks, g.stack_weights, g.total, node_fraction, budget
    )
    return {
        **view_header(g),
        "names": names,
        "files": files,
        "nodes": {
            "name": name_index.tolist(),
            "depth": t.depth[order].tolist(),
            "value": t.value[order].tolist(),
            "self": t.self_[order].tolist(),
        },
        "trimmed": {
            "nodes": t.hidden_nodes,
            "value": t.hidden_value,
            "max": t.hidden_max,
            "node_fraction": node_fraction,
            "budget": budget,
        },
        "no_samples": not bool(g.weights.any()),
    }


def layout(
    st: Stacks, w: np.ndarray, total: int, node_fraction: float, budget: int, track: bool = False
) -> tuple[Tree, np.ndarray, list[str], list[str], np.ndarray]:
    """The call tree of stacks weighted by w, in preorder: (tree, preorder of the tree's node
    ids, names, files, name index of each node in preorder). track: say where each stack ends
    in the tree (Tree.stack_node), so other weights can be summed over the same tree."""
    if track:
        t = trees.build(
            st.frame_node, st.frame_off, w, total, len(st.names), node_fraction, budget, True
        )
    else:  # the stacks' trie, built once for every sample type and budget (trie.py)
        found = st.memo.get("trie")
        if found is None:
            found = st.memo["trie"] = trie.trie(st.frame_node, st.frame_off, len(st.names))
        t = trie.weighed(found, st.frame_node, st.frame_off, w, total, node_fraction, budget)
    order = preorder(t.parent, t.node, t.value, t.depth, st.name_ranks()[0])
    # np.unique(t.node[1:], return_inverse=True), by counting (node ids are dense)
    present = np.bincount(t.node[1:], minlength=len(st.names)) > 0
    used = np.flatnonzero(present)
    name_index = np.zeros(len(t.node), dtype=_I64)
    name_index[1:] = np.cumsum(present)[t.node[1:]]
    names = [""] + [st.names[n] for n in used.tolist()]
    files = [""] + [st.files[n] for n in used.tolist()]
    return t, order, names, files, name_index[order]


def sums(t: Tree, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(cumulative, self, hidden) sums of other per-stack weights w ([n_stacks, k]) over a
    tracked tree: what its value, self_ and hidden_value are for its own weights."""
    assert t.stack_node is not None and t.stack_whole is not None
    n, k = len(t.parent), w.shape[1]
    cum = np.zeros((n, k), dtype=_I64)
    np.add.at(cum, t.stack_node, w)  # wraps, as Go's int64 sums
    own = np.zeros((n, k), dtype=_I64)
    np.add.at(own, t.stack_node[t.stack_whole], w[t.stack_whole])
    hidden = w[~t.stack_whole].sum(axis=0, dtype=_I64)
    by_depth = np.argsort(t.depth, kind="stable")
    bounds = np.searchsorted(t.depth[by_depth], np.arange(int(t.depth.max()) + 2))
    for d in range(len(bounds) - 2, 0, -1):  # children into parents, deepest first
        ids = by_depth[bounds[d] : bounds[d + 1]]
        np.add.at(cum, t.parent[ids], cum[ids])
    return cum, own, hidden


def by_name(doc: dict[str, Any]) -> dict[str, Any]:
    """A flame graph JSON with each node's (name, file) in place of its index into the names:
    two layouts of one tree compared, whose profiles number their nodes differently (a merge
    and a sum of stack summaries: share.analysis.combine.summed)."""
    doc = dict(doc)
    names, files = doc.pop("names"), doc.pop("files")
    nodes = dict(doc["nodes"])
    nodes["name"] = [(names[i], files[i]) for i in nodes["name"]]
    doc["nodes"] = nodes
    return doc
