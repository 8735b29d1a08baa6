"""Exact grouping of integer sequences, numbered in order of first occurrence.

profile.Merge keys locations by their lines and samples by their locations and labels, and keeps
the first of each key in the order it meets them. Here each key is a sequence of int64 tokens
(sequence i is tokens[off[i]:off[i + 1]]): a polynomial hash groups them, an element-wise
comparison with each group's first member makes the grouping exact, and the rare sequences whose
hash collides with a different one are grouped again by their tuples.
"""

from __future__ import annotations

import numpy as np

from ..pprof import columns as pc

_U64 = np.uint64
_I64 = np.int64
_MULT = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F], dtype=_U64)


def _hashes(tokens: np.ndarray, off: np.ndarray) -> np.ndarray:
    """A 64-bit polynomial hash of each sequence (wrapping in uint64), its length mixed in."""
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


def first_occurrence(
    tokens: np.ndarray, off: np.ndarray, prefix: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(group of each sequence, first sequence of each group), groups numbered in order of
    first occurrence. prefix, if given, is one more token per sequence (compared first)."""
    tokens = np.asarray(tokens, dtype=_I64)
    off = np.asarray(off, dtype=_I64)
    n = len(off) - 1
    if n == 0:
        return np.zeros(0, dtype=_I64), np.zeros(0, dtype=_I64)
    h = _hashes(tokens, off)
    if prefix is not None:
        h ^= (np.asarray(prefix, dtype=_I64).astype(_U64) + np.uint64(7)) * _MULT[0]
    _, first, group = np.unique(h, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    rep = first[group]
    lengths = np.diff(off)
    bad = lengths[rep] != lengths
    if prefix is not None:
        bad |= prefix[rep] != prefix
    same_len = np.flatnonzero(~bad & (rep != np.arange(n)))
    if len(same_len):
        entries = pc.ranges(off[:-1][same_len], lengths[same_len])
        rep_entries = pc.ranges(off[:-1][rep[same_len]], lengths[same_len])
        differs = tokens[entries] != tokens[rep_entries]
        if differs.any():
            owner = np.repeat(same_len, lengths[same_len])
            bad[owner[differs]] = True
    if bad.any():
        group = _regroup(tokens, off, prefix, group, bad)
    # Renumber the groups in order of their first member.
    first = np.full(int(group.max()) + 1, n, dtype=_I64)
    np.minimum.at(first, group, np.arange(n, dtype=_I64))
    used = np.flatnonzero(first < n)
    order = used[np.argsort(first[used], kind="stable")]
    rank = np.empty(int(group.max()) + 1, dtype=_I64)
    rank[order] = np.arange(len(order))
    return rank[group], first[order]


def _regroup(
    tokens: np.ndarray,
    off: np.ndarray,
    prefix: np.ndarray | None,
    group: np.ndarray,
    bad: np.ndarray,
) -> np.ndarray:
    """Group again, by exact tuples, every sequence of a hash group that had a collision."""
    suspect = np.zeros(int(group.max()) + 1, dtype=bool)
    suspect[group[bad]] = True
    members = np.flatnonzero(suspect[group])
    group = group.copy()
    seen: dict[tuple[int, ...], int] = {}
    next_id = int(group.max()) + 1
    for i in members.tolist():
        key = tuple(tokens[off[i] : off[i + 1]].tolist())
        if prefix is not None:
            key = (int(prefix[i]), *key)
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
    key = values.astype(np.uint16) if size <= 1 << 16 else values
    order = np.argsort(key, kind="stable")  # a radix sort for 16-bit keys
    sorted_values = values[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = sorted_values[1:] != sorted_values[:-1]
    firsts = order[new]  # the first position of each distinct value (the sort is stable)
    return values[np.sort(firsts)]
