"""Stack summaries: the flame graph and top table of many profiles' merge, summed, not merged.

A summary is a profile reduced to what those two views read: its function-level stacks (the
analysis core's own Stacks, pruned as the profile prunes, inline marks kept) and each stack's
values per sample type. Summing summaries gives the summary of the profiles' merge: pprof's
Merge sums samples by stack, and the flame graph and top table are sums over stacks, so no
merged profile is needed. This is Pyroscope's route for a range (stack trees summed per time
window); a collection's range views take it (share.collections), with no merged profile
encoded, stored and decoded again: about half a merge's cost in one process (bench/summaries.py),
about the same CPU on the fleet bench, where parts' summaries are mostly built cold (README
"Running at scale").

It is taken only where the sum is exactly what the merge would show: parts that a merge
accepts (equal sample and period types), prune their frames alike, hold no negative values,
sums that cannot wrap, and no diff base (pprof::base labels). Otherwise `summable` says no and
the caller merges. One difference remains, in what pprof leaves open: the flame graph's node
budget keeps the heaviest nodes, and among nodes of equal weight at its edge the choice
follows the order of the stacks, which a sum and a merge number differently.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...pprof import ParsedProfile
from ...pprof import columns as pc
from ..measure.text import Header
from ..model.graph import Graph, stack_node_sums
from ..model.stacks import Stacks, first_frames, stacks, unique_stacks
from ..model.tables import sample_index, tables

_I64 = np.int64
MOST = _MOST = 2.0**62  # sums at or over this might wrap an int64 somewhere: not summed


@dataclass
class Summary:
    """A profile's stacks (root first; node ids into keys) and their values per sample type."""

    keys: list[str]  # pprof's NodeInfo text per node: what nodes of two parts are matched by
    names: list[str]
    files: list[str]
    frame_node: np.ndarray  # int32
    frame_inline: np.ndarray  # bool
    frame_off: np.ndarray  # int64, n_stacks + 1
    values: np.ndarray  # int64 [n_stacks, n_types]
    sample_types: list[tuple[str, str]]
    period_type: tuple[str, str]
    default_type: str
    prune: tuple[str, str]  # drop_frames, keep_frames
    summable: bool  # no negative values, no diff base
    magnitude: float = 0.0  # the sum of |values|: sums over _MOST are not taken
    memo: dict[str, Any] = field(default_factory=dict, repr=False)

    def footprint(self) -> int:
        """Bytes it holds, roughly (for a cache's cap)."""
        arrays = self.frame_node.nbytes + self.frame_inline.nbytes + self.frame_off.nbytes
        strings = sum(map(len, self.keys)) + sum(map(len, self.names)) + sum(map(len, self.files))
        return arrays + self.values.nbytes + 3 * strings + 200 * len(self.keys)


def of(parsed: ParsedProfile) -> Summary:
    """The summary of a decoded profile."""
    t = tables(parsed)
    st = stacks(t)
    n = len(st.frame_off) - 1
    values = np.zeros((n, len(t.sample_types)), dtype=_I64)
    if t.n_samples and len(t.sample_types):
        np.add.at(values, st.stack_of, t.values)
    # Merge drops the samples whose every value is 0: they are in no stack of the merge.
    live = np.flatnonzero(values.any(axis=1)) if values.shape[1] else np.zeros(0, _I64)
    lengths = np.diff(st.frame_off)[live]
    take = pc.ranges(st.frame_off[:-1][live], lengths)
    outline = parsed.outline
    strings = t.strings
    pt = outline.period_type if outline.HasField("period_type") else None
    period_type = (strings[pt.type], strings[pt.unit]) if pt is not None else ("", "")
    diff_base = "pprof::base" in strings and "true" in strings
    raw = t.values
    return Summary(
        keys=st.keys, names=st.names, files=st.files,
        frame_node=st.frame_node[take].astype(np.int32), frame_inline=st.frame_inline[take],
        frame_off=pc.offsets(lengths), values=values[live],
        sample_types=list(t.sample_types), period_type=period_type,
        default_type=t.default_sample_type, prune=(t.drop_frames, t.keep_frames),
        summable=not diff_base and not bool((raw < 0).any()),
        magnitude=float(np.abs(raw.astype(np.float64)).sum()) if raw.size else 0.0,
    )  # fmt: skip


