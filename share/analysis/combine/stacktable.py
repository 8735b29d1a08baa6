"""A collection's stack table: its members' stacks numbered once, so that sums are sparse adds.

As Parca stores a stack once and a sample as its stack's id, a table numbers every distinct
function-level stack (summed.Summary's frames: node by pprof's NodeInfo key, inline mark) of
the profiles summed through it. A profile is then a Vector: the ids of its stacks and their
values. Summing vectors adds values by id (no stack hashed or compared again), so a window of a
hundred members, or a range of many windows, costs its ids, not its frames (summed.summed
finds equal stacks anew at every sum: about a merge's cost on the fleet's members, whose stacks
hardly repeat within a window but repeat from one window to the next). A Vector's summary
(summary()) is what the flame graph and top table are laid out from, as summed.summed's is.

A table holds the profiles of one set of sample types, period type and pruning (what
summed.summable requires alike) and at most MAX_FRAMES frames; its owner starts another
beyond that.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ...pprof import columns as pc
from .summed import Summary

_I64 = np.int64
_I32 = np.int32
_NARROW = 1 << 31  # values all below this are kept as int32 (half the cache a vector takes)
MAX_FRAMES = 1 << 25  # 128 MB of frames at most
_EXACT = 2.0**53  # sums of non-negative values below this are exact in a double


@dataclass
class Vector:
    """A profile (or a sum of them) as ids of a table's stacks and their values per type."""

    ids: np.ndarray  # int32, ascending, distinct
    values: np.ndarray  # [len(ids), n_types]: int32 where every value fits (narrow()), else int64
    magnitude: float
    default_type: str

    def footprint(self) -> int:
        return self.ids.nbytes + self.values.nbytes + 100


