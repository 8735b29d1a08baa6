"""`go tool pprof -tags`: every label key with its values and their weights (report.printTags).

Per key (sorted by name), the sum of the kept samples' values per label value (numbers
formatted in the key's unit), values by |weight| then name; printed through Go's tabwriter
with right-aligned cells. The JSON view gives the same per key, without pprof's internal
`pprof::*` keys, with at most `values` values and the rest summed as "other".
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..measure.units import percentage, scale, wrap64
from ..model.labels import labels
from .explore import Report

_I64 = np.int64
TAG_VALUES = 50  # values listed per key in the JSON before the rest becomes "other"


def tag_values(rep: Report) -> list[tuple[str, bool, list[tuple[str, int]]]]:
    """(key, numeric, [(value, weight)...]) per key, sorted as printTags sorts them."""
    lab = labels(rep.tables)
    kept = rep.sample_stack >= 0
    if not len(lab.key):
        return []
    rows = kept[lab.sample]
    if rep.removed_keys:
        removed = np.zeros(len(lab.texts), dtype=bool)
        removed[list(rep.removed_keys)] = True
        rows &= ~removed[lab.key]
    sel = np.flatnonzero(rows)
    w = rep.graph.weights[lab.sample[sel]]
    # A value's text: the string, or the number in its key's unit (ScaledLabel, "minimum").
    token = lab.value[sel].copy()
    nums = np.flatnonzero(lab.numeric[sel])
    extra: dict[str, int] = {}
    if len(nums):
        formatted = lab.formatted(sel[nums])
        base = len(lab.texts)
        token[nums] = [base + extra.setdefault(s, len(extra)) for s in formatted]
    words = lab.texts + list(extra)
    span = len(words) + 1
    pair = lab.key[sel] * span + token
    order = np.argsort(pair, kind="stable")
    uniq, starts = np.unique(pair[order], return_index=True)
    sums = np.add.reduceat(w[order], starts) if len(order) else np.zeros(0, _I64)
    numeric_keys = set(lab.key[sel][nums].tolist())
    out: dict[str, list[tuple[str, int]]] = {}
    for p, s in zip(uniq.tolist(), sums.tolist(), strict=True):
        out.setdefault(lab.texts[p // span], []).append((words[p % span], s))
    result = []
    for key in sorted(out):
        values = sorted(out[key], key=lambda v: (-abs(v[1]), v[0]))
        numeric = lab.key_code(key) in numeric_keys
        result.append((key, numeric, values))
    return result


def tags_text(rep: Report) -> str:
    """The whole -tags output."""
    unit = rep.header.sample_unit
    rows: list[list[str]] = []
    for key, _, values in tag_values(rep):
        total = 0
        for _, v in values:
            total = wrap64(total + v)
        f, u = scale(total, unit, "minimum")
        rows.append([f"{key}:", f" Total {f:.1f}{u}"])
        for value, weight in values:
            f, u = scale(weight, unit, "minimum")
            if total > 0:
                rows.append([" ", f"{f:.1f}{u} ({percentage(weight, total)}):", f" {value}"])
            else:
                rows.append([" ", f"{f:.1f}{u}:", f" {value}"])
        rows.append([""])
    return tabwriter(rows)


def tabwriter(lines: list[list[str]]) -> str:
    """Go's text/tabwriter with minwidth 0, tabwidth 0, padding 1, ' ' and AlignRight: each
    line's cells but the last are tab-terminated; a column's width is set per block of
    consecutive lines that have that cell."""
    out: list[str | None] = [None] * len(lines)
    _format(lines, 0, len(lines), 0, [], out)
    return "".join((x or "") + "\n" for x in out)


def _format(lines: list[list[str]], lo: int, hi: int, column: int, widths: list[int],
            out: list[str | None]) -> None:  # fmt: skip
    """tabwriter.format: find the blocks of lines with a cell in this column, fix its width,
    recurse into the next column; lines outside every block are written as they are."""
    i = lo
    start = lo
    while i < hi:
        if column >= len(lines[i]) - 1:
            i += 1
            continue
        _write(lines, start, i, widths, out)
        j = i
        width = 0
        while j < hi and column < len(lines[j]) - 1:
            width = max(width, len(lines[j][column]) + 1)
            j += 1
        _format(lines, i, j, column + 1, [*widths, width], out)
        start = i = j
    _write(lines, start, hi, widths, out)


def _write(
    lines: list[list[str]], lo: int, hi: int, widths: list[int], out: list[str | None]
) -> None:
    for k in range(lo, hi):
        if out[k] is not None:
            continue
        cells = lines[k]
        text = ""
        for j, cell in enumerate(cells):
            if j < len(widths):
                text += " " * (widths[j] - len(cell)) + cell
            else:
                text += cell
        out[k] = text


def tags_doc(rep: Report, max_values: int = TAG_VALUES) -> dict[str, Any]:
    """The tags as JSON: per key its total and values by weight (pprof::* keys hidden)."""
    keys = []
    for key, numeric, values in tag_values(rep):
        if key.startswith("pprof::"):
            continue
        total = 0
        for _, v in values:
            total = wrap64(total + v)
        shown, rest = values[:max_values], values[max_values:]
        other = 0
        for _, v in rest:
            other = wrap64(other + v)
        keys.append(
            {
                "key": key,
                "numeric": numeric,
                "unit": labels(rep.tables).units.get(labels(rep.tables).key_code(key), "")
                if numeric
                else "",
                "total": total,
                "count": len(values),
                "values": {"value": [v for v, _ in shown], "weight": [w for _, w in shown]},
                "other": {"count": len(rest), "weight": other},
            }
        )
    return {"keys": keys}
