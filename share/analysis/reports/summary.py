"""A profile in a few lines: its kind, pprof's header lines, the total and the heaviest functions.

What a link preview, `curl <link>` and the page's heading need, small enough to embed in every
page. A pure function of the parsed profile and a sample type, computed once per profile like
every other view (views.py).
"""

from __future__ import annotations

from typing import Any

from ...pprof import ParsedProfile
from ..measure.text import profile_labels
from ..measure.units import formatter, label, output_unit, percentage
from ..model import kind
from ..model.graph import graph
from ..model.tables import tables
from .top import top

TOP_ROWS = 10


def summary(parsed: ParsedProfile, index: int | None) -> dict[str, Any]:
    """The summary of one sample type (see README "JSON API")."""
    g = graph(tables(parsed), index)
    t = top(g)  # every row, as `-top`: the output unit depends on all of them
    unit = output_unit(t.header.sample_unit, t.total, t.rows.flat, t.rows.cum)
    fmt = formatter(t.header.sample_unit, unit)
    n = min(TOP_ROWS, len(t.rows))
    flat = t.rows.flat[:n].tolist()
    duration = int(parsed.outline.duration_nanos)
    return {
        "kind": kind.describe(kind.of_profile(parsed)),
        "sample_type": {"type": g.sample_type[0], "unit": g.sample_type[1]},
        "sample_index": g.index,
        "sample_types": [{"type": a, "unit": b} for a, b in g.tables.sample_types],
        "header": profile_labels(t.header, t.total, fmt),
        "total": t.total,
        "total_label": label(t.total, g.sample_type[1]) if t.total else "0",
        "unit": g.sample_type[1],
        "duration_nanos": duration,
        "duration_label": label(duration, "nanoseconds") if duration else "",
        "n_samples": parsed.n_samples,
        "nodes": t.orig_count,
        "top": {
            "name": t.rows.names[:n],
            "flat": flat,
            "flat_label": [fmt(v) for v in flat],
            "flat_pct": [percentage(v, t.total).strip() for v in flat],
        },
        "no_samples": not bool(g.weights.any()),
    }


def one_line(s: dict[str, Any], heaviest: int = 3) -> str:
    """ "CPU profile · 3.04s of cpu over 3.11s · top: crypto/sha256.block 21.71%, ..." (og tags)."""
    parts = [f"{s['kind']['label']} profile"]
    if s["no_samples"]:
        parts.append("no samples")
    else:
        total = f"{s['total_label']} of {s['sample_type']['type'] or 'samples'}"
        if s["duration_label"]:
            total += f" over {s['duration_label']}"
        parts.append(total)
        top_rows = s["top"]
        names = [
            f"{name} {pct}"
            for name, pct in zip(top_rows["name"], top_rows["flat_pct"], strict=True)
        ][:heaviest]
        if names:
            parts.append("top: " + ", ".join(names))
    return " · ".join(parts)


def text(s: dict[str, Any], links: dict[str, str]) -> str:
    """The summary for a terminal (`curl <link>`): kind, header, the top 10, then the links."""
    k = s["kind"]
    lines = [f"{k['label']} profile: {k['meaning']}", ""]
    lines += s["header"]
    if s["no_samples"]:
        lines.append("No samples.")
    else:
        rows = s["top"]
        shown = len(rows["name"])
        lines.append(f"Total: {s['total_label']}; top {shown} of {s['nodes']} by flat:")
        width = max((len(v) for v in rows["flat_label"]), default=4)
        lines += [
            f"  {flat:>{width}} {pct:>7}  {name}"
            for name, flat, pct in zip(
                rows["name"], rows["flat_label"], rows["flat_pct"], strict=True
            )
        ]
    lines.append("")
    lines += [f"{name + ':':<6} {url}" for name, url in links.items()]
    return "\n".join(lines) + "\n"
