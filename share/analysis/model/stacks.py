"""Tables -> Stacks: every sample's frames as node ids, root first, after drop_frames pruning.

Nodes are graph.NodeInfo at pprof's default "functions" granularity; every line of a location is
a frame (inlined calls included). Samples that share a stack are expanded once. The radix sort by
node id done here is what lets graph.py count a function recursing in one stack once in its cum.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...pprof import columns as pc
from ...pprof import scan
from ..measure.text import go_base
from . import goregexp
from .names import simplify
from .tables import Tables

_U64 = np.uint64
_I64 = np.int64


@dataclass
class Stacks:
    """Every sample's frames as node ids, root first, after pruning.

    Samples are in reverse order (stack sample i is the profile's sample n - 1 - i): one reversal
    of the whole location array turns every stack root first at once.
    """

    frame_node: np.ndarray  # int32 node id per frame
    frame_inline: np.ndarray  # bool: the frame is a call inlined into the frame before it
    frame_off: np.ndarray  # stack sample i's frames: frame_off[i]:frame_off[i + 1]
    frame_owner: np.ndarray  # int32 stack of each frame
    first_owner: np.ndarray  # stack of each node's first frame per stack, grouped by node
    first_starts: np.ndarray  # where each node's group starts in first_owner
    first_nodes: np.ndarray  # the node of each group
    stack_of: np.ndarray  # the stack of each profile sample
    names: list[str]  # printable name per node
    files: list[str]
    keys: list[str]  # fmt.Sprint(NodeInfo), pprof's last tie-break when sorting
    any_inline: bool
    frame_first: np.ndarray | None = field(default=None, repr=False)  # first of its node in
    # its stack (the frame that counts in cum, and whose call edge counts)
    infos: list[tuple[str, int, str, int, int, str]] | None = field(default=None, repr=False)
    # graph.NodeInfo per node: (name, address, file, start line, line, binary)
    frame_group: np.ndarray | None = field(default=None, repr=False)  # per frame: the first
    # frame of its node in its stack (itself when it is that first one)
    memo: dict[str, Any] = field(default_factory=dict, repr=False)  # later stages' results
    _name_ranks: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

    def firsts(self) -> np.ndarray:
        """frame_first, computed the first time it is asked for (peek needs it)."""
        if self.frame_first is None:
            self.frame_first = first_frames(self.frame_node, self.frame_owner, len(self.names))[3]
        return self.frame_first

    def groups(self) -> np.ndarray:
        """frame_group, computed the first time it is asked for (only call edges need it)."""
        if self.frame_group is None:
            self.frame_group = first_frames(
                self.frame_node, self.frame_owner, len(self.names), group=True
            )[4]
        return self.frame_group

    def name_ranks(self) -> tuple[np.ndarray, np.ndarray]:
        """(place, rank) per node by name, from one sort shared by the top table and the flame
        graph: place is distinct (equal names by node id), rank is equal for equal names."""
        if self._name_ranks is None:
            names = self.names
            order = sorted(range(len(names)), key=names.__getitem__)
            place = np.empty(len(names), dtype=_I64)
            place[order] = np.arange(len(names))
            ranked = [names[i] for i in order]
            new = np.ones(len(order), dtype=_I64)
            new[1:] = [a != b for a, b in zip(ranked, ranked[1:], strict=False)]
            rank = np.empty(len(names), dtype=_I64)
            rank[order] = np.cumsum(new) - 1
            self._name_ranks = (place, rank)
        return self._name_ranks


def stacks(t: Tables) -> Stacks:
    """The pruned, expanded stacks of a profile (cached on t)."""
    if t._stacks is None:
        t._stacks = _build_stacks(t)
    return t._stacks


@dataclass
class Located:
    """The samples' stacks as locations, leaf first, after drop_frames pruning (equal stacks
    stored once): what the filters of refine.py start from."""

    stack_of: np.ndarray  # the stack of each profile sample
    stack_loc: np.ndarray
    stack_off: np.ndarray
    line_first: np.ndarray  # first line of each location that pruning kept


def located(t: Tables) -> Located:
    """The pruned stacks of a profile as locations (cached on t)."""
    found = t.cache.get("located")
    if found is None:
        stack_of, stack_loc, stack_off = unique_stacks(t.stack_loc, t.stack_off)
        line_first = t.line_off[:-1].copy()  # first kept line of each location
        drop, keep = _prune_patterns(t.drop_frames, t.keep_frames)
        if drop is not None:
            stack_loc, stack_off, line_first = _prune(
                t, drop, keep, line_first, stack_loc, stack_off
            )
        found = t.cache["located"] = Located(stack_of, stack_loc, stack_off, line_first)
    return found


def first_frames(
    frame_node: np.ndarray, frame_owner: np.ndarray, n_nodes: int, *, group: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """(first_owner, first_starts, first_nodes, frame_first, frame_group): each node's first
    frame per stack, and (with group) for every frame the first frame of its node in its stack.

    A radix sort by node id keeps each stack's frames in order: a node repeated in one stack
    (recursion) lands next to itself. Its first frame is the one that counts in cum. scan.c
    does the same in one pass and a counting sort (over ten times faster on the 1.5 M frames
    of cpu-xl); this is the path without the library.
    """
    fast = scan.first_frames(frame_node, frame_owner, n_nodes, group)
    if fast is not None:
        frame_first, frame_group, bounds, first_owner = fast
        present = np.flatnonzero(bounds[1:] > bounds[:-1])
        return first_owner, bounds[present], present.astype(_I64), frame_first, frame_group
    key = frame_node.astype(np.uint16) if n_nodes <= 1 << 16 else frame_node
    order = np.argsort(key, kind="stable")
    owner_sorted = frame_owner[order]
    # The sorted node ids are runs of each node: no gather needed to know where runs start.
    counts = np.bincount(frame_node, minlength=n_nodes) if len(frame_node) else np.zeros(0, _I64)
    present = np.flatnonzero(counts)
    new_run = np.ones(len(order), dtype=bool)
    new_run[1:] = owner_sorted[1:] != owner_sorted[:-1]
    node_starts = np.cumsum(counts)[present] - counts[present]
    new_run[node_starts] = True
    first = order[new_run]  # first frames, grouped by node
    starts = np.cumsum(new_run)[node_starts] - 1 if len(first) else node_starts
    frame_first = np.zeros(len(frame_node), dtype=bool)
    frame_first[first] = True
    frame_group = None
    if group:
        frame_group = np.empty(
            len(frame_node), dtype=np.int32 if len(frame_node) < 1 << 31 else _I64
        )
        frame_group[order] = first[np.cumsum(new_run) - 1] if len(first) else first
    return frame_owner[first], starts, present.astype(_I64), frame_first, frame_group


def node_table(
    t: Tables,
) -> tuple[list[str], list[str], list[str], np.ndarray, np.ndarray, list[Any]]:
    """(names, files, keys) of the nodes, the node of each line and of each mapping's frames
    without lines (the last entry: no mapping), and each node's graph.NodeInfo.

    Nodes are graph.NodeInfo at "functions" granularity (address, line and file cleared): a
    function's name, or for nameless frames the binary (and the function's start line).
    """
    index: dict[Any, int] = {}
    func_node = np.array(
        [index.setdefault(nm, len(index)) if nm else -1 for nm in t.func_name], dtype=_I64
    )
    names: list[str] = list(index)
    files = [""] * len(names)
    for f in reversed(range(len(t.func_name))):  # the file of the first function of a node
        if func_node[f] >= 0:
            files[func_node[f]] = t.func_names[2][f]
    keys: list[str] = [f"{{{name}  0  0 0 }}" for name in names]
    infos = [(name, 0, "", 0, 0, "") for name in names]

    def node(objfile: str, start_line: int) -> int:
        key = ("", objfile, start_line)
        found = index.get(key)
        if found is None:
            found = index[key] = len(names)
            names.append("[" + go_base(objfile) + "]" if objfile else "<unknown>")
            files.append(objfile)
            keys.append(f"{{  0  {start_line} 0 {objfile}}}")
            infos.append(("", 0, "", start_line, 0, objfile))
        return found

    map_file = t.map_file + [""]  # index -1: no mapping
    line_node = func_node[t.line_func] if len(t.line_func) else np.zeros(0, _I64)
    for i in np.flatnonzero(line_node < 0).tolist():  # functions without a name: rare
        loc = int(np.searchsorted(t.line_off, i, side="right") - 1)
        line_node[i] = node(map_file[t.loc_mapping[loc]], t.func_start[int(t.line_func[i])])
    map_node = np.array([node(f, 0) for f in map_file], dtype=_I64)
    return names, files, keys, line_node, map_node, infos


def _build_stacks(t: Tables) -> Stacks:
    n_loc = len(t.loc_mapping)
    names, files, keys, line_node, map_node, infos = node_table(t)

    # Samples that share a stack (labelled profiles have many) are expanded once, pruned
    # (drop_frames/keep_frames: lines cut off locations, then stacks).
    pruned = located(t)
    stack_of, stack_loc, stack_off = pruned.stack_of, pruned.stack_loc, pruned.stack_off
    line_first = pruned.line_first

    # Frames of each location, caller first: its lines from the last to the first kept one.
    kept_count = t.line_off[1:] - line_first
    loc_frames = np.maximum(kept_count, 1)
    lf_off = pc.offsets(loc_frames)
    total = int(lf_off[-1])
    lf_node = np.empty(total, dtype=np.int32)
    has_lines = kept_count > 0
    pos = pc.ranges(lf_off[:-1][has_lines], kept_count[has_lines])
    # Line k-th from the end of location j lands at lf_off[j] + k.
    src = pc.ranges(t.line_off[1:][has_lines] - 1, kept_count[has_lines])
    src = 2 * np.repeat(t.line_off[1:][has_lines] - 1, kept_count[has_lines]) - src
    lf_node[pos] = line_node[src]
    no_lines = np.flatnonzero(~has_lines)
    lf_node[lf_off[no_lines]] = map_node[t.loc_mapping[no_lines]]

    # Expand stacks root first. Reversing the whole entry array reverses every stack and also
    # the order of the samples: the Stacks keep that order (sample i is the profile's n-1-i).
    n = len(stack_off) - 1
    loc_rf = stack_loc[::-1]
    if total == n_loc:  # one frame per location: no inlining anywhere
        frame_node = lf_node[loc_rf]
        frame_inline = np.zeros(len(loc_rf), dtype=bool)
        per_sample = np.diff(stack_off)[::-1]
    else:
        # Most locations have one frame: each entry's outermost frame lands after the entries
        # before it and their inlined frames; only the few inlined frames are placed one by one
        # (no pass over every entry's frame count: they are nearly all 1).
        inner = loc_frames - 1  # the inlined frames of each location
        many = np.flatnonzero((inner > 0)[loc_rf])
        extra = inner[loc_rf[many]]
        inlined = pc.ranges(many + pc.offsets(extra)[:-1] + 1, extra)  # their frames' places
        outer = np.ones(len(loc_rf) + int(extra.sum()), dtype=bool)
        outer[inlined] = False
        frame_node = np.empty(len(outer), dtype=np.int32)
        frame_node[outer] = lf_node[lf_off[:-1]][loc_rf]
        frame_node[inlined] = lf_node[pc.ranges(lf_off[:-1][loc_rf[many]] + 1, extra)]
        frame_inline = ~outer
        entry_off = pc.offsets(np.diff(stack_off)[::-1])
        per_sample = np.diff(entry_off)
        np.add.at(per_sample, np.searchsorted(entry_off, many, side="right") - 1, extra)
    frame_off = pc.offsets(per_sample)
    frame_owner = np.repeat(np.arange(n, dtype=np.int32), per_sample)
    first_owner, first_starts, first_nodes, frame_first, frame_group = first_frames(
        frame_node, frame_owner, len(names)
    )
    return Stacks(
        frame_node=frame_node,
        frame_inline=frame_inline,
        frame_off=frame_off,
        frame_owner=frame_owner,
        first_owner=first_owner,
        first_starts=first_starts,
        first_nodes=first_nodes,
        frame_first=frame_first,
        infos=infos,
        frame_group=frame_group,
        stack_of=(n - 1 - stack_of).astype(_I64),
        names=names,
        files=files,
        keys=keys,
        any_inline=bool(frame_inline.any()),
    )


def unique_stacks(
    loc: np.ndarray, off: np.ndarray, *, always: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(stack of each sample, stacks' locations, offsets): equal stacks stored once.

    A signature of each stack's length and end frames tells cheaply whether samples share
    stacks; if so a polynomial hash groups them, and an element-wise comparison makes the
    grouping exact (on a collision the stacks are simply kept apart).
    """
    n = len(off) - 1
    identity = (np.arange(n, dtype=_I64), loc, off)
    if not always and (n < 64 or not len(loc)):
        return identity
    if not len(loc):  # every stack is empty: one group
        return np.zeros(n, dtype=_I64), loc, np.zeros(2 if n else 1, dtype=_I64)
    lengths = np.diff(off)
    has = lengths > 0
    mult = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], dtype=_U64)
    # Hashes wrap around in uint64: the same bits, not a copy (38 MB on a 6 MB profile).
    key_loc = loc.view(_U64) if loc.dtype == _I64 else loc.astype(_U64)
    first = np.where(has, key_loc[np.minimum(off[:-1], len(loc) - 1)], np.uint64(0))
    last = np.where(has, key_loc[np.maximum(off[1:] - 1, 0)], np.uint64(0))
    sig = lengths.astype(_U64) + first * mult[0] + last * mult[1]
    if not always and len(pc.unique(sig)) > 0.7 * n:
        return identity
    idx = np.int32 if len(loc) < 1 << 31 else _I64
    starts = off[:-1]
    h = scan.stack_hashes(loc, off, int(mult[0]), int(mult[1]))  # one pass, no temporaries
    if h is None:
        # Positions within each stack by repeating the stacks' starts (a sequential write,
        # cheaper than gathering them per entry); int32 while it fits halves the traffic.
        pos = np.arange(len(loc), dtype=idx)
        pos -= np.repeat(starts.astype(idx), lengths)
        powers = np.cumprod(np.full(int(lengths.max()), mult[0], dtype=_U64))
        key_loc = loc.astype(_U64)  # written to below
        key_loc += np.uint64(1)
        key_loc *= powers[pos]
        h = np.zeros(n, dtype=_U64)
        h[has] = np.add.reduceat(key_loc, starts[has])
        h ^= lengths.astype(_U64) * mult[1]
    _, rep, group = np.unique(h, return_index=True, return_inverse=True)
    if not always and len(rep) > 0.7 * n:
        return identity
    group = group.reshape(-1)
    rep_of = rep[group]
    same = scan.same_stacks(loc, off, rep_of)
    if same is None:
        if not np.array_equal(lengths[rep_of], lengths):
            return identity
        rep_entry = np.repeat((starts[rep_of] - starts).astype(idx), lengths)
        rep_entry += np.arange(len(loc), dtype=idx)
        same = bool(np.array_equal(loc[rep_entry], loc))
    if not same:
        return identity
    return group.astype(_I64), loc[pc.ranges(off[:-1][rep], lengths[rep])], pc.offsets(lengths[rep])


