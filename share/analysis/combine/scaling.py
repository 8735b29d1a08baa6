"""What go tool pprof does to profiles' values before and between merges, as Go 1.19 does it.

measurement.ScaleProfiles (compatible types, the finest unit), Profile.ScaleN / Scale (each
value times a ratio, rounded half away from zero; samples left all zero are dropped),
Profile.Normalize (-normalize: the source scaled to the base's sums) and Profile.SetLabel
(-diff_base marks every base sample pprof::base=true). Each returns a new Prof and the indices
of the samples it kept, so a caller can follow samples through.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ...pprof import columns as pc
from ..measure.units import MIN64, go_int64, same_family, scale, wrap64
from .merge import IncompatibleProfiles, compatible, on_one_table, struct_text
from .prof import Prof

_I64 = np.int64


def _compatible(a: tuple[str, str], b: tuple[str, str]) -> bool:
    """measurement.compatibleValueTypes: types equal but for one trailing "s"; units equal or
    of one family."""
    if a[0].removesuffix("s") != b[0].removesuffix("s"):
        return False
    return a[1] == b[1] or same_family(a[1], b[1])


def _common(p0: Prof, types: Sequence[tuple[int, int]]) -> tuple[int, int] | None:
    """measurement.CommonValueType: the finest of compatible types (None for fewer than two)."""
    if len(types) <= 1:
        return None
    best = types[0]
    for t in types[1:]:
        a = (p0.string(best[0]), p0.string(best[1]))
        b = (p0.string(t[0]), p0.string(t[1]))
        if not _compatible(a, b):
            raise IncompatibleProfiles(
                f"incompatible types: {struct_text(p0, best)} {struct_text(p0, t)}"
            )
        if scale(1, b[1], a[1])[0] < 1:
            best = t
    return best


def go_round(x: np.ndarray) -> np.ndarray:
    """int64(math.Round(x)) per element: half away from zero; out of range gives MIN64 (amd64)."""
    t = np.trunc(x)
    r = t + np.where(np.abs(x - t) >= 0.5, np.sign(x), 0.0)
    ok = np.isfinite(r) & (r >= -(2.0**63)) & (r < 2.0**63)
    out = np.full(r.shape, MIN64, dtype=_I64)
    out[ok] = r[ok].astype(_I64)
    return out


def take_samples(p: Prof, keep: np.ndarray) -> Prof:
    """p with only the samples keep lists, in that order."""
    if len(keep) == p.n_samples and bool((keep == np.arange(len(keep))).all()):
        return p
    lengths = np.diff(p.stack_off)[keep]
    new_index = np.full(p.n_samples, -1, dtype=_I64)
    new_index[keep] = np.arange(len(keep))
    lab = p.labels
    labels = lab.take(np.flatnonzero(new_index[lab.sample] >= 0)) if len(lab.sample) else lab
    labels = replace(labels, sample=new_index[labels.sample])
    if len(labels.sample) > 1 and bool((np.diff(labels.sample) < 0).any()):
        labels = labels.take(np.argsort(labels.sample, kind="stable"))
    return replace(
        p,
        stack_loc=p.stack_loc[pc.ranges(p.stack_off[:-1][keep], lengths)],
        stack_off=pc.offsets(lengths),
        values=p.values[keep],
        labels=labels,
        ordered=False,
        sample_hash=p.sample_hash[keep] if p.sample_hash is not None else None,
        origin=p.origin.take(keep) if p.origin is not None else None,
    )


def scale_n(p: Prof, ratios: Sequence[float]) -> tuple[Prof, np.ndarray]:
    """Profile.ScaleN: a sample stays if one of the values scaled (ratio != 1) is non-zero."""
    n = p.n_samples
    if all(r == 1 for r in ratios):
        return p, np.arange(n, dtype=_I64)
    values = p.values.copy()
    scaled = [i for i, r in enumerate(ratios) if r != 1]
    for i in scaled:
        values[:, i] = go_round(p.values[:, i].astype(np.float64) * ratios[i])
    keep = np.flatnonzero((values[:, scaled] != 0).any(axis=1))
    return take_samples(replace(p, values=values), keep), keep


def scale_profiles(profs: Sequence[Prof]) -> tuple[list[Prof], list[np.ndarray]]:
    """measurement.ScaleProfiles over profiles on one string table: refuse incompatible
    period or sample types (Go's texts), then convert each to the finest unit."""
    profs = on_one_table(profs)
    if not profs:
        return [], []
    p0 = profs[0]
    try:
        period_type = _common(p0, [p.period_type for p in profs])
    except IncompatibleProfiles as exc:
        raise IncompatibleProfiles(f"period type: {exc.reason}") from None
    count = len(p0.sample_types)
    for p in profs[1:]:
        if len(p.sample_types) != count:
            raise IncompatibleProfiles(
                f"inconsistent samples type count: {count} != {len(p.sample_types)}"
            )
    common = []
    for i in range(count):
        try:
            common.append(_common(p0, [p.sample_types[i] for p in profs]))
        except IncompatibleProfiles as exc:
            raise IncompatibleProfiles(f"sample types: {exc.reason}") from None
    out, kept = [], []
    for p in profs:
        period, pt = p.period, p.period_type
        if period_type is not None:
            period = go_int64(scale(p.period, p.string(pt[1]), p.string(period_type[1]))[0])
            pt = (pt[0], period_type[1])
        ratios, types = [], []
        for (t, u), c in zip(p.sample_types, common, strict=True):
            if c is None:
                ratios.append(1.0)
                types.append((t, u))
            else:
                ratios.append(scale(1, p.string(u), p.string(c[1]))[0])
                types.append((t, c[1]))
        q, keep = scale_n(replace(p, period=period, period_type=pt, sample_types=types), ratios)
        out.append(q)
        kept.append(keep)
    return out, kept


def normalize(p: Prof, base: Prof) -> tuple[Prof, np.ndarray]:
    """Profile.Normalize: each type of p times sum(base) / sum(p) (signed int64 sums; 0 when
    p's sum is 0). The two must be compatible (Merge's rule, its text)."""
    p, base = on_one_table([p, base])
    compatible(p, base)
    base_sums = base.values.sum(axis=0, dtype=_I64) if base.n_samples else None
    src_sums = p.values.sum(axis=0, dtype=_I64) if p.n_samples else None
    ratios = []
    for i in range(len(p.sample_types)):
        b = wrap64(int(base_sums[i])) if base_sums is not None else 0
        s = wrap64(int(src_sums[i])) if src_sums is not None else 0
        ratios.append(0.0 if s == 0 else float(b) / float(s))
    return scale_n(p, ratios)


def negate(p: Prof) -> tuple[Prof, np.ndarray]:
    """Profile.Scale(-1), as pprof does to the base of a diff."""
    return scale_n(p, [-1.0] * len(p.sample_types))


def set_label(p: Prof, key: bytes, value: bytes) -> Prof:
    """Profile.SetLabel: every sample's string label `key` becomes [value]."""
    table = list(p.strings)
    ids = {s: i for i, s in reversed(list(enumerate(table)))}
    for s in (key, value):
        if s not in ids:
            ids[s] = len(table)
            table.append(s)
    k, v = ids[key], ids[value]
    lab = p.labels
    keep = lab.numeric | (lab.key != k)
    had_key = not bool(keep.all())  # samples that differed only by it now share a key
    rows = lab.take(np.flatnonzero(keep))
    n = p.n_samples
    added = replace(
        rows,
        sample=np.arange(n, dtype=_I64),
        key=np.full(n, k, dtype=_I64),
        text=np.full(n, v, dtype=_I64),
        num=np.zeros(n, dtype=_I64),
        unit=np.full(n, -1, dtype=_I64),
        numeric=np.zeros(n, dtype=bool),
    )
    both = [np.concatenate((a, b)) for a, b in zip(rows._arrays(), added._arrays(), strict=True)]
    order = np.argsort(both[0], kind="stable")
    labels = type(lab)(*(a[order] for a in both))
    return replace(p, strings=table, labels=labels, unique=p.unique and not had_key)
