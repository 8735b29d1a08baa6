"""Prof: a profile as google/pprof's Profile struct holds it, in columns, for merge and diff.

Strings are indices into the profile's own string table of bytes (Go compares strings byte for
byte; the views' decoded text would merge two different invalid UTF-8 names). Mappings,
functions and locations are dense (id = index + 1); references to none, or to an id that does
not exist, are -1, as Go's decoder leaves them nil. Labels are the ones Go keeps: a string label
(index > 0), else a numeric one when its number or unit is set.

from_parsed reads a ParsedProfile through its cached Tables; to_tables gives merge results the
Tables every view reads; retable moves a Prof onto a shared string table.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..measure.text import Header
from ..model import keys
from ..model.tables import Tables, tables
from .restack import Origin, restack

_I64 = np.int64
_U64 = np.uint64


def _scalar(value: Any) -> int:
    """A scalar field that a decoder may keep as a list of every occurrence (last one wins)."""
    if isinstance(value, int):
        return value
    return int(value[-1]) if len(value) else 0


@dataclass
class Labels:
    """Every label pprof keeps, one row each, grouped by sample in sample order."""

    sample: np.ndarray
    key: np.ndarray  # string index
    text: np.ndarray  # string index of a string label's value (0 in numeric rows)
    num: np.ndarray  # numeric rows' value
    unit: np.ndarray  # numeric rows' unit string index, -1 when none was given
    numeric: np.ndarray  # bool

    def take(self, rows: np.ndarray) -> Labels:
        return Labels(*(a[rows] for a in self._arrays()))

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return (self.sample, self.key, self.text, self.num, self.unit, self.numeric)


@dataclass
class Prof:
    """One profile's columns (see the module docstring)."""

    strings: list[bytes]
    sample_types: list[tuple[int, int]]  # (type, unit) string indices
    period_type: tuple[int, int]  # (0, 0) when the profile has none
    period: int
    time_nanos: int
    duration_nanos: int
    comments: list[int]
    drop_frames: int
    keep_frames: int
    default_sample_type: int
    map_start: np.ndarray  # uint64
    map_limit: np.ndarray
    map_offset: np.ndarray
    map_file: np.ndarray  # string index
    map_build: np.ndarray
    map_flags: np.ndarray  # [n, 4] has_functions, has_filenames, has_line_numbers, has_inline
    func_strings: np.ndarray  # [n, 3] name, system_name, filename
    func_start: np.ndarray
    loc_mapping: np.ndarray  # -1: none
    loc_address: np.ndarray  # uint64
    loc_folded: np.ndarray  # bool
    line_off: np.ndarray  # location j's lines: line_off[j]:line_off[j + 1]
    line_func: np.ndarray  # -1: none
    line_no: np.ndarray
    stack_loc: np.ndarray  # sample i's locations, leaf first: stack_loc[stack_off[i]:...]
    stack_off: np.ndarray
    values: np.ndarray  # int64 [n_samples, n_types]
    labels: Labels
    func_names: list[str] | None = field(default=None, repr=False)  # demangled (Tables)
    unique_strings: bool = False  # no string twice in the table: equal strings, equal indices
    # What merging derives from the samples, kept while they stay the same:
    unique: bool = False  # samples unique by Merge's key, none all zero (a Merge output)
    ordered: bool = False  # every location in order of first use by the samples (a Merge
    #                        output), so merging it again meets them as 0, 1, 2, ...
    sample_hash: np.ndarray | None = field(default=None, repr=False)  # of location keys
    origin: Origin | None = field(default=None, repr=False)

    @property
    def n_samples(self) -> int:
        return len(self.stack_off) - 1

    def string(self, index: int) -> str:
        if not 0 <= index < len(self.strings):
            return ""
        return self.strings[index].decode("utf-8", "replace")

    def type_names(self) -> list[tuple[str, str]]:
        return [(self.string(a), self.string(b)) for a, b in self.sample_types]


class _FakeMapping:
    """The mapping pprof adds to a profile that has none: every field zero."""

    id = memory_start = memory_limit = file_offset = filename = build_id = 0
    has_functions = has_filenames = has_line_numbers = has_inline_frames = False


_CACHE: weakref.WeakKeyDictionary[Any, Prof] = weakref.WeakKeyDictionary()