def summable(parts: Sequence[Summary]) -> bool:
    """Whether the sum of parts is what their merge shows (see the module's docstring); when
    not, the caller merges them, and the merge says what it refuses."""
    if not parts:
        return False
    first = parts[0]
    alike = all(
        p.sample_types == first.sample_types
        and p.period_type == first.period_type
        and p.prune == first.prune
        for p in parts
    )
    return alike and all(p.summable for p in parts) and sum(p.magnitude for p in parts) < _MOST


def summed(parts: Sequence[Summary]) -> Summary:
    """The summary of the parts' merge (parts summable): nodes matched by their key, equal
    stacks found as the core finds them (stacks.unique_stacks), their values added; the
    types of the first part, the first default type, as Merge takes them."""
    ids: dict[str, int] = {}
    keys: list[str] = []
    names: list[str] = []
    files: list[str] = []
    frames, lengths, values = [], [], []
    for p in parts:
        known = len(ids)
        remap = np.array([ids.setdefault(k, len(ids)) for k in p.keys], dtype=_I64)
        for i in np.flatnonzero(remap >= known).tolist():  # nodes first seen in this part
            keys.append(p.keys[i])
            names.append(p.names[i])
            files.append(p.files[i])
        # A frame is its node and whether it is inlined: stacks equal in both are one.
        frames.append(remap[p.frame_node] * 2 + p.frame_inline)
        lengths.append(np.diff(p.frame_off))
        values.append(p.values)
    first = parts[0]
    stack, frame, off = unique_stacks(
        np.concatenate(frames), pc.offsets(np.concatenate(lengths)), always=True
    )
    vals = np.zeros((len(off) - 1, first.values.shape[1]), dtype=_I64)
    np.add.at(vals, stack, np.concatenate(values))
    default = next((p.default_type for p in parts if p.default_type), "")
    return Summary(
        keys=keys, names=names, files=files, frame_node=(frame >> 1).astype(np.int32),
        frame_inline=(frame & 1).astype(bool), frame_off=off, values=vals,
        sample_types=first.sample_types, period_type=first.period_type, default_type=default,
        prune=first.prune, summable=True, magnitude=sum(p.magnitude for p in parts),
    )  # fmt: skip


class SummedTables:
    """What a Graph's views read of its tables, for a summary: the types and the header
    (a range's header is the merged profile's concern: the JSON views do not show it)."""

    merged = True

    def __init__(self, s: Summary) -> None:
        self.sample_types = s.sample_types
        self.default_sample_type = s.default_type
        self.header = Header("", "", [], "", "", 0, 0)

    def sample_index(self, name: str | None) -> int | None:
        return sample_index(self.sample_types, self.default_sample_type, name)


def graph(s: Summary, index: int | None) -> Graph:
    """The Graph of a summary for one sample type, as model.graph builds a profile's: each
    stack is one sample, its values summed."""
    st = s.memo.get("stacks")
    if st is None:
        n = len(s.frame_off) - 1
        lengths = np.diff(s.frame_off)
        owner = np.repeat(np.arange(n, dtype=np.int32), lengths)
        first_owner, first_starts, first_nodes, _, _ = first_frames(
            s.frame_node, owner, len(s.names)
        )
        st = s.memo["stacks"] = Stacks(
            frame_node=s.frame_node, frame_inline=s.frame_inline, frame_off=s.frame_off,
            frame_owner=owner, first_owner=first_owner, first_starts=first_starts,
            first_nodes=first_nodes, stack_of=np.arange(n, dtype=_I64), names=s.names,
            files=s.files, keys=s.keys, any_inline=bool(s.frame_inline.any()),
        )  # fmt: skip
    w = s.values[:, index] if index is not None else np.zeros(len(s.frame_off) - 1, _I64)
    flat, cum = stack_node_sums(st, w)
    return Graph(
        tables=SummedTables(s),  # type: ignore[arg-type]
        stacks=st,
        index=index,
        sample_type=s.sample_types[index] if index is not None else ("", ""),
        weights=w,
        stack_weights=w,
        stack_live=w != 0,
        total=int(np.abs(w).sum(dtype=_I64)) if len(w) else 0,
        flat=flat,
        cum=cum,
    )
