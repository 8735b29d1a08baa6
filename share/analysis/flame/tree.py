"""The call tree of a flame graph: stacks merged level by level, within the two limits.

flame.py lays the Tree out as JSON; trie.py builds the same tree from a Stacks' trie; zoom.py
and reports/peek.py build trees of their own (a subtree, a sandwich) with build().
See flame.py for the limits (node fraction, node budget) and how ties are broken.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...pprof import columns as pc
from ..measure.units import abs64, go_int64, wrap64
from .treeorder import smallest

_I64 = np.int64


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


def build(
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
