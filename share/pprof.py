"""Bytes -> validated pprof profile, accepting exactly what google/pprof's profile.ParseData does.

parse() gunzips (every member, within the size limit), decodes with protobuf's upb backend and
checks pprof's rules in bulk (pprof_check). Inputs upb would read differently from Go's own
decoder go through an exact copy of it first (pprof_wire). Legacy text and binary formats that
only pprof's legacy parsers read are refused, with a message saying how to get a protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from google.protobuf.message import DecodeError

from .errors import BadProfile
from .pprof_check import Tables, explain, fast_ok
from .pprof_gzip import GZIP_MAGIC, gunzip, human_size, too_large
from .pprof_schema import FULL
from .pprof_sniff import describe
from .pprof_wire import ConcatenatedProfiles, WireError, sanitize

__all__ = ["ParsedProfile", "parse"]

# The exact pure-Python decoder (pprof_wire) runs at about 5-10 MB/s: past this size an upload
# that needs it is refused rather than tying up a worker for many seconds.
MAX_EXACT_BYTES = 16 * 1024 * 1024


@dataclass(eq=False)
class ParsedProfile:
    """A profile google/pprof accepts, decoded, with its string table as text."""

    raw: bytes  # decompressed protobuf bytes, exactly as uploaded (hashed for the id)
    message: Any  # profile.proto's fields; string_table holds bytes: use .strings / .string()
    strings: list[str]  # the string table decoded as UTF-8 (invalid bytes become U+FFFD)
    was_gzip: bool  # the upload was gzip-compressed
    # Every sample's location ids, one sample after another, leaf first; sample i's are
    # location_ids[location_offsets[i]:location_offsets[i + 1]].
    location_ids: np.ndarray = field(repr=False)
    location_offsets: np.ndarray = field(repr=False)
    # values[i, j] is sample i's value for sample type j (int64, shape n_samples x n_types).
    values: np.ndarray = field(repr=False)

    def string(self, index: int) -> str:
        """strings[index], or "" for an index outside the table (e.g. doc_url pprof ignores)."""
        return self.strings[index] if 0 <= index < len(self.strings) else ""

    def sample_types(self) -> list[tuple[str, str]]:
        """(type, unit) per sample value, e.g. [("samples", "count"), ("cpu", "nanoseconds")]."""
        return [(self.string(st.type), self.string(st.unit)) for st in self.message.sample_type]

    def default_sample_type(self) -> str | None:
        """The type named by default_sample_type if it is one of the sample types, else None."""
        name = self.string(self.message.default_sample_type)
        return name if name and any(name == t for t, _ in self.sample_types()) else None

    def default_sample_index(self) -> int:
        """Index of the sample type to show first: the default one, else the last (as pprof)."""
        name = self.default_sample_type()
        types = [t for t, _ in self.sample_types()]
        return types.index(name) if name else max(len(types) - 1, 0)

    @property
    def n_samples(self) -> int:
        """Number of samples."""
        return len(self.message.sample)

    @property
    def n_locations(self) -> int:
        """Number of locations."""
        return len(self.message.location)

    @property
    def n_functions(self) -> int:
        """Number of functions."""
        return len(self.message.function)

    @property
    def n_mappings(self) -> int:
        """Number of mappings."""
        return len(self.message.mapping)


def _decode(raw: bytes) -> tuple[Any, Tables]:
    """The message and its flat tables, decoded as Go decodes (via pprof_wire when upb differs)."""
    try:
        message = FULL["Profile"].FromString(raw)
        tables = Tables.extract(raw, message)
    except DecodeError:
        tables = None
    if tables is not None:
        if tables.has_unknown:
            message.DiscardUnknownFields()  # fields Go skips: drop them, as Go does
        return message, tables
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
    tables = Tables.extract(clean, message)
    if tables is None:  # cannot happen: sanitize writes only what upb reads as Go does
        raise AssertionError("re-encoded profile still differs from Go's reading")
    return message, tables


def _stacks(message: Any, tables: Tables) -> np.ndarray:
    """Offsets of each sample's location ids in tables.location_ids."""
    counts = tables.n_locations
    if counts is None:
        counts = np.fromiter((len(s.location_id) for s in message.sample), np.int64)
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def parse(data: bytes, *, max_profile_bytes: int) -> ParsedProfile:
    """Gunzip (if gzip) within the limit, decode, validate exactly as google/pprof's
    profile.ParseData (+CheckValid). Raises share.errors.BadProfile (400) with a message a user
    can act on, or share.errors.TooLarge (413) naming the limit."""
    data = bytes(data)
    was_gzip = data[:2] == GZIP_MAGIC
    if was_gzip:
        raw = gunzip(data, max_profile_bytes)
        if not raw:
            raise BadProfile("empty file: the gzip data decompresses to nothing")
    elif len(data) > max_profile_bytes:
        raise too_large(max_profile_bytes)
    else:
        raw = data
    if not raw:
        raise BadProfile("empty file: the upload has no data")
    try:
        message, tables = _decode(raw)
        if not fast_ok(message, tables):
            explain(message)
    except BadProfile as err:
        what = describe(raw)
        if what is None:
            raise
        raise BadProfile(what) from err
    n_types = len(message.sample_type)
    return ParsedProfile(
        raw=raw,
        message=message,
        strings=[s.decode("utf-8", "replace") for s in message.string_table],
        was_gzip=was_gzip,
        location_ids=tables.location_ids,
        location_offsets=_stacks(message, tables),
        values=tables.values.reshape(len(message.sample), n_types),
    )
