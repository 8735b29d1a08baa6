"""Profile -> per-function aggregates and the top table, as `go tool pprof` computes them.

Semantics follow Go 1.19's vendored google/pprof at its default granularity ("functions"):
the profile is merged as profile.Merge would (identical samples summed, which changes the total
only where values of both signs meet), names go through the symbolizer's demangling heuristic,
drop_frames/keep_frames prune stacks (RemoveUninteresting), every line of a location is a frame
(inlined calls included), nodes are keyed by graph.NodeInfo, a function recursing in one stack
counts once in its cum, and the total is report.computeTotal's (sum of |v|, or of the
`pprof::base` samples of a diff). Arithmetic wraps around like Go's int64.

Everything per frame is numpy: stacks are expanded once into a flat array of node ids (root
first), flat comes from the leaf frames, cum from one radix sort by node id that puts the frames
of one node in one sample next to each other. The flame graph (share/flame.py) and the text
(share/report.py) are built from the Graph of one sample type.
"""

from __future__ import annotations

import contextlib
import re
import weakref
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from . import pbcolumns as pc
from .names import demangled_names, go_regexp, simplify
from .pprof_schema import SHALLOW
from .report import Header, Rows, abs64, go_base, go_int64, wrap64

MIN64 = -(1 << 63)
_U64 = np.uint64
_I64 = np.int64
EDGE_FRACTION = 0.001  # pprof's default; it decides which edges (and so inline marks) survive


class SampleTypeError(ValueError):
    """-sample_index names no sample type of the profile."""


@dataclass
class Tables:
    """The profile as flat arrays (sample-type independent), built once per ParsedProfile."""

    strings: list[str]
    sample_types: list[tuple[str, str]]
    default_sample_type: str
    values: np.ndarray  # int64 [n_samples, n_types]
    stack_loc: np.ndarray  # dense location index of each stack entry, leaf first
    stack_off: np.ndarray  # sample i's entries: stack_loc[stack_off[i]:stack_off[i + 1]]
    loc_mapping: np.ndarray  # dense mapping index, -1 for none (or a dangling id)
    loc_address: np.ndarray
    loc_folded: np.ndarray
    line_func: np.ndarray  # dense function index of each line; line 0 is the innermost call
    line_no: np.ndarray
    line_off: np.ndarray
    func_name: list[str]  # after the demangling heuristic
    func_names: tuple[list[str], list[str], list[str]]  # name, system_name, filename as stored
    func_start: list[int]
    map_start: list[int]
    map_file: list[str]  # the file Merge keeps for the mapping
    map_key: list[tuple[int, int, str]]
    header: Header
    drop_frames: str
    keep_frames: str
    message: Any = field(repr=False)
    _labels: tuple[np.ndarray, ...] | None = field(default=None, repr=False)
    _stacks: Stacks | None = field(default=None, repr=False)
    _graphs: dict[int | None, Graph] = field(default_factory=dict, repr=False)
    _merge_groups: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_samples(self) -> int:
        return len(self.stack_off) - 1

    def sample_index(self, name: str | None) -> int | None:
        """The sample type -sample_index=name selects (None: the profile has no types)."""
        return sample_index(self.sample_types, self.default_sample_type, name)

    def labels(self) -> tuple[np.ndarray, ...]:
        """(sample, key, str, num, unit) of every label, decoded only when asked for."""
        if self._labels is None:
            msg = self.message
            buf = pc.serialize(msg.sample)
            rows = pc.fields(buf).select(3)
            lbuf = pc.sub_buffer(buf, rows.start, rows.end)
            lf = pc.fields(lbuf)
            n = len(rows.msg)
            self._labels = (
                rows.msg,
                pc.last_value(lf, 1, n).astype(_I64),
                pc.last_value(lf, 2, n).astype(_I64),
                pc.last_value(lf, 3, n).view(_I64),
                pc.last_value(lf, 4, n).astype(_I64),
            )
        return self._labels


