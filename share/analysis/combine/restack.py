"""A merge's Stacks from its inputs' Stacks: what a diff of two warm profiles reuses.

Expanding every sample's frames is most of the work on a large profile (stacks.py), and a
merge's samples are its inputs' samples: each merged sample takes the frames of the stored
sample it stands for (Origin, below), renumbered into the merge's nodes (numbered as stacks.py
numbers them for the merged Tables). Samples whose location keys are equal across inputs (the
same stack before and after) share one stack. This gives what stacks(merged) would, up to the
order of the stacks; None when it cannot (inputs pruned by other drop_frames, a frame whose
node the merge names otherwise): the caller then expands the merge itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...pprof import columns as pc
from ..model import keys
from ..model.stacks import Stacks, first_frames, node_table, stacks
from ..model.tables import Tables

_I64 = np.int64


@dataclass
class Origin:
    """The stored profile's sample each sample of a Prof stands for (merges keep the first of
    each key): sample i is tables[source[i]]'s sample index[i]."""

    tables: list[Tables]
    source: np.ndarray
    index: np.ndarray

    def take(self, rows: np.ndarray) -> Origin:
        return Origin(self.tables, self.source[rows], self.index[rows])


def restack(t: Tables, origin: Origin, sample_hash: np.ndarray) -> Stacks | None:
    """The Stacks of merged Tables t from the Stacks of the Tables its samples come from."""
    if any((o.drop_frames, o.keep_frames) != (t.drop_frames, t.keep_frames) for o in origin.tables):
        return None
    sides = [stacks(o) for o in origin.tables]
    names, files, node_keys, _, _, infos = node_table(t)
    ids = {k: i for i, k in enumerate(node_keys)}
    remaps = [np.array([ids.get(k, -1) for k in side.keys], dtype=_I64) for side in sides]
    bases = pc.offsets([len(side.frame_off) - 1 for side in sides])
    side_stack = np.zeros(len(origin.source), dtype=_I64)  # of each merged sample
    for s, side in enumerate(sides):
        mine = origin.source == s
        side_stack[mine] = side.stack_of[origin.index[mine]] + bases[s]
    # Samples with equal location keys (checked: equal merged locations) share a stack.
    group, first = keys.first_occurrence((t.stack_loc, t.stack_off), hashes=sample_hash)
    # The groups' first samples stand for distinct location sequences, hence distinct stacks.
    reps = side_stack[first]
    by_stack = np.argsort(reps)
    chosen = reps[by_stack]
    rank = np.empty(len(reps), dtype=_I64)
    rank[by_stack] = np.arange(len(reps))
    stack_of = rank[group]
    parts, picks = [], []
    for s, side in enumerate(sides):
        sel = chosen[(chosen >= bases[s]) & (chosen < bases[s + 1])] - bases[s]
        parts.append(_frames(side, sel, remaps[s]))
        picks.append(sel)
    frame_node = np.concatenate([p[0] for p in parts]).astype(np.int32)
    if len(frame_node) and int(frame_node.min()) < 0:
        return None  # a frame whose node the merge does not have under that name
    lengths = np.concatenate([p[2] for p in parts])
    n = len(lengths)
    frame_owner = np.repeat(np.arange(n, dtype=np.int32), lengths)
    first_owner, first_starts, first_nodes = _first_frames(sides, parts, picks, remaps, len(names))
    return Stacks(
        frame_node=frame_node,
        frame_inline=np.concatenate([p[1] for p in parts]),
        frame_off=pc.offsets(lengths),
        frame_owner=frame_owner,
        first_owner=first_owner,
        first_starts=first_starts,
        first_nodes=first_nodes,
        stack_of=stack_of,
        names=names,
        files=files,
        keys=node_keys,
        any_inline=any(side.any_inline for side in sides),
        infos=infos,
    )


def _frames(
    side: Stacks, sel: np.ndarray, remap: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(nodes, inline marks, lengths) of the selected stacks' frames, renumbered."""
    lengths = np.diff(side.frame_off)[sel]
    every = len(sel) == len(side.frame_off) - 1
    at = slice(None) if every else pc.ranges(side.frame_off[:-1][sel], lengths)
    return remap[side.frame_node[at]], side.frame_inline[at], lengths


def _first_frames(
    sides: list[Stacks],
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
    chosen: list[np.ndarray],
    remaps: list[np.ndarray],
    n_nodes: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first frames per (node, stack) of every chosen stack, grouped by the merge's nodes.

    A side whose stacks are all chosen gives its own (already grouped by its nodes; its
    stacks keep their order, so only the owners move); of the others, only the chosen
    stacks' frames are sorted. The runs of all sides are then put in node order.
    """
    owners, run_node, run_len = [], [], []
    base = 0
    for side, (nodes, _, lengths), sel, remap in zip(sides, parts, chosen, remaps, strict=True):
        if len(sel) == len(side.frame_off) - 1:
            owner, starts, first_nodes = side.first_owner, side.first_starts, side.first_nodes
            first_nodes = remap[first_nodes]
        else:
            local = np.repeat(np.arange(len(sel), dtype=np.int32), lengths)
            owner, starts, first_nodes = first_frames(nodes, local, n_nodes)[:3]
        owners.append(owner.astype(_I64) + base)
        run_node.append(first_nodes)
        run_len.append(np.diff(np.append(starts, len(owner))))
        base += len(sel)
    owner = np.concatenate(owners)
    nodes = np.concatenate(run_node)
    lengths = np.concatenate(run_len)
    order = np.argsort(nodes, kind="stable")
    gathered = owner[pc.ranges(pc.offsets(lengths)[:-1][order], lengths[order])]
    nodes, lengths = nodes[order], lengths[order]
    new = np.ones(len(nodes), dtype=bool)
    new[1:] = nodes[1:] != nodes[:-1]
    group_len = np.add.reduceat(lengths, np.flatnonzero(new)) if len(nodes) else lengths
    return gathered.astype(np.int32), pc.offsets(group_len)[:-1], nodes[new]
