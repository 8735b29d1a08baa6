"""Sample labels as pprof's Sample.Label / NumLabel see them, in bulk.

One row per label of a live sample (profile.Merge drops the samples whose values are all zero,
so pprof never sees their labels): its key and string value as codes into one table of
distinct texts (a profile may store the same text twice), or its number and unit. Numeric keys
get their unit as profile.NumLabelUnits decides it. Everything is cached on the Tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..measure.units import scaled_label
from .tables import Tables

_I64 = np.int64


@dataclass
class Labels:
    """The labels of the live samples, by row (rows in sample order)."""

    alive: np.ndarray  # bool per sample: some value is non-zero (Merge keeps it)
    texts: list[str]  # distinct strings of the profile; code 0 is ""
    code: np.ndarray  # the text code of each string-table index
    sample: np.ndarray  # per row
    key: np.ndarray  # text code of the key
    value: np.ndarray  # text code of the string value (0 for numeric rows)
    num: np.ndarray  # the number (numeric rows)
    unit: np.ndarray  # text code of the unit (0: none)
    numeric: np.ndarray  # bool per row
    units: dict[int, str]  # NumLabelUnits: key code -> unit
    unit_warnings: list[str]  # identifyNumLabelUnits' messages

    def key_code(self, key: str) -> int:
        """The code of a key text, -1 if no label has it."""
        try:
            return self.texts.index(key) if key else -1
        except ValueError:
            return -1

    def formatted(self, rows: np.ndarray) -> list[str]:
        """Numeric rows' values as pprof prints tags: ScaledLabel(v, key's unit, "minimum")."""
        out = []
        for k, v in zip(self.key[rows].tolist(), self.num[rows].tolist(), strict=True):
            out.append(scaled_label(v, self.units.get(k, ""), "minimum"))
        return out


def labels(t: Tables) -> Labels:
    """The Labels of a profile (cached on t)."""
    found = t.cache.get("labels")
    if found is None:
        found = t.cache["labels"] = _build(t)
    return found


def _build(t: Tables) -> Labels:
    index: dict[str, int] = {"": 0}
    code = np.fromiter(
        (index.setdefault(s, len(index)) for s in t.strings), dtype=_I64, count=len(t.strings)
    )
    texts = list(index)
    alive = (t.values != 0).any(axis=1) if t.values.size else np.zeros(t.n_samples, dtype=bool)
    if t.n_samples:  # a parsed profile's, or a merge's (combine.py gives them decoded)
        sample, key, sval, num, unit = t.labels()
    else:
        sample = key = sval = num = unit = np.zeros(0, dtype=_I64)
    is_str = sval != 0
    is_num = ~is_str & ((num != 0) | (unit != 0))
    keep = (is_str | is_num) & alive[sample] if len(sample) else np.zeros(0, dtype=bool)
    sample, key, sval, num, unit, is_num = (a[keep] for a in (sample, key, sval, num, unit, is_num))
    key_c = code[key]
    val_c = np.where(is_num, 0, code[sval])
    unit_c = np.where(is_num & (unit != 0), code[unit], 0)
    units, warnings = _num_label_units(texts, key_c[is_num], unit_c[is_num])
    return Labels(
        alive=alive,
        texts=texts,
        code=code,
        sample=sample,
        key=key_c,
        value=val_c,
        num=num,
        unit=unit_c,
        numeric=is_num,
        units=units,
        unit_warnings=warnings,
    )


def _num_label_units(
    texts: list[str], keys: np.ndarray, units: np.ndarray
) -> tuple[dict[int, str], list[str]]:
    """profile.NumLabelUnits: a key's first unit in sample order, else one inferred from the
    key; and a warning per key that also had other units (as identifyNumLabelUnits prints)."""
    chosen: dict[int, str] = {}
    others: dict[int, set[str]] = {}
    has = units != 0
    span = len(texts) + 1
    pairs, first = np.unique(keys[has] * span + units[has], return_index=True)
    for p in pairs[np.argsort(first)].tolist():  # in order of first appearance
        k, unit = p // span, texts[p % span]
        if not unit:
            continue
        if k not in chosen:
            chosen[k] = unit
        elif unit != chosen[k]:
            others.setdefault(k, set()).add(unit)
    for k in np.unique(keys).tolist():
        if k not in chosen:
            chosen[k] = "bytes" if texts[k] in ("alignment", "request") else texts[k]
    warnings = [
        f"For tag {texts[k]} used unit {chosen[k]}, also encountered unit(s) "
        + ", ".join(sorted(us))
        for k, us in sorted(others.items(), key=lambda kv: texts[kv[0]])
    ]
    return chosen, warnings


def value_sequences(
    n_samples: int, sample: np.ndarray, tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per sample, the sequence of tokens of its rows (rows given in sample order), grouped:
    (group of each sample, representative tokens, their offsets). Samples without rows share
    one group."""
    from .stacks import unique_stacks

    counts = np.bincount(sample, minlength=n_samples) if len(sample) else np.zeros(n_samples, _I64)
    off = np.concatenate(([0], np.cumsum(counts))).astype(_I64)
    return unique_stacks(tokens.astype(_I64), off, always=True)