def sample_index(types: list[tuple[str, str]], default: str | None, name: str | None) -> int | None:
    """profile.SampleIndexByName: no name picks the default type (else the last); a name may
    also be an index or carry an "inuse_" prefix. None when there are no types and no name."""
    names = [t for t, _ in types]
    if not name:
        if not names:
            return None
        return names.index(default) if default and default in names else len(names) - 1
    if not names:
        raise SampleTypeError(f"unknown sample type {name!r}: the profile has no sample types")
    if re.fullmatch(r"[+-]?\d+", name):
        i = int(name)
        if not 0 <= i < len(names):
            raise SampleTypeError(f"sample index {name} is outside [0..{len(names) - 1}]")
        return i
    no_inuse = name.removeprefix("inuse_")
    for i, t in enumerate(names):
        if t in (name, no_inuse):
            return i
    valid = ", ".join(repr(t) for t in names)
    raise SampleTypeError(f"unknown sample type {name!r}: this profile has {valid}")


_CACHE: weakref.WeakKeyDictionary[Any, Tables] = weakref.WeakKeyDictionary()


def tables(parsed: Any) -> Tables:
    """The Tables of a share.pprof.ParsedProfile (cached while the object lives)."""
    try:
        return _CACHE[parsed]
    except (KeyError, TypeError):
        pass
    t = _build_tables(parsed)
    with contextlib.suppress(TypeError):  # an object without weak references: no cache
        _CACHE[parsed] = t
    return t


def _scalar(value: Any) -> int:
    """A scalar field that a decoder may keep as a list of every occurrence."""
    if isinstance(value, int):
        return value
    return int(value[-1]) if len(value) else 0


