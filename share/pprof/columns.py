"""Columns out of repeated protobuf messages, decoded with numpy instead of per-field Python.

Reading `sample.location_id` through upb costs a Python object per id (about 100 ms for the
1.5 M frames of a large CPU profile). Instead each message of a repeated field is serialized
(one C call each), the bytes are joined, and the wire format is walked for all messages at once:
round r reads the r-th field of every message still open. Packed varint runs are then decoded
in bulk: every byte below 0x80 ends a varint, and a run starts right after its length prefix,
so the varints of a run are exactly the ones whose last byte lies inside it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

_PAD = 16  # zero bytes after the data, so a read of 10 bytes never leaves the buffer


@dataclass
class Buffer:
    """Messages serialized back to back: message i is data[starts[i]:ends[i]]."""

    data: np.ndarray  # uint8, padded
    starts: np.ndarray  # int64
    ends: np.ndarray  # int64
    _varints: tuple[np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.starts)

    def all_varints(self) -> tuple[np.ndarray, np.ndarray]:
        """(end position, value) of every varint, splitting the whole buffer at bytes < 0x80.

        Bytes that are not varints (fixed-width or string payloads) give garbage entries that
        no caller reads: a packed run always starts after a varint, so its split is exact.
        """
        if self._varints is None:
            data = self.data[: len(self.data) - _PAD]
            ends = np.flatnonzero(data < 0x80)
            starts = np.empty_like(ends)
            starts[:1] = 0
            starts[1:] = ends[:-1] + 1
            self._varints = (ends, _decode(self.data, starts, ends - starts + 1))
        return self._varints


def serialize(messages: Sequence[Any]) -> Buffer:
    """Serialize every message of a repeated field into one Buffer."""
    if not len(messages):
        return Buffer(np.zeros(_PAD, dtype=np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))
    return joined(list(map(type(messages[0]).SerializeToString, messages)))


def joined(payloads: Sequence[bytes]) -> Buffer:
    """Serialized messages (e.g. a repeated field's payloads as stored) as one Buffer."""
    if not len(payloads):
        return Buffer(np.zeros(_PAD, dtype=np.uint8), np.zeros(0, np.int64), np.zeros(0, np.int64))
    lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=len(payloads))
    ends = np.cumsum(lengths)
    blob = b"".join(payloads) + bytes(_PAD)
    return Buffer(np.frombuffer(blob, dtype=np.uint8), ends - lengths, ends)


def sub_buffer(buf: Buffer, starts: np.ndarray, ends: np.ndarray) -> Buffer:
    """Nested messages (payloads of length-delimited fields) as a Buffer of their own."""
    return Buffer(buf.data, starts, ends, buf._varints)


