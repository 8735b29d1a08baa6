"""Exact grouping of integer sequences, numbered in order of first occurrence.

profile.Merge keys locations by their lines and samples by their locations and labels, and keeps
the first of each key in the order it meets them. Here each key is a sequence of int64 tokens
(sequence i is tokens[off[i]:off[i + 1]]): a polynomial hash groups them, an element-wise
comparison with each group's first member makes the grouping exact, and the rare sequences whose
hash collides with a different one are grouped again by their tuples.
"""

from __future__ import annotations

import numpy as np

from ...pprof import columns as pc
from ...pprof import scan

_U64 = np.uint64
_I64 = np.int64
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], dtype=_U64)


def _hashes(tokens: np.ndarray, off: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each sequence (wrapping in uint64), its length mixed in:
    scan.c's pps_stack_hashes where it was built (the same bits, one pass, no temporaries)."""
    fast = scan.stack_hashes(tokens, off, int(_MULT[0]), int(_MULT[1]))
    if fast is not None:
        return fast
    n = len(off) - 1
    lengths = np.diff(off)
    h = np.zeros(n, dtype=_U64)
    if len(tokens):
        pos = np.arange(len(tokens), dtype=_I64) - np.repeat(off[:-1], lengths)
        powers = np.cumprod(np.full(int(lengths.max()), _MULT[0], dtype=_U64))
        mixed = tokens.astype(_U64) + np.uint64(1)
        mixed *= powers[pos]
        has = lengths > 0
        h[has] = np.add.reduceat(mixed, off[:-1][has])
    h ^= lengths.astype(_U64) * _MULT[1]
    return h


Ragged = tuple[np.ndarray, np.ndarray]  # (int64 tokens, offsets): sequence i is off[i]:off[i + 1]


def first_occurrence(
    *parts: Ragged, hashes: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(group of each key, first key of each group), groups numbered in order of first
    occurrence. Key i is the i-th sequence of every part; hashes, if given, are the keys'
    hashes (equal keys must hash alike), else computed from the parts."""
    parts = tuple((np.asarray(t, dtype=_I64), np.asarray(o, dtype=_I64)) for t, o in parts)
    n = len(parts[0][1]) - 1
    if n == 0:
        return np.zeros(0, dtype=_I64), np.zeros(0, dtype=_I64)
    if hashes is None:
        hashes = _hashes(*parts[0])
        for part in parts[1:]:
            hashes = hashes * _MULT[1] + _hashes(*part)
    group, first = _by_hash(hashes)
    rep = first[group]
    bad = np.zeros(n, dtype=bool)
    for tokens, off in parts:
        if scan.same_stacks(tokens, off, rep):  # every key as its group's first: the rule
            continue
        bad |= _differs(tokens, off, rep)
    if bad.any():
        group = _regroup(parts, group, bad)
        first = np.full(int(group.max()) + 1, n, dtype=_I64)
        np.minimum.at(first, group, np.arange(n, dtype=_I64))
    # Renumber the groups in order of their first member.
    used = np.flatnonzero(first < n)
    order = used[np.argsort(first[used])]  # firsts are distinct: no need for a stable sort
    rank = np.empty(int(group.max()) + 1, dtype=_I64)
    rank[order] = np.arange(len(order))
    return rank[group], first[order]


def _by_hash(h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(group of each element, first element of each group) of equal values (np.unique's
    return_index and return_inverse, from one unstable sort: cheaper than its stable one)."""
    order = np.argsort(h)
    sorted_h = h[order]
    new = np.ones(len(h), dtype=bool)
    new[1:] = sorted_h[1:] != sorted_h[:-1]
    starts = np.flatnonzero(new)
    first = np.minimum.reduceat(order, starts)
    group = np.empty(len(h), dtype=_I64)
    group[order] = np.cumsum(new) - 1
    return group, first


def _differs(tokens: np.ndarray, off: np.ndarray, rep: np.ndarray) -> np.ndarray:
    """Which sequences differ from the sequence rep names for them."""
    lengths = np.diff(off)
    bad = lengths[rep] != lengths
    check = np.flatnonzero(~bad & (rep != np.arange(len(rep))))
    if len(check):
        entries = pc.ranges(off[:-1][check], lengths[check])
        rep_entries = pc.ranges(off[:-1][rep[check]], lengths[check])
        differs = tokens[entries] != tokens[rep_entries]
        if differs.any():
            bad[np.repeat(check, lengths[check])[differs]] = True
    return bad


def _regroup(parts: tuple[Ragged, ...], group: np.ndarray, bad: np.ndarray) -> np.ndarray:
    """Group again, by exact tuples, every key of a hash group that had a collision."""
    suspect = np.zeros(int(group.max()) + 1, dtype=bool)
    suspect[group[bad]] = True
    group = group.copy()
    seen: dict[tuple[tuple[int, ...], ...], int] = {}
    next_id = int(group.max()) + 1
    for i in np.flatnonzero(suspect[group]).tolist():
        key = tuple(tuple(t[o[i] : o[i + 1]].tolist()) for t, o in parts)
        found = seen.get(key)
        if found is None:
            found = seen[key] = next_id
            next_id += 1
        group[i] = found
    return group


def first_order(values: np.ndarray, size: int) -> np.ndarray:
    """The distinct values in [0, size) of an array, in order of first occurrence."""
    values = np.asarray(values, dtype=_I64)
    if not len(values):
        return np.zeros(0, dtype=_I64)
    fast = scan.first_order(values, size)
    if fast is not None:
        return fast
    key = values.astype(np.uint16) if size <= 1 << 16 else values
    order = np.argsort(key, kind="stable")  # a radix sort for 16-bit keys
    sorted_values = values[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = sorted_values[1:] != sorted_values[:-1]
    firsts = order[new]  # the first position of each distinct value (the sort is stable)
    return values[np.sort(firsts)]


# --- hashes of pprof's keys, independent of how a profile numbers its items --------------
def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: every input bit reaches every output bit."""
    x = x.astype(_U64, copy=True)
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def combine(*parts: np.ndarray) -> np.ndarray:
    """One hash of several columns (uint64 arithmetic wraps)."""
    h = np.zeros(len(parts[0]), dtype=_U64)
    for part in parts:
        h = _mix(h * _MULT[0] + np.asarray(part).astype(_I64, copy=False).view(_U64))
    return h


def string_hashes(strings: list[bytes]) -> np.ndarray:
    """A hash of each string's bytes (Python's: the same within one process, which is all the
    hashes are for)."""
    return np.fromiter((hash(s) for s in strings), dtype=_I64, count=len(strings)).view(_U64)


def sequence_hashes(values: np.ndarray, off: np.ndarray) -> np.ndarray:
    """A hash of each sequence values[off[i]:off[i + 1]] (uint64 values), order-sensitive."""
    return _mix(_hashes(np.asarray(values).view(_I64), off))