def _dense(ids: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Index into ids (unique uint64) of each ref; -1 where a ref is not an id."""
    if not len(ids) or not len(refs):
        return np.full(len(refs), -1, dtype=_I64)
    lo, hi = ids.min(), ids.max()
    if int(hi - lo) + 1 == len(ids) and bool((ids[1:] > ids[:-1]).all()):
        # Ids lo, lo + 1, ... in order (Go writes 1..n): the index is the id minus lo.
        r_lo, r_hi = refs.min(), refs.max()
        out = (refs - lo).astype(_I64)  # uint64 arithmetic: wraps, and refs < lo are marked
        if r_lo < lo or r_hi > hi:
            out[(refs < lo) | (refs > hi)] = -1
        return out
    if int(hi - lo) < 8 * len(ids) + 65536:
        # Ids are usually 1..n: a lookup table beats a binary search per reference.
        table = np.full(int(hi - lo) + 2, -1, dtype=_I64)
        table[(ids - lo).astype(_I64)] = np.arange(len(ids))
        inside = (refs >= lo) & (refs <= hi)
        return np.where(inside, table[np.where(inside, refs - lo, hi - lo + 1).astype(_I64)], -1)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    pos = np.minimum(np.searchsorted(sorted_ids, refs), len(ids) - 1)
    return np.where(sorted_ids[pos] == refs, order[pos], -1).astype(_I64)


def _stored_payloads(parsed: Any) -> Any:
    """The profile's messages as uploaded, one bytes object each (None if they cannot be used).

    Reading fields off these (last one wins, unknown ones skipped, as Go reads them) saves
    serializing every location and function again; the counts must match the decoded message,
    else (a file the parser re-encoded first) the message is serialized instead.
    """
    raw = getattr(parsed, "raw", None)
    if raw is None:
        return None
    try:
        top = SHALLOW["Profile"].FromString(raw)
    except DecodeError:
        return None
    msg = parsed.message
    if len(top.location) != len(msg.location) or len(top.function) != len(msg.function):
        return None
    return top


def _build_tables(parsed: Any) -> Tables:
    msg = parsed.message
    strings: list[str] = list(parsed.strings)

    def s(i: int) -> str:
        return strings[i] if 0 <= i < len(strings) else ""

    sample_types = [(s(st.type), s(st.unit)) for st in msg.sample_type]
    n_types = len(sample_types)
    n = len(msg.sample)
    ids = getattr(parsed, "location_ids", None)
    if ids is not None and getattr(parsed, "values", None) is not None:
        stack_ids = np.asarray(ids, dtype=_U64)
        stack_off = np.asarray(parsed.location_offsets, dtype=_I64)
        values = np.asarray(parsed.values, dtype=_I64).reshape(n, n_types)
    else:
        buf = pc.serialize(msg.sample)
        f = pc.fields(buf)
        stack_ids, stack_off = pc.repeated(buf, f, 1, n)
        vals, _ = pc.repeated(buf, f, 2, n)
        values = vals.view(_I64).reshape(n, n_types)

    # Mappings: few, read directly; the file and key are what Merge keeps per mapping.
    map_ids, map_start, map_file, map_key, keys_seen = [], [], [], [], {}
    for m in msg.mapping:
        start, limit = _scalar(m.memory_start), _scalar(m.memory_limit)
        file, build_id = s(_scalar(m.filename)), s(_scalar(m.build_id))
        size = (limit - start) % (1 << 64)
        size = (size + 0xFFF) % (1 << 64)
        size -= size % 0x1000
        key = (size, _scalar(m.file_offset), build_id or file)
        map_ids.append(_scalar(m.id))
        map_start.append(start)
        map_file.append(keys_seen.setdefault(key, file))
        map_key.append(key)
    first = msg.mapping[0] if len(msg.mapping) else None

    # Locations and their lines.
    stored = _stored_payloads(parsed)
    lbuf = pc.joined(stored.location) if stored else pc.serialize(msg.location)
    lf = pc.fields(lbuf)
    n_loc = len(lbuf)
    loc_ids = pc.last_value(lf, 1, n_loc)
    loc_mapping = _dense(np.array(map_ids, dtype=_U64), pc.last_value(lf, 2, n_loc))
    line_rows = lf.select(4)
    line_buf = pc.sub_buffer(lbuf, line_rows.start, line_rows.end)
    line_fields = pc.fields(line_buf)
    n_lines = len(line_rows.msg)
    line_off = pc.offsets(np.bincount(line_rows.msg, minlength=n_loc))

    # Functions.
    fbuf = pc.joined(stored.function) if stored else pc.serialize(msg.function)
    ff = pc.fields(fbuf)
    n_func = len(fbuf)
    func_ids = pc.last_value(ff, 1, n_func)
    padded = strings + [""]  # an index outside the table reads as "" (pprof's getString)
    cols = []
    for k in (2, 3, 4):
        idx = pc.last_value(ff, k, n_func).view(_I64)
        idx = np.where((idx >= 0) & (idx < len(strings)), idx, len(strings))
        cols.append([padded[i] for i in idx.tolist()])
    names, systems, files = cols

    return Tables(
        strings=strings,
        sample_types=sample_types,
        default_sample_type=s(_scalar(msg.default_sample_type)),
        values=values,
        stack_loc=_dense(loc_ids, stack_ids),
        stack_off=stack_off,
        loc_mapping=loc_mapping,
        loc_address=pc.last_value(lf, 3, n_loc),
        loc_folded=pc.last_value(lf, 5, n_loc) != 0,
        line_func=_dense(func_ids, pc.last_value(line_fields, 1, n_lines)),
        line_no=pc.last_value(line_fields, 2, n_lines).view(_I64),
        line_off=line_off,
        func_name=demangled_names(names, systems),
        func_names=(names, systems, files),
        func_start=pc.last_value(ff, 5, n_func).view(_I64).tolist(),
        map_start=map_start,
        map_file=map_file,
        map_key=map_key,
        header=Header(
            main_file=map_file[0] if first is not None else "",
            build_id=s(_scalar(first.build_id)) if first is not None else "",
            comments=list(dict.fromkeys(s(_scalar(c)) for c in msg.comment)),
            sample_type="",
            sample_unit="",
            time_nanos=_scalar(msg.time_nanos),
            duration_nanos=_scalar(msg.duration_nanos),
        ),
        drop_frames=s(_scalar(msg.drop_frames)),
        keep_frames=s(_scalar(msg.keep_frames)),
        message=msg,
    )


# --- stacks ----------------------------------------------------------------------------------


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
    _name_ranks: tuple[np.ndarray, np.ndarray] | None = field(default=None, repr=False)

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


def _build_stacks(t: Tables) -> Stacks:
    n_loc = len(t.loc_mapping)

    # Nodes: graph.NodeInfo at "functions" granularity (address, line and file cleared): a
    # function's name, or for nameless frames the binary (and the function's start line).
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

    def node(objfile: str, start_line: int) -> int:
        key = ("", objfile, start_line)
        found = index.get(key)
        if found is None:
            found = index[key] = len(names)
            names.append("[" + go_base(objfile) + "]" if objfile else "<unknown>")
            files.append(objfile)
            keys.append(f"{{  0  {start_line} 0 {objfile}}}")
        return found

    map_file = t.map_file + [""]  # index -1: no mapping
    line_node = func_node[t.line_func] if len(t.line_func) else np.zeros(0, _I64)
    for i in np.flatnonzero(line_node < 0).tolist():  # functions without a name: rare
        loc = int(np.searchsorted(t.line_off, i, side="right") - 1)
        line_node[i] = node(map_file[t.loc_mapping[loc]], t.func_start[int(t.line_func[i])])
    map_node = np.array([node(f, 0) for f in map_file], dtype=_I64)

    # Samples that share a stack (labelled profiles have many) are expanded once.
    stack_of, stack_loc, stack_off = _unique_stacks(t.stack_loc, t.stack_off)

    # Pruning (drop_frames/keep_frames): cut lines off locations, then stacks.
    line_first = t.line_off[:-1].copy()  # first kept line of each location
    drop = go_regexp("^(" + t.drop_frames + ")$") if t.drop_frames else None
    if drop is not None:
        keep = go_regexp("^(" + t.keep_frames + ")$") if t.keep_frames else None
        if t.keep_frames and keep is None:
            drop = None  # Go gives up on RemoveUninteresting when a regexp fails
    if drop is not None:
        stack_loc, stack_off, line_first = _prune(t, drop, keep, line_first, stack_loc, stack_off)

    # Frames of each location, caller first: its lines from the last to the first kept one.
    kept_count = t.line_off[1:] - line_first
    loc_frames = np.maximum(kept_count, 1)
    lf_off = pc.offsets(loc_frames)
    total = int(lf_off[-1])
    lf_node = np.empty(total, dtype=np.int32)
    lf_inline = np.ones(total, dtype=bool)
    lf_inline[lf_off[:-1]] = False  # the outermost line is the call; the others are inlined
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
        # Most locations have one frame: place those directly, expand only the inlined ones.
        counts = loc_frames[loc_rf]
        ends = np.cumsum(counts)
        starts = ends - counts
        frame_node = np.empty(int(ends[-1]) if len(ends) else 0, dtype=np.int32)
        frame_inline = np.zeros(len(frame_node), dtype=bool)
        frame_node[starts] = lf_node[lf_off[:-1]][loc_rf]  # each location's outermost frame
        many = np.flatnonzero(counts > 1)
        src = pc.ranges(lf_off[:-1][loc_rf[many]], counts[many])
        dst = pc.ranges(starts[many], counts[many])
        frame_node[dst] = lf_node[src]
        frame_inline[dst] = lf_inline[src]
        entry_off = pc.offsets(np.diff(stack_off)[::-1])
        frames_before = np.concatenate(([0], ends))
        per_sample = frames_before[entry_off[1:]] - frames_before[entry_off[:-1]]
    frame_off = pc.offsets(per_sample)
    frame_owner = np.repeat(np.arange(n, dtype=np.int32), per_sample)
    # A radix sort by node id keeps each stack's frames in order: a node repeated in one stack
    # (recursion) lands next to itself. Its first frame is the one that counts in cum.
    key = frame_node.astype(np.uint16) if len(names) <= 1 << 16 else frame_node
    order = np.argsort(key, kind="stable")
    owner_sorted = frame_owner[order]
    node_sorted = key[order]
    new_run = np.ones(len(order), dtype=bool)
    new_run[1:] = (node_sorted[1:] != node_sorted[:-1]) | (owner_sorted[1:] != owner_sorted[:-1])
    first = order[new_run]  # first frames, grouped by node
    first_nodes = node_sorted[new_run]
    starts = np.flatnonzero(np.concatenate(([True], first_nodes[1:] != first_nodes[:-1])))
    starts = starts[: len(first_nodes)]  # none when there are no frames
    return Stacks(
        frame_node=frame_node,
        frame_inline=frame_inline,
        frame_off=frame_off,
        frame_owner=frame_owner,
        first_owner=frame_owner[first],
        first_starts=starts,
        first_nodes=first_nodes[starts].astype(_I64),
        stack_of=(n - 1 - stack_of).astype(_I64),
        names=names,
        files=files,
        keys=keys,
        any_inline=bool(frame_inline.any()),
    )


def _unique_stacks(
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
    key_loc = loc.astype(_U64)  # hashes wrap around in uint64
    first = np.where(has, key_loc[np.minimum(off[:-1], len(loc) - 1)], np.uint64(0))
    last = np.where(has, key_loc[np.maximum(off[1:] - 1, 0)], np.uint64(0))
    sig = lengths.astype(_U64) + first * mult[0] + last * mult[1]
    if not always and len(np.unique(sig)) > 0.7 * n:
        return identity
    # Positions within each stack by repeating the stacks' starts (a sequential write, cheaper
    # than gathering them per entry); int32 while it fits halves the memory traffic.
    idx = np.int32 if len(loc) < 1 << 31 else _I64
    starts = off[:-1]
    pos = np.arange(len(loc), dtype=idx)
    pos -= np.repeat(starts.astype(idx), lengths)
    powers = np.cumprod(np.full(int(lengths.max()), mult[0], dtype=_U64))
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
    if not np.array_equal(lengths[rep_of], lengths):
        return identity
    rep_entry = np.repeat((starts[rep_of] - starts).astype(idx), lengths)
    rep_entry += np.arange(len(loc), dtype=idx)
    if not np.array_equal(loc[rep_entry], loc):
        return identity
    return group.astype(_I64), loc[pc.ranges(off[:-1][rep], lengths[rep])], pc.offsets(lengths[rep])


def _prune(
    t: Tables,
    drop: re.Pattern[str],
    keep: re.Pattern[str] | None,
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
            hit = bool(drop.match(simple)) and not (keep is not None and keep.match(simple))
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


# --- one sample type -------------------------------------------------------------------------


@dataclass
class Graph:
    """Per-node aggregates for one sample type (graph.New over the whole profile)."""

    tables: Tables
    stacks: Stacks
    index: int | None
    sample_type: tuple[str, str]
    weights: np.ndarray  # int64 per sample, after Merge's summing of identical samples
    stack_weights: np.ndarray  # summed per stack of Stacks
    stack_live: np.ndarray  # per stack: some sample has a non-zero value
    total: int  # report.computeTotal
    flat: np.ndarray  # int64 per node
    cum: np.ndarray

    @property
    def present(self) -> np.ndarray:
        """Node ids pprof keeps in the graph (flat or cum non-zero)."""
        return np.flatnonzero((self.flat != 0) | (self.cum != 0))


def graph(t: Tables, index: int | None) -> Graph:
    """Aggregate a profile for sample type index (None: no types, hence no samples)."""
    cached = t._graphs.get(index)
    if cached is None:
        cached = t._graphs[index] = _build_graph(t, index)
    return cached


def _build_graph(t: Tables, index: int | None) -> Graph:
    st = stacks(t)
    if index is None:
        w = np.zeros(t.n_samples, dtype=_I64)
    else:
        w = _merged_weights(t, t.values[:, index])
    n_nodes = len(st.names)
    n_stacks = len(st.frame_off) - 1
    ws = np.zeros(n_stacks, dtype=_I64)  # weight per stack: its samples' sum (wraps, as Go)
    np.add.at(ws, st.stack_of, w)
    live = np.zeros(n_stacks, dtype=bool)  # stacks with a sample pprof does not skip (w != 0)
    live[st.stack_of[w != 0]] = True
    flat = np.zeros(n_nodes, dtype=_I64)
    cum = np.zeros(n_nodes, dtype=_I64)
    off = st.frame_off
    nonempty = np.flatnonzero(off[1:] > off[:-1])
    np.add.at(flat, st.frame_node[off[1:][nonempty] - 1], ws[nonempty])
    if len(st.first_owner):
        cum[st.first_nodes] = np.add.reduceat(ws[st.first_owner], st.first_starts)
    return Graph(
        tables=t,
        stacks=st,
        index=index,
        sample_type=t.sample_types[index] if index is not None else ("", ""),
        weights=w,
        stack_weights=ws,
        stack_live=live,
        total=_total(t, w),
        flat=flat,
        cum=cum,
    )


def _merged_weights(t: Tables, w: np.ndarray) -> np.ndarray:
    """Sample weights after profile.Merge, which sums samples with equal stacks and labels.

    Summing is linear, so it only matters where the total takes absolute values (signs mix)
    or an int64 sum wraps; those profiles get the exact merge, the others are left as they are.
    """
    w = np.asarray(w, dtype=_I64)
    if not len(w):
        return w
    same_sign = bool((w >= 0).all() or (w <= 0).all())
    small = float(np.abs(w.astype(np.float64)).sum()) < 2.0**62
    if same_sign and small:
        return w
    return _exact_merge(t, w)


def _exact_merge(t: Tables, w: np.ndarray) -> np.ndarray:
    """Merge's sums where they matter: samples with equal stacks and signs that mix (or sums
    that may wrap) are keyed by their labels too, in Python; the rest stay as they are."""
    group = _merge_groups(t)
    nonzero = (t.values != 0).any(axis=1)  # Merge drops all-zero samples first
    n_groups = int(group.max()) + 1
    members = group[nonzero]
    size = np.bincount(members, minlength=n_groups)
    pos = np.zeros(n_groups, dtype=bool)
    neg = np.zeros(n_groups, dtype=bool)
    pos[group[nonzero & (w > 0)]] = True
    neg[group[nonzero & (w < 0)]] = True
    magnitude = np.zeros(n_groups)
    np.add.at(magnitude, members, np.abs(w[nonzero].astype(np.float64)))
    risky = (size > 1) & ((pos & neg) | (magnitude >= 2.0**62))
    todo = np.flatnonzero(nonzero & risky[group])
    if not len(todo):
        return w
    out = w.copy()
    out[todo] = 0
    sample, key, sval, num, unit = t.labels()  # rows are in sample order
    lo = np.searchsorted(sample, todo).tolist()
    hi = np.searchsorted(sample, todo, side="right").tolist()
    strings = t.strings
    reps: dict[tuple[Any, ...], int] = {}
    for s, a, b in zip(todo.tolist(), lo, hi, strict=True):
        items: list[tuple[str, Any]] = []
        for k, sv, nv, u in zip(
            key[a:b].tolist(),
            sval[a:b].tolist(),
            num[a:b].tolist(),
            unit[a:b].tolist(),
            strict=True,
        ):
            if sv != 0:
                items.append((strings[k], strings[sv]))
            elif nv != 0 or u != 0:
                items.append((strings[k], (nv, u)))
        rep = reps.setdefault((int(group[s]), _label_key(items, strings)), s)
        out[rep] = wrap64(int(out[rep]) + int(w[s]))
    return out


def _merge_groups(t: Tables) -> np.ndarray:
    """Samples grouped by stack as Merge compares them: by location key, not location id."""
    if t._merge_groups is not None:
        return t._merge_groups
    func_canon: dict[tuple[Any, ...], int] = {}
    raw = zip(t.func_start, *t.func_names, strict=True)
    fcanon = [func_canon.setdefault(key, len(func_canon)) for key in raw]
    map_canon = {k: i for i, k in reversed(list(enumerate(t.map_key)))}
    loc_key: dict[tuple[Any, ...], int] = {}
    loc_canon = []
    line_off = t.line_off.tolist()
    line_func = t.line_func.tolist()
    line_no = t.line_no.tolist()
    for j in range(len(t.loc_mapping)):
        m = int(t.loc_mapping[j])
        addr = int(t.loc_address[j])
        mid = -1
        if m >= 0:
            addr = (addr - t.map_start[m]) % (1 << 64)
            mid = map_canon[t.map_key[m]]
        lines = tuple(
            (fcanon[line_func[i]], line_no[i]) for i in range(line_off[j], line_off[j + 1])
        )
        loc_canon.append(loc_key.setdefault((addr, mid, bool(t.loc_folded[j]), lines), j))
    entries = np.array(loc_canon, dtype=_I64)[t.stack_loc]
    t._merge_groups = _unique_stacks(entries, t.stack_off, always=True)[0]
    return t._merge_groups


def _label_key(items: list[tuple[str, Any]], strings: list[str]) -> tuple[Any, ...]:
    """What Sample.key compares: string labels per key in order, numbers with their units."""
    text: dict[str, list[str]] = {}
    nums: dict[str, list[int]] = {}
    units: dict[str, list[str]] = {}
    for k, v in items:
        if isinstance(v, str):
            text.setdefault(k, []).append(v)
        else:
            nv, u = v
            values = nums.setdefault(k, [])
            if u != 0:
                us = units.setdefault(k, [])
                us.extend([""] * (len(values) - len(us)))
                us.append(strings[u])
            values.append(nv)
    for k, us in units.items():
        us.extend([""] * (len(nums[k]) - len(us)))
    return (
        tuple(sorted((k, tuple(v)) for k, v in text.items())),
        tuple(sorted((k, tuple(v), tuple(units.get(k, ()))) for k, v in nums.items())),
    )


def _total(t: Tables, w: np.ndarray) -> int:
    """report.computeTotal: sum of |v|; only the diff base's samples if it has any."""
    a = np.abs(w)  # the minimum int64 stays negative, as abs64 leaves it
    total = wrap64(int(a.sum(dtype=_I64))) if len(a) else 0
    if "pprof::base" in t.strings and "true" in t.strings:
        sample, key, sval, _, _ = t.labels()
        is_key = np.array([x == "pprof::base" for x in t.strings])
        is_true = np.array([x == "true" for x in t.strings])
        hit = is_key[key] & (sval != 0) & is_true[sval]
        base = np.zeros(len(w), dtype=bool)
        base[sample[hit]] = True
        diff_total = wrap64(int(a[base].sum(dtype=_I64)))
        if diff_total > 0:
            total = diff_total
    return total


