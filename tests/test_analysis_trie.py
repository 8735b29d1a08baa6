"""The trie path of the flame graph (trie.py: one grouping per Stacks, weighed per view) makes
the very tree tree.build() makes for one set of weights, limits and ties included.

Compared as the flame graph JSON shows a tree (preorder of depth, node, value, self, and what
was hidden), on seeded random stacks: shared prefixes, recursion, empty stacks, weights of
both signs, zeros and many ties, every budget from 1 up and node fractions; and on the corpus
profiles' own stacks with small budgets.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from share import pprof
from share.analysis.flame import tree, trie
from share.analysis.flame.treeorder import preorder
from share.analysis.model.graph import graph
from share.analysis.model.stacks import stacks
from share.analysis.model.tables import tables
from share.pprof import columns as pc

from conftest import CORPUS


def shown(t: tree.Tree, place: np.ndarray) -> tuple[object, ...]:
    order = preorder(t.parent, t.node, t.value, t.depth, place)
    cols = (t.depth[order], t.node[order], t.value[order], t.self_[order])
    return (*(c.tolist() for c in cols), t.hidden_nodes, t.hidden_value, t.hidden_max)


def same(node: np.ndarray, off: np.ndarray, w: np.ndarray, total: int, n_nodes: int) -> None:
    tr = trie.trie(node, off, n_nodes)
    place = np.arange(n_nodes, dtype=np.int64)
    for budget in (0, 1, 2, 3, 5, 8, 13, 40, 1000):
        for fraction in (0.0, 0.05, 0.3):
            old = tree.build(node, off, w, total, n_nodes, fraction, budget)
            new = trie.weighed(tr, node, off, w, total, fraction, budget)
            assert shown(new, place) == shown(old, place), (budget, fraction)


def test_random_stacks() -> None:
    rng = random.Random(20261201)
    for _ in range(100):  # x 27 limits each: ~5 s, and the corpus cases below add real shapes
        n_nodes = rng.choice([1, 2, 3, 6, 20])
        n_stacks = rng.randrange(0, 40)
        prefix = [rng.randrange(n_nodes) for _ in range(rng.randrange(0, 6))]
        stacks_ = []
        for _ in range(n_stacks):
            head = prefix[: rng.randrange(len(prefix) + 1)]
            stacks_.append(head + [rng.randrange(n_nodes) for _ in range(rng.randrange(0, 9))])
        scale = rng.choice([1, 3, 1 << 40])
        weights = [rng.choice([0, 1, 1, 2, 5, -1, -3]) * scale for _ in stacks_]
        node = np.array([f for s in stacks_ for f in s], dtype=np.int32)
        off = pc.offsets([len(s) for s in stacks_])
        w = np.array(weights, dtype=np.int64)
        same(node, off, w, int(np.abs(w).sum()), n_nodes)


@pytest.mark.parametrize(
    "name",
    ["go-runtime/cpu-xl.pb.gz", "google-pprof-testdata/large.cpu", "go-runtime/heap-large.pb.gz"],
)
def test_corpus_stacks(name: str) -> None:
    parsed = pprof.parse((CORPUS / name).read_bytes(), max_profile_bytes=1 << 28)
    t = tables(parsed)
    st = stacks(t)
    tr = trie.trie(st.frame_node, st.frame_off, len(st.names))
    place = st.name_ranks()[0]
    for index in range(len(t.sample_types)):
        g = graph(t, index)
        for budget, fraction in ((1, 0.0), (50, 0.0), (2000, 0.0), (0, 0.01), (500, 0.001)):
            old = tree.build(st.frame_node, st.frame_off, g.stack_weights, g.total,
                              len(st.names), fraction, budget)  # fmt: skip
            new = trie.weighed(tr, st.frame_node, st.frame_off, g.stack_weights, g.total,
                               fraction, budget)  # fmt: skip
            assert shown(new, place) == shown(old, place), (index, budget, fraction)
