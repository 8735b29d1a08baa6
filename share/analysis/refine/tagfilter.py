"""-tagfocus / -tagignore: pprof's tag filter syntax, compiled once and applied to every sample.

`[key=]expr` (split at the first '='). An expr that reads as a numeric range ('32kb', ':64kb',
'4mb:', '12kb:64mb'; parseTagFilterRange) compares numeric labels, scaled to the range's unit
with the key's unit; otherwise expr is a comma-separated list of regexes: with a key any of them
matches one of the key's values, without one each must match some 'key:value' of the sample.
Every regex is Go's (goregexp, linear time); errors carry pprof's text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..measure.units import scale
from ..model import goregexp
from ..model.labels import Labels

_RANGE = re.compile(r"([+-]?[0-9]+)([A-Za-z]+)?")  # Go's ([+-]?[[:digit:]]+)([[:alpha:]]+)?
_I64 = np.int64


class TagFilterError(ValueError):
    """A tag filter pprof refuses; str() is pprof's message."""


@dataclass(frozen=True)
class TagFilter:
    """A compiled -tagfocus/-tagignore value."""

    key: str  # "" for any key
    regexes: tuple[Any, ...]  # compiled (a string filter), or ()
    low: float | None = None  # a numeric range, in `unit`: None is unbounded
    high: float | None = None
    unit: str = ""
    numeric: bool = False


def _scaled(value: int, unit: str) -> tuple[float, str]:
    return scale(value, unit, unit)


def _range(text: str) -> tuple[float | None, float | None, str] | None:
    """parseTagFilterRange: (low, high, unit) of a numeric range, None if text is not one."""
    found = [(m.group(0), m.group(1), m.group(2) or "") for m in _RANGE.finditer(text)][:2]
    if not found:
        return None
    match, digits, unit_name = found[0]
    v, unit = _scaled(_go_int(digits), unit_name)
    if len(found) == 1:
        if text == match:
            return v, v, unit
        if text == match + ":":
            return v, None, unit
        if text == ":" + match:
            return None, v, unit
        return None
    if text != match + ":" + found[1][0]:
        return None
    v2, unit2 = scale(_go_int(found[1][1]), found[1][2], unit)
    if unit2 != unit:
        return None
    return v, v2, unit


def _go_int(digits: str) -> int:
    value = int(digits)
    if not -(1 << 63) <= value < (1 << 63):
        message = f'strconv.ParseInt: parsing "{digits}": value out of range'
        raise TagFilterError(f"failed to parse int {digits}: {message}")
    return value


def compile_filter(name: str, value: str) -> tuple[TagFilter | None, list[str]]:
    """compileTagFilter: the filter (None for "") and what pprof prints while compiling it."""
    if not value:
        return None, []
    key, sep, expr = value.partition("=")
    if not sep:
        key, expr = "", value
    found = _range(expr)
    if found is not None:
        low, high, unit = found
        message = f"{name}:Interpreted '{expr}' as range, not regexp"
        return TagFilter(key, (), low, high, unit, numeric=True), [message]
    regexes = []
    for part in expr.split(","):
        try:
            regexes.append(goregexp.compile(part))
        except goregexp.RegexpError as exc:
            raise TagFilterError(f"parsing {name} regexp: {exc}") from None
    return TagFilter(key, tuple(regexes)), []


def matches(f: TagFilter, lab: Labels, n_samples: int) -> np.ndarray:
    """Per sample: does the filter select it (the compiled func(*Sample) bool)."""
    hit = np.zeros(n_samples, dtype=bool)
    key = lab.key_code(f.key) if f.key else -1
    if f.key and key < 0:
        return hit  # a sample lacking the key never matches key=...
    if f.numeric:
        rows = lab.numeric & ((lab.key == key) if f.key else True)
        sel = np.flatnonzero(rows)
        if not len(sel):
            return hit
        ok = np.zeros(len(sel), dtype=bool)
        keys = lab.key[sel]
        for k in np.unique(keys).tolist():  # one unit (hence one scale) per key
            part = keys == k
            ok[part] = _in_range(f, lab.num[sel][part], lab.units.get(k, ""))
        hit[lab.sample[sel][ok]] = True
        return hit
    rows = ~lab.numeric & ((lab.key == key) if f.key else True)
    sel = np.flatnonzero(rows)
    if not len(sel):
        return hit
    if f.key:
        values, inverse = np.unique(lab.value[sel], return_inverse=True)
        good = np.array(
            [any(rx.search(lab.texts[v]) for rx in f.regexes) for v in values.tolist()], dtype=bool
        )
        hit[lab.sample[sel][good[inverse.reshape(-1)]]] = True
        return hit
    # No key: every regex must match some "key:value" of the sample.
    span = len(lab.texts) + 1
    pairs, inverse = np.unique(lab.key[sel] * span + lab.value[sel], return_inverse=True)
    inverse = inverse.reshape(-1)
    texts = [lab.texts[p // span] + ":" + lab.texts[p % span] for p in pairs.tolist()]
    hit[:] = True
    for rx in f.regexes:
        good = np.array([rx.search(s) is not None for s in texts], dtype=bool)
        one = np.zeros(n_samples, dtype=bool)
        one[lab.sample[sel][good[inverse]]] = True
        hit &= one
    return hit


def _in_range(f: TagFilter, values: np.ndarray, unit: str) -> np.ndarray:
    """measurement.Scale(v, unit, f.unit) within [low, high], the scaled unit f's own."""
    if scale(1, unit, f.unit)[1] != f.unit:  # the unit Scale lands in does not depend on v
        return np.zeros(len(values), dtype=bool)
    v = _scale_values(values, unit, f.unit)
    ok = np.ones(len(values), dtype=bool)
    if f.low is not None:
        ok &= v >= f.low
    if f.high is not None:
        ok &= v <= f.high
    return ok


def _scale_values(values: np.ndarray, from_unit: str, to_unit: str) -> np.ndarray:
    """scale() of many values with fixed units: the same float64 operations, in numpy."""
    from ..measure.units import _FAMILIES, _sniff

    for family, ((_, default_factor), _units) in enumerate(_FAMILIES):
        found = _sniff(family, from_unit)
        if found is None:
            continue
        v = values.astype(np.float64) * found[1]
        target = _sniff(family, to_unit)
        return v / (target[1] if target else default_factor)
    return values.astype(np.float64)
