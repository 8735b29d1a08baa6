"""Go 1.19's profile.Merge over Profs, vectorized: the same profile `go tool pprof -proto a b c`
writes (measurement.ScaleProfiles runs first: scaling.py).

Merge walks the samples of each profile in order and keeps the first mapping, function,
location and sample of each key it meets, numbered 1..n in that order; a sample's values add
up over its key. Each kind is walked here for all its items at once: its encounter order per
profile (keys.first_order), its keys as integer sequences, and keys.first_occurrence. Keys are
Go's: mappings by rounded size, offset and build id (else file); functions by start line and
names; locations by address less their mapping's start, mapping, lines and is_folded; samples by
locations and labels (per key, values in order; numeric ones with their units).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...errors import ShareError
from ...pprof import columns as pc
from ..measure.units import wrap64
from ..model import keys
from .merge_out import Samples, assemble
from .prof import Labels, Prof, lookup, map_key_string, retable, sample_hashes

_I64 = np.int64
_U64 = np.uint64


class IncompatibleProfiles(ShareError):
    """Profiles pprof refuses to combine; reason is go tool pprof's own text."""

    code = 400

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Merged:
    """Merge's result, and where each sample of each input went (-1: dropped)."""

    prof: Prof
    sample_maps: list[np.ndarray]


def on_one_table(profs: Sequence[Prof]) -> list[Prof]:
    """The profiles with their string indices on one shared table (first seen first)."""
    if profs[0].unique_strings and all(p.strings is profs[0].strings for p in profs):
        return list(profs)
    ids: dict[bytes, int] = {}
    for p in profs:
        for s in p.strings:
            ids.setdefault(s, len(ids))
    table = list(ids)
    return [
        retable(p, np.fromiter(map(ids.__getitem__, p.strings), _I64, len(p.strings)), table)
        for p in profs
    ]


def struct_text(p: Prof, vt: tuple[int, int]) -> str:
    """A ValueType as Go's %v prints it: {type unit 0 0} (its string indices are 0 by then)."""
    return "{" + f"{p.string(vt[0])} {p.string(vt[1])} 0 0" + "}"


def _named(p: Prof, vt: tuple[int, int]) -> tuple[str, str]:
    return p.string(vt[0]), p.string(vt[1])


def compatible(a: Prof, b: Prof) -> None:
    """Profile.compatible: equal period types, then equal sample types. (Go prints the sample
    types as pointers; they are written out here.)"""
    if _named(a, a.period_type) != _named(b, b.period_type):
        raise IncompatibleProfiles(
            f"incompatible period types &{struct_text(a, a.period_type)} and "
            f"&{struct_text(b, b.period_type)}"
        )
    if a.type_names() != b.type_names():
        listed = ["[" + " ".join(f"{t}/{u}" for t, u in p.type_names()) + "]" for p in (a, b)]
        raise IncompatibleProfiles(f"incompatible sample types {listed[0]} and {listed[1]}")


def merge(profs: Sequence[Prof]) -> Merged:
    """profile.Merge (every profile compatible with the first); samples whose values sum to
    zero are dropped, as Go's second Merge of the result does."""
    if not profs:
        raise IncompatibleProfiles("no profiles to merge")
    profs = on_one_table(profs)
    for p in profs[1:]:
        compatible(profs[0], p)
    prof, maps = _walk(profs)
    if prof.n_samples and not bool((prof.values != 0).any(axis=1).all()):
        again = merge([replace(prof, unique=False)])  # its zero samples are to be dropped
        maps = [lookup(again.sample_maps[0], m) for m in maps]
        prof = again.prof
    return Merged(prof, maps)


