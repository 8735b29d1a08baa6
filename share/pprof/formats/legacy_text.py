"""google/pprof's legacy text parsers (legacy_profile.go): heap / growth / fragmentation, Go's
count profiles (goroutine, threadcreate: debug=1), threadz, contention and Go's mutex / block
text. Each raises Unrecognized for a file that is not its format (the next parser tries) and
ParseError with pprof's reason for one that is, but broken."""

from __future__ import annotations

import math

from ..limits import Limits
from .legacy_maps import (
    additional_sections,
    cleanup_duplicate_locations,
    is_memory_map_sentinel,
    parse_hex_addresses,
)
from .model import Location, Profile, Sample
from .text import (
    ParseError,
    Scanner,
    Unrecognized,
    compile,
    groups,
    is_space_or_comment,
    parse_int,
    parse_uint,
    trim,
)

MASK = (1 << 64) - 1
_COUNT_START = compile(r"\A(\S+) profile: total \d+\z")
_COUNT = compile(r"\A(\d+) @(( 0x[0-9a-f]+)+)\z")
_HEAP_HEADER = compile(
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)"
)
_HEAP_SAMPLE = compile(r"(-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)")
_CONTENTION_SAMPLE = compile(r"(\d+) *(\d+) @([ x0-9a-f]*)")
_GROWTH_HEADER = compile(r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ growthz?")
_FRAGMENTATION_HEADER = compile(
    r"heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] @ fragmentationz?"
)
_THREADZ_START = compile(r"--- threadz \d+ ---")
_THREAD_START = compile(r"--- Thread ([[:xdigit:]]+) \(name: (.*)/(\d+)\) stack: ---")


def wrap(n: int) -> int:
    n &= MASK
    return n - (1 << 64) if n >> 63 else n


def go_int64(f: float) -> int:
    """int64(f) as Go on amd64 converts it: out of range (and NaN) give the minimum."""
    if math.isnan(f) or not -(2.0**63) <= f < 2.0**63:
        return -(1 << 63)
    return int(f)


def quo(a: int, b: int) -> int:
    """Go's integer division (truncated toward zero)."""
    q = abs(a) // abs(b)
    return wrap(q if (a < 0) == (b < 0) else -q)


class _Locations:
    """One location per address, in order of first sight, as each parser's locs map."""

    def __init__(self, p: Profile, limits: Limits) -> None:
        self.p, self.limits, self.by_address, self.frames = p, limits, {}, 0

    def stack(self, addrs: list[int], adjust_leaf: bool = True) -> list[Location]:
        self.frames += len(addrs)
        self.limits.check("frames", self.frames)
        out = []
        for i, addr in enumerate(addrs):
            if adjust_leaf or i > 0:
                addr = (addr - 1) & MASK  # a return address: land on the call
            loc = self.by_address.get(addr)
            if loc is None:
                loc = self.by_address[addr] = Location(address=addr)
                self.p.locations.append(loc)
            out.append(loc)
        return out

    def add(self, sample: Sample) -> None:
        self.p.samples.append(sample)
        self.limits.check("samples", len(self.p.samples))


def _int(text: str, line: str, base: int = 10) -> int:
    try:
        return parse_int(text, base)
    except ValueError:
        raise ParseError(
            f'malformed sample: {line}: strconv.ParseInt: parsing "{text}": value out of range'
        ) from None


def parse_go_count(text: str, limits: Limits) -> tuple[Profile, str]:
    """parseGoCount: `goroutine profile: total N`, then `N @ 0x... 0x...` lines."""
    s = Scanner(text)
    while s.scan() and is_space_or_comment(s.text()):
        pass
    s.check()
    m = _COUNT_START.search(s.text())
    if not m:
        raise Unrecognized
    kind = m.group(1)
    p = Profile(period_type=(kind, "count"), period=1, sample_types=[(kind, "count")])
    locs = _Locations(p, limits)
    while s.scan():
        line = s.text()
        if is_space_or_comment(line):
            continue
        if line.startswith("---"):
            break
        m = _COUNT.search(line)
        if not m:
            raise ParseError("malformed profile format")
        try:
            n = parse_int(m.group(1), 0)
            addrs = [parse_uint(f, 0) for f in m.group(2).split()]
        except ValueError:
            raise ParseError("malformed profile format") from None
        locs.add(Sample(locs.stack(addrs), [n]))
    s.check()
    additional_sections(p, s)
    return p, f"Go {kind} (debug=1)"


def parse_heap(text: str, limits: Limits) -> tuple[Profile, str]:
    """parseHeap: a heapz / heap_v2 / Go heap, growthz or fragmentationz text profile."""
    s = Scanner(text)
    if not s.scan():
        s.check()
        raise Unrecognized
    line = s.text()
    p = Profile(period_type=("space", "bytes"))
    sampling, has_alloc, origin = "", False, "legacy heap"
    if _HEAP_HEADER.search(line):
        sampling, p.period, has_alloc = _heap_header(line)
        if groups(_HEAP_HEADER.search(line))[5] == "heap":  # `@ heap/RATE`: Go's runtime
            origin = "Go heap (debug=1)"
    elif _GROWTH_HEADER.search(line) or _FRAGMENTATION_HEADER.search(line):
        p.period = 1
    else:
        raise Unrecognized
    if has_alloc:  # alloc before inuse, so that pprof shows inuse_space by default
        p.sample_types = [
            ("alloc_objects", "count"),
            ("alloc_space", "bytes"),
            ("inuse_objects", "count"),
            ("inuse_space", "bytes"),
        ]
    else:
        p.sample_types = [("objects", "count"), ("space", "bytes")]
    locs = _Locations(p, limits)
    while s.scan():
        line = trim(s.text())
        if is_space_or_comment(line):
            continue
        if is_memory_map_sentinel(line):
            break
        values, blocksize, addrs = _heap_sample(line, p.period, sampling, has_alloc)
        locs.add(Sample(locs.stack(addrs), values, num_labels={"bytes": [blocksize]}))
    s.check()
    additional_sections(p, s)
    return p, origin


def _heap_header(line: str) -> tuple[str, int, bool]:
    h = groups(_HEAP_HEADER.search(line))
    period = 0
    if h[6]:
        try:
            period = parse_int(h[6])
        except ValueError:
            raise Unrecognized from None
    has_alloc = (h[3] != h[1] and h[3] != "0") or (h[4] != h[2] and h[4] != "0")
    if h[5] in ("heapz_v2", "heap_v2"):
        return "v2", period, has_alloc
    if h[5] == "heapprofile":
        return "", 1, has_alloc
    if h[5] == "heap":
        return "v2", quo(period, 2), has_alloc
    raise Unrecognized


def scale_heap_sample(count: int, size: int, rate: int) -> tuple[int, int]:
    """scaleHeapSample: a Poisson-sampled (count, size) over its probability of being seen."""
    if count == 0 or size == 0:
        return 0, 0
    if rate <= 1:
        return count, size
    avg = float(size) / float(count)
    denominator = 1 - math.exp(-avg / float(rate))
    scale = math.inf if denominator == 0 else 1 / denominator
    return go_int64(float(count) * scale), go_int64(float(size) * scale)


def _heap_sample(line: str, rate: int, sampling: str, alloc: bool) -> tuple[list[int], int, list]:
    m = _HEAP_SAMPLE.search(line)
    if not m:
        raise ParseError("unexpected number of sample values: got 0, want 6")
    g = groups(m)
    values: list[int] = []
    blocksize = 0
    pairs = [(g[3], g[4], "allocation")] if alloc else []
    for count_text, size_text, label in [*pairs, (g[1], g[2], "inuse")]:
        count, size = _int(count_text, line), _int(size_text, line)
        if count == 0 and size != 0:
            raise ParseError(f"{label} count was 0 but {label} bytes was {size}")
        if count != 0:
            blocksize = quo(size, count)
            if sampling == "v2":
                count, size = scale_heap_sample(count, size, rate)
        values += [count, size]
    return values, blocksize, _addresses(g[5], line)


def _addresses(text: str, line: str) -> list[int]:
    try:
        return parse_hex_addresses(text)
    except ParseError as err:
        raise ParseError(f"malformed sample: {line}: {err}") from None


def parse_contention(text: str, limits: Limits) -> tuple[Profile, str]:
    """parseContention: gperftools' contentionz, Go's `--- mutex:` / `--- contention:` text."""
    s = Scanner(text)
    if not s.scan():
        s.check()
        raise Unrecognized
    first = s.text()
    if not first.startswith(("--- contentionz ", "--- mutex:", "--- contention:")):
        raise Unrecognized
    p = Profile(
        period_type=("contentions", "count"),
        period=1,
        sample_types=[("contentions", "count"), ("delay", "nanoseconds")],
    )
    cpu_hz = 0
    while s.scan():
        line = trim(s.text())
        if is_space_or_comment(line):
            continue
        if line.startswith("---"):
            break
        key, eq, value = line.partition("=")
        if not eq:
            break
        key, value = trim(key), trim(value)
        try:
            if key == "cycles/second":
                cpu_hz = parse_int(value, 0)
            elif key == "sampling period":
                p.period = parse_int(value, 0)
            elif key == "ms since reset":
                p.duration_nanos = wrap(parse_int(value, 0) * 1000 * 1000)
            elif key != "discarded samples":
                raise Unrecognized
        except ValueError:
            raise Unrecognized from None
    s.check()
    locs = _Locations(p, limits)
    while True:
        line = trim(s.text())
        if line.startswith("---"):
            break
        if not is_space_or_comment(line):
            values, addrs = _contention_sample(line, p.period, cpu_hz)
            locs.add(Sample(locs.stack(addrs), values))
        if not s.scan():
            break
    s.check()
    additional_sections(p, s)
    kinds = {"--- m": "Go mutex (debug=1)", "--- contention:": "Go block (debug=1)"}
    return p, next((v for k, v in kinds.items() if first.startswith(k)), "legacy contention")


def _contention_sample(line: str, period: int, cpu_hz: int) -> tuple[list[int], list[int]]:
    m = _CONTENTION_SAMPLE.search(line)
    if not m:
        raise Unrecognized
    v1, v2 = _int(m.group(1), line), _int(m.group(2), line)
    if period > 0:
        if cpu_hz > 0:
            v1 = go_int64(float(v1) * float(period) / (float(cpu_hz) / 1e9))
        v2 = wrap(v2 * period)
    return [v2, v1], _addresses(m.group(3), line)


def parse_thread(text: str, limits: Limits) -> tuple[Profile, str]:
    """parseThread: a threadz profile, `--- Thread X (name: N/T) stack: ---` per thread."""
    s = Scanner(text)
    while s.scan() and is_space_or_comment(s.text()):
        pass
    line = s.text()
    if _THREADZ_START.search(line):
        while s.scan():
            line = s.text()
            if is_memory_map_sentinel(line) or line.startswith("-"):
                break
    elif not _THREAD_START.search(line):
        raise Unrecognized
    p = Profile(sample_types=[("thread", "count")], period_type=("thread", "count"), period=1)
    locs = _Locations(p, limits)
    while not is_memory_map_sentinel(line):
        if line.startswith("---- no stack trace for"):
            break
        if not _THREAD_START.search(line):
            raise Unrecognized
        line, addrs = _thread_sample(s)
        if not addrs:  # "same as previous thread": one more of the last
            if p.samples:
                p.samples[-1].values[0] += 1
            continue
        locs.add(Sample(locs.stack(addrs, adjust_leaf=False), [1]))
    additional_sections(p, s)
    cleanup_duplicate_locations(p)
    return p, "legacy thread"


def _thread_sample(s: Scanner) -> tuple[str, list[int]]:
    line, same, addrs = "", False, []
    while s.scan():
        line = trim(s.text())
        if not line:
            continue
        if line.startswith("---"):
            break
        if "same as previous thread" in line:
            same = True
            continue
        addrs += _addresses(line, line)
    s.check()
    return (line, []) if same else (line, addrs)
