"""Node tags (the DOT's nodelets): per graph node, its samples' label sets and byte sizes.

graph.addSample files every sample under each node of its stack (once, for cum) and its leaf
(for flat): by the sample's string labels joined as 'key:value' (sorted, joined by a literal
backslash-n; pprof::base and the keys tagshow/taghide removed left out), and per label set by
its numeric 'bytes' labels, each formatted in the key's unit. Only nodes that are drawn (or
weighed for the node count) need them; label sets too light to survive the node cutoff
anywhere are skipped up front, which keeps per-request labels cheap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...pprof import columns as pc
from ..measure.units import scaled_label
from ..model.graph import Graph
from ..model.labels import Labels, labels, value_sequences

_I64 = np.int64


@dataclass
class Tag:
    """graph.Tag: a label set, or a formatted number with its unit and first raw value."""

    name: str
    flat: int = 0
    cum: int = 0
    unit: str = ""
    value: int = 0


@dataclass
class NodeTags:
    """graph.Node's LabelTags and NumericTags (label set -> formatted bytes -> Tag)."""

    label: dict[str, Tag] = field(default_factory=dict)
    numeric: dict[str, dict[str, Tag]] = field(default_factory=dict)

    def trim(self, cutoff: int) -> None:
        """TrimLowFrequencyTags: keep tags with |flat| or |cum| at least cutoff."""

        def ok(t: Tag) -> bool:
            return abs(t.flat) >= cutoff or abs(t.cum) >= cutoff

        self.label = {k: t for k, t in self.label.items() if ok(t)}
        self.numeric = {s: {k: t for k, t in m.items() if ok(t)} for s, m in self.numeric.items()}

    def count(self) -> int:
        """countTags: the tags with a non-zero flat."""
        n = sum(1 for t in self.label.values() if t.flat != 0)
        return n + sum(1 for m in self.numeric.values() for t in m.values() if t.flat != 0)