def from_parsed(parsed: Any) -> Prof:
    """The columns of a share.pprof.ParsedProfile (cached while it lives, as its Tables).
    Its top level is read from the outline: parsed.message would decode (and keep, beside
    the columns) upb's objects for every sample, several times the profile's size, which the
    warm cache's footprint did not count (a fleet's merges ran out of SHARE_ANALYSIS_MEMORY)."""
    found = _CACHE.get(parsed)
    if found is None:
        found = _CACHE[parsed] = _from_tables(parsed.outline, tables(parsed))
    return found


def _from_tables(msg: Any, t: Tables) -> Prof:
    strings = list(msg.string_table)
    n_strings = len(strings)
    pt = msg.period_type if msg.HasField("period_type") else None
    maps = list(msg.mapping)
    sample, key, text, num, unit = t.labels()
    is_text = text != 0
    is_num = ~is_text & ((num != 0) | (unit != 0))
    keep = is_text | is_num
    labels = Labels(
        sample=sample[keep],
        key=key[keep],
        text=np.where(is_text, text, 0)[keep],
        num=np.where(is_num, num, 0)[keep],
        unit=np.where(is_num & (unit != 0), unit, -1)[keep],
        numeric=is_num[keep],
    )
    func_strings = t.func_strings.copy()
    func_strings[func_strings >= n_strings] = 0  # outside the table: "" (the rules allow none)
    loc_mapping = t.loc_mapping
    if not maps:
        # go tool pprof gives a profile without mappings a fake one holding every location
        # (driver.locateBinaries), so merged profiles have it too.
        maps = [_FakeMapping()]
        loc_mapping = np.zeros(len(loc_mapping), dtype=_I64)
    return Prof(
        strings=strings,
        sample_types=[(st.type, st.unit) for st in msg.sample_type],
        period_type=(pt.type, pt.unit) if pt is not None else (0, 0),
        period=_scalar(msg.period),
        time_nanos=_scalar(msg.time_nanos),
        duration_nanos=_scalar(msg.duration_nanos),
        comments=list(msg.comment),
        drop_frames=_scalar(msg.drop_frames),
        keep_frames=_scalar(msg.keep_frames),
        default_sample_type=_scalar(msg.default_sample_type),
        map_start=np.array([_scalar(m.memory_start) for m in maps], dtype=_U64),
        map_limit=np.array([_scalar(m.memory_limit) for m in maps], dtype=_U64),
        map_offset=np.array([_scalar(m.file_offset) for m in maps], dtype=_U64),
        map_file=np.array([_scalar(m.filename) for m in maps], dtype=_I64),
        map_build=np.array([_scalar(m.build_id) for m in maps], dtype=_I64),
        map_flags=np.array(
            [
                [m.has_functions, m.has_filenames, m.has_line_numbers, m.has_inline_frames]
                for m in maps
            ],
            dtype=bool,
        ).reshape(len(maps), 4),
        func_strings=func_strings,
        func_start=np.asarray(t.func_start, dtype=_I64),
        loc_mapping=loc_mapping,
        loc_address=t.loc_address,
        loc_folded=t.loc_folded,
        line_off=t.line_off,
        line_func=t.line_func,
        line_no=t.line_no,
        stack_loc=t.stack_loc,
        stack_off=t.stack_off,
        values=t.values,
        labels=labels,
        func_names=t.func_name,
        unique_strings=len(set(strings)) == len(strings),
        origin=Origin([t], np.zeros(t.n_samples, dtype=_I64), np.arange(t.n_samples)),
    )


def retable(p: Prof, index: np.ndarray, strings: list[bytes]) -> Prof:
    """p with every string index mapped through index onto the table strings."""

    def m(a: np.ndarray) -> np.ndarray:
        return index[a] if len(a) else a

    lab = p.labels
    unit = lab.unit
    if len(unit):
        unit = np.where(unit >= 0, index[np.maximum(unit, 0)], -1)
    return replace(
        p,
        strings=strings,
        sample_types=[(int(index[a]), int(index[b])) for a, b in p.sample_types],
        period_type=(int(index[p.period_type[0]]), int(index[p.period_type[1]])),
        comments=[int(index[c]) for c in p.comments],
        drop_frames=int(index[p.drop_frames]),
        keep_frames=int(index[p.keep_frames]),
        default_sample_type=int(index[p.default_sample_type]),
        map_file=m(p.map_file),
        map_build=m(p.map_build),
        func_strings=m(p.func_strings),
        labels=replace(lab, key=m(lab.key), text=m(lab.text), unit=unit),
        unique_strings=True,
    )


