"""The profiles google/pprof reads through its legacy parsers (Go 1.19's vendored
profile/legacy_profile.go, parseLegacy), converted as they do: tried in pprof's order, the first
that recognises the file wins, its error (other than "unrecognized") is the upload's 400.

This module holds the dispatch, the gperftools binary CPU profile and the frame regexes pprof
attaches; the text parsers are in legacy_text.py, the Java ones in legacy_java.py.
"""

from __future__ import annotations

import array
import sys

from ..limits import Limits
from . import legacy_java, legacy_text
from .legacy_maps import cleanup_duplicate_locations, finish
from .model import Location, Profile, Sample, encode
from .text import ParseError, Scanner, Unrecognized, latin1

MASK = (1 << 64) - 1


def wrap(n: int) -> int:
    """n as Go's int64 arithmetic leaves it."""
    n &= MASK
    return n - (1 << 64) if n >> 63 else n


class _Words:
    """gperftools' words in one byte order and width, read as Go's get32l ... get64b do."""

    def __init__(self, data: bytes, code: str, big: bool) -> None:
        self.size = array.array(code).itemsize
        n = len(data) // self.size
        self.words = array.array(code, data[: n * self.size])
        if big != (sys.byteorder == "big"):
            self.words.byteswap()
        self.data, self.pos, self.nil = data, 0, False

    def next(self) -> int:
        """The next word, or 0 with nil set once the data has run out (Go's b == nil)."""
        if self.nil or self.pos >= len(self.words):
            self.nil = True
            return 0
        self.pos += 1
        return self.words[self.pos - 1]

    def remaining(self) -> int:
        return 0 if self.nil else len(self.data) - self.pos * self.size

    def rest(self) -> bytes:
        return b"" if self.nil else self.data[self.pos * self.size :]


_WIDTHS = [("I", False), ("I", True), ("Q", False), ("Q", True)]  # get32l, 32b, 64l, 64b


def _cpu_samples(w: _Words, adjust: bool, p: Profile, limits: Limits) -> dict[int, Location]:
    """parseCPUSamples: (count, depth, addresses...) records up to the (0, 1, 0) marker."""
    locs: dict[int, Location] = {}
    frames = 0
    while w.remaining() > 0:
        count = w.next()
        nstk = w.next()
        if w.nil or nstk > w.remaining() // 4:
            raise Unrecognized
        addrs = [w.next() for _ in range(nstk)]
        if count == 0 and nstk == 1 and addrs[0] == 0:
            break
        frames += nstk
        limits.check("frames", frames)
        sloc = []
        for i, addr in enumerate(addrs):
            if adjust and i > 0:
                addr = (addr - 1) & MASK
            loc = locs.get(addr)
            if loc is None:
                loc = locs[addr] = Location(address=addr)
                p.locations.append(loc)
            sloc.append(loc)
        p.samples.append(Sample(sloc, [wrap(count), wrap(wrap(count) * p.period)]))
        limits.check("samples", len(p.samples))
    return locs


def parse_cpu(data: bytes, limits: Limits) -> tuple[Profile, str]:
    """parseCPU: the five-word header in the first byte order and width that fits."""
    for code, big in _WIDTHS:
        size = array.array(code).itemsize
        if len(data) < 5 * size or any(data[:size]) or data[size : 2 * size] == bytes(size):
            continue  # not the header (0, 3, ...): the whole file is read in this order below
        w = _Words(data, code, big)
        head = [w.next() for _ in range(5)]
        if w.nil or head[0] != 0 or head[1] != 3 or head[3] == 0 or head[4] != 0:
            continue
        if head[2] not in (0, 1):
            continue
        p = Profile(
            period=wrap(wrap(head[3]) * 1000),
            period_type=("cpu", "nanoseconds"),
            sample_types=[("samples", "count"), ("cpu", "nanoseconds")],
        )
        if head[2] == 1:
            locs = _cpu_samples(w, False, p, limits)
            legacy_java.locations(latin1(w.rest()), locs, p)
            legacy_java.aggregate(p)
            return p, "legacy Java CPU"
        _cpu_samples(w, True, p, limits)
        _strip_signal_frames(p)
        finish(p, Scanner(latin1(w.rest())))
        cleanup_duplicate_locations(p)
        return p, "legacy CPU"
    raise Unrecognized


