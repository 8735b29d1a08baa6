"""The compiled core of decode.py: scan.c, built on install, walks the bytes once as Go does.

It covers the profiles Go and upb read alike (all real ones): counts() says how many of each
element there are (or None: the file is left to decode.py's pure-Python path, which names any
problem exactly), and fill() then writes every column in one more pass, into arrays numpy
allocated to those sizes. No Python object per sample, location or label is made, and upb's
decoding of the samples is not needed at all. LIB is None when the library was not built (no C
compiler at install time): decode.py then uses the pure-Python path for every file, with the
same results, about three times slower on large profiles.

The analysis takes a few of its loops too, each with a numpy path beside it that gives the same
results: stack hashes and group sums, and the varints and byte runs of a merge's encoding
(varint_lengths, put_varints, copy_ranges).
"""

from __future__ import annotations

import ctypes
import sysconfig
from pathlib import Path

import numpy as np

VERSION = 5  # scan.c's PPS_VERSION: a library built from another scan.c is not used
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
    ("label_num", "labels", 1),
    ("label_sample", "labels", 1),
    ("loc_id", "locations", 1),
    ("line_function", "lines", 1),
    ("function_id", "functions", 1),
    ("function_names", "functions", 3),
    ("mapping_id", "mappings", 1),
    ("mapping_names", "mappings", 2),
    ("loc_mapping", "locations", 1),
    ("loc_address", "locations", 1),
    ("loc_folded", "locations", 1),
    ("loc_lines", "locations", 1),
    ("line_no", "lines", 1),
    ("function_start", "functions", 1),
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
    lib.pps_first_frames.restype = ctypes.c_int64
    pointer, size = ctypes.c_void_p, ctypes.c_int64
    lib.pps_first_frames.argtypes = [pointer, pointer, size, size, *[pointer] * 6]
    lib.pps_stack_hashes.restype = None
    word = ctypes.c_uint64
    lib.pps_stack_hashes.argtypes = [pointer, pointer, size, word, word, pointer]
    lib.pps_same_stacks.restype = ctypes.c_int
    lib.pps_same_stacks.argtypes = [pointer, pointer, size, pointer]
    lib.pps_first_order.restype = ctypes.c_int64
    lib.pps_first_order.argtypes = [pointer, size, size, pointer, pointer]
    lib.pps_group_sums.restype = None
    lib.pps_group_sums.argtypes = [pointer, pointer, pointer, size, size, pointer]
    lib.pps_varint_lengths.restype = None
    lib.pps_varint_lengths.argtypes = [pointer, size, pointer]
    lib.pps_put_varints.restype = None
    lib.pps_put_varints.argtypes = [pointer, size, pointer, pointer, pointer]
    lib.pps_copy_ranges.restype = None
    lib.pps_copy_ranges.argtypes = [pointer, pointer, pointer, pointer, size, pointer]
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


def first_frames(
    node: np.ndarray, owner: np.ndarray, n_nodes: int, group: bool
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, np.ndarray] | None:
    """scan.c's pps_first_frames: (first, group, starts, owners) of frames given stack after
    stack (node and owner int32 per frame), or None without the library or past its int32.

    first marks each node's first frame in each stack; group (if asked for) is that first
    frame's index for every frame; owners[starts[k]:starts[k + 1]] are the stacks of node k's
    first frames, in frame order. A single pass and a counting sort: no sort of the frames.
    """
    n = len(node)
    if LIB is None or n >= 1 << 31 or n_nodes >= 1 << 31:
        return None
    node = np.ascontiguousarray(node, dtype=np.int32)
    owner = np.ascontiguousarray(owner, dtype=np.int32)
    scratch = np.empty((2, n_nodes), dtype=np.int32)
    first = np.empty(n, dtype=bool)
    groups = np.empty(n, dtype=np.int32) if group else None
    starts = np.empty(n_nodes + 1, dtype=np.int64)
    owners = np.empty(n, dtype=np.int32)
    used = LIB.pps_first_frames(
        node.ctypes.data, owner.ctypes.data, n, n_nodes, scratch[0].ctypes.data,
        scratch[1].ctypes.data, first.ctypes.data,
        groups.ctypes.data if groups is not None else None, starts.ctypes.data, owners.ctypes.data,
    )  # fmt: skip
    return first, groups, starts, owners[:used] if used == n else owners[:used].copy()


def _int64(a: np.ndarray) -> np.ndarray | None:
    """a as a contiguous int64 array, or None (another integer kind: the numpy path)."""
    return np.ascontiguousarray(a) if a.dtype == np.int64 else None


def stack_hashes(loc: np.ndarray, off: np.ndarray, m: int, m2: int) -> np.ndarray | None:
    """scan.c's pps_stack_hashes (the numpy path's hash of each stack, bit for bit), or None
    without the library or for locations that are not int64."""
    loc64, off64 = _int64(loc), _int64(off)
    if LIB is None or loc64 is None or off64 is None:
        return None
    n = len(off64) - 1
    h = np.empty(n, dtype=np.uint64)
    LIB.pps_stack_hashes(loc64.ctypes.data, off64.ctypes.data, n, m, m2, h.ctypes.data)
    return h


