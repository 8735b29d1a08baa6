"""The orders the flame graph's trees need, by packed keys where they fit: which candidates
win the budget's ties, and the preorder the JSON lists nodes in.

np.lexsort on two or three keys is several stable sorts with gathers between them; packing the
keys into one int64 (where their ranges allow) leaves one sort, or a partition where only the
set matters. Both give exactly lexsort's result: the packed keys are distinct.
"""

from __future__ import annotations

import numpy as np

from ...pprof import columns as pc

_I64 = np.int64


def smallest(major: np.ndarray, minor: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k smallest (major, minor) pairs (non-negative, distinct pairs), in no
    particular order: one partition of a packed key where it fits in an int64, not a sort."""
    if k >= len(major):
        return np.arange(len(major))
    if k <= 0:
        return np.zeros(0, dtype=_I64)
    span = int(minor.max()) + 1
    if (int(major.max()) + 1) * span >= 1 << 62:
        return np.lexsort((minor, major))[:k]
    return np.argpartition(major * span + minor, k - 1)[:k]


def sibling_order(parent: np.ndarray, value: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """np.lexsort((rank, ~value, parent)): by parent, value descending, then rank (rank is
    distinct among siblings, so the order is total). One sort of a packed key where the three
    fit in an int64 (value by its dense rank among the distinct values), else the lexsort."""
    distinct = pc.unique(value)
    n_par = int(parent.max()) + 2  # parent -1 (the root) becomes 0
    n_val, n_rank = len(distinct), int(rank.max()) + 1
    if n_par * n_val * n_rank >= 1 << 62:
        return np.lexsort((rank, ~value, parent))
    by_value = n_val - 1 - np.searchsorted(distinct, value)  # 0: the largest value
    key = ((parent + 1) * n_val + by_value) * n_rank + rank
    return np.argsort(key, kind="stable")  # distinct keys: stable only because it is faster


def preorder(
    parent: np.ndarray, node: np.ndarray, value: np.ndarray, depth: np.ndarray, place: np.ndarray
) -> np.ndarray:
    """Tree node ids in preorder, children by value (descending), then name (place: each graph
    node's place in name order)."""
    n = len(parent)
    if n == 1:
        return np.zeros(1, dtype=_I64)
    rank = np.zeros(len(place) + 1, dtype=_I64)  # rank[0]: the root
    rank[1:] = place + 1
    by_depth = np.argsort(depth, kind="stable")
    bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2))
    levels = [by_depth[bounds[k] : bounds[k + 1]] for k in range(1, len(bounds) - 1)]
    size = np.ones(n, dtype=_I64)
    for ids in reversed(levels):
        np.add.at(size, parent[ids], size[ids])
    sib = sibling_order(parent, value, rank[node + 1])[1:]  # the root sorts first (parent -1)
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
