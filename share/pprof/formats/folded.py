"""Folded (collapsed) stacks: `frame;frame;frame N` per line, root first, N the sample count.

What Brendan Gregg's stackcollapse-* scripts, async-profiler's `collapsed` output, py-spy's
`--format raw` and rbspy write, and flamegraph.pl and speedscope read. Each frame's text is
its function name, verbatim. Blank lines and `#` comment lines are skipped; any other line
that is not a stack and a count is a 400 naming its number, not skipped in silence.
"""

from __future__ import annotations

from ...errors import BadProfile
from ..limits import Limits
from .stacks import StackProfile

INT64_MAX = (1 << 63) - 1
RECOGNISE_LINES = 100  # the first non-blank lines that decide whether a file is folded stacks


def _split(line: str) -> tuple[str, str] | None:
    """(stack, count) of one stripped line, or None when its shape is not `STACK COUNT`. A count
    alone is samples with no frames (py-spy writes ` 2` for samples it found no stack in)."""
    cut = max(line.rfind(" "), line.rfind("\t"))
    count = line[cut + 1 :]
    digits = count[1:] if count.startswith("-") else count
    if not (digits.isascii() and digits.isdigit()):
        return None
    return line[:cut].rstrip(" \t"), count


def _lines(text: str):  # type: ignore[no-untyped-def]
    for number, line in enumerate(text.split("\n"), 1):
        line = line.strip(" \t\r\ufeff")
        if line and not line.startswith("#"):
            yield number, line


def recognise(text: str) -> bool:
    """At least half of the first lines are a stack and a count (so that a file with a broken
    line is named folded stacks, and a text file that merely ends a line in a number is not)."""
    seen = good = 0
    for _, line in _lines(text):
        seen, good = seen + 1, good + (_split(line) is not None)
        if seen >= RECOGNISE_LINES:
            break
    return seen > 0 and good * 2 >= seen


def parse(text: str) -> list[tuple[list[str], int]]:
    """(frames root first, count) per line; BadProfile naming the first line that is not one."""
    out = []
    for number, line in _lines(text):
        split = _split(line)
        if split is None:
            raise BadProfile(
                f"folded stacks, line {number}: expected `frame;frame;... COUNT` "
                f"(a stack, a space, an integer), got {line[:80]!r}"
            )
        count = int(split[1])
        if abs(count) > INT64_MAX:
            raise BadProfile(f"folded stacks, line {number}: count {split[1]} is over 2^63-1")
        out.append((split[0].split(";") if split[0] else [], count))
    if not out:
        raise BadProfile("folded stacks: no stacks in the file")
    return out


def convert(text: str, limits: Limits) -> bytes:
    """A profile with one sample type, samples/count, one sample per distinct stack."""
    profile = StackProfile([("samples", "count")], limits, format="folded stacks")
    total = 0
    for frames, count in parse(text):
        total += abs(count)
        if total > INT64_MAX:
            raise BadProfile("folded stacks: the counts add up to more than 2^63-1")
        profile.add([profile.location(name) for name in frames], [count])
    return profile.encode()
