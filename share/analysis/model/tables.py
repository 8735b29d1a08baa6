"""Profile -> Tables: the decoded profile as flat numpy arrays, independent of sample type.

This is the root of the analysis (share.analysis's docstring gives the whole pipeline): ids are
turned into dense indices, names go through the symbolizer's demangling heuristic, and labels
are decoded only when something asks for them. Tables are built once per ParsedProfile and
carry the caches of the later stages (stacks, graphs per sample type).
"""

from __future__ import annotations

import contextlib
import re
import weakref
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...pprof import columns as pc
from ...pprof.decode import message_of
from ...pprof.elements import Elements
from ...pprof.schema import LABELS_ALL
from ..measure.text import Header
from .names import demangled_names

MIN64 = -(1 << 63)
_U64 = np.uint64
_I64 = np.int64


class SampleTypeError(ValueError):
    """-sample_index names no sample type of the profile."""


@dataclass
class Tables:
    """The profile as flat arrays (sample-type independent), built once per ParsedProfile."""

    strings: list[str]
    sample_types: list[tuple[str, str]]
    default_sample_type: str
    values: np.ndarray  # int64 [n_samples, n_types]
    stack_loc: np.ndarray  # dense location index of each stack entry, leaf first
    stack_off: np.ndarray  # sample i's entries: stack_loc[stack_off[i]:stack_off[i + 1]]
    loc_mapping: np.ndarray  # dense mapping index, -1 for none (or a dangling id)
    loc_address: np.ndarray
    loc_folded: np.ndarray
    line_func: np.ndarray  # dense function index of each line; line 0 is the innermost call
    line_no: np.ndarray
    line_off: np.ndarray
    func_name: list[str]  # after the demangling heuristic
    func_names: tuple[list[str], list[str], list[str]]  # name, system_name, filename as stored
    func_strings: np.ndarray  # [n_functions, 3] their string indices (len(strings): outside)
    func_start: list[int]
    map_start: list[int]
    map_file: list[str]  # the file Merge keeps for the mapping
    map_key: list[tuple[int, int, str]]
    header: Header
    drop_frames: str
    keep_frames: str
    # The ParsedProfile's outline (samples kept as their encoded bytes); None for a merge's
    # tables (combine.py), whose labels come decoded.
    outline: Any = field(default=None, repr=False)
    _message: Any = field(default=None, repr=False)
    # The samples are profile.Merge's output (unique by its key, none all-zero): graph.py has
    # nothing left to sum. Set by merge.py; a parsed upload is taken as it comes.
    merged: bool = False
    _labels: tuple[np.ndarray, ...] | None = field(default=None, repr=False)
    # Built on first use by the stages above, which own their types: stacks.py's Stacks and
    # graph.py's Graph per sample index (typed Any so this module needs neither).
    _stacks: Any = field(default=None, repr=False)
    _graphs: dict[int | None, Any] = field(default_factory=dict, repr=False)
    _merge_groups: np.ndarray | None = field(default=None, repr=False)
    cache: dict[Any, Any] = field(default_factory=dict, repr=False)  # later stages' results

    @property
    def n_samples(self) -> int:
        return len(self.stack_off) - 1

    def sample_index(self, name: str | None) -> int | None:
        """The sample type -sample_index=name selects (None: the profile has no types)."""
        return sample_index(self.sample_types, self.default_sample_type, name)

    @property
    def message(self) -> Any:
        """The profile's full message, decoded on first use (the tables do not need it)."""
        if self._message is None and self.outline is not None:
            self._message = message_of(self.outline)
        return self._message

    def labels(self) -> tuple[np.ndarray, ...]:
        """(sample, key, str, num, unit) of every label, decoded only when asked for."""
        if self._labels is None and self.outline is None:  # tables made without any labels
            empty = np.zeros(0, dtype=_I64)
            self._labels = (empty, empty, empty, empty, empty)
        if self._labels is None:
            samples = self.outline.sample  # the samples as stored: no serializing again
            if not len(LABELS_ALL["Sample"].FromString(b"".join(samples)).label.key):
                empty = np.zeros(0, dtype=_I64)  # no sample has a label: nothing to walk
                self._labels = (empty, empty, empty, empty, empty)
                return self._labels
            buf = pc.joined(samples)
            rows = pc.fields(buf).select(3)
            lbuf = pc.sub_buffer(buf, rows.start, rows.end)
            lf = pc.fields(lbuf)
            n = len(rows.msg)
            self._labels = (
                rows.msg,
                pc.last_value(lf, 1, n).astype(_I64),
                pc.last_value(lf, 2, n).astype(_I64),
                pc.last_value(lf, 3, n).view(_I64),
                pc.last_value(lf, 4, n).astype(_I64),
            )
        return self._labels


