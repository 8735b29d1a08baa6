"""google/pprof's rules (postDecode string lookups, CheckValid), checked in bulk with numpy.

`Tables.extract` decodes each level of the profile (samples, labels, locations, lines, ...) from
the raw bytes as one flat message per level, which gives numpy arrays without a Python loop per
sample, and notices anything upb read differently from Go (unknown fields, a repeated time_nanos
or period_type). `fast_ok` checks every rule on those arrays; only when it finds a problem, or
cannot be sure, does `explain` walk the profile in Go's order to name the first problem exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
from google.protobuf.unknown_fields import UnknownFieldSet

from .errors import BadProfile
from .pprof_schema import ALL, LABELS_ALL, LABELS_SHALLOW, SHALLOW
from .pprof_wire import GO_FIELDS

_U64 = np.uint64
_I64 = np.int64
# Beyond this many fields in one sample, the vectorized sample walk hands over to Python.
_MAX_ROUNDS = 24


def _go_reads_same(message: Any, kind: str) -> bool:
    """Whether upb's unknown fields at this level are all fields Go skips too.

    A field number google/pprof knows, found among the unknown fields, came with a wire type
    upb refused for it: Go stops with "type mismatch" there, so upb's reading is not Go's.
    """
    unknown = UnknownFieldSet(message)
    if len(unknown) == 0:
        return True
    known = GO_FIELDS[kind]
    # Groups (wire types 3 and 4) are kept by upb but are an error for Go, even when skipped.
    return not any(f.field_number in known or f.wire_type in (3, 4) for f in unknown)


def _ids(items: Iterable[Any], n: int) -> np.ndarray:
    return np.fromiter(map(attrgetter("id"), items), _U64, count=n)


def _joined(kind: str, payloads: Sequence[bytes]) -> tuple[Any, Any]:
    """All payloads of one message kind decoded as one message: shallow (exact) and all-repeated."""
    data = b"".join(payloads)
    return SHALLOW[kind].FromString(data), ALL[kind].FromString(data)


def _one_each(payloads: Sequence[bytes], tag: int, found: int) -> bool:
    """Whether each payload holds exactly one field `tag`: each starts with it, and no extras."""
    if found != len(payloads):
        return False
    if not payloads:
        return True
    lengths = np.fromiter(map(len, payloads), _I64, count=len(payloads))
    if not lengths.all():
        return False
    starts = np.cumsum(lengths) - lengths
    return bool((np.frombuffer(b"".join(payloads), np.uint8)[starts] == tag).all())


@dataclass
class Tables:
    """Flat arrays over the whole profile; `exact_*` False means the array may hold extras."""

    location_ids: np.ndarray  # every Sample.location_id, sample after sample
    values: np.ndarray  # every Sample.value, sample after sample
    n_values: np.ndarray | None  # values per sample (None: count them from the message)
    n_locations: np.ndarray | None  # location ids per sample
    label_key: np.ndarray
    label_str: np.ndarray
    label_unit: np.ndarray
    mapping_strings: np.ndarray
    function_strings: np.ndarray
    line_function_ids: np.ndarray
    lines_exact: bool  # line_function_ids holds exactly one function id per line, in order
    has_unknown: bool  # the message holds unknown fields (all of them ones Go skips)

    @classmethod
    def extract(cls, raw: bytes, message: Any) -> Tables | None:
        """The flat arrays, or None when upb's reading may differ from Go's (see pprof_wire)."""
        top = SHALLOW["Profile"].FromString(raw)
        if not (_go_reads_same(top, "Profile") and _go_reads_same(message, "Profile")):
            return None
        if len(top.time_nanos) > 1:
            return None
        if len(top.period_type) > 1:
            return None
        value_types = SHALLOW["ValueType"].FromString(
            b"".join(top.sample_type) + b"".join(top.period_type)
        )
        samples_raw = b"".join(top.sample)
        # Every label of every sample merged into one Label, as if their payloads were joined.
        samples = LABELS_SHALLOW["Sample"].FromString(samples_raw)
        labels = samples.label
        labels_all = LABELS_ALL["Sample"].FromString(samples_raw).label
        mappings, mappings_all = _joined("Mapping", top.mapping)
        functions, functions_all = _joined("Function", top.function)
        locations = SHALLOW["Location"].FromString(b"".join(top.location))
        lines, lines_all = _joined("Line", locations.line)
        levels = {
            "ValueType": value_types,
            "Sample": samples,
            "Label": labels,
            "Mapping": mappings,
            "Function": functions,
            "Location": locations,
            "Line": lines,
        }
        if not all(_go_reads_same(level, kind) for kind, level in levels.items()):
            return None
        has_unknown = any(len(UnknownFieldSet(level)) for level in (top, message, *levels.values()))
        line_fids = np.array(lines_all.function_id, dtype=_U64)
        location_ids = np.array(samples.location_id, dtype=_U64)
        values = np.array(samples.value, dtype=_I64)
        counts = _sample_counts(samples_raw, top.sample, (len(location_ids), len(values)))
        return cls(
            location_ids=location_ids,
            values=values,
            n_values=counts[1] if counts else None,
            n_locations=counts[0] if counts else None,
            label_key=np.array(labels_all.key, dtype=_I64),
            label_str=np.array(labels_all.str, dtype=_I64),
            label_unit=np.array(labels_all.num_unit, dtype=_I64),
            mapping_strings=np.array([*mappings_all.filename, *mappings_all.build_id], dtype=_I64),
            function_strings=np.array(
                [*functions_all.name, *functions_all.system_name, *functions_all.filename],
                dtype=_I64,
            ),
            line_function_ids=line_fids,
            lines_exact=_one_each(locations.line, 0x08, len(line_fids)),
            has_unknown=has_unknown,
        )


def _sample_counts(
    data: bytes, payloads: Sequence[bytes], totals: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray] | None:
    """Location ids and values per sample, by walking all samples' fields at once in numpy.

    Every field of a clean sample is location_id (1) or value (2), packed or not, or a label (3),
    so each round reads one tag and skips one field in every sample still being walked. The walk
    stops as soon as the counts add up to totals (all location ids and values, as decoded):
    nothing left can be one of them, so labels after them need no rounds. None if a tag is not
    one byte or a sample has too many fields: the caller then counts in Python.
    """
    n = len(payloads)
    lengths = np.fromiter(map(len, payloads), _I64, count=n)
    ends = np.cumsum(lengths)
    pos = ends - lengths
    buf = np.frombuffer(data + bytes(11), np.uint8)  # padding: varint reads may look past the end
    # ends_before[k]: varints ending before byte k, to count the values in a packed run.
    ends_before = np.zeros(buf.size + 1, np.int32)
    np.cumsum(buf < 0x80, out=ends_before[1:])
    counts = np.zeros((3, n), _I64)
    found_ids = found_values = 0
    active = np.flatnonzero(pos < ends)
    for _ in range(_MAX_ROUNDS):
        if active.size == 0 or (found_ids, found_values) == totals:
            return counts[1], counts[2]
        at = pos[active]
        tag = buf[at]
        if (tag >= 0x80).any():
            return None
        field, wire = tag >> 3, tag & 7
        packed = wire == 2
        # The varint after the tag (a value, or a packed run's length): its last byte and, for
        # lengths (they fit in 5 bytes), its value. Each step reads on only for the longer ones.
        last = at + 1
        byte = buf[last]
        size = (byte & 0x7F).astype(_I64)
        going = np.flatnonzero(byte >= 0x80)
        for k in range(1, 10):
            if going.size == 0:
                break
            last[going] += 1
            byte = buf[last[going]]
            if k < 5:
                size[going] |= (byte & 0x7F).astype(_I64) << (7 * k)
            going = going[byte >= 0x80]
        if going.size:
            return None
        data_end = np.where(packed, last + 1 + size, last + 1)
        # Unknown fields Go skips may be fixed64 (wire type 1) or fixed32 (5).
        data_end = np.where(wire == 1, at + 9, np.where(wire == 5, at + 5, data_end))
        found = np.where(packed, ends_before[data_end] - ends_before[last + 1], 1)
        found = np.where(field < 3, found, 0)
        # Each sample is walked once per round, so plain fancy indexing adds without collisions.
        counts[np.minimum(field, 2), active] += found
        found_ids += int(found[field == 1].sum())
        found_values += int(found[field == 2].sum())
        pos[active] = data_end
        active = active[data_end < ends[active]]
    return None


def _in_range(indices: np.ndarray, n_strings: int) -> bool:
    return bool(indices.size == 0 or (indices.min() >= 0 and indices.max() < n_strings))


def _unique_nonzero(ids: np.ndarray) -> bool:
    return bool(not (ids == 0).any() and np.unique(ids).size == ids.size)


def _all_in(values: np.ndarray, ids: np.ndarray) -> bool:
    """Whether every value is one of ids (uint64 arrays)."""
    if values.size == 0:
        return True
    if ids.size == 0:
        return False
    lo, hi = ids.min(), ids.max()
    if values.min() < lo or values.max() > hi:
        return False
    if int(hi - lo) + 1 == ids.size and bool((ids[1:] > ids[:-1]).all()):
        return True  # ids lo, lo + 1, ..., hi in order (Go writes 1..n): every value is one
    if int(hi - lo) < 8 * ids.size + 65536:
        # Ids are usually 1..n: a lookup table beats a binary search per value by far.
        table = np.zeros(int(hi - lo) + 1, bool)
        table[ids - lo] = True
        return bool(table[values - lo].all())
    ids = np.unique(ids)
    values = np.unique(values)
    return bool((ids[np.minimum(np.searchsorted(ids, values), ids.size - 1)] == values).all())


def fast_ok(message: Any, tables: Tables) -> bool:
    """Whether every pprof rule holds; False also when unsure (then `explain` decides)."""
    n_strings = len(message.string_table)
    if n_strings == 0 or message.string_table[0] != b"":
        return False
    n_types = len(message.sample_type)
    n_samples = len(message.sample)
    scalar_strings = np.array(
        [
            *(i for st in message.sample_type for i in (st.type, st.unit)),
            message.drop_frames,
            message.keep_frames,
            message.period_type.type,
            message.period_type.unit,
            *message.comment,
            message.default_sample_type,
        ],
        dtype=_I64,
    )
    if not all(
        _in_range(a, n_strings)
        for a in (
            scalar_strings,
            tables.mapping_strings,
            tables.function_strings,
            tables.label_key,
            tables.label_str,
            tables.label_unit,
        )
    ):
        return False
    if n_types == 0 and n_samples:
        return False
    n_values = tables.n_values
    if n_values is None:
        n_values = np.fromiter(map(len, map(attrgetter("value"), message.sample)), _I64, n_samples)
    if (n_values != n_types).any():
        return False
    location_ids = _ids(message.location, len(message.location))
    function_ids = _ids(message.function, len(message.function))
    mapping_ids = _ids(message.mapping, len(message.mapping))
    return (
        _all_in(tables.location_ids, location_ids)
        and _unique_nonzero(mapping_ids)
        and _unique_nonzero(function_ids)
        and _unique_nonzero(location_ids)
        and tables.lines_exact
        and not (tables.line_function_ids == 0).any()
        and _all_in(tables.line_function_ids, function_ids)
    )


def _string_checks(message: Any) -> Iterable[tuple[int, str]]:
    """Every string index google/pprof's postDecode looks up, in its order, with what it names."""
    for m in message.mapping:
        yield m.filename, f"mapping {m.id}'s filename"
        yield m.build_id, f"mapping {m.id}'s build_id"
    for f in message.function:
        yield f.name, f"function {f.id}'s name"
        yield f.system_name, f"function {f.id}'s system_name"
        yield f.filename, f"function {f.id}'s filename"
    for i, st in enumerate(message.sample_type):
        yield st.type, f"sample_type {i}'s type"
        yield st.unit, f"sample_type {i}'s unit"
    for i, s in enumerate(message.sample):
        for label in s.label:
            yield label.key, f"a label key of sample {i}"
            if label.str != 0:
                yield label.str, f"a label value of sample {i}"
            elif label.num_unit != 0:
                yield label.num_unit, f"a label unit of sample {i}"
    yield message.drop_frames, "drop_frames"
    yield message.keep_frames, "keep_frames"
    yield message.period_type.type, "period_type's type"
    yield message.period_type.unit, "period_type's unit"
    for c in message.comment:
        yield c, "a comment"
    yield message.default_sample_type, "default_sample_type"


