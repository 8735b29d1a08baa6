"""The call tree of every stack of a Stacks, built once and weighed per flame graph.

tree.build merges the stacks level by level for one set of weights, within the two limits.
Its grouping does not depend on the weights: this module does it once per Stacks, without
limits, and keeps it (Stacks.memo). Nodes that two or more stacks share are the branching
nodes; where a stack has a node of its own, the rest of it is a chain (on cpu-xl: 38 k branching
nodes and 57 k chains stand for 1.3 M tree nodes). A flame graph of any sample type, budget or
node fraction is then sums over these arrays and one selection: the same tree tree.build
builds (tests/test_analysis_trie.py compares the two), at a fraction of its cost.

The selection is flame.py's: nodes whose |value| is under the cutoff go with their subtree;
of the others the heaviest `budget` are kept, by the smallest |value| on their path, ties to
the shallower node, then to the node whose first stack comes first (a chain's: its stack).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...pprof import columns as pc
from ..measure.units import abs64, go_int64, wrap64
from .tree import Tree

_I64 = np.int64
_MAX = np.iinfo(_I64).max


@dataclass
class Trie:
    """Branching nodes by id (0 the root, then level by level), and the chains below them."""

    parent: np.ndarray  # -1 for the root
    node: np.ndarray  # graph node, -1 for the root
    depth: np.ndarray
    first: np.ndarray  # the first stack through each node
    levels: list[tuple[int, int]]  # id range of each depth from 1
    members: np.ndarray  # the stacks through nodes 1.., grouped by node
    member_start: np.ndarray  # where each node's stacks start in members
    end_node: np.ndarray  # branching node where a stack ends (its last frame)
    end_stack: np.ndarray  # the stacks that end at a branching node
    empty: np.ndarray  # stacks without frames (the root's self)
    chain_stack: np.ndarray  # the stack of each chain
    chain_parent: np.ndarray  # the branching node above it
    chain_depth: np.ndarray  # the depth of its first node
    chain_len: np.ndarray  # its nodes


def trie(frame_node: np.ndarray, frame_off: np.ndarray, n_nodes: int) -> Trie:
    """tree.build's grouping without limits, a stack followed while it shares its node."""
    length = np.diff(frame_off)
    active = np.flatnonzero(length > 0)
    par = np.zeros(len(active), dtype=_I64)
    parents, nodes, firsts = [np.full(1, -1, _I64)], [np.full(1, -1, _I64)], [np.zeros(1, _I64)]
    members, starts, end_node, end_stack, levels = [], [], [], [], []
    chain_stack, chain_parent, chain_depth = [], [], []
    next_id, d, n_members = 1, 0, 0
    while len(active):
        key = par * n_nodes + frame_node[frame_off[active] + d]
        order = np.argsort(key, kind="stable")  # each group keeps its stacks in order
        key, active, par = key[order], active[order], par[order]
        new = np.ones(len(key), dtype=bool)
        new[1:] = key[1:] != key[:-1]
        at = np.flatnonzero(new)
        inv = np.cumsum(new) - 1
        size = np.diff(np.append(at, len(key)))
        shared = size >= 2
        alone = ~shared[inv]  # a stack with a node of its own: a chain from here
        chain_stack.append(active[alone])
        chain_parent.append(par[alone])
        chain_depth.append(np.full(int(alone.sum()), d + 1, dtype=_I64))
        group = np.flatnonzero(shared)
        ids = np.full(len(at), -1, dtype=_I64)
        ids[group] = next_id + np.arange(len(group), dtype=_I64)
        levels.append((next_id, next_id + len(group)))
        uniq = key[at[group]]
        parents.append(uniq // n_nodes)
        nodes.append(uniq % n_nodes)
        firsts.append(active[at[group]])
        inside = ~alone
        members.append(active[inside])
        starts.append(n_members + pc.offsets(size[group])[:-1])
        n_members += len(members[-1])
        ends = inside & (length[active] == d + 1)
        end_node.append(ids[inv[ends]])
        end_stack.append(active[ends])
        go_on = inside & ~ends
        active, par = active[go_on], ids[inv[go_on]]
        next_id += len(group)
        d += 1
    parent = np.concatenate(parents)
    depth = np.zeros(len(parent), dtype=_I64)
    for k, (lo, hi) in enumerate(levels):
        depth[lo:hi] = k + 1
    cat = [
        np.concatenate(a) if a else np.zeros(0, _I64)
        for a in (members, starts, end_node, end_stack, chain_stack, chain_parent, chain_depth)
    ]
    return Trie(
        parent=parent,
        node=np.concatenate(nodes),
        depth=depth,
        first=np.concatenate(firsts),
        levels=levels,
        members=cat[0],
        member_start=cat[1],
        end_node=cat[2],
        end_stack=cat[3],
        empty=np.flatnonzero(length == 0),
        chain_stack=cat[4],
        chain_parent=cat[5],
        chain_depth=cat[6],
        chain_len=length[cat[4]] - cat[6] + 1,
    )


def weighed(
    tr: Trie, frame_node: np.ndarray, frame_off: np.ndarray, w: np.ndarray, total: int,
    node_fraction: float, budget: int,
) -> Tree:  # fmt: skip
    """The Tree tree.build makes of stacks weighted by w (track=False), from their trie."""
    n = len(tr.parent)
    value = np.empty(n, dtype=_I64)
    value[0] = wrap64(int(w.sum(dtype=_I64))) if len(w) else 0
    if n > 1:
        value[1:] = np.add.reduceat(w[tr.members], tr.member_start)  # wraps, as Go's sums
    self_ = np.zeros(n, dtype=_I64)
    np.add.at(self_, tr.end_node, w[tr.end_stack])
    self_[0] = wrap64(int(w[tr.empty].sum(dtype=_I64))) if len(w) else 0
    mag = np.abs(value)  # the minimum int64 stays negative, as abs64 leaves it
    cutoff = abs64(go_int64(float(total) * node_fraction))
    weight = np.empty(n, dtype=_I64)
    weight[0] = _MAX
    ok = np.ones(n, dtype=bool)  # within the cutoff, as every node above it
    for lo, hi in tr.levels:
        weight[lo:hi] = np.minimum(mag[lo:hi], weight[tr.parent[lo:hi]])
        if cutoff > 0:
            ok[lo:hi] = ok[tr.parent[lo:hi]] & (mag[lo:hi] >= cutoff)
    wc = w[tr.chain_stack]
    chain_weight = np.minimum(np.abs(wc), weight[tr.chain_parent])
    chain_ok = ok[tr.chain_parent]
    if cutoff > 0:
        chain_ok &= np.abs(wc) >= cutoff
    keep, take = _select(tr, weight, ok, chain_weight, chain_ok, budget)

    # Kept branching nodes keep their order; each chain's kept nodes follow, chain by chain.
    new_id = np.cumsum(keep) - 1
    n_keep = int(new_id[-1]) + 1
    c_first = pc.offsets(take)[:-1]
    c_parent = n_keep + np.arange(int(take.sum()), dtype=_I64) - 1
    some = take > 0
    c_parent[c_first[some]] = new_id[tr.chain_parent[some]]
    whole = take == tr.chain_len
    c_self = np.zeros(len(c_parent), dtype=_I64)
    c_self[(c_first + take - 1)[whole]] = wc[whole]
    kept_parent = tr.parent[keep]
    kept_parent[1:] = new_id[kept_parent[1:]]
    starts = frame_off[tr.chain_stack] + tr.chain_depth - 1
    dropped = np.flatnonzero(~keep)
    dropped = dropped[keep[tr.parent[dropped]]]  # the top node of each subtree left out
    cut = ~whole & (some | keep[tr.chain_parent])
    hidden = np.concatenate((value[dropped], wc[cut]))
    return Tree(
        parent=np.concatenate((kept_parent, c_parent)),
        node=np.concatenate((tr.node[keep], frame_node[pc.ranges(starts, take)].astype(_I64))),
        value=np.concatenate((value[keep], np.repeat(wc, take))),
        self_=np.concatenate((self_[keep], c_self)),
        depth=np.concatenate((tr.depth[keep], pc.ranges(tr.chain_depth, take))),
        hidden_nodes=len(hidden),
        hidden_value=wrap64(int(hidden.sum(dtype=_I64))),
        hidden_max=int(np.abs(hidden).max()) if len(hidden) else 0,
    )


def _select(
    tr: Trie, weight: np.ndarray, ok: np.ndarray, chain_weight: np.ndarray,
    chain_ok: np.ndarray, budget: int,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(kept branching nodes, nodes kept of each chain, from its top): the heaviest `budget`
    of the nodes within the cutoff (the root counts as one, and always wins)."""
    lengths = np.where(chain_ok, tr.chain_len, 0)
    n_ok = int(ok.sum())
    if budget <= 0 or n_ok + int(lengths.sum()) <= budget:
        return ok, lengths
    vals = np.concatenate((weight[ok], chain_weight[chain_ok]))
    counts = np.concatenate((np.ones(n_ok, dtype=_I64), lengths[chain_ok]))
    order = np.argsort(~vals, kind="stable")  # ~v sorts int64 descending without overflow
    x = int(vals[order][np.searchsorted(np.cumsum(counts[order]), budget)])
    keep = ok & (weight > x)
    take = np.where(chain_ok & (chain_weight > x), tr.chain_len, 0)
    slots = budget - int(keep.sum()) - int(take.sum())
    # The nodes tied at x: the shallower first, then by first stack. Count them per depth (a
    # chain has one at each depth it spans), keep every depth that fits whole, then at the
    # depth that does not, the nodes of the smallest first stacks.
    tied = np.flatnonzero(ok & (weight == x))
    ties = np.flatnonzero(chain_ok & (chain_weight == x))
    top, bottom = tr.chain_depth[ties], tr.chain_depth[ties] + tr.chain_len[ties]
    span = max(
        int(tr.depth[tied].max()) + 1 if len(tied) else 0, int(bottom.max()) if len(ties) else 0
    )
    per_depth = np.bincount(tr.depth[tied], minlength=span + 1)
    spans = np.zeros(span + 1, dtype=_I64)
    np.add.at(spans, top, 1)
    np.add.at(spans, bottom, -1)
    per_depth += np.cumsum(spans)
    whole = pc.offsets(per_depth)  # tied nodes above each depth
    cut = int(np.searchsorted(whole, slots, side="right")) - 1  # the depth that does not fit
    keep[tied[tr.depth[tied] < cut]] = True
    take[ties] = np.clip(cut - top, 0, tr.chain_len[ties])
    left = slots - int(whole[cut])
    if left > 0:
        at_cut = tied[tr.depth[tied] == cut]
        spanning = ties[(top <= cut) & (cut < bottom)]
        firsts = np.concatenate((tr.first[at_cut], tr.chain_stack[spanning]))
        chosen = (
            np.argpartition(firsts, left - 1)[:left]
            if left < len(firsts)
            else np.arange(len(firsts))
        )
        keep[at_cut[chosen[chosen < len(at_cut)]]] = True
        take[spanning[chosen[chosen >= len(at_cut)] - len(at_cut)]] += 1
    return keep, take
