"""Stacks -> Graph: flat and cum per node for one sample type, and pprof's total.

The profile is merged as profile.Merge would (identical samples summed, which changes the total
only where values of both signs meet or an int64 sum wraps), a function recursing in one stack
counts once in its cum, and the total is report.computeTotal's (sum of |v|, or of the
`pprof::base` samples of a diff). Arithmetic wraps around like Go's int64.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...pprof import scan
from ..measure.units import wrap64
from .stacks import Stacks, stacks, unique_stacks
from .tables import Tables

_I64 = np.int64


@dataclass
class Graph:
    """Per-node aggregates for one sample type (graph.New over the whole profile)."""

    tables: Tables
    stacks: Stacks
    index: int | None
    sample_type: tuple[str, str]
    weights: np.ndarray  # int64 per sample, after Merge's summing of identical samples
    stack_weights: np.ndarray  # summed per stack of Stacks
    stack_live: np.ndarray  # per stack: some sample has a non-zero value
    total: int  # report.computeTotal
    flat: np.ndarray  # int64 per node
    cum: np.ndarray
    memo: dict[Any, Any] = field(default_factory=dict, repr=False)  # later stages' results

    @property
    def present(self) -> np.ndarray:
        """Node ids pprof keeps in the graph (flat or cum non-zero)."""
        return np.flatnonzero((self.flat != 0) | (self.cum != 0))


def graph(t: Tables, index: int | None) -> Graph:
    """Aggregate a profile for sample type index (None: no types, hence no samples)."""
    cached = t._graphs.get(index)
    if cached is None:
        cached = t._graphs[index] = _build_graph(t, index)
    return cached


def _build_graph(t: Tables, index: int | None) -> Graph:
    st = stacks(t)
    if index is None:
        w = np.zeros(t.n_samples, dtype=_I64)
    else:
        w = _merged_weights(t, t.values[:, index])
    ws, flat, cum = node_sums(st, w)
    live = np.zeros(len(ws), dtype=bool)  # stacks with a sample pprof does not skip (w != 0)
    live[st.stack_of[w != 0]] = True
    return Graph(
        tables=t,
        stacks=st,
        index=index,
        sample_type=t.sample_types[index] if index is not None else ("", ""),
        weights=w,
        stack_weights=ws,
        stack_live=live,
        total=_total(t, w),
        flat=flat,
        cum=cum,
    )


def view_header(g: Graph) -> dict[str, Any]:
    """The fields every JSON view of a graph opens with (README's flame graph JSON): its sample
    type, the profile's types and default, pprof's total and the unit."""
    t = g.tables
    return {
        "sample_type": {"type": g.sample_type[0], "unit": g.sample_type[1]},
        "sample_index": g.index,
        "sample_types": [{"type": a, "unit": b} for a, b in t.sample_types],
        "default_sample_index": t.sample_index(None),
        "total": g.total,
        "unit": g.sample_type[1],
    }


def node_sums(st: Stacks, w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(weight per stack, flat per node, cum per node) of per-sample weights w (int64 sums
    wrap, as Go's); a node recursing in one stack counts once in its cum."""
    ws = np.zeros(len(st.frame_off) - 1, dtype=_I64)
    np.add.at(ws, st.stack_of, w)
    return (ws, *stack_node_sums(st, ws))


def stack_node_sums(st: Stacks, ws: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flat per node, cum per node) of per-stack weights ws (node_sums' second half)."""
    flat = np.zeros(len(st.names), dtype=_I64)
    cum = np.zeros(len(st.names), dtype=_I64)
    off = st.frame_off
    nonempty = np.flatnonzero(off[1:] > off[:-1])
    np.add.at(flat, st.frame_node[off[1:][nonempty] - 1], ws[nonempty])
    if len(st.first_owner):
        cum[st.first_nodes] = first_sums(st, ws)
    return flat, cum


def first_sums(st: Stacks, ws: np.ndarray) -> np.ndarray:
    """Per node of st.first_nodes, the sum of per-stack weights ws over the stacks it is in
    (each counted once: its cum), wrapping as Go's int64 sums."""
    fast = scan.group_sums(ws, st.first_owner, st.first_starts)
    return fast if fast is not None else np.add.reduceat(ws[st.first_owner], st.first_starts)


def _merged_weights(t: Tables, w: np.ndarray) -> np.ndarray:
    """Sample weights after profile.Merge, which sums samples with equal stacks and labels.

    Summing is linear, so it only matters where the total takes absolute values (signs mix)
    or an int64 sum wraps; those profiles get the exact merge, the others are left as they are.
    """
    w = np.asarray(w, dtype=_I64)
    if not len(w) or t.merged:
        return w
    same_sign = bool((w >= 0).all() or (w <= 0).all())
    small = float(np.abs(w.astype(np.float64)).sum()) < 2.0**62
    if same_sign and small:
        return w
    return _exact_merge(t, w)


def _exact_merge(t: Tables, w: np.ndarray) -> np.ndarray:
    """Merge's sums where they matter: samples with equal stacks and signs that mix (or sums
    that may wrap) are keyed by their labels too, in Python; the rest stay as they are."""
    group = _merge_groups(t)
    nonzero = (t.values != 0).any(axis=1)  # Merge drops all-zero samples first
    n_groups = int(group.max()) + 1
    members = group[nonzero]
    size = np.bincount(members, minlength=n_groups)
    pos = np.zeros(n_groups, dtype=bool)
    neg = np.zeros(n_groups, dtype=bool)
    pos[group[nonzero & (w > 0)]] = True
    neg[group[nonzero & (w < 0)]] = True
    magnitude = np.zeros(n_groups)
    np.add.at(magnitude, members, np.abs(w[nonzero].astype(np.float64)))
    risky = (size > 1) & ((pos & neg) | (magnitude >= 2.0**62))
    todo = np.flatnonzero(nonzero & risky[group])
    if not len(todo):
        return w
    out = w.copy()
    out[todo] = 0
    sample, key, sval, num, unit = t.labels()  # rows are in sample order
    lo = np.searchsorted(sample, todo).tolist()
    hi = np.searchsorted(sample, todo, side="right").tolist()
    strings = t.strings
    reps: dict[tuple[Any, ...], int] = {}
    for s, a, b in zip(todo.tolist(), lo, hi, strict=True):
        items: list[tuple[str, Any]] = []
        for k, sv, nv, u in zip(
            key[a:b].tolist(),
            sval[a:b].tolist(),
            num[a:b].tolist(),
            unit[a:b].tolist(),
            strict=True,
        ):
            if sv != 0:
                items.append((strings[k], strings[sv]))
            elif nv != 0 or u != 0:
                items.append((strings[k], (nv, u)))
        rep = reps.setdefault((int(group[s]), _label_key(items, strings)), s)
        out[rep] = wrap64(int(out[rep]) + int(w[s]))
    return out


def _merge_groups(t: Tables) -> np.ndarray:
    """Samples grouped by stack as Merge compares them: by location key, not location id."""
    if t._merge_groups is not None:
        return t._merge_groups
    func_canon: dict[tuple[Any, ...], int] = {}
    raw = zip(t.func_start, *t.func_names, strict=True)
    fcanon = [func_canon.setdefault(key, len(func_canon)) for key in raw]
    map_canon = {k: i for i, k in reversed(list(enumerate(t.map_key)))}
    loc_key: dict[tuple[Any, ...], int] = {}
    loc_canon = []
    line_off = t.line_off.tolist()
    line_func = t.line_func.tolist()
    line_no = t.line_no.tolist()
    for j in range(len(t.loc_mapping)):
        m = int(t.loc_mapping[j])
        addr = int(t.loc_address[j])
        mid = -1
        if m >= 0:
            addr = (addr - t.map_start[m]) % (1 << 64)
            mid = map_canon[t.map_key[m]]
        lines = tuple(
            (fcanon[line_func[i]], line_no[i]) for i in range(line_off[j], line_off[j + 1])
        )
        loc_canon.append(loc_key.setdefault((addr, mid, bool(t.loc_folded[j]), lines), j))
    entries = np.array(loc_canon, dtype=_I64)[t.stack_loc]
    t._merge_groups = unique_stacks(entries, t.stack_off, always=True)[0]
    return t._merge_groups


def _label_key(items: list[tuple[str, Any]], strings: list[str]) -> tuple[Any, ...]:
    """What Sample.key compares: string labels per key in order, numbers with their units."""
    text: dict[str, list[str]] = {}
    nums: dict[str, list[int]] = {}
    units: dict[str, list[str]] = {}
    for k, v in items:
        if isinstance(v, str):
            text.setdefault(k, []).append(v)
        else:
            nv, u = v
            values = nums.setdefault(k, [])
            if u != 0:
                us = units.setdefault(k, [])
                us.extend([""] * (len(values) - len(us)))
                us.append(strings[u])
            values.append(nv)
    for k, us in units.items():
        us.extend([""] * (len(nums[k]) - len(us)))
    return (
        tuple(sorted((k, tuple(v)) for k, v in text.items())),
        tuple(sorted((k, tuple(v), tuple(units.get(k, ()))) for k, v in nums.items())),
    )


def _total(t: Tables, w: np.ndarray) -> int:
    """report.computeTotal: sum of |v|; only the diff base's samples if it has any."""
    a = np.abs(w)  # the minimum int64 stays negative, as abs64 leaves it
    total = wrap64(int(a.sum(dtype=_I64))) if len(a) else 0
    if "pprof::base" in t.strings and "true" in t.strings:
        sample, key, sval, _, _ = t.labels()
        is_key = np.array([x == "pprof::base" for x in t.strings])
        is_true = np.array([x == "true" for x in t.strings])
        hit = is_key[key] & (sval != 0) & is_true[sval]
        base = np.zeros(len(w), dtype=bool)
        base[sample[hit]] = True
        diff_total = wrap64(int(a[base].sum(dtype=_I64)))
        if diff_total > 0:
            total = diff_total
    return total