def _id_rules(items: Any, what: str) -> set[int]:
    """CheckValid's id rules for mappings, functions or locations; returns the ids."""
    seen: set[int] = set()
    for index, item in enumerate(items):
        if item.id == 0:
            raise BadProfile(
                f"{what} number {index + 1} in the file has id 0, which is reserved "
                "(ids start at 1)"
            )
        if item.id in seen:
            raise BadProfile(f"two {what}s have the same id {item.id}")
        seen.add(item.id)
    return seen


def explain(message: Any) -> None:
    """Raise BadProfile naming the first problem google/pprof reports; return if there is none."""
    table = message.string_table
    if table and table[0] != b"":
        raise BadProfile(
            "string_table[0] must be the empty string, but it is "
            f"{table[0][:40].decode('utf-8', 'replace')!r}"
        )
    n_strings = len(table)
    parts = (message.sample_type, message.sample, message.location, message.function)
    if n_strings == 0 and not any(parts):
        raise BadProfile(
            "this is not a pprof profile: it holds no profile data (no string table, sample "
            "types, samples, locations or functions)"
        )
    for index, what in _string_checks(message):
        if not 0 <= index < n_strings:
            if n_strings == 0:
                raise BadProfile(
                    f"the string table is empty, so {what} (string index {index}) cannot be "
                    "resolved (a pprof profile's string table starts with an empty string; "
                    "Go writes it near the end, so a truncated file often lacks it)"
                )
            raise BadProfile(
                f"string index {index} out of range (the string table has {n_strings} entries) "
                f"in {what}"
            )
    n_types = len(message.sample_type)
    if n_types == 0 and len(message.sample):
        raise BadProfile(
            f"the profile has {len(message.sample)} samples but no sample types (sample_type)"
        )
    location_ids = {loc.id for loc in message.location}
    for i, s in enumerate(message.sample):
        if len(s.value) != n_types:
            raise BadProfile(
                f"sample {i} has {len(s.value)} value{'s' if len(s.value) != 1 else ''}, but "
                f"the profile has {n_types} sample types: each sample needs one value per "
                "sample type"
            )
        for lid in s.location_id:
            if lid not in location_ids:
                raise BadProfile(f"sample {i} refers to location {lid}, which is not defined")
    _id_rules(message.mapping, "mapping")
    function_ids = _id_rules(message.function, "function")
    _id_rules(message.location, "location")
    for loc in message.location:
        for line in loc.line:
            if line.function_id == 0:
                raise BadProfile(f"location {loc.id} has a line with no function (function_id 0)")
            if line.function_id not in function_ids:
                raise BadProfile(
                    f"location {loc.id} has a line that refers to function {line.function_id}, "
                    "which is not defined"
                )
