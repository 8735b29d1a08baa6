"""Stage 3 of parse(): google/pprof's rules (postDecode string lookups, CheckValid) in bulk.

`fast_ok` checks every rule on the numpy columns of decode.py and the profile's top level (the
outline); only when it finds a problem, or cannot be sure, does `explain` walk the full message
in Go's order to name the first problem exactly.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from ..errors import BadProfile
from . import columns
from .decode import Columns

_I64 = np.int64


def _in_range(indices: np.ndarray, n_strings: int) -> bool:
    return bool(indices.size == 0 or (indices.min() >= 0 and indices.max() < n_strings))


def _unique_nonzero(ids: np.ndarray) -> bool:
    if ids.size and ids.min() == 0:
        return False
    if bool((ids[1:] > ids[:-1]).all()):
        return True  # increasing (Go writes 1..n): no sort needed
    return bool(columns.unique(ids).size == ids.size)


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


def fast_ok(message: Any, tables: Columns) -> bool:
    """Whether every pprof rule holds; False also when unsure (then `explain` decides).
    message: the outline (or the full message): only its top-level fields are read."""
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
    if (tables.n_values != n_types).any():
        return False
    location_ids = tables.defined_locations
    function_ids = tables.defined_functions
    mapping_ids = tables.defined_mappings
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
