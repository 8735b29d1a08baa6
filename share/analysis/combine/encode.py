"""Prof -> profile.proto bytes, every message kind encoded for all its messages at once.

The layout is Profile.Write's (field order, ids 1..n, the string table holding only the strings
used, "" first), so google/pprof reads the result as the profile it describes. Messages are
ragged byte arrays: (data, offsets) with message i at data[off[i]:off[i + 1]]; a field of N
messages is one such array, and fields are joined message by message with one scatter each.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ...pprof import columns as pc
from ...pprof import scan
from ...pprof.wire import uvarint
from .prof import Prof

_U8 = np.uint8
_I64 = np.int64
_U64 = np.uint64
Ragged = tuple[np.ndarray, np.ndarray]  # (uint8 data, int64 offsets)


def _varint_lengths(v: np.ndarray) -> np.ndarray:
    fast = scan.varint_lengths(v)
    if fast is not None:
        return fast
    lengths = np.ones(len(v), dtype=_I64)
    for k in range(1, 10):
        lengths += v >= np.uint64(1 << (7 * k))
    return lengths


def _put_varints(out: np.ndarray, at: np.ndarray, v: np.ndarray, lengths: np.ndarray) -> None:
    """Write each v[i] as a varint of lengths[i] bytes at out[at[i]:] (scan.c's loop: numpy's
    ten passes were a third of an encoding)."""
    if scan.put_varints(out, at, v, lengths):
        return
    idx = np.arange(len(v))
    for k in range(10):
        if not len(idx):
            break
        byte = (v[idx] >> np.uint64(7 * k)) & np.uint64(0x7F)
        more = lengths[idx] > k + 1
        out[at[idx] + k] = (byte | np.where(more, np.uint64(0x80), np.uint64(0))).astype(_U8)
        idx = idx[more]


def _empty(n: int) -> Ragged:
    return np.zeros(0, dtype=_U8), np.zeros(n + 1, dtype=_I64)


def varints(values: np.ndarray, off: np.ndarray) -> Ragged:
    """The varints of values (as uint64) grouped per message: a packed field's payloads."""
    v = np.asarray(values).astype(_I64, copy=False).view(_U64) if len(values) else np.zeros(0, _U64)
    lengths = _varint_lengths(v)
    ends = np.cumsum(lengths)
    out = np.empty(int(ends[-1]) if len(ends) else 0, dtype=_U8)
    _put_varints(out, ends - lengths, v, lengths)
    byte_off = np.concatenate(([0], ends))[off]
    return out, byte_off


def scalar(tag: int, values: np.ndarray, present: np.ndarray | None = None) -> Ragged:
    """A varint field per message (absent where present is False; default: where non-zero)."""
    v = np.asarray(values).astype(_I64, copy=False).view(_U64)
    if present is None:
        present = v != 0
    n = len(v)
    sel = np.flatnonzero(present)
    lengths = np.zeros(n, dtype=_I64)
    vl = _varint_lengths(v[sel])
    lengths[sel] = 1 + vl
    off = pc.offsets(lengths)
    out = np.empty(int(off[-1]), dtype=_U8)
    out[off[:-1][sel]] = tag << 3
    _put_varints(out, off[:-1][sel] + 1, v[sel], vl)
    return out, off


def delimited(tag: int, payload: Ragged, keep_empty: bool = False) -> Ragged:
    """A length-delimited field per message around each payload (absent if empty, unless
    keep_empty)."""
    data, poff = payload
    plen = np.diff(poff)
    present = plen > 0 if not keep_empty else np.ones(len(plen), dtype=bool)
    sel = np.flatnonzero(present)
    ll = _varint_lengths(plen[sel].astype(_U64))
    lengths = np.zeros(len(plen), dtype=_I64)
    lengths[sel] = 1 + ll + plen[sel]
    off = pc.offsets(lengths)
    out = np.empty(int(off[-1]), dtype=_U8)
    starts = off[:-1][sel]
    out[starts] = (tag << 3) | 2
    _put_varints(out, starts + 1, plen[sel].astype(_U64), ll)
    body = starts + 1 + ll
    if len(data) and not scan.copy_ranges(out, body, data, poff[:-1][sel], plen[sel]):
        out[pc.ranges(body, plen[sel])] = data[pc.ranges(poff[:-1][sel], plen[sel])]
    return out, off


def join(parts: Sequence[Ragged]) -> Ragged:
    """Each message's fields one after another, in the order given."""
    lengths = [np.diff(off) for _, off in parts]
    total = np.sum(lengths, axis=0) if lengths else np.zeros(0, dtype=_I64)
    off = pc.offsets(total)
    out = np.empty(int(off[-1]), dtype=_U8)
    before = off[:-1].copy()
    for (data, _), length in zip(parts, lengths, strict=True):
        if len(data) and not scan.copy_ranges(out, before, data, pc.offsets(length)[:-1], length):
            out[pc.ranges(before, length)] = data
        before += length
    return out, off