def _header(profs: list[Prof]) -> dict[str, object]:
    """combineHeaders: the first profile's types and frames, the earliest time (as Go
    compares: a 0 is taken, then replaced), summed duration, largest period, each comment once,
    the first default type."""
    time_nanos = duration = period = default = 0
    comments: list[int] = []
    for p in profs:
        if time_nanos == 0 or p.time_nanos < time_nanos:
            time_nanos = p.time_nanos
        duration = wrap64(duration + p.duration_nanos)
        if period == 0 or period < p.period:
            period = p.period
        comments.extend(c for c in dict.fromkeys(p.comments) if c not in comments)
        if default == 0:
            default = p.default_sample_type
    first = profs[0]
    return {
        "strings": first.strings,
        "sample_types": list(first.sample_types),
        "period_type": first.period_type,
        "drop_frames": first.drop_frames,
        "keep_frames": first.keep_frames,
        "time_nanos": time_nanos,
        "duration_nanos": duration,
        "period": period,
        "comments": comments,
        "default_sample_type": default,
    }


def _rounded_size(p: Prof, i: int) -> int:
    size = (int(p.map_limit[i]) - int(p.map_start[i])) % (1 << 64)
    size = (size + 0xFFF) % (1 << 64)
    return size - size % 0x1000


def _concat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _walk(profs: list[Prof]) -> tuple[Prof, list[np.ndarray]]:
    kept, locs_seen, maps_seen, funcs_seen = _encounters(profs)
    maps = _mappings(profs, maps_seen)
    funcs = _functions(profs, funcs_seen)
    loc_first, loc_index = _locations(profs, locs_seen, maps, funcs[3])
    return assemble(
        profs,
        _header(profs),
        maps,
        funcs,
        (locs_seen, loc_first),
        _samples(profs, kept, loc_index),
        kept,
    )


def _encounters(
    profs: list[Prof],
) -> tuple[list[np.ndarray], list[np.ndarray], list[np.ndarray], list[np.ndarray]]:
    """Per profile, in the order Merge meets them: the samples it keeps (not all zero), then
    the locations, mappings and functions they use."""
    kept, locs_seen, maps_seen, funcs_seen = [], [], [], []
    any_mapping = False
    for p in profs:
        if p.unique:  # a Merge output: no sample is all zero
            k = np.arange(p.n_samples)
        else:
            nonzero = (p.values != 0).any(axis=1) if p.values.size else np.zeros(p.n_samples, bool)
            k = np.flatnonzero(nonzero)
        if p.ordered:
            locs = np.arange(len(p.loc_mapping))
        else:
            entries = p.stack_loc[pc.ranges(p.stack_off[:-1][k], np.diff(p.stack_off)[k])]
            locs = keys.first_order(entries, len(p.loc_mapping))
        m = p.loc_mapping[locs]
        m = m[m >= 0]
        if not any_mapping and len(p.map_start):  # the first mapping seen is the main binary
            m = np.concatenate((np.zeros(1, _I64), m))
        maps = keys.first_order(m, len(p.map_start))
        any_mapping = any_mapping or len(maps) > 0
        lines = pc.ranges(p.line_off[:-1][locs], np.diff(p.line_off)[locs])
        f = p.line_func[lines]
        kept.append(k)
        locs_seen.append(locs)
        maps_seen.append(maps)
        funcs_seen.append(keys.first_order(f[f >= 0], len(p.func_start)))
    return kept, locs_seen, maps_seen, funcs_seen


def _mappings(
    profs: list[Prof], maps_seen: list[np.ndarray]
) -> tuple[list[tuple[int, int]], list[np.ndarray], list[np.ndarray]]:
    """(first (profile, mapping) of each key, merged index of every mapping, the shift that
    moves a location's address onto its key's first mapping). Few: keyed in Python."""
    by_key: dict[tuple[int, int, int], int] = {}
    reps: list[tuple[int, int]] = []
    index = [np.full(len(p.map_start), -1, dtype=_I64) for p in profs]
    shift = [np.zeros(len(p.map_start), dtype=_U64) for p in profs]
    for s, (p, maps) in enumerate(zip(profs, maps_seen, strict=True)):
        for i in maps.tolist():
            key = (_rounded_size(p, i), int(p.map_offset[i]), map_key_string(p, i))
            j = by_key.setdefault(key, len(reps))
            if j == len(reps):
                reps.append((s, i))
            else:
                rep = int(profs[reps[j][0]].map_start[reps[j][1]])
                shift[s][i] = (rep - int(p.map_start[i])) % (1 << 64)  # Go's int64 offset
            index[s][i] = j
    return reps, index, shift


