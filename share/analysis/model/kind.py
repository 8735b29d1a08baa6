"""What kind of profile this is (CPU, heap, mutex, ...), named from its sample and period types.

Go's runtime/pprof, Node's pprof and google/pprof's own tools each write recognisable type
names (tests/corpus holds one of each). Two Go kinds share every type: heap and allocs differ
only in default_sample_type, and block and mutex profiles both count contentions/delay with
the same period; the mutex profile charges each wait to the stack that released the lock, so
its leaf frames are Unlock calls, and that is how they are told apart.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

# name -> (label, what the numbers mean)
KINDS: dict[str, tuple[str, str]] = {
    "cpu": (
        "CPU",
        "Time spent running on a CPU: each sample is a stack seen on a thread that was running, "
        "so a function's share is its share of the busy time.",
    ),
    "heap": (
        "heap",
        "Memory: inuse_* is what was still allocated at the last garbage collection, alloc_* "
        "everything allocated since the program started, sampled and scaled up.",
    ),
    "allocs": (
        "allocs",
        "Memory allocated since the program started (alloc_*, shown first), and what of it was "
        "still in use (inuse_*), sampled and scaled up.",
    ),
    "goroutine": (
        "goroutine",
        "Goroutines that existed when the profile was taken, counted by the stack they were at.",
    ),
    "threadcreate": ("threadcreate", "Operating system threads created, by the creating stack."),
    "mutex": (
        "mutex",
        "Lock contention: delay is the time goroutines waited for a mutex, charged to the stack "
        "that held it and released it; contentions counts the waits.",
    ),
    "block": (
        "block",
        "Blocking: delay is the time goroutines spent waiting (channels, select, locks, "
        "WaitGroups, ...) at the stack where they waited; contentions counts the waits.",
    ),
    "contention": (
        "contention",
        "Time spent waiting for locks or other synchronisation (delay), and how often "
        "(contentions), by stack.",
    ),
    "node-time": (
        "Node.js time",
        "Wall-clock time of the JavaScript thread: each sample is the stack seen at a regular "
        "interval, busy or not.",
    ),
    "node-heap": (
        "Node.js heap",
        "Memory still allocated by live JavaScript objects when the profile was taken, sampled.",
    ),
    "wall": (
        "wall-clock",
        "Wall-clock time: stacks sampled at a regular interval whether running or waiting.",
    ),
    "unknown": (
        "unknown",
        "A profile of a kind pprof-share does not recognise; the sample types say what the "
        "numbers count.",
    ),
}

_UNLOCK = ("Unlock", "runtime.unlock")
_GO_HEAP = {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}


def describe(name: str) -> dict[str, str]:
    """{name, label, meaning} of a kind name (unknown names are "unknown")."""
    label, meaning = KINDS.get(name, KINDS["unknown"])
    return {"name": name if name in KINDS else "unknown", "label": label, "meaning": meaning}


def detect(
    sample_types: Sequence[tuple[str, str]] | Sequence[Sequence[str]],
    period_type: tuple[str, str] | None,
    default_type: str | None,
    leaf_names: Iterable[str] | None = None,
) -> str:
    """The kind name; leaf_names (function names of leaf frames) decides block vs mutex."""
    types = {t for t, _ in sample_types}
    units = {t: u for t, u in sample_types}
    period = period_type[0] if period_type else ""
    if "cpu" in types or period == "cpu":
        return "cpu"
    if types and types <= _GO_HEAP:
        if period == "inuse_space" or types == {"inuse_objects", "inuse_space"}:
            return "node-heap" if period == "inuse_space" else "heap"
        return "allocs" if default_type in ("alloc_space", "alloc_objects") else "heap"
    if types & {"objects", "space"} and period in ("space", ""):
        return "heap"  # legacy C++ heap profiles as google/pprof converts them
    if types == {"goroutine"}:
        return "goroutine"
    if types <= {"threadcreate", "thread"} and types:
        return "threadcreate"
    if "contentions" in types and "delay" in types:
        if leaf_names is None:
            return "contention"
        leaves = [n for n in leaf_names if n]
        if leaves and all(any(u in n for u in _UNLOCK) for n in leaves):
            return "mutex"
        return "block" if leaves and units.get("delay") == "nanoseconds" else "contention"
    if "wall" in types and ("sample" in types or period == "wall"):
        return "node-time" if "sample" in types else "wall"
    return "unknown"


def leaf_names(message: Any, strings: Sequence[str], limit: int = 2000) -> list[str]:
    """Function names of the leaf frame of the first `limit` samples (innermost line)."""
    functions = {f.id: f.name for f in message.function}
    locations = {loc.id: loc for loc in message.location}
    out = []
    for sample in message.sample[:limit]:
        if not len(sample.location_id):
            continue
        loc = locations.get(sample.location_id[0])
        if loc is None or not len(loc.line):
            continue
        index = functions.get(loc.line[0].function_id, 0)
        out.append(strings[index] if 0 <= index < len(strings) else "")
    return out


def of_profile(parsed: Any) -> str:
    """The kind name of a share.pprof.ParsedProfile."""
    outline = parsed.outline  # the top level: the full message is decoded only for leaf names
    period = None
    if outline.HasField("period_type"):
        period = (parsed.string(outline.period_type.type), parsed.string(outline.period_type.unit))
    types = parsed.sample_types()
    leaves = None
    if {"contentions", "delay"} <= {t for t, _ in types}:
        leaves = leaf_names(parsed.message, parsed.strings)
    return detect(types, period, parsed.default_sample_type(), leaves)
