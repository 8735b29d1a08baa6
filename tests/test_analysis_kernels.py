"""The analysis kernels of scan.c give exactly what their numpy paths give, dtypes included.

first_frames (each node's first frame per stack, what cum counts: one pass and a counting sort
against a stable sort) on every corpus profile's own stacks, at "lines" granularity (more
nodes, more recursion of a line's node), and on seeded random stacks with recursion, empty
stacks and unused nodes; unique_stacks (hashes and the check of equal stacks in one pass each)
on every corpus profile's samples and on random stacks with many duplicates and collisions of
the cheap signature; first_sums (cum over the first frames, wrapping) on every corpus profile.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from share import pprof
from share.analysis.model import graph, stacks
from share.analysis.model.tables import tables
from share.analysis.refine import refine
from share.errors import ShareError
from share.pprof import columns as pc
from share.pprof import scan

from conftest import CORPUS

FILES = sorted(
    p
    for p in CORPUS.rglob("*")
    if p.is_file() and p.suffix not in (".tsv", ".md") and p.stat().st_size < 3_000_000
)


def without_library(fn: Any) -> Any:
    saved, scan.LIB = scan.LIB, None
    try:
        return fn()
    finally:
        scan.LIB = saved


def unique_both_ways(loc: np.ndarray, off: np.ndarray) -> None:
    assert scan.LIB is not None
    for always in (False, True):
        fast = stacks.unique_stacks(loc, off, always=always)
        slow = without_library(lambda a=always: stacks.unique_stacks(loc, off, always=a))
        for a, b in zip(fast, slow, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def both_ways(node: np.ndarray, owner: np.ndarray, n_nodes: int) -> None:
    """The compiled and numpy paths agree, with and without groups."""
    assert scan.LIB is not None
    for group in (False, True):
        fast = stacks.first_frames(node, owner, n_nodes, group=group)
        saved, scan.LIB = scan.LIB, None
        try:
            slow = stacks.first_frames(node, owner, n_nodes, group=group)
        finally:
            scan.LIB = saved
        assert len(fast) == len(slow)
        for a, b in zip(fast, slow, strict=True):
            if b is None:
                assert a is None
                continue
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def parsed(path: Any) -> Any:
    try:
        return pprof.parse(path.read_bytes(), max_profile_bytes=1 << 26)
    except ShareError:  # files the corpus keeps to be refused
        return None


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(CORPUS)))
def test_corpus_stacks_both_ways(path: Any) -> None:
    p = parsed(path)
    if p is None:
        return
    t = tables(p)
    st = stacks.stacks(t)
    both_ways(st.frame_node, st.frame_owner, len(st.names))
    lines = refine.refine(t, refine.Spec(granularity="lines")).stacks
    both_ways(lines.frame_node, lines.frame_owner, len(lines.names))
    unique_both_ways(t.stack_loc, t.stack_off)
    rng = np.random.default_rng(len(st.names))
    for own in (st, lines):  # cum sums, wrapping: weights near the int64 limits
        ws = rng.integers(-(1 << 62), 1 << 62, len(own.frame_off) - 1, dtype=np.int64) * 3
        fast = graph.first_sums(own, ws)
        slow = without_library(lambda o=own, w=ws: graph.first_sums(o, w))
        assert fast.dtype == slow.dtype and np.array_equal(fast, slow)


def test_random_duplicate_stacks_both_ways() -> None:
    rng = random.Random(7)
    for _ in range(200):
        shapes = [[rng.randrange(5) for _ in range(rng.randrange(0, 7))] for _ in range(8)]
        picked = [rng.choice(shapes) for _ in range(rng.choice([0, 1, 63, 64, 200]))]
        loc = np.array([x for s in picked for x in s], dtype=np.int64)
        unique_both_ways(loc, pc.offsets([len(s) for s in picked]))


def test_random_stacks_with_recursion_both_ways() -> None:
    rng = random.Random(20261201)
    for _ in range(200):
        n_nodes = rng.choice([1, 2, 5, 40, 70_000])
        n_stacks = rng.randrange(0, 60)
        lengths = [rng.choice([0, 1, 3, 30]) for _ in range(n_stacks)]
        pool = [rng.randrange(n_nodes) for _ in range(rng.randrange(1, 6))]
        node = np.array(
            [rng.choice(pool) if rng.random() < 0.5 else rng.randrange(n_nodes)
             for _ in range(sum(lengths))],
            dtype=np.int32,
        )  # fmt: skip
        owner = np.repeat(np.arange(n_stacks, dtype=np.int32), lengths)
        both_ways(node, owner, n_nodes)


def test_no_frames_and_no_nodes() -> None:
    empty = np.zeros(0, dtype=np.int32)
    both_ways(empty, empty, 0)
    both_ways(empty, empty, 3)
