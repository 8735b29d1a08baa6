"""The text of `go tool pprof -top`: the header lines (ProfileLabels) and the table (printText).

A port of google/pprof's internal/report text layout, on the numbers of units.py.
"""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .units import (
    _conversion,
    formatter,
    go_int64,
    label,
    output_unit,
    percentage,
    scale,
    scaled_label,
)


def go_base(path: str) -> str:
    """filepath.Base: last element, trailing slashes dropped, '.' for empty."""
    if path == "":
        return "."
    path = path.rstrip("/")
    if path == "":
        return "/"
    return posixpath.basename(path)


@dataclass
class Header:
    """What ProfileLabels prints above a report."""

    main_file: str  # Mapping[0].File, "" if no mapping
    build_id: str
    comments: list[str]
    sample_type: str
    sample_unit: str
    time_nanos: int
    duration_nanos: int


def profile_labels(h: Header, total: int, fmt: Callable[[int], str]) -> list[str]:
    """report.ProfileLabels: File, Build ID, comments, Type, Time, Duration lines."""
    out: list[str] = []
    if h.main_file:
        out.append("File: " + go_base(h.main_file))
    if h.build_id:
        out.append("Build ID: " + h.build_id)
    out.extend(c for c in h.comments if not c.startswith("#"))
    if h.sample_type:
        out.append("Type: " + h.sample_type)
    if h.time_nanos:
        out.append("Time: " + _go_time(h.time_nanos))
    if h.duration_nanos:
        duration = label(h.duration_nanos, "nanoseconds")
        total_nanos, total_unit = scale(total, h.sample_unit, "nanoseconds")
        ratio = ""
        if total_unit == "ns" and total_nanos != 0:
            ratio = "(" + percentage(go_int64(total_nanos), h.duration_nanos) + ")"
        out.append(f"Duration: {duration}, Total samples = {fmt(total)} {ratio}")
    return out


def active_filters(filters: Sequence[str]) -> list[str]:
    """legendActiveFilters: each filter on a line of its own, cut at 80 bytes plus '…'."""
    if not filters:
        return []
    out = ["Active filters:"]
    for f in filters:
        data = f.encode()
        if len(data) > 80:
            f = data[:80].decode("utf-8", "replace") + "…"
        out.append("   " + f)
    return out


