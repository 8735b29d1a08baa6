"""Stage 2 of parse(): bytes -> the profile's outline and flat numpy columns, read as Go reads.

The compiled core (scan.py) reads nearly every profile in one pass, and upb then decodes only
the outline (schema.OUTLINE: no samples); the full message is decoded when something asks for
it (ParsedProfile.message). Files it leaves aside, and every file when it was not built, take
the pure-Python path with the same results: upb decodes the whole profile; `Columns.extract`
then decodes each level (samples, labels, locations, lines, ...) from the raw bytes as one flat
message per level, which gives numpy arrays without a Python loop per sample, and notices
anything upb read differently from Go (unknown fields Go would refuse, a repeated time_nanos or
period_type). Only then is the input re-read by wire.sanitize, an exact copy of Go's decoder,
and decoded again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError
from google.protobuf.unknown_fields import UnknownFieldSet

from ..errors import BadProfile
from . import scan
from .elements import Elements, scanned_labels
from .inflate import human_size
from .limits import NO_LIMITS, Limits
from .schema import ALL, FULL, LABELS_ALL, LABELS_SHALLOW, OUTLINE, SHALLOW
from .wire import GO_FIELDS, ConcatenatedProfiles, WireError, sanitize

_U64 = np.uint64
_I64 = np.int64
# Beyond this many fields in one sample, the vectorized sample walk hands over to Python.
_MAX_ROUNDS = 24
# The exact pure-Python decoder (wire.py) runs at about 5-10 MB/s: past this size an upload
# that needs it is refused rather than tying up a worker for many seconds.
MAX_EXACT_BYTES = 16 * 1024 * 1024


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


def _ids(items: Iterable[Any], n: int) -> np.ndarray:
    return np.fromiter(map(attrgetter("id"), items), _U64, count=n)


@dataclass
class Columns:
    """Flat arrays over the whole profile, for rules.py. The string indices may hold extras
    (every occurrence of a field given twice): a range check on them can only be unsure."""

    location_ids: np.ndarray  # every Sample.location_id, sample after sample
    values: np.ndarray  # every Sample.value, sample after sample
    n_values: np.ndarray  # values per sample
    n_locations: np.ndarray  # location ids per sample
    label_key: np.ndarray  # string indices of labels
    label_str: np.ndarray
    label_unit: np.ndarray
    mapping_strings: np.ndarray  # string indices of mappings
    function_strings: np.ndarray  # string indices of functions
    line_function_ids: np.ndarray
    lines_exact: bool  # line_function_ids holds exactly one function id per line, in order
    has_unknown: bool  # the message holds unknown fields (all of them ones Go skips)
    defined_locations: np.ndarray  # Location.id of each location (uint64), as Go reads it
    defined_functions: np.ndarray  # Function.id of each function
    defined_mappings: np.ndarray  # Mapping.id of each mapping
    # Every label as (sample, key, str, num, num_unit) in file order, exactly as Go reads it:
    # from the compiled core only (a singular field given twice leaves the file to Python).
    labels: tuple[np.ndarray, ...] | None = None
    elements: Elements | None = None  # from the compiled core only, as labels

    @classmethod
    def scanned(cls, raw: bytes, limits: Limits = NO_LIMITS) -> Columns | None:
        """The columns as the compiled core reads them; None when it leaves raw to extract()
        (or was not built). TooLarge past a limit, before any array is allocated."""
        counts = scan.counts(raw)
        if counts is None:
            return None
        for what in ("samples", "locations", "functions", "mappings", "strings"):
            limits.check(what, counts[what])
        limits.check("frames", counts["ids"])
        limits.check("labels", counts["label_keys"])
        a = scan.fill(raw, counts)
        return cls(
            location_ids=a["location_ids"],
            values=a["values"].view(_I64),
            n_values=a["sample_values"].view(_I64),
            n_locations=a["sample_ids"].view(_I64),
            label_key=a["label_key"].view(_I64),
            label_str=a["label_str"].view(_I64),
            label_unit=a["label_unit"].view(_I64),
            mapping_strings=a["mapping_names"].view(_I64),
            function_strings=a["function_names"].view(_I64),
            line_function_ids=a["line_function"],
            lines_exact=True,  # one function_id per line (0 when absent, as Go reads it)
            has_unknown=counts["unknown"] > 0,
            defined_locations=a["loc_id"],
            defined_functions=a["function_id"],
            defined_mappings=a["mapping_id"],
            labels=scanned_labels(a) if counts["label_keys"] else (np.zeros(0, _I64),) * 5,
            elements=Elements.scanned(a),
        )

    @classmethod
    def extract(
        cls, raw: bytes, message: Any, top: Any = None, limits: Limits = NO_LIMITS
    ) -> Columns | None:
        """The flat arrays, or None when upb's reading may differ from Go's (see wire.py).
        top is raw's shallow decoding, if the caller has it already."""
        if top is None:
            top = shallow(raw, limits)
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
        limits.check("frames", len(samples.location_id))
        labels = samples.label
        labels_all = LABELS_ALL["Sample"].FromString(samples_raw).label
        limits.check("labels", len(labels_all.key))
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
        if counts is None:
            counts = (
                np.fromiter(map(len, map(attrgetter("location_id"), message.sample)), _I64),
                np.fromiter(map(len, map(attrgetter("value"), message.sample)), _I64),
            )
        return cls(
            location_ids=location_ids,
            values=values,
            n_values=counts[1],
            n_locations=counts[0],
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
            defined_locations=_ids(message.location, len(message.location)),
            defined_functions=_ids(message.function, len(message.function)),
            defined_mappings=_ids(message.mapping, len(message.mapping)),
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


def _out_of_memory(exc: DecodeError) -> bool:
    """upb reports an allocation that failed (under the compute tier's memory limit) this way."""
    return "alloc failed" in str(exc)


def shallow(raw: bytes, limits: Limits = NO_LIMITS) -> Any:
    """The top level of the profile, each element kept as bytes, with its counts checked; None
    if upb cannot read it. A failed allocation is a MemoryError, not a malformed file."""
    try:
        top = SHALLOW["Profile"].FromString(raw)
    except DecodeError as exc:
        if _out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        return None
    for what, items in (
        ("samples", top.sample),
        ("locations", top.location),
        ("functions", top.function),
        ("mappings", top.mapping),
        ("strings", top.string_table),
    ):
        limits.check(what, len(items))
    return top


@dataclass
class Decoded:
    """What decode() read: the outline and the columns, and the message if it was decoded."""

    outline: Any  # schema.OUTLINE: the top level, samples, locations and functions as bytes
    tables: Columns
    message: Any | None  # schema.FULL; None: decode it from raw when needed (full_message)


def _fromstring(kind: dict[str, type], data: bytes) -> Any:
    try:
        return kind["Profile"].FromString(data)
    except DecodeError as exc:
        if _out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        raise


def full_message(raw: bytes, has_unknown: bool) -> Any:
    """The message of bytes that decode() read with the compiled core (upb reads them as Go)."""
    message = _fromstring(FULL, raw)
    if has_unknown:
        message.DiscardUnknownFields()  # fields Go skips: drop them, as Go does
    return message


def message_of(outline: Any) -> Any:
    """The full message of a ParsedProfile's outline (its payloads are what Go read)."""
    message = _fromstring(FULL, outline.SerializeToString())
    message.DiscardUnknownFields()  # fields Go skips, inside the payloads
    return message


def _outline(data: bytes, has_unknown: bool) -> Any:
    outline = _fromstring(OUTLINE, data)
    if has_unknown:
        outline.DiscardUnknownFields()
    return outline


def decode(raw: bytes, limits: Limits = NO_LIMITS) -> Decoded:
    """The outline and flat columns, read as Go reads them (wire.sanitize where upb differs);
    TooLarge past one of limits, before the costly decoding."""
    tables = Columns.scanned(raw, limits)
    if tables is not None:
        with contextlib.suppress(DecodeError):  # cannot happen (scan.c reads as upb): go on
            return Decoded(_outline(raw, tables.has_unknown), tables, None)
    message, tables, source = _decode_python(raw, limits)
    return Decoded(_outline(source, tables.has_unknown), tables, message)


def _decode_python(raw: bytes, limits: Limits) -> tuple[Any, Columns, bytes]:
    """The message, its columns and the bytes they were read from (raw, or what Go reads)."""
    top = shallow(raw, limits)
    try:
        message = FULL["Profile"].FromString(raw)
        tables = Columns.extract(raw, message, top, limits)
    except DecodeError as exc:
        if _out_of_memory(exc):
            raise MemoryError(str(exc)) from None
        tables = None
    if tables is not None:
        if tables.has_unknown:
            message.DiscardUnknownFields()  # fields Go skips: drop them, as Go does
        return message, tables, raw
    if len(raw) > MAX_EXACT_BYTES:
        raise BadProfile(
            "this profile is malformed or unusually encoded (e.g. field number 0, wire types "
            "pprof rejects, or data cut off), and pprof-share checks such files only up to "
            f"{human_size(MAX_EXACT_BYTES)}: if pprof reads it, `go tool pprof -proto FILE > "
            "fixed.pb.gz` re-encodes it"
        )
    try:
        clean = sanitize(raw)
    except ConcatenatedProfiles:
        raise BadProfile(
            "this holds several profiles concatenated (time_nanos appears twice): upload them "
            "one at a time, or merge them: `go tool pprof -proto a.pb.gz b.pb.gz > merged.pb.gz`"
        ) from None
    except WireError as err:
        # A field that runs past the end, late in the file, is what a cut-off download looks like.
        late = err.pos >= len(raw) // 2
        ran_out = err.reason in ("too much data", "not enough data", "bad varint")
        if not err.where and late and ran_out:
            raise BadProfile(
                f"the profile is truncated: the protobuf data ends in the middle of a field "
                f"({err}); upload the complete file"
            ) from None
        raise BadProfile(f"this is not a pprof profile: malformed protobuf ({err})") from None
    message = FULL["Profile"].FromString(clean)
    tables = Columns.extract(clean, message, limits=limits)
    if tables is None:  # cannot happen: sanitize writes only what upb reads as Go does
        raise AssertionError("re-encoded profile still differs from Go's reading")
    return message, tables, clean