def sample_index(types: list[tuple[str, str]], default: str | None, name: str | None) -> int | None:
    """profile.SampleIndexByName: no name picks the default type (else the last); a name may
    also be an index or carry an "inuse_" prefix. None when there are no types and no name."""
    names = [t for t, _ in types]
    if not name:
        if not names:
            return None
        return names.index(default) if default and default in names else len(names) - 1
    if not names:
        raise SampleTypeError(f"unknown sample type {name!r}: the profile has no sample types")
    if re.fullmatch(r"[+-]?\d+", name):
        i = int(name)
        if not 0 <= i < len(names):
            raise SampleTypeError(f"sample index {name} is outside [0..{len(names) - 1}]")
        return i
    no_inuse = name.removeprefix("inuse_")
    for i, t in enumerate(names):
        if t in (name, no_inuse):
            return i
    valid = ", ".join(repr(t) for t in names)
    raise SampleTypeError(f"unknown sample type {name!r}: this profile has {valid}")


_CACHE: weakref.WeakKeyDictionary[Any, Tables] = weakref.WeakKeyDictionary()


def tables(parsed: Any) -> Tables:
    """The Tables of a share.pprof.ParsedProfile (cached while the object lives)."""
    try:
        return _CACHE[parsed]
    except (KeyError, TypeError):
        pass
    t = _build_tables(parsed)
    with contextlib.suppress(TypeError):  # an object without weak references: no cache
        _CACHE[parsed] = t
    return t


def _scalar(value: Any) -> int:
    """A scalar field that a decoder may keep as a list of every occurrence."""
    if isinstance(value, int):
        return value
    return int(value[-1]) if len(value) else 0


