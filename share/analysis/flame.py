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

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..pprof import columns as pc
from .graph import view_header
from .treeorder import preorder, smallest
from .units import abs64, go_int64, wrap64

if TYPE_CHECKING:
    from .graph import Graph
    from .stacks import Stacks

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
        t = _tree(st.frame_node, st.frame_off, w, total, len(st.names), node_fraction, budget, True)
    else:  # the stacks' trie, built once for every sample type and budget (trie.py)
        from . import trie  # trie.py builds on this module's Tree

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


@dataclass
class Tree:
    """Tree nodes by id (0 is the root; a parent's id is below its children's)."""

    parent: np.ndarray  # -1 for the root
    node: np.ndarray  # graph node (function) of each tree node, -1 for the root
    value: np.ndarray  # cumulative value
    self_: np.ndarray  # value of the stacks ending here
    depth: np.ndarray
    hidden_nodes: int  # subtrees cut off (counted by their top node)
    hidden_value: int  # their summed value
    hidden_max: int  # the largest |value| among them
    # With track: each stack's deepest node (where it ends, or the node above where it was
    # cut), and whether it ends there whole (its weight that node's self, not hidden).
    stack_node: np.ndarray | None = None
    stack_whole: np.ndarray | None = None


class _Heaviest:
    """Weights of the nodes built so far: enough of them to bound the budget's cut from below.

    The bound (the size-th largest weight) is refreshed only when the weights kept have doubled,
    so the partition costs little per level; a stale bound is lower, so it prunes less but
    never wrongly.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.parts: list[np.ndarray] = []
        self.count = 0
        self.bound: int | None = None

    @property
    def mags(self) -> np.ndarray:
        """Every weight kept (all that can still be among the heaviest, maybe a few more)."""
        if len(self.parts) != 1:
            self.parts = [np.concatenate(self.parts) if self.parts else np.zeros(0, dtype=_I64)]
        return self.parts[0]

    def admits(self, mags: np.ndarray) -> np.ndarray:
        """Nodes that may still be among the heaviest: a tie loses to the nodes built before."""
        if self.bound is None:
            return np.ones(len(mags), dtype=bool)
        return mags > self.bound

    def add(self, mags: np.ndarray) -> None:
        self.parts.append(mags)
        self.count += len(mags)
        if self.count >= self.size and (self.bound is None or self.count > 2 * self.size):
            both = self.mags
            if len(both) > self.size:
                both = np.partition(both, len(both) - self.size)[len(both) - self.size :]
            self.parts, self.count = [both], len(both)
            self.bound = int(both.min())

    def chain_take(self, mags: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """How many nodes of each chain (all of magnitude mags[c]) can be among the heaviest.

        The cut x is the size-th largest magnitude of the nodes so far and the chains' nodes.
        Chains heavier than x are kept whole and lighter ones dropped; chains at exactly x share
        the slots left, shallower nodes first, then earlier stacks: all get D nodes, the first
        few D + 1.
        """
        vals = np.concatenate((self.mags, mags))
        counts = np.concatenate((np.ones(len(self.mags), dtype=_I64), lengths))
        if int(counts.sum()) <= self.size:
            return lengths.copy()
        order = np.argsort(~vals, kind="stable")  # ~v sorts int64 descending without overflow
        x = int(vals[order][np.searchsorted(np.cumsum(counts[order]), self.size)])
        slots = self.size - int(counts[vals > x].sum()) - int((self.mags == x).sum())
        take = np.where(mags > x, lengths, 0)
        tied = np.flatnonzero(mags == x)
        if slots > 0 and len(tied):
            n = lengths[tied]
            s = np.sort(n)
            prefix = pc.offsets(s)
            d = np.arange(int(s[-1]) + 1)
            at = np.searchsorted(s, d)
            fill = prefix[at] + d * (len(s) - at)  # sum(min(n, d)) for each d
            depth = int(np.searchsorted(fill, slots, side="right") - 1)
            part = np.minimum(n, depth)
            extra = np.flatnonzero(n > depth)[: slots - int(part.sum())]
            part[extra] += 1
            take[tied] = part
        return take


def _tree(
    frame_node: np.ndarray,
    frame_off: np.ndarray,
    w: np.ndarray,
    total: int,
    n_nodes: int,
    node_fraction: float,
    budget: int,
    track: bool = False,
) -> Tree:
    """Merge stacks into a tree level by level, within the two limits.

    Candidates are built while they may still be among the heaviest `budget` nodes (at most
    about `budget` plus one level of them); the final choice is made once all are known.
    Each stack left unfollowed records where it was cut (its parent) and its weight.
    """
    cutoff = abs64(go_int64(float(total) * node_fraction))
    heaviest = _Heaviest(budget) if budget > 0 else None
    length = np.diff(frame_off)
    root_value = wrap64(int(w.sum(dtype=_I64))) if len(w) else 0
    root_self = wrap64(int(w[length == 0].sum(dtype=_I64))) if len(w) else 0
    parents = [np.array([-1], dtype=_I64)]
    nodes = [np.array([-1], dtype=_I64)]
    values = [np.array([root_value], dtype=_I64)]
    selfs = [np.array([root_self], dtype=_I64)]
    depths = [np.array([0], dtype=_I64)]
    firsts = [np.array([0], dtype=_I64)]  # the first stack through each node: ties' last word
    weights = [np.array([np.iinfo(_I64).max], dtype=_I64)]  # for the budget; the root first
    cut_parent = [np.zeros(0, dtype=_I64)]  # subtrees never built: the node above them...
    cut_value = [np.zeros(0, dtype=_I64)]  # ...and their value
    next_id = 1
    stack_node = np.zeros(len(length), dtype=_I64) if track else None
    stack_whole = length == 0
    active = np.flatnonzero(length > 0)
    par = np.zeros(len(active), dtype=_I64)
    par_weight = np.full(len(active), np.iinfo(_I64).max, dtype=_I64)
    d = 0
    while len(active):
        # Group the stacks by (parent, node). They come grouped by parent from the level
        # above, so the stable sort has little to do, and each group keeps its stacks in
        # ascending order: its first element is its first stack.
        key = par * n_nodes + frame_node[frame_off[active] + d]
        order = np.argsort(key, kind="stable")
        key, active, par_weight = key[order], active[order], par_weight[order]
        new = np.ones(len(key), dtype=bool)
        new[1:] = key[1:] != key[:-1]
        at = np.flatnonzero(new)
        inv = np.cumsum(new) - 1
        uniq = key[at]
        wa = w[active]
        val = np.add.reduceat(wa, at)  # wraps around as Go's int64 sums do
        mag = np.abs(val)  # np.abs leaves the minimum int64 negative, as abs64 does
        weight = np.minimum(mag, par_weight[at])
        keep = mag >= cutoff if cutoff > 0 else np.ones(len(uniq), dtype=bool)
        if heaviest is not None:
            keep &= heaviest.admits(weight)
            heaviest.add(weight[keep])
        ends = length[active] == d + 1
        own = np.add.reduceat(np.where(ends, wa, 0), at)
        cut_parent.append(uniq[~keep] // n_nodes)
        cut_value.append(val[~keep])
        n_keep = int(keep.sum())
        ids = np.full(len(uniq), -1, dtype=_I64)
        ids[keep] = next_id + np.arange(n_keep)
        next_id += n_keep
        parents.append(uniq[keep] // n_nodes)
        nodes.append(uniq[keep] % n_nodes)
        values.append(val[keep])
        selfs.append(own[keep])
        depths.append(np.full(n_keep, d + 1, dtype=_I64))
        firsts.append(active[at[keep]])
        weights.append(weight[keep])
        go_on = keep[inv] & ~ends
        if stack_node is not None:  # deepest so far: this node, or the parent if cut off
            stack_node[active] = np.where(keep[inv], ids[inv], key // n_nodes)
            stack_whole[active] = keep[inv] & ends
        singletons = len(uniq) == len(active)
        active, par, par_weight = active[go_on], ids[inv[go_on]], weight[inv[go_on]]
        d += 1
        if singletons and len(active):
            # Every stack left has its own parent: the rest of each is a chain of its own, of
            # the stack's weight throughout (already within the cutoff, as its first node).
            # Chains tied at the budget's cut share it in stack order.
            order = np.argsort(active)
            active, par, par_weight = active[order], par[order], par_weight[order]
            wa = w[active]
            n_left = length[active] - d
            chain_weight = np.minimum(np.abs(wa), par_weight)
            take = heaviest.chain_take(chain_weight, n_left) if heaviest is not None else n_left
            first = pc.offsets(take)[:-1]
            chain_ids = next_id + np.arange(int(take.sum()), dtype=_I64)
            chain_parent = chain_ids - 1
            some = take > 0
            chain_parent[first[some]] = par[some]
            chain_self = np.zeros(len(chain_ids), dtype=_I64)
            whole = take == n_left
            chain_self[(first + take - 1)[whole]] = wa[whole]
            parents.append(chain_parent)
            nodes.append(frame_node[pc.ranges(frame_off[active] + d, take)].astype(_I64))
            values.append(np.repeat(wa, take))
            selfs.append(chain_self)
            depths.append(pc.ranges(np.full(len(active), d + 1, dtype=_I64), take))
            firsts.append(np.repeat(active, take))
            weights.append(np.repeat(chain_weight, take))
            short = ~whole
            last = np.maximum(first + take - 1, 0)
            cut_parent.append(np.where(some, chain_ids[last] if len(chain_ids) else 0, par)[short])
            cut_value.append(wa[short])
            if stack_node is not None:
                stack_node[active] = np.where(some, chain_ids[last] if len(chain_ids) else 0, par)
                stack_whole[active] = whole
            break
    tree = [np.concatenate(a) for a in (parents, nodes, values, selfs, depths, firsts, weights)]
    t, keep, new_id = _choose(*tree, np.concatenate(cut_parent), np.concatenate(cut_value), budget)
    if stack_node is not None:
        parent = tree[0]
        lost = ~keep[stack_node]
        stack_whole &= ~lost
        while lost.any():  # a stack ending below the budget's cut: hidden under a kept node
            stack_node[lost] = parent[stack_node[lost]]
            lost = ~keep[stack_node]
        t.stack_node, t.stack_whole = new_id[stack_node], stack_whole
    return t


def _choose(
    parent: np.ndarray,
    node: np.ndarray,
    value: np.ndarray,
    self_: np.ndarray,
    depth: np.ndarray,
    first: np.ndarray,
    weight: np.ndarray,
    cut_parent: np.ndarray,
    cut_value: np.ndarray,
    budget: int,
) -> tuple[Tree, np.ndarray, np.ndarray]:
    """Keep the heaviest `budget` candidates and those above them; count what is hidden.
    Also returns which candidates were kept and each one's id among them."""
    n = len(parent)
    keep = np.ones(n, dtype=bool)
    if 0 < budget < n:
        # The heaviest, then the shallowest, then the first stack's: a parent outranks its
        # children (no lighter, shallower), so the chosen nodes are a tree. Only the nodes
        # tied with the budget-th weight need the later keys; the others are in or out.
        cut = np.partition(weight, n - budget)[n - budget]
        keep = weight > cut
        tied = np.flatnonzero(weight == cut)
        keep[tied[smallest(depth[tied], first[tied], budget - int(keep.sum()))]] = True
    dropped = np.flatnonzero(~keep)
    dropped = dropped[keep[parent[dropped]]]  # the top node of each dropped subtree
    hidden = np.concatenate((value[dropped], cut_value[keep[cut_parent]]))
    new_id = np.cumsum(keep) - 1
    kept_parent = parent[keep]
    kept_parent[1:] = new_id[kept_parent[1:]]
    return (
        Tree(
            parent=kept_parent,
            node=node[keep],
            value=value[keep],
            self_=self_[keep],
            depth=depth[keep],
            hidden_nodes=len(hidden),
            hidden_value=wrap64(int(hidden.sum(dtype=_I64))),
            hidden_max=int(np.abs(hidden).max()) if len(hidden) else 0,
        ),
        keep,
        new_id,
    )
