"""An exact, pure-Python copy of google/pprof's protobuf decoder, for inputs upb reads differently.

google/pprof decodes profiles with its own small decoder (profile/proto.go, encode.go). It agrees
with upb on ordinary profiles but not on odd ones: it skips field number 0, reports a known field
sent with the wrong wire type as "type mismatch" (upb keeps it as an unknown field), fails on a
second non-zero time_nanos ("concatenated profiles"), and replaces period_type when it is
repeated (upb merges). `sanitize` walks the bytes exactly as Go does and re-encodes what Go would
have read, so upb decodes the result into the same profile; packed arrays are copied as they are.
"""

from __future__ import annotations

import re
import struct

_MASK64 = (1 << 64) - 1
# Ten or more bytes with the continuation bit set: a varint Go refuses ("bad varint").
_LONG_VARINT = re.compile(rb"[\x80-\xff]{10}")


class WireError(Exception):
    """Go's decoder would stop here; the message says where and why."""

    def __init__(self, reason: str, pos: int, where: str) -> None:
        super().__init__(f"{reason} at byte {pos}{where}")
        self.reason = reason
        self.pos = pos
        self.where = where


class ConcatenatedProfiles(Exception):
    """time_nanos appeared again after a non-zero value: Go's errConcatProfile."""


# Per message: field number -> (kind, child message or None). Kinds: "msg" repeated message,
# "msg1" singular message that a repeat replaces, "i64"/"u64"/"bool" singular varints,
# "list" repeated varints (packed or not), "bytes" repeated bytes, "extra" a field google/pprof
# does not know (skipped by Go) that upb does: kept when it is a varint, else dropped.
_SCHEMA: dict[str, dict[int, tuple[str, str | None]]] = {
    "Profile": {
        1: ("msg", "ValueType"),
        2: ("msg", "Sample"),
        3: ("msg", "Mapping"),
        4: ("msg", "Location"),
        5: ("msg", "Function"),
        6: ("bytes", None),
        7: ("i64", None),
        8: ("i64", None),
        9: ("i64", None),
        10: ("i64", None),
        11: ("msg1", "ValueType"),
        12: ("i64", None),
        13: ("list", None),
        14: ("i64", None),
        15: ("extra", None),
    },
    "ValueType": {1: ("i64", None), 2: ("i64", None)},
    "Sample": {1: ("list", None), 2: ("list", None), 3: ("msg", "Label")},
    "Label": {1: ("i64", None), 2: ("i64", None), 3: ("i64", None), 4: ("i64", None)},
    "Mapping": {
        **{n: ("u64", None) for n in (1, 2, 3, 4)},
        5: ("i64", None),
        6: ("i64", None),
        **{n: ("bool", None) for n in (7, 8, 9, 10)},
    },
    "Location": {
        1: ("u64", None),
        2: ("u64", None),
        3: ("u64", None),
        4: ("msg", "Line"),
        5: ("bool", None),
    },
    "Line": {1: ("u64", None), 2: ("i64", None), 3: ("extra", None)},
    "Function": {1: ("u64", None), **{n: ("i64", None) for n in (2, 3, 4, 5)}},
}
_TIME_NANOS = 9
# How error messages name a nested message: by the field that holds it.
_NAMES = {
    (1, "Profile"): "sample_type",
    (2, "Profile"): "sample",
    (3, "Profile"): "mapping",
    (4, "Profile"): "location",
    (5, "Profile"): "function",
    (11, "Profile"): "period_type",
    (3, "Sample"): "label",
    (4, "Location"): "line",
}


# Field numbers google/pprof decodes, per message: an unknown field with one of these numbers
# was sent with the wrong wire type; any other unknown field is skipped by Go as well.
GO_FIELDS = {
    kind: frozenset(n for n, (what, _) in fields.items() if what != "extra")
    for kind, fields in _SCHEMA.items()
}
_ZERO_FIELDS = re.compile(rb"(?:\x00[\x00-\x7f])+")


def uvarint(x: int) -> bytes:
    """x as a protobuf varint (the encoders here and in analysis.encode write them)."""
    out = bytearray()
    while x >= 0x80:
        out.append((x & 0x7F) | 0x80)
        x >>= 7
    out.append(x)
    return bytes(out)