def group(items: Ragged, owner_off: np.ndarray) -> Ragged:
    """Items (already in owner order) as one payload per owner: owner j has items
    owner_off[j]:owner_off[j + 1]."""
    data, off = items
    return data, off[owner_off]


def _strings(table: Sequence[bytes]) -> bytes:
    return b"".join(b"\x32" + uvarint(len(s)) + s for s in table)


def _field(tag: int, x: int) -> bytes:
    return b"" if x == 0 else bytes([tag << 3]) + uvarint(x % (1 << 64))


def encode(p: Prof) -> bytes:
    """The profile as protobuf bytes (not compressed)."""
    used, index = compact_strings(p)
    n = p.n_samples
    lab = p.labels
    unit = np.where(lab.unit >= 0, index[np.maximum(lab.unit, 0)], 0)
    label_msgs = join(
        [
            scalar(1, index[lab.key]),
            scalar(2, np.where(lab.numeric, 0, index[lab.text])),
            scalar(3, lab.num),
            scalar(4, np.where(lab.numeric, unit, 0)),
        ]
    )
    label_fields = delimited(3, label_msgs, keep_empty=True)
    owner_off = np.searchsorted(lab.sample, np.arange(n + 1))
    samples = join(
        [
            delimited(1, varints(p.stack_loc + 1, p.stack_off)),
            delimited(2, varints(p.values.reshape(-1), np.arange(n + 1) * p.values.shape[1])),
            group(label_fields, owner_off),
        ]
    )
    n_loc = len(p.loc_mapping)
    lines = join(
        [
            scalar(1, np.where(p.line_func >= 0, p.line_func + 1, 0)),
            scalar(2, p.line_no),
        ]
    )
    locations = join(
        [
            scalar(1, np.arange(1, n_loc + 1)),
            scalar(2, np.where(p.loc_mapping >= 0, p.loc_mapping + 1, 0)),
            scalar(3, p.loc_address.view(_I64)),
            group(delimited(4, lines, keep_empty=True), p.line_off),
            scalar(5, p.loc_folded.astype(_I64)),
        ]
    )
    n_func = len(p.func_start)
    fs = index[p.func_strings] if n_func else np.zeros((0, 3), _I64)
    functions = join(
        [
            scalar(1, np.arange(1, n_func + 1)),
            scalar(2, fs[:, 0]),
            scalar(3, fs[:, 1]),
            scalar(4, fs[:, 2]),
            scalar(5, p.func_start),
        ]
    )
    n_map = len(p.map_start)
    mappings = join(
        [
            scalar(1, np.arange(1, n_map + 1)),
            scalar(2, p.map_start.view(_I64)),
            scalar(3, p.map_limit.view(_I64)),
            scalar(4, p.map_offset.view(_I64)),
            scalar(5, index[p.map_file]),
            scalar(6, index[p.map_build]),
            *(scalar(7 + k, p.map_flags[:, k].astype(_I64)) for k in range(4)),
        ]
    )
    head = b"".join(
        b"\x0a" + uvarint(len(m)) + m
        for m in (_field(1, int(index[t])) + _field(2, int(index[u])) for t, u in p.sample_types)
    )
    pt = _field(1, int(index[p.period_type[0]])) + _field(2, int(index[p.period_type[1]]))
    tail = [
        _field(7, int(index[p.drop_frames])),
        _field(8, int(index[p.keep_frames])),
        _field(9, p.time_nanos),
        _field(10, p.duration_nanos),
        b"\x5a" + uvarint(len(pt)) + pt if pt else b"",
        _field(12, p.period),
    ]
    if p.comments:
        packed = b"".join(uvarint(int(index[c])) for c in p.comments)
        tail.append(b"\x6a" + uvarint(len(packed)) + packed)
    tail.append(b"\x70" + uvarint(int(index[p.default_sample_type])))
    return b"".join(
        [
            head,
            delimited(2, samples, keep_empty=True)[0].tobytes(),
            delimited(3, mappings, keep_empty=True)[0].tobytes(),
            delimited(4, locations, keep_empty=True)[0].tobytes(),
            delimited(5, functions, keep_empty=True)[0].tobytes(),
            _strings(used),
            *tail,
        ]
    )


def compact_strings(p: Prof) -> tuple[list[bytes], np.ndarray]:
    """The strings the profile uses ("" first, then in table order) and each index's new one."""
    lab = p.labels
    refs = [
        np.array([i for vt in p.sample_types for i in vt], dtype=_I64),
        np.array(
            [*p.period_type, *p.comments, p.drop_frames, p.keep_frames, p.default_sample_type],
            dtype=_I64,
        ),
        lab.key,
        lab.text[~lab.numeric],
        lab.unit[lab.numeric & (lab.unit >= 0)],
        p.map_file,
        p.map_build,
        p.func_strings.reshape(-1),
    ]
    used = pc.unique(np.concatenate([np.zeros(1, _I64), *refs]))
    index = np.zeros(len(p.strings), dtype=_I64)
    index[used] = np.arange(len(used))
    return [p.strings[i] for i in used.tolist()], index