def _functions(
    profs: list[Prof], funcs_seen: list[np.ndarray]
) -> tuple[list[np.ndarray], np.ndarray, np.ndarray, list[np.ndarray]]:
    """Functions keyed by (start line, name, system name, file name): (those met, their key
    rows, the first row of each key, merged index of every function)."""
    rows = [
        np.column_stack((p.func_start[f], p.func_strings[f]))
        for p, f in zip(profs, funcs_seen, strict=True)
    ]
    func_rows = np.concatenate(rows) if rows else np.zeros((0, 4), _I64)
    group, first = keys.first_occurrence(
        (func_rows.reshape(-1), np.arange(len(func_rows) + 1, dtype=_I64) * 4)
    )
    index, at = [], 0
    for p, f in zip(profs, funcs_seen, strict=True):
        merged = np.full(len(p.func_start), -1, dtype=_I64)
        merged[f] = group[at : at + len(f)]
        index.append(merged)
        at += len(f)
    return funcs_seen, func_rows, first, index


def _locations(
    profs: list[Prof],
    locs_seen: list[np.ndarray],
    maps: tuple[list[tuple[int, int]], list[np.ndarray], list[np.ndarray]],
    func_index: list[np.ndarray],
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Locations keyed by (address less mapping start, mapping, is_folded, (function, line)
    per line): (the first met of each key, merged index of every location)."""
    tokens, offs = [], []
    for s, (p, locs) in enumerate(zip(profs, locs_seen, strict=True)):
        m = p.loc_mapping[locs]
        counts = np.diff(p.line_off)[locs]
        lines = pc.ranges(p.line_off[:-1][locs], counts)
        off = pc.offsets(3 + 2 * counts)
        tok = np.empty(int(off[-1]), dtype=_I64)
        tok[off[:-1]] = (p.loc_address[locs] - lookup(p.map_start, m, 0)).view(_I64)
        tok[off[:-1] + 1] = lookup(maps[1][s], m)
        tok[off[:-1] + 2] = p.loc_folded[locs]
        pairs = np.empty(2 * len(lines), dtype=_I64)
        pairs[0::2], pairs[1::2] = lookup(func_index[s], p.line_func[lines]), p.line_no[lines]
        tok[pc.ranges(off[:-1] + 3, 2 * counts)] = pairs
        tokens.append(tok)
        offs.append(off)
    group, first = keys.first_occurrence((_concat(tokens, _I64), _stack_offsets(offs)))
    index, at = [], 0
    for p, locs in zip(profs, locs_seen, strict=True):
        merged = np.full(len(p.loc_mapping), -1, dtype=_I64)
        merged[locs] = group[at : at + len(locs)]
        index.append(merged)
        at += len(locs)
    return first, index


def _stack_offsets(offs: list[np.ndarray]) -> np.ndarray:
    """Offsets of several ragged arrays laid end to end."""
    out, base = [np.zeros(1, dtype=_I64)], 0
    for off in offs:
        out.append(off[1:] + base)
        base += int(off[-1])
    return np.concatenate(out)


def _canonical_labels(p: Prof, k: np.ndarray, base: int) -> tuple[Labels, np.ndarray, np.ndarray]:
    """The labels of samples k as Merge's key sees them (sample: candidate index), and their
    key tokens with the candidate of each token.

    Rows are sorted by (sample, numeric, key), keeping values in order within a key. A numeric
    key's units count as given, padded with "" (string 0); a key without units is like [""]
    when it has one value (Go prints both as []) and distinct otherwise.
    """
    lab = p.labels
    position = np.full(p.n_samples, -1, dtype=_I64)
    position[k] = np.arange(len(k)) + base
    rows = np.flatnonzero(position[lab.sample] >= 0) if len(lab.sample) else lab.sample
    lab = lab.take(rows)
    order = np.lexsort((lab.key, lab.numeric, lab.sample))
    lab = lab.take(order)
    lab.sample = position[lab.sample]
    n = len(lab.sample)
    new = np.ones(n, dtype=bool)
    if n:
        new[1:] = (
            (lab.sample[1:] != lab.sample[:-1])
            | (lab.numeric[1:] != lab.numeric[:-1])
            | (lab.key[1:] != lab.key[:-1])
        )
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    has_unit = np.logical_or.reduceat(lab.unit >= 0, starts) if n else np.zeros(0, bool)
    count = np.diff(np.append(starts, n))
    unit_tok = np.where(has_unit[group], np.maximum(lab.unit, 0), -1) if n else lab.unit
    unit_tok = np.where(~has_unit[group] & (count[group] == 1), 0, unit_tok) if n else unit_tok
    width = 3 + lab.numeric.astype(_I64)
    off = pc.offsets(width)
    tok = np.empty(int(off[-1]), dtype=_I64)
    tok[off[:-1]] = lab.numeric
    tok[off[:-1] + 1] = lab.key
    tok[off[:-1] + 2] = np.where(lab.numeric, lab.num, lab.text)
    tok[off[:-1][lab.numeric] + 3] = unit_tok[lab.numeric]
    return lab, np.repeat(lab.sample, width) if n else np.zeros(0, _I64), tok


def _samples(profs: list[Prof], kept: list[np.ndarray], loc_index: list[np.ndarray]) -> Samples:
    """Group every kept sample by (merged locations, canonical labels)."""
    len_parts, lab_parts, owner_parts, tok_parts, src, idx = [], [], [], [], [], []
    for p, k in zip(profs, kept, strict=True):
        len_parts.append(np.diff(p.stack_off) if len(k) == p.n_samples else np.diff(p.stack_off)[k])
    # The merged stacks are the largest array of a merge (every frame of every profile):
    # written in place, not gathered per profile and then concatenated (twice the memory).
    lengths = _concat(len_parts, _I64)
    locs_off = pc.offsets(lengths)
    locs = np.empty(int(locs_off[-1]), dtype=_I64)
    base = at = 0
    for s, (p, k) in enumerate(zip(profs, kept, strict=True)):
        entries = p.stack_loc
        if len(k) != p.n_samples:
            entries = p.stack_loc[pc.ranges(p.stack_off[:-1][k], len_parts[s])]
        np.take(loc_index[s], entries, out=locs[at : at + len(entries)])
        at += len(entries)
        lab, owner, tok = _canonical_labels(p, k, base)
        lab_parts.append(lab)
        owner_parts.append(owner)
        tok_parts.append(tok)
        src.append(np.full(len(k), s, dtype=_I64))
        idx.append(k)
        base += len(k)
    labels = Labels(*(_concat([getattr(x, f) for x in lab_parts], t) for f, t in _LABEL_FIELDS))
    label_tok = _concat(tok_parts, _I64)
    n = len(lengths)
    label_off = pc.offsets(np.bincount(_concat(owner_parts, _I64), minlength=n))
    hashes = None
    if all(p.unique for p in profs):
        # Each profile's own keys are unique: a hash of every sample's location keys (kept
        # with the profile) and of its labels finds the keys that meet across profiles.
        loc_hash = np.concatenate([sample_hashes(p)[k] for p, k in zip(profs, kept, strict=True)])
        hashes = keys.combine(loc_hash, keys.sequence_hashes(label_tok, label_off))
    group, first = keys.first_occurrence((locs, locs_off), (label_tok, label_off), hashes=hashes)
    return Samples(
        source=_concat(src, _I64),
        index=_concat(idx, _I64),
        group=group,
        first=first,
        locs=locs,
        locs_off=locs_off,
        labels=labels,
        values=np.concatenate([p.values[k] for p, k in zip(profs, kept, strict=True)]),
    )


_LABEL_FIELDS = [
    ("sample", _I64),
    ("key", _I64),
    ("text", _I64),
    ("num", _I64),
    ("unit", _I64),
    ("numeric", bool),
]
