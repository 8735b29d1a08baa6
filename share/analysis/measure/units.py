"""Numbers and text as `go tool pprof -top` prints them: unit scaling, percentages, the layout.

A port of google/pprof's internal/measurement (Scale, ScaledLabel, Percentage) and of
internal/report's printText / ProfileLabels / reportLabels for the text report. Go's float64
arithmetic and formatting are reproduced operation by operation so the digits agree.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

MIN64 = -(1 << 63)
MAX64 = (1 << 63) - 1

# (canonical name, aliases, factor) per unit family; the first entry of a family is its
# default unit ("B", "s", "GCU"), as measurement.unitTypes.
_FAMILIES: list[tuple[tuple[str, float], list[tuple[str, tuple[str, ...], float]]]] = [
    (
        ("B", 1.0),
        [
            ("B", ("b", "byte"), 1.0),
            ("kB", ("kb", "kbyte", "kilobyte"), float(1 << 10)),
            ("MB", ("mb", "mbyte", "megabyte"), float(1 << 20)),
            ("GB", ("gb", "gbyte", "gigabyte"), float(1 << 30)),
            ("TB", ("tb", "tbyte", "terabyte"), float(1 << 40)),
            ("PB", ("pb", "pbyte", "petabyte"), float(1 << 50)),
        ],
    ),
    (
        ("s", 1e9),
        [
            ("ns", ("ns", "nanosecond"), 1.0),
            ("us", ("μs", "us", "microsecond"), 1e3),
            ("ms", ("ms", "millisecond"), 1e6),
            ("s", ("s", "sec", "second"), 1e9),
            ("hrs", ("hour", "hr"), 3600e9),
        ],
    ),
    (
        ("GCU", 1.0),
        [
            ("n*GCU", ("nanogcu",), 1e-9),
            ("u*GCU", ("microgcu",), 1e-6),
            ("m*GCU", ("milligcu",), 1e-3),
            ("GCU", ("gcu",), 1.0),
            ("k*GCU", ("kilogcu",), 1e3),
            ("M*GCU", ("megagcu",), 1e6),
            ("G*GCU", ("gigagcu",), 1e9),
            ("T*GCU", ("teragcu",), 1e12),
            ("P*GCU", ("petagcu",), 1e15),
        ],
    ),
]


@functools.lru_cache(maxsize=256)
def _sniff(family: int, unit: str) -> tuple[str, float] | None:
    """The unit of a family an alias names: lower-cased, one trailing 's' dropped (> 2 bytes)."""
    units = _FAMILIES[family][1]
    unit = unit.lower()
    if len(unit.encode()) > 2 and unit.endswith("s"):
        unit = unit[:-1]
    for name, aliases, factor in units:
        if unit in aliases:
            return name, factor
    return None


def same_family(a: str, b: str) -> bool:
    """Whether one unit family knows both units (measurement.compatibleValueTypes' test)."""
    return any(_sniff(f, a) is not None and _sniff(f, b) is not None for f in range(len(_FAMILIES)))


def scale(value: int, from_unit: str, to_unit: str) -> tuple[float, str]:
    """measurement.Scale: value converted to to_unit ("minimum"/"auto" pick a unit)."""
    if value < 0 and value != MIN64:  # Go: value < 0 && -value > 0
        v, u = scale(-value, from_unit, to_unit)
        return -v, u
    for family, ((default_name, default_factor), units) in enumerate(_FAMILIES):
        found = _sniff(family, from_unit)
        if found is None:
            continue
        v = float(value) * found[1]
        if to_unit in ("minimum", "auto"):
            best_factor, best_name = 0.0, ""
            for name, _, factor in units:
                if factor >= best_factor and v / factor >= 1.0:
                    best_factor, best_name = factor, name
            if best_factor:
                return v / best_factor, best_name
            return v / default_factor, default_name
        target = _sniff(family, to_unit)
        if target is None:
            return v / default_factor, default_name
        return v / target[1], target[0]
    if to_unit in ("count", "sample", "unit", "minimum", "auto"):
        return float(value), ""
    return float(value), to_unit


def _fixed2(v: float) -> str:
    """Go's %.2f (Python's formatting rounds the same way: exactly, half to even)."""
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    if math.isnan(v):
        return "NaN"
    return f"{v:.2f}"


def scaled_label(value: int, from_unit: str, to_unit: str) -> str:
    """measurement.ScaledLabel: '1.50s', '512kB', '0'."""
    v, u = scale(value, from_unit, to_unit)
    sv = _fixed2(v)
    if sv.endswith(".00"):
        sv = sv[:-3]
    if sv in ("0", "-0"):
        return "0"
    return sv + u


@functools.lru_cache(maxsize=64)
def _conversion(from_unit: str, to_unit: str) -> tuple[float, float, str]:
    """(factor, divisor, unit name) that scale applies for a fixed pair (divisor 0: none)."""
    for family, ((default_name, default_factor), _) in enumerate(_FAMILIES):
        found = _sniff(family, from_unit)
        if found is not None:
            target = _sniff(family, to_unit)
            divisor, name = (target[1], target[0]) if target else (default_factor, default_name)
            return found[1], divisor, name
    return 0.0, 0.0, "" if to_unit in ("count", "sample", "unit") else to_unit


def formatter(from_unit: str, to_unit: str) -> Callable[[int], str]:
    """scaled_label with the units fixed: the unit lookup is done once, not per value."""
    if to_unit in ("minimum", "auto"):
        return lambda v: scaled_label(v, from_unit, to_unit)
    factor, divisor, name = _conversion(from_unit, to_unit)

    def fmt(value: int) -> str:
        negative = value < 0 and value != MIN64
        v = float(-value if negative else value)
        if divisor:
            v = v * factor / divisor
        sv = _fixed2(-v if negative else v)
        if sv.endswith(".00"):
            sv = sv[:-3]
        if sv in ("0", "-0"):
            return "0"
        return sv + name

    return fmt


def label(value: int, unit: str) -> str:
    """measurement.Label: the value in the most readable unit."""
    return scaled_label(value, unit, "auto")


def _go_g(ratio: float) -> str:
    """Go's %5.2g: like C's, with the exponent at least two digits."""
    return f"{ratio:5.2g}"


def percentage(value: int, total: int) -> str:
    """measurement.Percentage: '  100%', '12.34%', '0.012%', '    0%'."""
    ratio = abs(float(value) / float(total)) * 100 if total != 0 else 0.0
    if 99.95 <= ratio <= 100.05:
        return "  100%"
    if ratio >= 1.0:
        return f"{_fixed2(ratio):>5}%"
    return _go_g(ratio) + "%"


def go_int64(x: float) -> int:
    """Go's int64(float64) on amd64: out of range (or NaN) gives the minimum int64."""
    if math.isnan(x) or x >= 2.0**63 or x < -(2.0**63):
        return MIN64
    return int(x)


def wrap64(x: int) -> int:
    """x as a Go int64 after wrap-around."""
    return ((x + (1 << 63)) % (1 << 64)) - (1 << 63)


def abs64(x: int) -> int:
    """pprof's abs64: the minimum int64 stays negative, as in Go."""
    return -x if x < 0 and x != MIN64 else x


def output_unit(sample_unit: str, total: int, flat: np.ndarray, cum: np.ndarray) -> str:
    """report.selectOutputUnit for unit "minimum", over the shown rows' flat and cum."""
    if not len(flat):
        return "minimum"
    a = np.abs(flat)  # np.abs leaves the minimum int64 negative, as abs64 does
    node_min = np.where(a == 0, np.abs(cum), a)
    positive = node_min[node_min > 0]
    min_value = int(positive.min()) if len(positive) else 0
    max_value = total
    if min_value == 0:
        min_value = max_value
    _, min_unit = scale(min_value, sample_unit, "minimum")
    _, max_unit = scale(max_value, sample_unit, "minimum")
    unit = min_unit
    if min_unit != max_unit and wrap64(min_value * 100) < max_value:
        _, unit = scale(wrap64(100 * min_value), sample_unit, "minimum")
    return unit if unit != "" else sample_unit