def _prune_patterns(drop_frames: str, keep_frames: str) -> tuple[Any, Any]:
    """RemoveUninteresting's patterns, anchored; (None, None) when Go gives up on it (no
    drop_frames, or a pattern that does not compile)."""
    if not drop_frames:
        return None, None
    try:
        drop = goregexp.compile("^(" + drop_frames + ")$")
        keep = goregexp.compile("^(" + keep_frames + ")$") if keep_frames else None
    except goregexp.RegexpError:
        return None, None
    return drop, keep


def _prune(
    t: Tables,
    drop: Any,
    keep: Any,
    line_first: np.ndarray,
    stack_loc: np.ndarray,
    stack_off: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """profile.Prune: locations matching drop (not keep) cut their stacks there."""
    matches: dict[str, bool] = {}

    def dropped(f: int) -> bool:
        name = t.func_name[f]
        if not name:
            return False
        hit = matches.get(name)
        if hit is None:
            simple = simplify(name)
            hit = bool(drop.search(simple)) and not (keep is not None and keep.search(simple))
            matches[name] = hit
        return hit

    n_loc = len(line_first)
    prune = np.zeros(n_loc, dtype=bool)
    beneath = np.zeros(n_loc, dtype=bool)
    line_first = line_first.copy()
    for j in range(n_loc):
        lo, hi = int(t.line_off[j]), int(t.line_off[j + 1])
        for i in range(hi - 1, lo - 1, -1):  # from the caller end
            if dropped(int(t.line_func[i])):
                beneath[j] = True
                if i == hi - 1:
                    prune[j] = True
                else:
                    line_first[j] = i + 1
                break
    if not beneath.any():
        return stack_loc, stack_off, line_first

    # Per stack, scanning from the root: after the first user frame, the first prune-marked
    # location cuts the stack (keeping it, unless the whole location matched).
    n = len(stack_off) - 1
    per_sample = np.diff(stack_off)
    owner = np.repeat(np.arange(n, dtype=_I64), per_sample)
    i_in = np.arange(len(stack_loc)) - stack_off[:-1][owner]  # leaf-first position
    user = ~beneath[stack_loc]
    top_user = np.full(n, -1, dtype=_I64)
    np.maximum.at(top_user, owner[user], i_in[user])
    candidate = ~user & (i_in < top_user[owner])
    cut_at = np.full(n, -1, dtype=_I64)
    np.maximum.at(cut_at, owner[candidate], i_in[candidate])
    has_cut = cut_at >= 0
    first_kept = np.zeros(n, dtype=_I64)
    cut_loc = stack_loc[stack_off[:-1][has_cut] + cut_at[has_cut]]
    first_kept[has_cut] = cut_at[has_cut] + prune[cut_loc]
    keep_entry = i_in >= first_kept[owner]
    new_counts = np.bincount(owner[keep_entry], minlength=n)
    return stack_loc[keep_entry], pc.offsets(new_counts), line_first
