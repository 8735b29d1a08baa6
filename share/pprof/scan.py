"""The compiled core of decode.py: scan.c, built on install, walks the bytes once as Go does.

It covers the profiles Go and upb read alike (all real ones): counts() says how many of each
element there are (or None: the file is left to decode.py's pure-Python path, which names any
problem exactly), and fill() then writes every column in one more pass, into arrays numpy
allocated to those sizes. No Python object per sample, location or label is made, and upb's
decoding of the samples is not needed at all. LIB is None when the library was not built (no C
compiler at install time): decode.py then uses the pure-Python path for every file, with the
same results, about three times slower on large profiles.
"""

from __future__ import annotations

import ctypes
import sysconfig
from pathlib import Path

import numpy as np

VERSION = 1  # scan.c's PPS_VERSION: a library built from another scan.c is not used
LIBRARY = "_scan" + (sysconfig.get_config_var("SHLIB_SUFFIX") or ".so")

# scan.c's counts[] and outs[], in its order.
COUNTS = (
    "samples",
    "ids",
    "values",
    "labels",
    "label_keys",
    "locations",
    "lines",
    "functions",
    "mappings",
    "strings",
    "unknown",
)
# (name, the count it is sized by, times that count)
OUTS = (
    ("sample_ids", "samples", 1),
    ("sample_values", "samples", 1),
    ("location_ids", "ids", 1),
    ("values", "values", 1),
    ("label_key", "labels", 1),
    ("label_str", "labels", 1),
    ("label_unit", "labels", 1),
    ("loc_id", "locations", 1),
    ("line_function", "lines", 1),
    ("function_id", "functions", 1),
    ("function_names", "functions", 3),
    ("mapping_id", "mappings", 1),
    ("mapping_names", "mappings", 2),
)
# scan.c's reasons for leaving a file to Python (pps_scan's return value), for tests.
REASONS = (
    "ok",
    "malformed",
    "field zero",
    "odd tag",
    "wire type",
    "repeated singular",
    "long varint",
)


def _load(path: Path) -> ctypes.CDLL | None:
    """The library at path, if it was built from this scan.c's interface; else None."""
    try:
        lib = ctypes.CDLL(str(path))
    except OSError:
        return None
    for name in ("pps_version", "pps_counts", "pps_outs"):
        getattr(lib, name).restype = ctypes.c_int64
    if (lib.pps_version(), lib.pps_counts(), lib.pps_outs()) != (VERSION, len(COUNTS), len(OUTS)):
        return None
    lib.pps_scan.restype = ctypes.c_int
    lib.pps_scan.argtypes = [
        ctypes.c_char_p,
        ctypes.c_int64,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_void_p),
    ]
    return lib


LIB = _load(Path(__file__).with_name(LIBRARY))


def reason(raw: bytes) -> str:
    """Why counts() leaves raw to Python ("ok" when it does not)."""
    assert LIB is not None
    counts = (ctypes.c_int64 * len(COUNTS))()
    return REASONS[LIB.pps_scan(raw, len(raw), counts, None)]


def counts(raw: bytes) -> dict[str, int] | None:
    """How many of each element raw holds, or None when the library is missing or the file is
    one for the pure-Python path. Allocates nothing: limits are checked on these first."""
    if LIB is None:
        return None
    out = (ctypes.c_int64 * len(COUNTS))()
    if LIB.pps_scan(raw, len(raw), out, None) != 0:
        return None
    return dict(zip(COUNTS, out, strict=True))


def fill(raw: bytes, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    """Every column of raw (uint64 arrays, named as OUTS), for the counts counts() gave."""
    assert LIB is not None
    arrays = {name: np.empty(sizes[count] * times, np.uint64) for name, count, times in OUTS}
    pointers = (ctypes.c_void_p * len(OUTS))(*(a.ctypes.data for a in arrays.values()))
    again = (ctypes.c_int64 * len(COUNTS))()
    if LIB.pps_scan(raw, len(raw), again, pointers) != 0 or list(again) != list(sizes.values()):
        raise AssertionError("scan.c read the profile differently the second time")
    return arrays
