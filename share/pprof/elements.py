"""What the compiled core reads beyond the checks: every location, line, function and label
field the analysis needs, handed from the parse's one pass to the tables (share.analysis.model
.tables), which otherwise walk the encoded bytes again (a fleet member's columns cost five
times as much that way). Only files the compiled core reads carry them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

_I64 = np.int64


@dataclass
class Elements:
    """Every location, line and function field the analysis reads, as the compiled core read
    them in its one pass (each singular field once: Go's reading), so the tables need not
    walk their bytes again. uint64, in file order."""

    loc_id: np.ndarray
    loc_mapping: np.ndarray
    loc_address: np.ndarray
    loc_folded: np.ndarray
    loc_lines: np.ndarray  # how many lines each location has, its lines in order after them
    line_function: np.ndarray
    line_no: np.ndarray
    function_id: np.ndarray
    function_names: np.ndarray  # [n, 3]: name, system_name, filename string indices
    function_start: np.ndarray

    @classmethod
    def scanned(cls, a: dict[str, np.ndarray]) -> Elements:
        """From scan.fill's arrays, which scan.OUTS names as these fields are named."""
        found = {f.name: a[f.name] for f in fields(cls)}
        found["function_names"] = found["function_names"].reshape(-1, 3)
        return cls(**found)


def scanned_labels(a: dict[str, np.ndarray]) -> tuple[np.ndarray, ...]:
    """The compiled core's labels as Tables.labels gives them: (sample, key, str, num, unit).
    Without a key in any of them they are none at all, as Tables reads them (an empty Label
    is nothing to Go either)."""
    names = ("label_sample", "label_key", "label_str", "label_num", "label_unit")
    return tuple(a[name].view(_I64) for name in names)
