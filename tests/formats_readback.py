"""A converted profile read back as folded stacks: through our parser, or go tool pprof -raw."""

from __future__ import annotations

import re
from collections import Counter

from share import pprof

LIMIT = 1 << 30


def parse(data: bytes) -> pprof.ParsedProfile:
    return pprof.parse(data, max_profile_bytes=LIMIT)


def stacks(parsed: pprof.ParsedProfile, sample_type: str) -> Counter[str]:
    """`root;...;leaf` -> summed value of that sample type (zero-valued stacks left out)."""
    m = parsed.message
    column = [t for t, _ in parsed.sample_types()].index(sample_type)
    names = {f.id: parsed.string(f.name) for f in m.function}
    frames = {
        loc.id: ";".join(names[ln.function_id] for ln in reversed(loc.line)) for loc in m.location
    }
    out: Counter[str] = Counter()
    for s in m.sample:
        if s.value[column]:
            out[";".join(frames[i] for i in reversed(s.location_id))] += s.value[column]
    return _nonzero(out)


_LOCATION = re.compile(r"^ +(\d+): \S+ M=\d+ (.*) (\S*):(-?\d+) s=-?\d+$")
_SAMPLE = re.compile(r"^ +(-?\d+(?: +-?\d+)*): ((?:\d+ )*)$")


def go_raw_stacks(raw_text: str, column: int) -> Counter[str]:
    """The same from `go tool pprof -raw` output (function names without spaces in files)."""
    lines = raw_text.splitlines()
    start, locs = lines.index("Locations"), {}
    for line in lines[start + 1 :]:
        m = _LOCATION.match(line)
        if m:
            locs[int(m.group(1))] = m.group(2)
        elif line == "Mappings":
            break
    out: Counter[str] = Counter()
    for line in lines[:start]:
        m = _SAMPLE.match(line)
        if m:
            value = int(m.group(1).split()[column])
            ids = [int(i) for i in m.group(2).split()]
            if value:
                out[";".join(locs[i] for i in reversed(ids))] += value
    return _nonzero(out)


def folded(text: str, exact: bool = False) -> Counter[str]:
    """Folded stack lines summed per stack. exact: the stack is all before the last space (as
    stackcollapse-perf.pl writes `STACK COUNT`), else whitespace before the count is dropped
    (as the folded converter reads files)."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        line = line if exact else line.strip()
        if line:
            stack, count = line.rsplit(" ", 1)
            out[stack if exact else stack.rstrip()] += int(count)
    return _nonzero(out)


def _nonzero(counts: Counter[str]) -> Counter[str]:
    return Counter({k: v for k, v in counts.items() if v})