def _strip_signal_frames(p: Profile) -> None:
    """Up to twice: a second frame (nearly) every sample shares is the signal handler's."""
    margin = len(p.samples) // 32
    for _ in range(2):
        counts: dict[int, int] = {}
        for s in p.samples:
            if len(s.locations) > 1:
                a = s.locations[1].address
                counts[a] = counts.get(a, 0) + 1
        for addr, count in counts.items():
            if count >= len(p.samples) - margin:
                for s in p.samples:
                    if len(s.locations) > 1 and s.locations[1].address == addr:
                        del s.locations[1]
                break


_HEAPZ_TYPES = [
    ["allocations", "size"],
    ["objects", "space"],
    ["inuse_objects", "inuse_space"],
    ["alloc_objects", "alloc_space"],
    ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"],
]
_ALLOC_RX = "|".join(
    [
        "calloc", "cfree", "malloc", "free", "memalign", "do_memalign", "(__)?posix_memalign",
        "pvalloc", "valloc", "realloc", "tcmalloc::.*", "tc_calloc", "tc_cfree", "tc_malloc",
        "tc_free", "tc_memalign", "tc_posix_memalign", "tc_pvalloc", "tc_valloc", "tc_realloc",
        "tc_new", "tc_delete", "tc_newarray", "tc_deletearray", "tc_new_nothrow",
        "tc_newarray_nothrow", "malloc_zone_malloc", "malloc_zone_calloc", "malloc_zone_valloc",
        "malloc_zone_realloc", "malloc_zone_memalign", "malloc_zone_free", r"runtime\..*",
        "BaseArena::.*", "(::)?do_malloc_no_errno", "(::)?do_malloc_pages", "(::)?do_malloc",
        "DoSampledAllocation", "MallocedMemBlock::MallocedMemBlock", "_M_allocate",
        "__builtin_(vec_)?delete", "__builtin_(vec_)?new", "__gnu_cxx::new_allocator::allocate",
        "__libc_malloc", "__malloc_alloc_template::allocate", "allocate", "cpp_alloc",
        r"operator new(\[\])?", "simple_alloc::allocate",
    ]
)  # fmt: skip
_ALLOC_SKIP_RX = r"runtime\.panic|runtime\.reflectcall|runtime\.call[0-9]*"
_CPU_RX = "ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|"
_CPU_RX += "__pthread_sighandler|__restore"
_LOCK_RX = "|".join(
    [
        "RecordLockProfileData", "(base::)?RecordLockProfileData.*",
        "(base::)?SubmitMutexProfileData.*", "(base::)?SubmitSpinLockProfileData.*",
        "(base::Mutex::)?AwaitCommon.*", "(base::Mutex::)?Unlock.*",
        "(base::Mutex::)?UnlockSlow.*", "(base::Mutex::)?ReaderUnlock.*",
        "(base::MutexLock::)?~MutexLock.*", "(Mutex::)?AwaitCommon.*", "(Mutex::)?Unlock.*",
        "(Mutex::)?UnlockSlow.*", "(Mutex::)?ReaderUnlock.*", "(MutexLock::)?~MutexLock.*",
        "(SpinLock::)?Unlock.*", "(SpinLock::)?SlowUnlock.*",
        "(SpinLockHolder::)?~SpinLockHolder.*",
    ]
)  # fmt: skip


def _frame_info(p: Profile) -> None:
    """addLegacyFrameInfo: the drop_frames / keep_frames pprof gives each kind."""
    types = [t for t, _ in p.sample_types]
    if types in _HEAPZ_TYPES:
        p.drop_frames, p.keep_frames = _ALLOC_RX, _ALLOC_SKIP_RX
    elif types == ["contentions", "delay"]:
        p.drop_frames, p.keep_frames = _LOCK_RX, ""
    else:
        p.drop_frames, p.keep_frames = _CPU_RX, ""


PARSERS = [
    parse_cpu,
    legacy_text.parse_heap,
    legacy_text.parse_go_count,
    legacy_text.parse_thread,
    legacy_text.parse_contention,
    legacy_java.parse_java,
]


def convert(data: bytes, limits: Limits) -> tuple[bytes, str] | None:
    """(profile.proto bytes, what it was) as pprof's parseLegacy reads data; None when no legacy
    parser recognises it; ParseError with pprof's reason when the one that does fails."""
    text = latin1(data)  # the text parsers' view of the bytes, decoded once
    for parser in PARSERS:
        try:
            p, origin = parser(data, limits) if parser is parse_cpu else parser(text, limits)
        except Unrecognized:
            continue
        except ParseError as err:
            raise ParseError(f"parsing profile: {err}") from None
        _frame_info(p)
        return encode(p), origin
    return None