# --- top -------------------------------------------------------------------------------------


@dataclass
class Top:
    """The rows of `go tool pprof -top` and what its header needs."""

    header: Header
    total: int
    rows: Rows
    orig_count: int
    dropped_nodes: int
    node_cutoff_label: int  # the value named in "Dropped N nodes (cum <= X)"


def top(g: Graph, *, node_count: int = 0, node_fraction: float = 0.0) -> Top:
    """report.TextItems: nodes sorted by |flat|, name, |cum|, as -top with these options."""
    st = g.stacks
    nodes = g.present
    flat_total = wrap64(int(g.flat[nodes].sum(dtype=_I64)))
    dropped = 0
    node_cutoff = abs64(go_int64(float(flat_total) * node_fraction))
    if node_cutoff > 0:
        kept = nodes[np.abs(g.cum[nodes]) >= node_cutoff]  # np.abs leaves MIN negative: abs64
        dropped = len(nodes) - len(kept)
        nodes = kept
    orig_count = len(nodes)
    nodes = nodes[_flat_name_order(g, nodes)]
    trimmed = dropped > 0
    if 0 < node_count < len(nodes):
        nodes = nodes[:node_count]
        trimmed = True
    edge_cutoff = abs64(go_int64(float(flat_total) * EDGE_FRACTION))
    # Without trimming the graph is built over every node, zero-valued ones included: their
    # edges still reach the nodes shown. A trimmed graph is rebuilt from the kept nodes only.
    shown = nodes.tolist()
    marks = _inline_marks(g, shown if trimmed else None, edge_cutoff) if st.any_inline else {}
    header = replace(g.tables.header, sample_type=g.sample_type[0], sample_unit=g.sample_type[1])
    return Top(
        header=header,
        total=g.total,
        rows=Rows(
            names=[st.names[n] for n in shown],
            inline=[marks.get(n, "") for n in shown] if marks else [""] * len(shown),
            files=[st.files[n] for n in shown],
            flat=g.flat[nodes],
            cum=g.cum[nodes],
        ),
        orig_count=orig_count,
        dropped_nodes=dropped,
        node_cutoff_label=abs64(go_int64(float(g.total) * node_fraction)),
    )