class Tagger:
    """Computes NodeTags of chosen nodes of one graph (refined: sample -> stack map)."""

    def __init__(self, g: Graph, sample_stack: np.ndarray, removed: frozenset[int], cutoff: int):
        self.g = g
        lab = labels(g.tables)
        self.lab = lab
        w = g.weights
        live = (sample_stack >= 0) & (w != 0)
        self.samples = np.flatnonzero(live)
        self.empty = True
        if not len(self.samples) or not len(lab.key):
            return
        base = lab.key_code("pprof::base")
        bytes_key = lab.key_code("bytes")
        drop = np.zeros(len(lab.texts), dtype=bool)
        drop[list(removed)] = True
        if base >= 0:
            drop[base] = True
        row_live = live[lab.sample] & ~drop[lab.key]
        srows = np.flatnonzero(row_live & ~lab.numeric)
        nrows = np.flatnonzero(row_live & lab.numeric & (lab.key == bytes_key)) if bytes_key >= 0 \
            else np.zeros(0, dtype=_I64)  # fmt: skip
        if not len(srows) and not len(nrows):
            return
        self.empty = False
        n = len(w)
        # Label sets: the sorted 'key:value' texts of each sample.
        span = len(lab.texts) + 1
        pair = lab.key[srows] * span + lab.value[srows]
        upair, inv = np.unique(pair, return_inverse=True)
        texts = [lab.texts[p // span] + ":" + lab.texts[p % span] for p in upair.tolist()]
        rank = np.empty(len(texts), dtype=_I64)
        rank[sorted(range(len(texts)), key=texts.__getitem__)] = np.arange(len(texts))
        tok = rank[inv.reshape(-1)]
        srt = np.lexsort((tok, lab.sample[srows]))
        by_rank = sorted(texts)
        group, rep, rep_off = value_sequences(n, lab.sample[srows][srt], tok[srt])
        self.set_of = group  # label set of each sample; set 0 may be the empty one
        self.set_names = [
            "\\n".join(by_rank[x] for x in rep[a:b].tolist())
            for a, b in zip(rep_off[:-1].tolist(), rep_off[1:].tolist(), strict=True)
        ]
        # Numeric bytes tags: one row per value, under the sample's label set.
        unit = lab.units.get(bytes_key, "")
        self.num_rows = nrows
        formatted = [scaled_label(v, unit, "minimum") for v in lab.num[nrows].tolist()]
        self.num_names, num_code = np.unique(np.array(formatted, dtype=object), return_inverse=True)
        self.num_code = num_code.reshape(-1).astype(_I64)
        self.unit = unit
        # Weight per sample, and samples grouped by stack.
        ws = np.abs(w[self.samples])
        self.light_sets = self._light(self.set_of[self.samples], ws, len(self.set_names), cutoff)
        order = np.argsort(sample_stack[self.samples], kind="stable")
        self.by_stack = self.samples[order]
        n_stacks = len(g.stacks.frame_off) - 1
        counts = np.bincount(sample_stack[self.by_stack], minlength=n_stacks)
        self.stack_start = pc.offsets(counts)
        self.sample_stack = sample_stack
        # Numeric rows per sample.
        counts = np.bincount(lab.sample[nrows], minlength=n)
        self.num_off = pc.offsets(counts)

    @staticmethod
    def _light(sets: np.ndarray, ws: np.ndarray, n_sets: int, cutoff: int) -> np.ndarray:
        """Label sets whose whole |weight| is under the cutoff: no node keeps such a tag."""
        total = np.zeros(n_sets, dtype=np.float64)
        np.add.at(total, sets, ws.astype(np.float64))
        return total < cutoff * (1 - 1e-12) if cutoff > 0 else np.zeros(n_sets, dtype=bool)

    def tags(self, node: int) -> NodeTags:
        """The NodeTags of one node."""
        out = NodeTags()
        if self.empty:
            return out
        st = self.g.stacks
        at = int(np.searchsorted(st.first_nodes, node))
        if at >= len(st.first_nodes) or st.first_nodes[at] != node:
            return out
        end = st.first_starts[at + 1] if at + 1 < len(st.first_starts) else len(st.first_owner)
        stacks_with = st.first_owner[st.first_starts[at] : end].astype(_I64)
        off = st.frame_off
        leaf_of = st.frame_node[off[1:] - 1] if len(off) > 1 else np.zeros(0, _I64)
        counts = self.stack_start[stacks_with + 1] - self.stack_start[stacks_with]
        samples = self.by_stack[pc.ranges(self.stack_start[stacks_with], counts)]
        is_leaf = np.repeat(leaf_of[stacks_with] == node, counts)
        w = self.g.weights[samples]
        sets = self.set_of[samples]
        keep = ~self.light_sets[sets]
        self._add(out.label, None, sets[keep], w[keep], is_leaf[keep])
        if len(self.num_rows):
            n_num = self.num_off[samples + 1] - self.num_off[samples]
            rows = pc.ranges(self.num_off[samples], n_num)
            rs = np.repeat(np.arange(len(samples)), n_num)
            self._add_numeric(out, rows, sets[rs], w[rs], is_leaf[rs], samples[rs])
        return out

    def _add(self, into: dict[str, Tag], _: None, sets: np.ndarray, w: np.ndarray,
             leaf: np.ndarray) -> None:  # fmt: skip
        if not len(sets):
            return
        cum = np.zeros(len(self.set_names), dtype=_I64)
        flat = np.zeros(len(self.set_names), dtype=_I64)
        np.add.at(cum, sets, w)
        np.add.at(flat, sets[leaf], w[leaf])
        for s in np.unique(sets).tolist():
            name = self.set_names[s]
            if name:
                into[name] = Tag(name, int(flat[s]), int(cum[s]))

    def _add_numeric(self, out: NodeTags, rows: np.ndarray, sets: np.ndarray, w: np.ndarray,
                     leaf: np.ndarray, samples: np.ndarray) -> None:  # fmt: skip
        codes = self.num_code[rows]
        span = len(self.num_names)
        key = sets * span + codes
        uk, first, inv = np.unique(key, return_index=True, return_inverse=True)
        inv = inv.reshape(-1)
        cum = np.zeros(len(uk), dtype=_I64)
        flat = np.zeros(len(uk), dtype=_I64)
        np.add.at(cum, inv, w)
        np.add.at(flat, inv[leaf], w[leaf])
        # A tag's value is that of the first sample (in profile order) that made it.
        order = np.lexsort((rows, samples))
        _, at = np.unique(inv[order], return_index=True)
        first_row = rows[order][at]
        values = self.lab.num[self.num_rows][first_row]
        del first
        for k, code in enumerate(uk.tolist()):
            s, c = divmod(code, span)
            name = str(self.num_names[c])
            m = out.numeric.setdefault(self.set_names[s], {})
            m[name] = Tag(name, int(flat[k]), int(cum[k]), self.unit, int(values[k]))


def cheap_labels(lab: Labels) -> bool:
    """Whether a profile has any label a node tag could come from."""
    return bool(len(lab.key))