def same_stacks(loc: np.ndarray, off: np.ndarray, rep: np.ndarray) -> bool | None:
    """Whether stack i equals stack rep[i] for every i (scan.c), or None as stack_hashes."""
    loc64, off64, rep64 = _int64(loc), _int64(off), _int64(rep)
    if LIB is None or loc64 is None or off64 is None or rep64 is None:
        return None
    n = len(off64) - 1
    return bool(LIB.pps_same_stacks(loc64.ctypes.data, off64.ctypes.data, n, rep64.ctypes.data))


def group_sums(values: np.ndarray, owners: np.ndarray, starts: np.ndarray) -> np.ndarray | None:
    """np.add.reduceat(values[owners], starts) for int64 values, int32 owners and strictly
    increasing int64 starts (scan.c, no gathered copy); None without the library."""
    if LIB is None or values.dtype != np.int64 or owners.dtype != np.int32:
        return None
    if starts.dtype != np.int64:
        return None
    values, owners = np.ascontiguousarray(values), np.ascontiguousarray(owners)
    starts = np.ascontiguousarray(starts)
    out = np.empty(len(starts), dtype=np.int64)
    LIB.pps_group_sums(values.ctypes.data, owners.ctypes.data, starts.ctypes.data, len(starts),
                       len(owners), out.ctypes.data)  # fmt: skip
    return out


def first_order(values: np.ndarray, size: int) -> np.ndarray | None:
    """The distinct values of int64 values in [0, size), in order of first occurrence
    (scan.c's one pass); None without the library, for other integer kinds, or when a value
    lies outside [0, size)."""
    values64 = _int64(values)
    if LIB is None or values64 is None:
        return None
    seen = np.empty(max(size, 1), dtype=np.uint8)
    out = np.empty(min(len(values64), max(size, 0)), dtype=np.int64)
    count = LIB.pps_first_order(values64.ctypes.data, len(values64), size, seen.ctypes.data,
                                out.ctypes.data)  # fmt: skip
    return out[:count] if count >= 0 else None


def varint_lengths(v: np.ndarray) -> np.ndarray | None:
    """The byte length of each uint64's varint (scan.c); None without the library."""
    if LIB is None or v.dtype != np.uint64:
        return None
    v = np.ascontiguousarray(v)
    out = np.empty(len(v), dtype=np.int64)
    LIB.pps_varint_lengths(v.ctypes.data, len(v), out.ctypes.data)
    return out


def put_varints(out: np.ndarray, at: np.ndarray, v: np.ndarray, lengths: np.ndarray) -> bool:
    """Write each uint64 v[i] as its varint of lengths[i] bytes (varint_lengths) at out[at[i]:]
    (scan.c); False without the library, leaving it to the caller."""
    if LIB is None or v.dtype != np.uint64 or out.dtype != np.uint8 or not out.flags.c_contiguous:
        return False
    v, at = np.ascontiguousarray(v), np.ascontiguousarray(at, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    if len(at) != len(v) or len(lengths) != len(v):
        raise ValueError("varints, places and lengths differ in number")
    if len(at) and (int(at.min()) < 0 or int((at + lengths).max()) > len(out)):
        raise ValueError("a varint's place lies outside the output")
    if len(lengths) and (int(lengths.min()) < 1 or int(lengths.max()) > 10):
        raise ValueError("a varint of under 1 or over 10 bytes")
    LIB.pps_put_varints(v.ctypes.data, len(v), at.ctypes.data, lengths.ctypes.data,
                        out.ctypes.data)  # fmt: skip
    return True


def copy_ranges(
    out: np.ndarray, dst: np.ndarray, data: np.ndarray, src: np.ndarray, lengths: np.ndarray
) -> bool:
    """out[dst[i]:dst[i] + lengths[i]] = data[src[i]:src[i] + lengths[i]] for each i, uint8
    arrays (scan.c); False without the library, leaving it to the caller."""
    if LIB is None or out.dtype != np.uint8 or data.dtype != np.uint8:
        return False
    if not out.flags.c_contiguous:
        return False
    data = np.ascontiguousarray(data)
    dst, src, lengths = (np.ascontiguousarray(a, dtype=np.int64) for a in (dst, src, lengths))
    if not len(lengths):
        return True
    if int(lengths.min()) < 0 or int(dst.min()) < 0 or int(src.min()) < 0:
        raise ValueError("a byte run with a negative place or length")
    if int((dst + lengths).max()) > len(out) or int((src + lengths).max()) > len(data):
        raise ValueError("a byte run lies outside its array")
    LIB.pps_copy_ranges(data.ctypes.data, src.ctypes.data, dst.ctypes.data, lengths.ctypes.data,
                        len(lengths), out.ctypes.data)  # fmt: skip
    return True