def _varint(data: bytes, i: int, end: int, where: str) -> tuple[int, int]:
    """Go's decodeVarint: at most 10 bytes, bits past 64 dropped."""
    result = 0
    shift = 0
    start = i
    while i < end and i - start < 10:
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, i
        shift += 7
    raise WireError("bad varint", start, where)


def _check_packed(data: bytes, start: int, end: int, where: str) -> None:
    """A packed run is valid for Go when every varint ends within it and none is too long."""
    if start < end and data[end - 1] >= 0x80:
        raise WireError("bad varint", end - 1, where)
    bad = _LONG_VARINT.search(data, start, end)
    if bad:
        raise WireError("bad varint", bad.start(), where)


def _walk(data: bytes, start: int, end: int, kind: str, where: str) -> bytes:
    """Re-encode one message of the given kind as Go reads it; raise WireError where Go fails."""
    schema = _SCHEMA[kind]
    out: list[bytes] = []
    last: dict[int, bytes] = {}  # singular fields: the last value wins, written once at the end
    time_nanos = 0
    counts: dict[int, int] = {}
    i = start
    while i < end:
        if data[i] == 0:
            # Field 0 with one-byte values (a run of zero bytes, say): skipped by Go, and by
            # us in one regex step rather than a Python loop per pair.
            run = _ZERO_FIELDS.match(data, i, end)
            if run:
                i = run.end()
                continue
        key_pos = i
        key, i = _varint(data, i, end, where)
        field, wire = key >> 3, key & 7
        value = 0
        if wire == 0:
            value, i = _varint(data, i, end, where)
        elif wire == 1:
            if end - i < 8:
                raise WireError("not enough data", i, where)
            value = struct.unpack_from("<Q", data, i)[0]
            i += 8
        elif wire == 2:
            size, i = _varint(data, i, end, where)
            if size > end - i:
                raise WireError("too much data", i, where)
            value = i
            i += size
        elif wire == 5:
            if end - i < 4:
                raise WireError("not enough data", i, where)
            value = struct.unpack_from("<I", data, i)[0]
            i += 4
        else:
            raise WireError(f"unknown wire type {wire}", key_pos, where)
        spec = schema.get(field)
        if spec is None:
            continue  # unknown field (field number 0 included): Go skips it
        what, child = spec
        if kind == "Profile" and field == _TIME_NANOS and time_nanos != 0:
            raise ConcatenatedProfiles()
        if what == "extra":
            if wire == 0:
                last[field] = uvarint(field << 3) + uvarint(value)
            continue
        if what in ("msg", "msg1", "bytes"):
            if wire != 2:
                raise WireError(f"type mismatch in field {field}", key_pos, where)
            n = counts[field] = counts.get(field, 0) + 1
            if what == "bytes":
                payload = data[value:i]
            else:
                inner = f" in {_NAMES[field, kind]} {n - 1}" + (f" of{where[3:]}" if where else "")
                payload = _walk(data, value, i, child or "", inner)
            record = uvarint(field << 3 | 2) + uvarint(len(payload)) + payload
            if what == "msg1":
                last[field] = record  # Go allocates a fresh message: no merging
            else:
                out.append(record)
        elif what == "list":
            if wire == 2:
                _check_packed(data, value, i, where)
                out.append(uvarint(field << 3 | 2) + uvarint(i - value) + data[value:i])
            elif wire == 0:
                out.append(uvarint(field << 3) + uvarint(value))
            else:
                raise WireError(f"type mismatch in field {field}", key_pos, where)
        else:
            if wire != 0:
                raise WireError(f"type mismatch in field {field}", key_pos, where)
            if what == "bool":
                value = 1 if value else 0
            if kind == "Profile" and field == _TIME_NANOS:
                time_nanos = value
            last[field] = uvarint(field << 3) + uvarint(value)
    out.extend(last.values())
    return b"".join(out)


def sanitize(data: bytes) -> bytes:
    """Profile bytes as Go's decoder understands them, re-encoded for upb.

    Raises WireError (malformed protobuf, with Go's reason) or ConcatenatedProfiles. The
    string_table[0] rule is left to the caller, which sees the decoded table.
    """
    return _walk(data, 0, len(data), "Profile", "")