def _ranks(texts: list[str]) -> np.ndarray:
    """Rank of each string in sorted order; equal strings share a rank."""
    order = sorted(range(len(texts)), key=texts.__getitem__)
    ranked = [texts[i] for i in order]
    new = np.ones(len(order), dtype=_I64)
    new[1:] = [a != b for a, b in zip(ranked, ranked[1:], strict=False)]
    ranks = np.empty(len(order), dtype=_I64)
    ranks[order] = np.cumsum(new) - 1
    return ranks


def _flat_name_order(g: Graph, nodes: np.ndarray) -> np.ndarray:
    """graph.FlatNameOrder: |flat| desc, name, |cum| desc, then fmt.Sprint(NodeInfo)."""
    name_rank = g.stacks.name_ranks()[1][nodes]
    keys = [np.zeros(len(nodes), dtype=_I64)]
    if len(np.unique(name_rank)) < len(nodes):  # same printed name, different nodes: Sprint
        keys = [_ranks([g.stacks.keys[n] for n in nodes.tolist()])]
    # ~x orders int64 descending without overflow; np.abs keeps MIN negative, as abs64 does.
    return np.lexsort((*keys, ~np.abs(g.cum[nodes]), name_rank, ~np.abs(g.flat[nodes])))


def _inline_marks(g: Graph, shown: list[int] | None, edge_cutoff: int) -> dict[int, str]:
    """ "(inline)" / "(partial-inline)" per node, from the graph's incoming call edges.

    An edge is inline when every sample that first reaches the callee from that caller does so
    through an inlined frame; edges lighter than the edge cutoff are trimmed first, as pprof does.
    """
    st = g.stacks
    # Only nodes entered through an inlined frame somewhere can get a mark.
    candidates = np.unique(st.frame_node[st.frame_inline])
    if shown is not None:
        candidates = np.intersect1d(candidates, shown)
    if not len(candidates):
        return {}
    is_candidate = np.zeros(len(st.names), dtype=bool)
    is_candidate[candidates] = True
    idx = np.flatnonzero(is_candidate[st.frame_node])
    if shown is None:
        # The graph over all nodes: a frame's caller is the frame before it.
        prev = idx - 1
    else:
        # A graph rebuilt from the shown nodes: the caller is the previous shown frame.
        kept = np.zeros(len(st.names), dtype=bool)
        kept[shown] = True
        positions = np.where(kept[st.frame_node], np.arange(len(st.frame_node)), -1)
        last_kept = np.maximum.accumulate(positions)
        prev = np.where(idx > 0, last_kept[np.maximum(idx - 1, 0)], -1)
    own = st.frame_owner[idx]
    nodes = st.frame_node[idx].astype(_I64)
    has_parent = (prev >= 0) & (st.frame_owner[np.maximum(prev, 0)] == own)
    parent = st.frame_node[np.maximum(prev, 0)].astype(_I64)
    sel = np.flatnonzero(has_parent & (parent != nodes) & g.stack_live[own])
    n_nodes = len(st.names)
    # Each edge counts once per stack, at its first frame. A frame whose node occurs once in
    # its stack is surely its edge's first; the repeated ones (recursion) are sorted out.
    pair = own.astype(_I64) * n_nodes + nodes  # ascending by stack already: a cheap stable sort
    by_pair = np.argsort(pair, kind="stable")
    ps = pair[by_pair]
    twin = np.zeros(len(ps), dtype=bool)
    twin[1:] = ps[1:] == ps[:-1]
    twin[:-1] |= twin[1:]
    repeated = np.empty(len(ps), dtype=bool)
    repeated[by_pair] = twin
    repeated = repeated[sel]
    if repeated.any():
        r = sel[repeated]
        pair = parent[r] * n_nodes + nodes[r]
        order = np.lexsort((pair, own[r]))  # by stack, then edge; stable: frame order
        ps, os_ = pair[order], own[r][order]
        first = np.ones(len(order), dtype=bool)
        first[1:] = (ps[1:] != ps[:-1]) | (os_[1:] != os_[:-1])
        sel = np.concatenate((sel[~repeated], r[order[first]]))
    # Group the first frames by edge (two stable radix passes when node ids fit 16 bits).
    p_sel, n_sel = parent[sel], nodes[sel]
    if n_nodes <= 1 << 16:
        by_node = np.argsort(n_sel.astype(np.uint16), kind="stable")
        order = by_node[np.argsort(p_sel[by_node].astype(np.uint16), kind="stable")]
    else:
        order = np.lexsort((n_sel, p_sel))
    ps, ns = p_sel[order], n_sel[order]
    if not len(ps):
        return {}
    new_edge = np.ones(len(ps), dtype=bool)
    new_edge[1:] = (ps[1:] != ps[:-1]) | (ns[1:] != ns[:-1])
    starts = np.flatnonzero(new_edge)
    weight = np.add.reduceat(g.stack_weights[own[sel]][order], starts)
    inline = np.logical_and.reduceat(st.frame_inline[idx[sel]][order], starts)
    kept = np.abs(weight) >= edge_cutoff  # np.abs leaves MIN negative: trimmed, as in Go
    dest = ns[starts]
    inline_in = np.zeros(n_nodes, dtype=bool)
    plain_in = np.zeros(n_nodes, dtype=bool)
    inline_in[dest[kept & inline]] = True
    plain_in[dest[kept & ~inline]] = True
    return {
        n: "(partial-inline)" if plain_in[n] else "(inline)"
        for n in np.flatnonzero(inline_in).tolist()
    }
