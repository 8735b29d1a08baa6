"""The Prof that profile.Merge returns, put together from the first member of each key.

merge.py finds, for every kind, the input item first met for each key (its representative);
this module copies the representatives' fields, in merged order, with references renumbered:
a location keeps its representative's address moved onto the kept mapping, a sample its
representative's labels and the summed values of its whole key.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...pprof import columns as pc
from ..model.tables import Tables
from .prof import Labels, Prof, lookup
from .restack import Origin

_I64 = np.int64
_U64 = np.uint64


@dataclass
class Samples:
    """Every kept sample of every input (candidates), grouped by Merge's sample key."""

    source: np.ndarray  # input of each candidate
    index: np.ndarray  # its sample index there
    group: np.ndarray  # merged sample of each candidate
    first: np.ndarray  # the candidate kept for each merged sample
    locs: np.ndarray  # each candidate's merged location indices, candidate after candidate
    locs_off: np.ndarray
    labels: Labels  # every candidate's labels, canonical order; sample = candidate index
    values: np.ndarray  # each candidate's values


def _mappings(profs: list[Prof], reps: list[tuple[int, int]]) -> dict[str, np.ndarray]:
    def col(name: str, dtype: type) -> np.ndarray:
        return np.array([getattr(profs[s], name)[i] for s, i in reps], dtype=dtype)

    flags = [profs[s].map_flags[i] for s, i in reps]
    return {
        "map_start": col("map_start", _U64),
        "map_limit": col("map_limit", _U64),
        "map_offset": col("map_offset", _U64),
        "map_file": col("map_file", _I64),
        "map_build": col("map_build", _I64),
        "map_flags": np.array(flags, dtype=bool).reshape(len(reps), 4),
    }


def _locations(
    profs: list[Prof],
    maps: tuple[list[tuple[int, int]], list[np.ndarray], list[np.ndarray]],
    func_index: list[np.ndarray],
    locs_seen: list[np.ndarray],
    loc_first: np.ndarray,
) -> dict[str, np.ndarray]:
    """Every location met (candidates, input after input), then the representatives'."""
    _, map_index, map_shift = maps
    mapping, address, folded, counts, fids, line_nos = [], [], [], [], [], []
    for s, (p, locs) in enumerate(zip(profs, locs_seen, strict=True)):
        m = p.loc_mapping[locs]
        mapping.append(lookup(map_index[s], m))
        address.append(p.loc_address[locs] + lookup(map_shift[s], m, 0))  # wraps, as Go's
        folded.append(p.loc_folded[locs])
        n_lines = np.diff(p.line_off)[locs]
        lines = pc.ranges(p.line_off[:-1][locs], n_lines)
        lf = p.line_func[lines]
        fids.append(lookup(func_index[s], lf))
        line_nos.append(p.line_no[lines])
        counts.append(n_lines)
    n_lines = np.concatenate(counts) if counts else np.zeros(0, _I64)
    line_off = pc.offsets(n_lines)
    rep_lines = pc.ranges(line_off[:-1][loc_first], n_lines[loc_first])
    return {
        "loc_mapping": _cat(mapping, _I64)[loc_first],
        "loc_address": _cat(address, _U64)[loc_first],
        "loc_folded": _cat(folded, bool)[loc_first],
        "line_off": pc.offsets(n_lines[loc_first]),
        "line_func": _cat(fids, _I64)[rep_lines],
        "line_no": _cat(line_nos, _I64)[rep_lines],
    }


def _cat(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype, copy=False) if parts else np.zeros(0, dtype)