def _dense(ids: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """Index into ids (unique uint64) of each ref; -1 where a ref is not an id."""
    if not len(ids) or not len(refs):
        return np.full(len(refs), -1, dtype=_I64)
    lo, hi = ids.min(), ids.max()
    if int(hi - lo) + 1 == len(ids) and bool((ids[1:] > ids[:-1]).all()):
        # Ids lo, lo + 1, ... in order (Go writes 1..n): the index is the id minus lo.
        r_lo, r_hi = refs.min(), refs.max()
        # One new array, not two ((refs - lo).astype): on a 6 MB profile's 4.8 M location
        # references each copy is 38 MB. The same bits (int64 arithmetic wraps as uint64's
        # does); refs below lo or past hi are marked below.
        out = np.subtract(refs.view(_I64), np.asarray(lo, dtype=_U64).view(_I64))
        if r_lo < lo or r_hi > hi:
            out[(refs < lo) | (refs > hi)] = -1
        return out
    if int(hi - lo) < 8 * len(ids) + 65536:
        # Ids are usually 1..n: a lookup table beats a binary search per reference.
        table = np.full(int(hi - lo) + 2, -1, dtype=_I64)
        table[(ids - lo).astype(_I64)] = np.arange(len(ids))
        inside = (refs >= lo) & (refs <= hi)
        return np.where(inside, table[np.where(inside, refs - lo, hi - lo + 1).astype(_I64)], -1)
    order = np.argsort(ids, kind="stable")
    sorted_ids = ids[order]
    pos = np.minimum(np.searchsorted(sorted_ids, refs), len(ids) - 1)
    return np.where(sorted_ids[pos] == refs, order[pos], -1).astype(_I64)


def _elements(parsed: Any) -> Elements:
    """The locations', lines' and functions' fields, walked from their encoded bytes (a file
    the compiled core left to the pure-Python path, or a build without it)."""
    stored = _stored_payloads(parsed)
    lbuf = pc.joined(stored.location) if stored else pc.serialize(parsed.message.location)
    lf = pc.fields(lbuf)
    n_loc = len(lbuf)
    line_rows = lf.select(4)
    line_buf = pc.sub_buffer(lbuf, line_rows.start, line_rows.end)
    line_fields = pc.fields(line_buf)
    n_lines = len(line_rows.msg)
    fbuf = pc.joined(stored.function) if stored else pc.serialize(parsed.message.function)
    ff = pc.fields(fbuf)
    n_func = len(fbuf)
    names = [pc.last_value(ff, k, n_func) for k in (2, 3, 4)]
    return Elements(
        loc_id=pc.last_value(lf, 1, n_loc),
        loc_mapping=pc.last_value(lf, 2, n_loc),
        loc_address=pc.last_value(lf, 3, n_loc),
        loc_folded=pc.last_value(lf, 5, n_loc),
        loc_lines=np.bincount(line_rows.msg, minlength=n_loc),
        line_function=pc.last_value(line_fields, 1, n_lines),
        line_no=pc.last_value(line_fields, 2, n_lines),
        function_id=pc.last_value(ff, 1, n_func),
        function_names=np.stack(names, axis=1) if n_func else np.zeros((0, 3), dtype=_U64),
        function_start=pc.last_value(ff, 5, n_func),
    )


def _stored_payloads(parsed: Any) -> Any:
    """The profile's locations and functions as encoded, one bytes object each, read as Go reads
    them (the outline's; reading fields off them saves serializing every one again)."""
    return parsed.outline


def _build_tables(parsed: Any) -> Tables:
    msg = parsed.outline  # the top level; samples, locations and functions as bytes
    strings: list[str] = list(parsed.strings)

    def s(i: int) -> str:
        return strings[i] if 0 <= i < len(strings) else ""

    sample_types = [(s(st.type), s(st.unit)) for st in msg.sample_type]
    n_types = len(sample_types)
    n = len(msg.sample)
    ids = getattr(parsed, "location_ids", None)
    if ids is not None and getattr(parsed, "values", None) is not None:
        stack_ids = np.asarray(ids, dtype=_U64)
        stack_off = np.asarray(parsed.location_offsets, dtype=_I64)
        values = np.asarray(parsed.values, dtype=_I64).reshape(n, n_types)
    else:
        buf = pc.joined(msg.sample)
        f = pc.fields(buf)
        stack_ids, stack_off = pc.repeated(buf, f, 1, n)
        vals, _ = pc.repeated(buf, f, 2, n)
        values = vals.view(_I64).reshape(n, n_types)

    # Mappings: few, read directly; the file and key are what Merge keeps per mapping.
    map_ids, map_start, map_file, map_key, keys_seen = [], [], [], [], {}
    for m in msg.mapping:
        start, limit = _scalar(m.memory_start), _scalar(m.memory_limit)
        file, build_id = s(_scalar(m.filename)), s(_scalar(m.build_id))
        size = (limit - start) % (1 << 64)
        size = (size + 0xFFF) % (1 << 64)
        size -= size % 0x1000
        key = (size, _scalar(m.file_offset), build_id or file)
        map_ids.append(_scalar(m.id))
        map_start.append(start)
        map_file.append(keys_seen.setdefault(key, file))
        map_key.append(key)
    first = msg.mapping[0] if len(msg.mapping) else None

    # Locations, their lines, functions: as the compiled core read them, else walked here.
    el = getattr(parsed, "elements", None) or _elements(parsed)
    loc_ids = el.loc_id
    loc_mapping = _dense(np.array(map_ids, dtype=_U64), el.loc_mapping)
    line_off = pc.offsets(el.loc_lines)
    func_ids = el.function_id
    n_func = len(func_ids)
    padded = strings + [""]  # an index outside the table reads as "" (pprof's getString)
    cols, indices = [], []
    for k in range(3):
        idx = el.function_names[:, k].view(_I64)
        idx = np.where((idx >= 0) & (idx < len(strings)), idx, len(strings))
        cols.append([padded[i] for i in idx.tolist()])
        indices.append(idx)
    names, systems, files = cols

    return Tables(
        strings=strings,
        sample_types=sample_types,
        default_sample_type=s(_scalar(msg.default_sample_type)),
        values=values,
        stack_loc=_dense(loc_ids, stack_ids),
        stack_off=stack_off,
        loc_mapping=loc_mapping,
        loc_address=el.loc_address,
        loc_folded=el.loc_folded != 0,
        line_func=_dense(func_ids, el.line_function),
        line_no=el.line_no.view(_I64),
        line_off=line_off,
        func_name=demangled_names(names, systems),
        func_names=(names, systems, files),
        func_strings=np.stack(indices, axis=1) if n_func else np.zeros((0, 3), dtype=_I64),
        func_start=el.function_start.view(_I64).tolist(),
        map_start=map_start,
        map_file=map_file,
        map_key=map_key,
        header=Header(
            main_file=map_file[0] if first is not None else "",
            build_id=s(_scalar(first.build_id)) if first is not None else "",
            comments=list(dict.fromkeys(s(_scalar(c)) for c in msg.comment)),
            sample_type="",
            sample_unit="",
            time_nanos=_scalar(msg.time_nanos),
            duration_nanos=_scalar(msg.duration_nanos),
        ),
        drop_frames=s(_scalar(msg.drop_frames)),
        keep_frames=s(_scalar(msg.keep_frames)),
        outline=msg,
        _labels=getattr(parsed, "labels", None),  # read by the compiled core as it parsed
    )
