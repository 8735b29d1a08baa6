"""Bytes -> validated pprof profile, accepting exactly what google/pprof's profile.ParseData does.

parse() is the pipeline, one stage per module, none calling back up:
inflate (gunzip every member within the size limit) -> decode (the compiled scan.c, else upb,
with wire.py's exact copy of Go's decoder where upb would read the bytes differently) -> rules
(pprof's checks, in bulk) -> ParsedProfile. A file that is not a protobuf is shown to formats,
which converts what it reads (pprof's legacy formats, perf script, folded stacks, .cpuprofile,
speedscope) into a protobuf parsed in turn; else to sniff, which names what it is if it is
something else (perf.data, JSON, HTML...) and says how to get a protobuf.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import BadProfile
from . import formats
from .decode import decode, full_message
from .inflate import GZIP_MAGIC, gunzip, too_large
from .limits import NO_LIMITS, Limits
from .rules import explain, fast_ok
from .sniff import describe

__all__ = ["ParsedProfile", "parse"]

_CONCATENATED = "profiles concatenated"  # pprof tries no legacy parser on those


@dataclass(eq=False)
class ParsedProfile:
    """A profile google/pprof accepts, decoded, with its string table as text."""

    raw: bytes  # decompressed protobuf bytes, exactly as uploaded (hashed for the id)
    # The top level as Go reads it: every field of profile.proto but samples, locations and
    # functions, which are kept as their encoded bytes (read them as columns, or use message).
    outline: Any
    strings: list[str]  # the string table decoded as UTF-8 (invalid bytes become U+FFFD)
    was_gzip: bool  # the upload was gzip-compressed
    # Every sample's location ids, one sample after another, leaf first; sample i's are
    # location_ids[location_offsets[i]:location_offsets[i + 1]].
    location_ids: np.ndarray = field(repr=False)
    location_offsets: np.ndarray = field(repr=False)
    # values[i, j] is sample i's value for sample type j (int64, shape n_samples x n_types).
    values: np.ndarray = field(repr=False)
    _message: Any = field(default=None, repr=False)  # see message
    _unknown: bool = field(default=False, repr=False)  # raw holds fields Go skips
    converted_from: str | None = None  # the format raw was converted from ("perf script")
    # Every label as (sample, key, str, num, num_unit) when the compiled core read them (else
    # the analysis decodes them from the outline's samples when it needs them).
    labels: tuple[np.ndarray, ...] | None = field(default=None, repr=False)
    elements: Any = field(default=None, repr=False)  # elements.Elements, as labels

    @property
    def message(self) -> Any:
        """profile.proto's fields; string_table holds bytes: use .strings / .string().
        Decoded from raw on first use: upb's objects for every sample cost as much as the rest of
        parsing, and most callers need only the outline and the columns."""
        if self._message is None:
            self._message = full_message(self.raw, self._unknown)
        return self._message

    def string(self, index: int) -> str:
        """strings[index], or "" for an index outside the table (e.g. doc_url pprof ignores)."""
        return self.strings[index] if 0 <= index < len(self.strings) else ""

    def sample_types(self) -> list[tuple[str, str]]:
        """(type, unit) per sample value, e.g. [("samples", "count"), ("cpu", "nanoseconds")]."""
        return [(self.string(st.type), self.string(st.unit)) for st in self.outline.sample_type]

    def default_sample_type(self) -> str | None:
        """The type named by default_sample_type if it is one of the sample types, else None."""
        name = self.string(self.outline.default_sample_type)
        return name if name and any(name == t for t, _ in self.sample_types()) else None

    def default_sample_index(self) -> int:
        """Index of the sample type to show first: the default one, else the last (as pprof)."""
        name = self.default_sample_type()
        types = [t for t, _ in self.sample_types()]
        return types.index(name) if name else max(len(types) - 1, 0)

    @property
    def n_samples(self) -> int:
        """Number of samples."""
        return len(self.outline.sample)

    @property
    def n_locations(self) -> int:
        """Number of locations."""
        return len(self.outline.location)

    @property
    def n_functions(self) -> int:
        """Number of functions."""
        return len(self.outline.function)

    @property
    def n_mappings(self) -> int:
        """Number of mappings."""
        return len(self.outline.mapping)


def parse(data: bytes, *, max_profile_bytes: int, limits: Limits = NO_LIMITS) -> ParsedProfile:
    """Gunzip (if gzip) within the limit, decode, validate exactly as google/pprof's
    profile.ParseData (+CheckValid). Raises share.errors.BadProfile (400) with a message a user
    can act on, or share.errors.TooLarge (413) naming the limit it is over."""
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
        decoded = decode(raw, limits)
        outline, tables, message = decoded.outline, decoded.tables, decoded.message
        if not fast_ok(outline, tables):
            if message is None:
                message = full_message(raw, tables.has_unknown)
            explain(message)
    except BadProfile as err:
        converted = None if _CONCATENATED in err.message else formats.convert(raw, limits)
        if converted is not None:
            parsed = parse(converted.data, max_profile_bytes=max_profile_bytes, limits=limits)
            parsed.converted_from = converted.origin
            return parsed
        what = describe(raw)
        if what is None:
            raise
        raise BadProfile(what) from err
    offsets = np.zeros(len(tables.n_locations) + 1, np.int64)
    np.cumsum(tables.n_locations, out=offsets[1:])
    return ParsedProfile(
        raw=raw,
        outline=outline,
        strings=[s.decode("utf-8", "replace") for s in outline.string_table],
        was_gzip=was_gzip,
        location_ids=tables.location_ids,
        location_offsets=offsets,
        values=tables.values.reshape(len(outline.sample), len(outline.sample_type)),
        _message=message,
        _unknown=tables.has_unknown,
        labels=tables.labels,
        elements=tables.elements,
    )