def _samples(samples: Samples, n_types: int) -> dict[str, Any]:
    first = samples.first
    lengths = np.diff(samples.locs_off)
    if len(first) == len(lengths):  # no two samples share a key: all kept as they are
        return {
            "stack_loc": samples.locs,
            "stack_off": samples.locs_off,
            "values": samples.values,
            "labels": samples.labels,
        }
    stack_loc = samples.locs[pc.ranges(samples.locs_off[:-1][first], lengths[first])]
    values = np.zeros((len(first), n_types), dtype=_I64)
    np.add.at(values, samples.group, samples.values)  # int64 sums wrap, as Go's
    lab = samples.labels
    is_first = np.zeros(len(samples.group), dtype=bool)
    is_first[first] = True
    rows = np.flatnonzero(is_first[lab.sample]) if len(lab.sample) else lab.sample
    kept = lab.take(rows)
    kept.sample = samples.group[kept.sample]
    kept = kept.take(np.argsort(kept.sample, kind="stable"))
    return {
        "stack_loc": stack_loc,
        "stack_off": pc.offsets(lengths[first]),
        "values": values,
        "labels": kept,
    }


def assemble(
    profs: list[Prof],
    header: dict[str, Any],
    maps: tuple[list[tuple[int, int]], list[np.ndarray], list[np.ndarray]],
    funcs: tuple[list[np.ndarray], np.ndarray, np.ndarray, list[np.ndarray]],
    locs: tuple[list[np.ndarray], np.ndarray],
    samples: Samples,
    kept: list[np.ndarray],
) -> tuple[Prof, list[np.ndarray]]:
    """The merged Prof, and for each input where its samples went (-1: not kept)."""
    funcs_seen, func_rows, func_first, func_index = funcs
    rows = func_rows[func_first]
    names = None
    if all(p.func_names is not None for p in profs):
        every = [
            p.func_names[i]  # type: ignore[index]
            for p, f in zip(profs, funcs_seen, strict=True)
            for i in f.tolist()
        ]
        names = [every[i] for i in func_first.tolist()]
    sample_maps = []
    for s, (p, k) in enumerate(zip(profs, kept, strict=True)):
        m = np.full(p.n_samples, -1, dtype=_I64)
        m[k] = samples.group[samples.source == s]
        sample_maps.append(m)
    prof = Prof(
        **header,  # type: ignore[arg-type]
        **_mappings(profs, maps[0]),
        func_strings=rows[:, 1:4].copy() if len(rows) else np.zeros((0, 3), _I64),
        func_start=rows[:, 0].copy() if len(rows) else np.zeros(0, _I64),
        **_locations(profs, maps, func_index, locs[0], locs[1]),
        **_samples(samples, len(header["sample_types"])),
        func_names=names,
        unique_strings=True,
        unique=True,
        ordered=True,
        sample_hash=_first_of(profs, samples, [p.sample_hash for p in profs]),
        origin=_origin(profs, samples),
    )
    return prof, sample_maps


def _first_of(
    profs: list[Prof], samples: Samples, per_input: list[np.ndarray | None]
) -> np.ndarray | None:
    """A per-sample array of the inputs, for each merged sample's first member."""
    if any(a is None for a in per_input):
        return None
    out = np.empty(len(samples.first), dtype=per_input[0].dtype)  # type: ignore[union-attr]
    source, index = samples.source[samples.first], samples.index[samples.first]
    for s, a in enumerate(per_input):
        mine = source == s
        out[mine] = a[index[mine]]  # type: ignore[index]
    return out


def _origin(profs: list[Prof], samples: Samples) -> Origin | None:
    """The stored sample each merged sample stands for: its first member's."""
    if any(p.origin is None for p in profs):
        return None
    every: list[Tables] = []
    renumber = []
    for p in profs:
        ids = []
        for t in p.origin.tables:  # type: ignore[union-attr]
            ids.append(next((i for i, u in enumerate(every) if u is t), len(every)))
            if ids[-1] == len(every):
                every.append(t)
        renumber.append(np.array(ids, dtype=_I64))
    sources = [renumber[s][p.origin.source] for s, p in enumerate(profs)]  # type: ignore[union-attr]
    indices = [p.origin.index for p in profs]  # type: ignore[union-attr]
    return Origin(
        every,
        _first_of(profs, samples, sources),  # type: ignore[arg-type]
        _first_of(profs, samples, indices),  # type: ignore[arg-type]
    )
