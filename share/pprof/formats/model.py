"""A profile as google/pprof's Go structs hold it (pointers between objects), and its encoding.

The legacy parsers build these objects exactly as profile/legacy_profile.go does, ids assigned
by the same remapping, so the bytes encode what `go tool pprof -proto` would have read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .._proto import profile_pb2


@dataclass(eq=False)
class Mapping:
    start: int = 0
    limit: int = 0
    offset: int = 0
    file: str = ""
    build_id: str = ""
    id: int = 0


@dataclass(eq=False)
class Function:
    name: str
    filename: str = ""
    start_line: int = 0
    id: int = 0


@dataclass(eq=False)
class Line:
    function: Function | None
    line: int = 0


@dataclass(eq=False)
class Location:
    address: int = 0
    mapping: Mapping | None = None
    lines: list[Line] = field(default_factory=list)
    id: int = 0


@dataclass(eq=False)
class Sample:
    locations: list[Location]
    values: list[int]
    num_labels: dict[str, list[int]] = field(default_factory=dict)
    labels: dict[str, list[str]] = field(default_factory=dict)


@dataclass(eq=False)
class Profile:
    sample_types: list[tuple[str, str]] = field(default_factory=list)
    period_type: tuple[str, str] | None = None
    period: int = 0
    duration_nanos: int = 0
    time_nanos: int = 0
    samples: list[Sample] = field(default_factory=list)
    locations: list[Location] = field(default_factory=list)
    functions: list[Function] = field(default_factory=list)
    mappings: list[Mapping] = field(default_factory=list)
    drop_frames: str = ""
    keep_frames: str = ""
    comments: list[str] = field(default_factory=list)
    default_sample_type: str = ""

    def remap_location_ids(self) -> None:
        """Locations are those the samples use, numbered in order of first use."""
        seen: set[int] = set()
        locations: list[Location] = []
        for sample in self.samples:
            for loc in sample.locations:
                if id(loc) not in seen:
                    seen.add(id(loc))
                    loc.id = len(locations) + 1
                    locations.append(loc)
        self.locations = locations

    def remap_function_ids(self) -> None:
        """Functions are those the locations use, numbered in order of first use."""
        seen: set[int] = set()
        functions: list[Function] = []
        for loc in self.locations:
            for line in loc.lines:
                fn = line.function
                if fn is not None and id(fn) not in seen:
                    seen.add(id(fn))
                    fn.id = len(functions) + 1
                    functions.append(fn)
        self.functions = functions


class _Strings:
    def __init__(self) -> None:
        self.table: list[bytes] = [b""]
        self.index: dict[str, int] = {"": 0}

    def __call__(self, text: str) -> int:
        i = self.index.get(text)
        if i is None:
            i = self.index[text] = len(self.table)
            # The legacy parsers read text as latin-1 (text.py): this is the file's own bytes.
            self.table.append(text.encode("latin-1"))
        return i


def encode(p: Profile) -> bytes:
    """The profile as profile.proto bytes (uncompressed), ids as the objects hold them."""
    out = profile_pb2.Profile()
    s = _Strings()
    for type_, unit in p.sample_types:
        out.sample_type.add(type=s(type_), unit=s(unit))
    for sample in p.samples:
        msg = out.sample.add(location_id=[loc.id for loc in sample.locations], value=sample.values)
        for key in sorted(sample.labels):
            for value in sample.labels[key]:
                msg.label.add(key=s(key), str=s(value))
        for key in sorted(sample.num_labels):
            for num in sample.num_labels[key]:
                msg.label.add(key=s(key), num=num)
    for m in p.mappings:
        out.mapping.add(
            id=m.id,
            memory_start=m.start,
            memory_limit=m.limit,
            file_offset=m.offset,
            filename=s(m.file),
            build_id=s(m.build_id),
        )
    for loc in p.locations:
        msg = out.location.add(
            id=loc.id, mapping_id=loc.mapping.id if loc.mapping else 0, address=loc.address
        )
        for line in loc.lines:
            msg.line.add(function_id=line.function.id if line.function else 0, line=line.line)
    for fn in p.functions:
        name = s(fn.name)
        out.function.add(
            id=fn.id, name=name, system_name=name, filename=s(fn.filename), start_line=fn.start_line
        )
    out.drop_frames = s(p.drop_frames)
    out.keep_frames = s(p.keep_frames)
    out.time_nanos = p.time_nanos
    out.duration_nanos = p.duration_nanos
    if p.period_type is not None:
        out.period_type.type = s(p.period_type[0])
        out.period_type.unit = s(p.period_type[1])
    out.period = p.period
    out.comment.extend(s(c) for c in p.comments)
    out.default_sample_type = s(p.default_sample_type)
    # string_table is proto3 `string`, which must be UTF-8 here but need not be for Go: the
    # table is appended as raw field 6 entries (a concatenated message is a merged one).
    return out.SerializeToString() + b"".join(_field6(b) for b in s.table)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field6(data: bytes) -> bytes:
    return b"\x32" + _varint(len(data)) + data