def lookup(table: np.ndarray, index: np.ndarray, fill: int = -1) -> np.ndarray:
    """table[index] where index >= 0, else fill (a reference to nothing stays nothing)."""
    out = np.full(len(index), fill, dtype=table.dtype)
    ok = index >= 0
    out[ok] = table[index[ok]]
    return out


def map_key_string(p: Prof, i: int) -> int:
    """The string Merge keys mapping i by: its build id, else its file (0: neither)."""
    build = int(p.map_build[i])
    return build if p.strings[build] else int(p.map_file[i])


def to_tables(p: Prof) -> Tables:
    """The Tables the views read, for a Prof that is profile.Merge's output."""
    text = [s.decode("utf-8", "replace") for s in p.strings]
    names, systems, files = ([text[i] for i in p.func_strings[:, k].tolist()] for k in range(3))
    if p.func_names is None:
        from ..model.names import demangled_names

        func_names = demangled_names(names, systems)
    else:
        func_names = p.func_names
    map_file = [text[i] for i in p.map_file.tolist()]
    map_key = []
    for i in range(len(map_file)):
        size = (int(p.map_limit[i]) - int(p.map_start[i])) % (1 << 64)
        size = (size + 0xFFF) % (1 << 64)
        size -= size % 0x1000
        map_key.append((size, int(p.map_offset[i]), text[map_key_string(p, i)]))
    lab = p.labels
    labels = (
        lab.sample,
        lab.key,
        np.where(lab.numeric, 0, lab.text),
        lab.num,
        np.maximum(lab.unit, 0),
    )
    merged = Tables(
        strings=text,
        sample_types=[(text[a], text[b]) for a, b in p.sample_types],
        default_sample_type=text[p.default_sample_type],
        values=p.values,
        stack_loc=p.stack_loc,
        stack_off=p.stack_off,
        loc_mapping=p.loc_mapping,
        loc_address=p.loc_address,
        loc_folded=p.loc_folded,
        line_func=p.line_func,
        line_no=p.line_no,
        line_off=p.line_off,
        func_name=func_names,
        func_names=(names, systems, files),
        func_strings=p.func_strings,
        func_start=p.func_start.tolist(),
        map_start=[int(x) for x in p.map_start.tolist()],
        map_file=map_file,
        map_key=map_key,
        header=Header(
            main_file=map_file[0] if map_file else "",
            build_id=text[int(p.map_build[0])] if map_file else "",
            comments=list(dict.fromkeys(text[c] for c in p.comments)),
            sample_type="",
            sample_unit="",
            time_nanos=p.time_nanos,
            duration_nanos=p.duration_nanos,
        ),
        drop_frames=text[p.drop_frames],
        keep_frames=text[p.keep_frames],
        merged=True,
        _labels=labels,
    )
    if p.origin is not None and p.sample_hash is not None:
        merged._stacks = restack(merged, p.origin, p.sample_hash)
    return merged


def location_hashes(p: Prof) -> np.ndarray:
    """A hash of each location's Merge key (address less its mapping's start, the mapping's
    key, lines as function keys and numbers, is_folded), whatever the profile's ids are."""
    sh = keys.string_hashes(p.strings)
    size = (p.map_limit - p.map_start + np.uint64(0xFFF)) & ~np.uint64(0xFFF)  # wraps, as Go
    key_string = [map_key_string(p, i) for i in range(len(p.map_start))]
    map_hash = keys.combine(size, p.map_offset, sh[np.array(key_string, dtype=_I64)])
    fs = p.func_strings
    func_hash = keys.combine(p.func_start, sh[fs[:, 0]], sh[fs[:, 1]], sh[fs[:, 2]])
    line_hash = keys.combine(lookup(func_hash, p.line_func, 1), p.line_no)
    lines = keys.sequence_hashes(line_hash, p.line_off)
    start = lookup(p.map_start, p.loc_mapping, 0)
    mapping = lookup(map_hash, p.loc_mapping, 2)
    return keys.combine(p.loc_address - start, mapping, p.loc_folded, lines)


def sample_hashes(p: Prof) -> np.ndarray:
    """A hash of each sample's locations' keys, in order (labels not included)."""
    if p.sample_hash is None:
        p.sample_hash = keys.sequence_hashes(location_hashes(p)[p.stack_loc], p.stack_off)
    return p.sample_hash
