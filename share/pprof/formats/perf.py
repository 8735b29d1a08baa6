"""Linux `perf script` text: one record per sample (a header line, then its stack, leaf first,
one frame per line), read as Brendan Gregg's stackcollapse-perf.pl reads it by default.

The process name (spaces as `_`) is the root frame, then the frames root to leaf, `+0x...`
offsets stripped, `[unknown]` frames named after their module (`[libc.so.6]`) or kept as
`[unknown]`, inlined chains (`a->b`) split with `_[i]` marks, names tidied as the script does.
Unlike the script, every event is kept: each event is a sample type counted in samples
(`cycles`), plus one holding the periods perf printed (`cycles_period`; nanoseconds for the
*-clock events), which is what the script sums; comm, pid and tid are labels.
"""

from __future__ import annotations

from ...errors import BadProfile
from ..limits import Limits
from .stacks import StackProfile
from .text import compile

_HEADER = compile(r"^(\S.+?)\s+(\d+)/*(\d+)*\s+")
_EVENT = compile(r":\s*(\d+)*\s+(\S+):\s*$")
_EVENT_ONLY = compile(r"\s(\S+):\s*$")  # `comm pid event:` (old perf), no time or period
_FRAME = compile(r"^\s*(\w+)\s*(.+) \((.*)\)")
_OFFSET = compile(r"\+0x[\da-f]+$")
_GO_METHOD = compile(r"\.\(.*\)\.")
FORMAT = "perf script"
RECOGNISE_LINES = 200
CLOCKS = ("cpu-clock", "task-clock")  # their period is in nanoseconds


class _Record:
    def __init__(self, line_no: int, comm: str, pid: str, tid: str, event: str, period: str):
        self.line_no, self.comm, self.pid, self.tid = line_no, comm, pid, tid
        self.event, self.period = event, period
        self.pname = comm.replace(" ", "_")
        self.lines: list[list[str]] = []  # each stack line's frames, leaf line first

    @property
    def frames(self) -> list[str]:
        """Root first: the lines reversed, each line's own frames (an inlined chain) in order."""
        return [f for line in reversed(self.lines) for f in line]


def _header(line: str, line_no: int) -> _Record | None:
    m = _HEADER.search(line)
    if not m:
        return None
    comm, pid, tid = m.group(1), m.group(2), m.group(3) or ""
    if not tid:
        pid, tid = "", pid
    event, period = "", ""
    e = _EVENT.search(line)
    if e:
        period, event = e.group(1) or "", e.group(2)
    elif e := _EVENT_ONLY.search(line):
        event = e.group(1)
    return _Record(line_no, comm, pid, tid, event, period)


def _tidy(func: str, mod: str, pname: str, inlined: bool) -> str:
    if func == "[unknown]":
        func = "[" + (mod.rsplit("/", 1)[-1] if mod != "[unknown]" else "unknown") + "]"
    func = func.replace(";", ":")
    if not _GO_METHOD.search(func):
        # Everything from the first "(" that does not open "(anonymous namespace)" is noise.
        start = 0
        while (i := func.find("(", start)) != -1:
            if not func.startswith("(anonymous namespace)", i):
                func = func[:i]
                break
            start = i + 1
    func = func.replace('"', "").replace("'", "")
    if pname.startswith("java") and "/" in func and func.startswith("L"):
        func = func[1:]
    if inlined and "_[i]" not in func:
        func += "_[i]"
    return func


def _frames(line: str, pname: str) -> list[str] | None:
    """The frames of one stack line (several for an inlined chain), None if it is not one."""
    m = _FRAME.search(line)
    if not m:
        return None
    rawfunc, mod = _OFFSET.sub("", m.group(2)), m.group(3)
    if rawfunc.startswith("("):
        return []
    parts = rawfunc.split("->")
    while parts and not parts[-1]:
        parts.pop()  # Perl's split drops trailing empty fields
    return [_tidy(f, mod, pname, i > 0) for i, f in enumerate(parts)]


def _records(text: str, limits: Limits):  # type: ignore[no-untyped-def]
    record: _Record | None = None
    frames = 0
    for line_no, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if line.startswith("#"):
            continue
        if not line:
            if record is not None:
                yield record
            record = None
            continue
        header = _header(line, line_no)
        if header is not None:
            if record is not None:
                yield record  # a record not ended by a blank line still counts
            record = header
            continue
        if not line.strip():
            continue
        found = _frames(line, record.pname if record else "")
        if found is None or record is None:
            what = "a stack line outside a sample" if found is not None else "an unrecognized line"
            raise BadProfile(
                f"perf script, line {line_no}: {what} (expected `COMM PID ... EVENT:` or "
                f"`  ADDRESS SYMBOL (MODULE)`), got {line[:80]!r}"
            )
        frames += len(found)
        limits.check("frames", frames)
        record.lines.append(found)
    if record is not None:
        yield record


def recognise(text: str) -> bool:
    """A sample header followed by a stack line, among the first lines."""
    lines = [ln for ln in text.split("\n", RECOGNISE_LINES)[:RECOGNISE_LINES] if ln.strip()]
    lines = [ln for ln in lines if not ln.startswith("#")]
    return any(
        _HEADER.search(a) and not _HEADER.search(b) and _FRAME.search(b)
        for a, b in zip(lines, lines[1:], strict=False)
    )


def _type_names(events: list[str]) -> dict[str, str]:
    """Sample type names: the event without its modifiers (cpu-clock:pppH) unless two clash."""
    short = {e: (e.split(":", 1)[0] or e) if e else "samples" for e in events}
    clash = len(set(short.values())) < len(short)
    return {e: (e or "samples") if clash else short[e] for e in events}


def convert(text: str, limits: Limits) -> bytes:
    """Per event, samples/count and (where perf printed periods) the periods summed."""
    records = list(_records(text, limits))
    if not records:
        raise BadProfile("perf script: no samples in the file")
    limits.check("samples", len(records))
    events = list(dict.fromkeys(r.event for r in records))
    with_period = {r.event for r in records if r.period}
    names = _type_names(events)
    columns: dict[tuple[str, bool], int] = {}
    types: list[tuple[str, str]] = []
    for event in events:
        columns[(event, False)] = len(types)
        types.append((names[event], "count"))
        if event in with_period:
            columns[(event, True)] = len(types)
            unit = "nanoseconds" if names[event].split(":")[0] in CLOCKS else "count"
            types.append((f"{names[event]}_period", unit))
    profile = StackProfile(types, limits, format=FORMAT)
    first = events[0]
    profile.default_sample_type = types[columns.get((first, True), columns[(first, False)])][0]
    for r in records:
        values = [0] * len(types)
        values[columns[(r.event, False)]] = 1
        if r.event in with_period:
            # stackcollapse-perf.pl's count: the period, 1 where none (or 0) was printed
            values[columns[(r.event, True)]] = int(r.period or 0) or 1
        stack = [profile.location(name) for name in [r.pname, *r.frames]]
        labels = [("comm", r.comm)] + ([("pid", r.pid)] if r.pid else []) + [("tid", r.tid)]
        profile.add(stack, values, labels)
    return profile.encode()
