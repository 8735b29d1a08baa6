"""tagroot / tagleaf: pprof's label pseudo-frames (internal/driver/tagroot.go addLabelNodes).

For each sample and each key, a pseudo-location whose function is named by the sample's values
of the key (strings, then numbers in their unit, joined by ','; '' when it has none) and whose
file is the key: root keys above the stack (the first key outermost), leaf keys under it (the
last key innermost). Samples are grouped by their values, so the names are built once per
distinct combination, not once per sample.
"""

from __future__ import annotations

import numpy as np

from ...pprof import columns as pc
from ..measure.units import scaled_label
from ..model.labels import Labels, value_sequences
from ..model.tables import Tables

_I64 = np.int64


def pseudo_frames(
    t: Tables,
    lab: Labels,
    stack_of: np.ndarray,
    stack_loc: np.ndarray,
    stack_off: np.ndarray,
    roots: list[str],
    leaves: list[str],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[str, str]], np.ndarray, bool, bool]:
    """addLabelNodes: a pseudo-location per (values, key) (function name = the sample's values
    of the key joined by ',', file = the key), added leaf- and root-side to every stack.

    Returns the new stacks (one per distinct stack and pseudo-frames), the pseudo-frames as
    (name, key) (location n_loc + i), which of them a live sample has, and whether any sample
    had a value for a root / leaf key.
    """
    n, n_loc = t.n_samples, len(t.loc_mapping)
    interned: dict[tuple[str, str], int] = {}
    columns, matched = [], []
    for key in leaves[::-1] + roots[::-1]:  # leaf-first order: the last leaf key nearest the leaf
        names, has = values_per_sample(lab, key, n)
        codes = [interned.setdefault((nm, key), len(interned)) for nm in names[0]]
        columns.append(np.asarray(codes, dtype=_I64)[names[1]] + n_loc)
        matched.append(bool((has & lab.alive).any()))
    n_leaf = len(leaves)
    rootm = any(matched[n_leaf:])
    leafm = any(matched[:n_leaf])
    extra = np.stack(columns, axis=1)  # per sample: its pseudo-locations, leaf first
    rows = np.concatenate((stack_of[:, None], extra), axis=1)
    # Distinct rows by one int64 code per row (refactorized whenever it could overflow):
    # np.unique over rows (axis=0) sorts structured records, many times slower.
    code = np.zeros(len(rows), dtype=_I64)
    for column in rows.T:
        span = int(column.max()) + 1 if len(column) else 1
        if int(code.max() if len(code) else 0) >= (1 << 62) // span:
            code = np.unique(code, return_inverse=True)[1].reshape(-1).astype(_I64)
        code = code * span + column
    _, rep, group = np.unique(code, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    uniq = rows[rep]
    base = uniq[:, 0]
    base_len = np.diff(stack_off)[base]
    k = extra.shape[1]
    counts = base_len + k
    off = pc.offsets(counts)
    out = np.empty(int(off[-1]), dtype=_I64)
    for j in range(n_leaf):  # leaf pseudo-frames first, then the stack, then the root ones
        out[off[:-1] + j] = uniq[:, 1 + j]
    src = pc.ranges(stack_off[:-1][base], base_len)
    out[pc.ranges(off[:-1] + n_leaf, base_len)] = stack_loc[src]
    for j in range(k - n_leaf):
        out[off[:-1] + n_leaf + base_len + j] = uniq[:, 1 + n_leaf + j]
    pseudo = list(interned)
    pseudo_live = np.zeros(len(pseudo), dtype=bool)
    for column in columns:
        pseudo_live[column[lab.alive] - n_loc] = True
    del rep
    return group.astype(_I64), out, off, pseudo, pseudo_live, rootm, leafm


def values_per_sample(
    lab: Labels, key: str, n: int
) -> tuple[tuple[list[str], np.ndarray], np.ndarray]:
    """formatLabelValues per sample: its string values of key, then its numbers (formatted),
    joined by ','. Returns ((distinct joined texts, index per sample), has-a-value per sample)."""
    code = lab.key_code(key)
    rows = np.flatnonzero(lab.key == code) if code >= 0 else np.zeros(0, dtype=_I64)
    # Strings before numbers within a sample, each in label order.
    rows = rows[np.lexsort((lab.numeric[rows], lab.sample[rows]))]
    tokens = lab.value[rows].copy()
    num_rows = rows[lab.numeric[rows]]
    extra: dict[str, int] = {}
    if len(num_rows):
        texts = [
            scaled_label(v, lab.texts[u] if u else "", "minimum")
            for v, u in zip(lab.num[num_rows].tolist(), lab.unit[num_rows].tolist(), strict=True)
        ]
        base = len(lab.texts)
        tokens[lab.numeric[rows]] = [base + extra.setdefault(s, len(extra)) for s in texts]
    group, rep_tokens, rep_off = value_sequences(n, lab.sample[rows], tokens)
    words = lab.texts + list(extra)
    names = [
        ",".join(words[x] for x in rep_tokens[a:b].tolist())
        for a, b in zip(rep_off[:-1].tolist(), rep_off[1:].tolist(), strict=True)
    ]
    has = np.zeros(n, dtype=bool)
    has[lab.sample[rows]] = True
    return (names, group), has