class StackTable:
    """Stacks numbered in the order first seen, and the nodes they are made of."""

    def __init__(self, first: Summary) -> None:
        self.sample_types = first.sample_types
        self.period_type = first.period_type
        self.prune = first.prune
        self.nodes: dict[str, int] = {}
        self.keys: list[str] = []
        self.names: list[str] = []
        self.files: list[str] = []
        self._ids: dict[bytes, int] = {}
        self._chunks: list[np.ndarray] = []  # frame codes (node * 2 + inline) of new stacks
        self._lengths: list[int] = []
        self._codes = np.zeros(0, dtype=np.int32)
        self._off = np.zeros(1, dtype=_I64)
        self.frames = 0

    def accepts(self, s: Summary) -> bool:
        """Whether s may be summed through this table (summed.summable with its first)."""
        return (
            s.summable
            and s.sample_types == self.sample_types
            and s.period_type == self.period_type
            and s.prune == self.prune
        )

    def full(self) -> bool:
        return self.frames >= MAX_FRAMES

    def vector(self, s: Summary) -> Vector:
        """s (accepts(s)) as the ids of its stacks, new ones numbered."""
        remap = np.empty(len(s.keys), dtype=np.int32)
        for i, k in enumerate(s.keys):
            n = self.nodes.get(k)
            if n is None:
                n = self.nodes[k] = len(self.keys)
                self.keys.append(k)
                self.names.append(s.names[i])
                self.files.append(s.files[i])
            remap[i] = n
        codes = (remap[s.frame_node] * 2 + s.frame_inline).astype(np.int32)
        raw = codes.tobytes()
        off = (s.frame_off * 4).tolist()
        ids = np.empty(len(off) - 1, dtype=_I32)
        known = self._ids
        for i in range(len(off) - 1):
            b = raw[off[i] : off[i + 1]]
            sid = known.get(b)
            if sid is None:
                sid = known[b] = len(known)
                self._chunks.append(codes[off[i] // 4 : off[i + 1] // 4])
                self._lengths.append((off[i + 1] - off[i]) // 4)
                self.frames += (off[i + 1] - off[i]) // 4
            ids[i] = sid
        order = np.argsort(ids, kind="stable")
        ids, values = ids[order], s.values[order]
        if len(ids) > 1 and bool((ids[1:] == ids[:-1]).any()):  # a stack twice: one entry
            live, at = np.unique(ids, return_inverse=True)
            summed = np.zeros((len(live), values.shape[1]), dtype=_I64)
            np.add.at(summed, at.reshape(-1), values)
            ids, values = live.astype(_I32), summed
        return Vector(ids, narrow(values), s.magnitude, s.default_type)

    def add(self, parts: Sequence[Vector]) -> Vector:
        """The sum of vectors of this table: values added by stack id."""
        if len(parts) == 1:
            return parts[0]
        ids = np.concatenate([p.ids for p in parts])
        values = np.concatenate([p.values for p in parts])
        n, magnitude = len(self._ids), sum(p.magnitude for p in parts)
        live = np.flatnonzero(np.bincount(ids, minlength=n))
        if magnitude < _EXACT:  # every sum fits a double's integers: bincount is exact
            columns = [np.bincount(ids, weights=values[:, t], minlength=n)[live]
                       for t in range(values.shape[1])]  # fmt: skip
            summed = np.stack(columns, axis=1).astype(_I64) if columns else values[:0]
        else:
            dense = np.zeros((n, values.shape[1]), dtype=_I64)
            np.add.at(dense, ids, values)
            summed = dense[live]
        default = next((p.default_type for p in parts if p.default_type), "")
        summed = narrow(summed.reshape(len(live), values.shape[1]))
        return Vector(live.astype(_I32), summed, magnitude, default)

    def summary(self, v: Vector) -> Summary:
        """The Summary of a vector, as summed.summed would make it of the same profiles (its
        nodes those its stacks use)."""
        self._flush()
        lengths = self._off[v.ids + 1] - self._off[v.ids]
        codes = self._codes[pc.ranges(self._off[v.ids], lengths)]
        nodes = codes >> 1
        used = np.zeros(len(self.keys), dtype=bool)
        used[nodes] = True
        pick = np.flatnonzero(used)
        node = (np.cumsum(used) - 1)[nodes]
        pick = pick.tolist()
        return Summary(
            keys=[self.keys[i] for i in pick], names=[self.names[i] for i in pick],
            files=[self.files[i] for i in pick], frame_node=node.astype(np.int32).reshape(-1),
            frame_inline=(codes & 1).astype(bool), frame_off=pc.offsets(lengths),
            values=v.values.astype(_I64), sample_types=self.sample_types,
            period_type=self.period_type, default_type=v.default_type, prune=self.prune,
            summable=True, magnitude=v.magnitude,
        )  # fmt: skip

    def _flush(self) -> None:
        if self._chunks:
            self._codes = np.concatenate([self._codes, *self._chunks])
            self._off = np.concatenate(
                [self._off, self._off[-1] + np.cumsum(self._lengths, dtype=_I64)]
            )
            self._chunks, self._lengths = [], []


def narrow(values: np.ndarray) -> np.ndarray:
    """values as int32 when every one fits (a member of the fleet's heap profiles then takes
    94 KB of the cache, not 187 KB; a member of its CPU profiles whose nanoseconds fit, 20 KB
    not 34 KB), else as int64. Sums read them as int64 (add(), summary())."""
    if values.size and int(np.abs(values).max()) >= _NARROW:
        return values.astype(_I64, copy=False)
    return values.astype(_I32)


@dataclass
class Packed:
    """A Vector as a process keeps it between views: zlib (level 1) of its ids' gaps and its
    values column by column. A merge process keeps a fleet's members and windows by the
    thousand, and its cache, not its CPU, bounds how far back a range stays warm: this keeps
    about 5.5x as many (members of a real CPU or heap profile, a random fifth of its stacks
    each: 20 KB to 3.7 KB, 94 KB to 17 KB) for 0.04-0.3 ms to pack and half that to unpack."""

    data: bytes
    n: int
    n_types: int
    dtype: str  # of the values: int32 or int64 (narrow())
    magnitude: float
    default_type: str

    def footprint(self) -> int:
        return len(self.data) + 100


def pack(v: Vector) -> Packed:
    gaps = np.diff(v.ids, prepend=np.int32(0)).astype(_I32)
    raw = gaps.tobytes() + np.ascontiguousarray(v.values.T).tobytes()
    n, n_types = v.values.shape
    dtype = v.values.dtype.name
    return Packed(zlib.compress(raw, 1), n, n_types, dtype, v.magnitude, v.default_type)


def unpack(p: Packed) -> Vector:
    raw = zlib.decompress(p.data)
    ids = np.cumsum(np.frombuffer(raw, dtype=_I32, count=p.n), dtype=_I32)
    columns = np.frombuffer(raw, dtype=p.dtype, offset=4 * p.n).reshape(p.n_types, p.n)
    return Vector(ids, columns.T.copy(), p.magnitude, p.default_type)
