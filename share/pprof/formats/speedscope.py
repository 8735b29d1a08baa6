"""speedscope's file format (https://www.speedscope.app/file-format-schema.json): shared frames,
and profiles that are sampled (stacks of frame indices and their weights) or evented (frames
opened and closed at times).

Every profile of the file goes into the one upload: profiles of the same kind of unit share a
sample type (samples/count for `none`, time/nanoseconds for the time units, space/bytes for
`bytes`), and each sample is labelled `profile=<its profile's name>`, so pprof's tag filters
pick one. An evented profile weighs each stack by the time it was on top.
"""

from __future__ import annotations

from typing import Any

from ...errors import BadProfile
from ..limits import Limits
from .stacks import StackProfile

FORMAT = "speedscope"
SCHEMA = "speedscope.app/file-format-schema"
# unit -> (sample type, pprof unit, factor to that unit)
UNITS = {
    "none": ("samples", "count", 1),
    "nanoseconds": ("time", "nanoseconds", 1),
    "microseconds": ("time", "nanoseconds", 1_000),
    "milliseconds": ("time", "nanoseconds", 1_000_000),
    "seconds": ("time", "nanoseconds", 1_000_000_000),
    "bytes": ("space", "bytes", 1),
}


def recognise(document: Any) -> bool:
    return isinstance(document, dict) and SCHEMA in str(document.get("$schema", ""))


def _bad(where: str, what: str) -> BadProfile:
    return BadProfile(f"{FORMAT}: {where}: {what}")


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        raise _bad(where, "not a number")
    return value


def convert(document: dict, limits: Limits) -> bytes:
    shared = document.get("shared")
    frames = shared.get("frames") if isinstance(shared, dict) else None
    profiles = document.get("profiles")
    if not isinstance(frames, list):
        raise _bad("shared.frames", "missing or not a list")
    if not isinstance(profiles, list) or not profiles:
        raise _bad("profiles", "missing or empty")
    kinds = []
    for i, p in enumerate(profiles):
        if not isinstance(p, dict):
            raise _bad(f"profiles[{i}]", "not an object")
        unit = p.get("unit", "none")
        if not isinstance(unit, str) or unit not in UNITS:
            raise _bad(f"profiles[{i}].unit", f"{unit!r} is not one of {', '.join(UNITS)}")
        kinds.append(UNITS[unit])
    types = list(dict.fromkeys((name, unit) for name, unit, _ in kinds))
    profile = StackProfile(types, limits, format=FORMAT)
    locations: dict[int, int] = {}

    def location(index: Any, where: str) -> int:
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(frames):
            raise _bad(where, f"frame {index!r} is not in shared.frames")
        lid = locations.get(index)
        if lid is None:
            f = frames[index]
            if not isinstance(f, dict) or not isinstance(f.get("name"), str):
                raise _bad(f"shared.frames[{index}]", "a frame needs a name")
            line = f.get("line")
            line = int(line) if isinstance(line, int | float) and line == line else 0
            file = f.get("file") if isinstance(f.get("file"), str) else ""
            lid = locations[index] = profile.location(f["name"], file, max(line, 0))
        return lid

    for i, (p, (name, unit, factor)) in enumerate(zip(profiles, kinds, strict=True)):
        column = types.index((name, unit))
        label = [("profile", str(p.get("name", i)))]
        weighed = _evented(p, i) if "events" in p else _sampled(p, i)
        for stack, weight in weighed:
            values = [0] * len(types)
            values[column] = round(weight * factor)
            profile.add([location(f, f"profiles[{i}]") for f in stack], values, label)
    return profile.encode()


def _sampled(p: dict, i: int):  # type: ignore[no-untyped-def]
    samples, weights = p.get("samples"), p.get("weights")
    if not isinstance(samples, list):
        raise _bad(f"profiles[{i}].samples", "missing or not a list")
    if weights is None:
        weights = [1] * len(samples)
    if not isinstance(weights, list) or len(weights) != len(samples):
        raise _bad(f"profiles[{i}].weights", f"must hold one weight per sample ({len(samples)})")
    for j, (stack, weight) in enumerate(zip(samples, weights, strict=True)):
        if not isinstance(stack, list):
            raise _bad(f"profiles[{i}].samples[{j}]", "not a list of frame indices")
        yield stack, _number(weight, f"profiles[{i}].weights[{j}]")


def _evented(p: dict, i: int):  # type: ignore[no-untyped-def]
    """(stack, time on top) per interval between events; opens and closes must nest."""
    events = p.get("events")
    if not isinstance(events, list):
        raise _bad(f"profiles[{i}].events", "not a list")
    stack: list[Any] = []
    last = _number(p.get("startValue", 0), f"profiles[{i}].startValue")
    for j, e in enumerate(events):
        where = f"profiles[{i}].events[{j}]"
        if not isinstance(e, dict) or e.get("type") not in ("O", "C"):
            raise _bad(where, 'an event is {"type": "O" or "C", "frame", "at"}')
        at = _number(e.get("at"), where + ".at")
        if at < last:
            raise _bad(where, f"at {at} is before the previous event ({last})")
        if stack and at > last:
            yield list(stack), at - last
        last = at
        if e["type"] == "O":
            stack.append(e.get("frame"))
        elif not stack or stack[-1] != e.get("frame"):
            top = f"frame {stack[-1]!r} is" if stack else "no frame is"
            raise _bad(where, f"closes frame {e.get('frame')!r} while {top} the innermost open")
        else:
            stack.pop()
    if stack:
        raise _bad(f"profiles[{i}].events", f"frame {stack[-1]!r} is opened but never closed")