def _go_time(nanos: int) -> str:
    """time.Unix(0, ns).Format("Jan 2, 2006 at 3:04pm (MST)") in the local time zone."""
    tm = time.localtime(nanos // 1_000_000_000)
    hour = tm.tm_hour % 12 or 12
    ampm = "pm" if tm.tm_hour >= 12 else "am"
    month = time.strftime("%b", tm)
    return f"{month} {tm.tm_mday}, {tm.tm_year} at {hour}:{tm.tm_min:02d}{ampm} ({tm.tm_zone})"


@dataclass(slots=True)
class Row:
    """One line of the top table."""

    name: str
    inline: str  # "", "(inline)" or "(partial-inline)"
    flat: int
    cum: int
    file: str = ""


@dataclass
class Rows:
    """The top table by column; iterating gives Row objects."""

    names: list[str]
    inline: list[str]
    files: list[str]
    flat: np.ndarray  # int64
    cum: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[Row]:
        columns = (self.names, self.inline, self.flat.tolist(), self.cum.tolist(), self.files)
        return (Row(*r) for r in zip(*columns, strict=True))


def _by_distinct(values: np.ndarray, texts: Callable[[np.ndarray], list[str]]) -> list[str]:
    """texts(values), formatting each distinct value once: the rows of a long table repeat a
    few hundred values (multiples of the sampling period), and formatting is most of -top's
    time (7 750 rows of cpu-xl at -lines: 40 ms of 50)."""
    if len(values) < 256:
        return texts(values)
    distinct, inverse = np.unique(values, return_inverse=True)
    if len(distinct) > len(values) // 2:
        return texts(values)
    done = texts(distinct)
    return [done[i] for i in inverse.reshape(-1).tolist()]


def _labels(values: np.ndarray, from_unit: str, to_unit: str) -> list[str]:
    """scaled_label of many values at once (the same float64 operations, in numpy)."""
    return _by_distinct(values, lambda v: _labels_of(v, from_unit, to_unit))


def _labels_of(values: np.ndarray, from_unit: str, to_unit: str) -> list[str]:
    if to_unit in ("minimum", "auto"):
        return [scaled_label(v, from_unit, to_unit) for v in values.tolist()]
    factor, divisor, name = _conversion(from_unit, to_unit)
    v = values.astype(np.float64)
    if divisor:
        # Go scales |value| then negates; the products and quotients are the same either way.
        v = v * factor / divisor
    out = []
    for text in [f"{x:.2f}" for x in v.tolist()]:
        if text.endswith(".00"):
            text = text[:-3]
        out.append("0" if text in ("0", "-0") else text + name)
    return out


def _percentages(values: np.ndarray, total: int) -> list[str]:
    """percentage of many values at once."""
    if total == 0:
        return ["    0%"] * len(values)
    return _by_distinct(values, lambda v: _percentages_of(v, total))


def _percentages_of(values: np.ndarray, total: int) -> list[str]:
    ratios = (np.abs(values.astype(np.float64) / float(total)) * 100).tolist()
    return [
        "  100%" if 99.95 <= r <= 100.05 else (f"{r:5.2f}%" if r >= 1.0 else f"{r:5.2g}%")
        for r in ratios
    ]


def top_text(
    header: Header,
    total: int,
    rows: Rows,
    *,
    orig_count: int,
    dropped_nodes: int = 0,
    node_cutoff: int = 0,
    filters: Sequence[str] = (),
) -> str:
    """The whole `go tool pprof -top` output (printText with reportLabels); filters are the
    "Active filters:" ('focus=...')."""
    unit = output_unit(header.sample_unit, total, rows.flat, rows.cum)
    fmt = formatter(header.sample_unit, unit)
    lines = profile_labels(header, total, fmt) + active_filters(filters)
    running = np.cumsum(rows.flat, dtype=np.int64)  # wraps around as Go's int64 does
    flat_sum = int(running[-1]) if len(running) else 0
    pct = percentage(flat_sum, total).strip()
    lines.append(f"Showing nodes accounting for {fmt(flat_sum)}, {pct} of {fmt(total)} total")
    if total != 0:
        if dropped_nodes > 0:
            noun = "nodes" if dropped_nodes > 1 else "node"
            lines.append(f"Dropped {dropped_nodes} {noun} (cum <= {fmt(node_cutoff)})")
        if 0 < len(rows) < orig_count:
            lines.append(f"Showing top {len(rows)} nodes out of {orig_count}")
    lines.append(f"{'flat':>10} {'flat':>5}% {'sum':>5}% {'cum':>10} {'cum':>5}%")
    columns = (
        _labels(rows.flat, header.sample_unit, unit),
        _percentages(rows.flat, total),
        _percentages(running, total),
        _labels(rows.cum, header.sample_unit, unit),
        _percentages(rows.cum, total),
        rows.names,
        [" " + i if i else "" for i in rows.inline],
    )
    lines.extend(
        f"{a:>10} {b} {c} {d:>10} {e}  {name}{mark}"
        for a, b, c, d, e, name, mark in zip(*columns, strict=True)
    )
    lines.append("")
    return "\n".join(lines)


def report_lines(
    header: Header,
    total: int,
    fmt: Callable[[int], str],
    *,
    filters: Sequence[str] = (),
    flat_sum: int,
    shown: int,
    orig_count: int,
    dropped_nodes: int = 0,
    node_cutoff: int = 0,
    dropped_edges: int = 0,
    edge_cutoff: int = 0,
    full: bool = False,
) -> list[str]:
    """report.reportLabels: the profile's labels, active filters and what was shown/dropped
    (cut-offs are the values printed: total * fraction); full adds the DOT's reading hint."""
    lines = profile_labels(header, total, fmt) + active_filters(filters)
    pct = percentage(flat_sum, total).strip()
    lines.append(f"Showing nodes accounting for {fmt(flat_sum)}, {pct} of {fmt(total)} total")
    if total != 0:
        if dropped_nodes > 0:
            noun = "nodes" if dropped_nodes > 1 else "node"
            lines.append(f"Dropped {dropped_nodes} {noun} (cum <= {fmt(node_cutoff)})")
        if dropped_edges > 0:
            noun = "edges" if dropped_edges > 1 else "edge"
            lines.append(f"Dropped {dropped_edges} {noun} (freq <= {fmt(edge_cutoff)})")
        if 0 < shown < orig_count:
            lines.append(f"Showing top {shown} nodes out of {orig_count}")
    if full:
        lines.append("\nSee https://git.io/JfYMW for how to read the graph")
    return lines
