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


# id: address M=mapping NAME FILE:LINE s=START, then (SYSTEM_NAME) where pprof's demangler
# changed the name (it empties `<module> (x.py:8)`): the system name is what was stored.
_LOCATION = re.compile(r"^ +(\d+): \S+ M=\d+ (.*) (\S*):(-?\d+) s=-?\d+(?:\((.*)\))?$")
_SAMPLE = re.compile(r"^ +(-?\d+(?: +-?\d+)*):((?: \d+)*) ?$")


def go_raw_stacks(
    raw_text: str, column: int, parsed: pprof.ParsedProfile | None = None
) -> Counter[str]:
    """The same from `go tool pprof -raw` output. -raw lists no sample without frames (they
    count in pprof's total all the same): compare with framed(expected). A location line is
    `NAME FILE:LINE`, so a file name with a space (Python's `<frozen importlib._bootstrap>`)
    would end the name early: given the profile, its file names are made spaceless first."""
    if parsed is not None:
        for f in parsed.message.function:
            name = parsed.string(f.filename)
            if " " in name:
                raw_text = raw_text.replace(f" {name}:", " " + name.replace(" ", "_") + ":")
    lines = raw_text.splitlines()
    start, locs = lines.index("Locations"), {}
    for line in lines[start + 1 :]:
        m = _LOCATION.match(line)
        if m:
            locs[int(m.group(1))] = m.group(2) if m.group(5) is None else m.group(5)
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
            stack, count = line.rsplit(" ", 1) if " " in line else ("", line)
            out[stack if exact else stack.rstrip()] += int(count)
    return _nonzero(out)


def framed(counts: Counter[str]) -> Counter[str]:
    """Counts without the stack of no frames, which `go tool pprof -raw` does not list."""
    return Counter({k: v for k, v in counts.items() if k})


def _nonzero(counts: Counter[str]) -> Counter[str]:
    return Counter({k: v for k, v in counts.items() if v})


def cpuprofile_expected(doc: dict) -> tuple[Counter[str], Counter[str]]:
    """Samples and wall time per stack, read off the JSON here independently."""
    nodes = doc.get("nodes")
    if nodes is None:  # the older nested form
        nodes, todo = [], [doc["head"]]
        while todo:
            n = todo.pop()
            nodes.append({**n, "callFrame": n, "children": [c["id"] for c in n["children"]]})
            todo += n["children"]
    by_id = {n["id"]: n for n in nodes}
    parent = {c: n["id"] for n in nodes for c in n.get("children", [])}

    def path(i: int) -> str:
        names = []
        while i in by_id:
            names.append(by_id[i]["callFrame"]["functionName"] or "(anonymous)")
            i = parent.get(i, -1)
        return ";".join(reversed(names[:-1]))  # the tree's (root) left out

    if "timeDeltas" in doc:
        deltas = doc["timeDeltas"]
    else:
        t = doc["timestamps"]
        deltas = [b - a for a, b in zip(t, t[1:], strict=False)]
    count: Counter[str] = Counter()
    wall: Counter[str] = Counter()
    for i, node in enumerate(doc["samples"]):
        count[path(node)] += 1
        wall[path(node)] += max(deltas[i], 0) * 1000
    return count, Counter({k: v for k, v in wall.items() if v})


def speedscope_expected(doc: dict) -> Counter[str]:
    """Every profile's stacks and weights (time in nanoseconds), read off the JSON here."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    scale = {"none": 1, "seconds": 10**9, "milliseconds": 10**6, "microseconds": 10**3}
    out: Counter[str] = Counter()
    for prof in doc["profiles"]:
        factor = scale.get(prof.get("unit", "none"), 1)
        if "samples" in prof:
            for stack, w in zip(prof["samples"], prof["weights"], strict=True):
                out[";".join(names[f] for f in stack)] += round(w * factor)
        else:
            open_, last = [], 0
            for e in prof["events"]:
                if open_ and e["at"] > last:
                    out[";".join(names[f] for f in open_)] += round((e["at"] - last) * factor)
                last = e["at"]
                open_ = open_ + [e["frame"]] if e["type"] == "O" else open_[:-1]
    return out