def _decode(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Varints starting at starts with the given byte lengths (at most 10 bytes are read)."""
    value = (data[starts] & 0x7F).astype(np.uint64)
    # Most varints are short: whole-array steps for bytes 2 and 3, then only the long ones.
    for k in (1, 2):
        part = (data[starts + k] & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        value |= np.where(lengths > k, part, np.uint64(0))
    idx = np.flatnonzero(lengths > 3)
    for k in range(3, 10):
        if not len(idx):
            break
        part = (data[starts[idx] + k] & 0x7F).astype(np.uint64)
        value[idx] |= part << np.uint64(7 * k)
        idx = idx[lengths[idx] > k + 1]
    return value


def _varint_at(data: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value, byte length) of the varint at each position."""
    length = np.ones(len(pos), dtype=np.int64)
    open_ = np.flatnonzero(data[pos] >= 0x80)
    for k in range(1, 10):
        if not len(open_):
            break
        length[open_] += 1
        open_ = open_[data[pos[open_] + k] >= 0x80]
    return _decode(data, pos, length), length


@dataclass
class Fields:
    """Every field of every message: one row per (message, field occurrence), by field number,
    then by message, in wire order (so a field's rows are one slice)."""

    msg: np.ndarray  # index of the message
    num: np.ndarray  # field number
    wire: np.ndarray  # wire type
    value: np.ndarray  # uint64: the varint (wire type 0), else 0
    start: np.ndarray  # payload start (wire types 1, 2, 5)
    end: np.ndarray  # payload end

    def select(self, num: int) -> Fields:
        """Field num's rows, by message in wire order: views of one slice (a boolean mask
        per field copied every column, a third of building a small profile's tables)."""
        lo, hi = np.searchsorted(self.num, (num, num + 1))
        return Fields(*(a[lo:hi] for a in self._arrays()))

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (self.msg, self.num, self.wire, self.value, self.start, self.end)


def fields(buf: Buffer) -> Fields:
    """Walk all messages of buf at once; rows come out by field number, then by message, in
    wire order."""
    data = buf.data
    cur = buf.starts.copy()
    live = np.flatnonzero(cur < buf.ends)
    rounds: list[tuple[np.ndarray, ...]] = []
    while len(live):
        tag, tag_len = _varint_at(data, cur[live])
        pos = cur[live] + tag_len
        wire = (tag & np.uint64(7)).astype(np.int8)
        if np.any((wire == 3) | (wire == 4) | (wire > 5)):
            raise ValueError("unsupported wire type in a serialized message")
        value, value_len = _varint_at(data, pos)
        size = np.where(wire == 0, value_len, np.where(wire == 1, 8, np.where(wire == 5, 4, 0)))
        start = np.where(wire == 2, pos + value_len, pos)
        end = np.where(wire == 2, start + value.astype(np.int64), pos + size)
        value = np.where(wire == 0, value, np.uint64(0))
        rounds.append((live, (tag >> np.uint64(3)).astype(np.int64), wire, value, start, end))
        cur[live] = end
        live = live[end < buf.ends[live]]
    if not rounds:
        empty = np.zeros(0, dtype=np.int64)
        return Fields(empty, empty, empty.astype(np.int8), empty.astype(np.uint64), empty, empty)
    cols = [np.concatenate(c) for c in zip(*rounds, strict=True)]
    # By message (the rounds are sorted runs), then by field number: stable sorts keep the
    # rounds' wire order, and field numbers under 2**16 sort by radix.
    order = np.argsort(cols[0], kind="stable")
    num = cols[1][order]
    by_num = num.astype(np.uint16) if len(num) and int(num.max()) < 1 << 16 else num
    order = order[np.argsort(by_num, kind="stable")]
    return Fields(*(c[order] for c in cols))


def last_value(f: Fields, num: int, count: int, default: int = 0) -> np.ndarray:
    """Singular varint field num of each of count messages: the last occurrence wins."""
    out = np.full(count, default, dtype=np.uint64)
    rows = f.select(num)
    last = np.ones(len(rows.msg), dtype=bool)
    last[:-1] = rows.msg[1:] != rows.msg[:-1]  # rows are grouped by message, in wire order
    out[rows.msg[last]] = rows.value[last]
    return out


def repeated(buf: Buffer, f: Fields, num: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Repeated varint field num (packed or not): (values, offsets) with offsets[count] = total."""
    rows = f.select(num)
    packed = rows.wire == 2
    if np.all(packed):
        ends, values = buf.all_varints()
        lo = np.searchsorted(ends, rows.start)
        hi = np.searchsorted(ends, rows.end)
        counts = hi - lo
        picked = _ranges(lo, counts)
        per_msg = np.bincount(rows.msg, weights=counts, minlength=count).astype(np.int64)
        return values[picked], _offsets(per_msg)
    # Mixed or unpacked encodings: rare (upb re-serializes packed); handled row by row.
    values_list: list[int] = []
    per_msg = np.zeros(count, dtype=np.int64)
    ends, allv = buf.all_varints()
    for msg, wire, value, start, end in zip(
        rows.msg.tolist(),
        rows.wire.tolist(),
        rows.value.tolist(),
        rows.start,
        rows.end,
        strict=True,
    ):
        if wire == 0:
            values_list.append(value)
            per_msg[msg] += 1
        elif wire == 2:
            lo, hi = np.searchsorted(ends, [start, end])
            values_list.extend(allv[lo:hi].tolist())
            per_msg[msg] += hi - lo
    return np.array(values_list, dtype=np.uint64), _offsets(per_msg)


def _offsets(counts: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def _ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Concatenation of arange(s, s + c) for each (s, c), without a Python loop."""
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
    return np.arange(total, dtype=np.int64) + shift


def ranges(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Public alias of the range expansion used across the analysis."""
    return _ranges(starts, counts)


def offsets(counts: Iterable[int] | np.ndarray) -> np.ndarray:
    """Offsets (length n + 1) of consecutive runs with the given lengths."""
    return _offsets(np.asarray(counts, dtype=np.int64))


def unique(values: np.ndarray) -> np.ndarray:
    """np.unique(values) of a numeric array, by a sort: numpy 2's plain np.unique hashes, 3-10x
    slower than sorting on the id arrays of these profiles (12 ms against 1.3 ms on the 57 k
    stack signatures of cpu-xl)."""
    ordered = np.sort(np.asarray(values).reshape(-1))
    if len(ordered) < 2:
        return ordered
    new = np.empty(len(ordered), dtype=bool)
    new[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    return ordered[new]
