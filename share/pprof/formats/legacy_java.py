"""google/pprof's Java legacy parsers (legacy_java_profile.go): heapz and contentionz text,
and the location table that follows the samples of those and of Java CPU profiles."""

from __future__ import annotations

from ..limits import Limits
from .legacy_maps import parse_hex_addresses, remap_mapping_ids
from .legacy_text import quo, scale_heap_sample
from .model import Function, Line, Location, Profile, Sample
from .text import ParseError, Unrecognized, compile, groups, parse_int, parse_uint
from .text import trim as trim_space

_ATTRIBUTE = compile(r"([\w ]+)=([\w ]+)")
_SAMPLE = compile(r" *(\d+) +(\d+) +@ +([ x0-9a-f]*)")
_LOCATION = compile(r"^\s*0x([[:xdigit:]]+)\s+(.*)\s*$")
_FILE_LINE = compile(r"^(.*)\s+\((.+):(-?[[:digit:]]+)\)$")
_PATH = compile(r"^(.*)\s+\((.*)\)$")
HEAPZ_SAMPLING_RATE = 524288


def _lines(text: str) -> list[tuple[str, int]]:
    """(line, offset after it) for each line that ends in a newline, as bytes.IndexByte finds."""
    out, pos = [], 0
    while (end := text.find("\n", pos)) != -1:
        out.append((text[pos:end], end + 1))
        pos = end + 1
    return out


def parse_java(text: str, limits: Limits) -> tuple[Profile, str]:
    """parseJavaProfile: `--- heapz 1 ---` or `--- contentionz 1 ---`, attributes, samples."""
    newline = text.find("\n")
    if newline < 0:
        raise Unrecognized
    header = trim_space(text[:newline])
    kinds = {"--- heapz 1 ---": "heap", "--- contentionz 1 ---": "contention"}
    kind = kinds.get(header)
    if kind is None:
        raise Unrecognized
    p = Profile(period_type=("", ""))
    rest = _header(kind, text[newline + 1 :], p)
    rest, locs = _samples(kind, rest, p, limits)
    locations(rest, locs, p)
    aggregate(p)
    return p, f"legacy Java {kind}"


def _header(kind: str, text: str, p: Profile) -> str:
    start = 0
    for line, after in _lines(text):
        line = trim_space(line)
        if line:
            m = _ATTRIBUTE.search(line)
            if not m:
                return text[start:]
            attribute, value = trim_space(m.group(1)), trim_space(m.group(2))
            key = f"{kind}/{attribute}"
            if key in ("heap/format", "cpu/format", "contention/format"):
                if value != "java":
                    raise Unrecognized
            elif key == "heap/resolution":
                p.sample_types = [("inuse_objects", "count"), ("inuse_space", value)]
            elif key == "contention/resolution":
                p.sample_types = [("contentions", "count"), ("delay", value)]
            elif key == "contention/sampling period":
                p.period_type = ("contentions", "count")
                p.period = _attribute_int(value, line)
            elif key == "contention/ms since reset":
                p.duration_nanos = _attribute_int(value, line) * 1000 * 1000
            else:
                raise Unrecognized
        start = after
    return text[start:]


def _attribute_int(value: str, line: str) -> int:
    try:
        return parse_int(value, 0)
    except ValueError:
        raise ParseError(
            f'failed to parse attribute {line}: strconv.ParseInt: parsing "{value}": invalid syntax'
        ) from None


def _samples(kind: str, text: str, p: Profile, limits: Limits) -> tuple[str, dict]:
    locs: dict[int, Location] = {}
    start, frames = 0, 0
    for line, after in _lines(text):
        line = trim_space(line)
        if line:
            m = _SAMPLE.search(line)
            if not m:
                return text[start:], locs
            g = groups(m)
            try:
                addrs = parse_hex_addresses(g[3])
            except ParseError as err:
                raise ParseError(f"malformed sample: {line}: {err}") from None
            frames += len(addrs)
            limits.check("frames", frames)
            sloc = []
            for addr in addrs:
                loc = locs.get(addr)
                if loc is None:
                    loc = locs[addr] = Location(address=addr)
                    p.locations.append(loc)
                sloc.append(loc)
            values = []
            for number in (g[2], g[1]):
                try:
                    values.append(parse_int(number, 0))
                except ValueError:
                    raise ParseError(
                        f'parsing sample {line}: strconv.ParseInt: parsing "{number}": '
                        + (
                            "value out of range"
                            if number.isdigit() and number[0] != "0"
                            else "invalid syntax"
                        )
                    ) from None
            s = Sample(sloc, values)
            if kind == "heap":
                if values[0] == 0:
                    raise ParseError(f"parsing sample {line}: second value must be non-zero")
                s.num_labels = {"bytes": [quo(values[1], values[0])]}
                s.values = list(scale_heap_sample(values[0], values[1], HEAPZ_SAMPLING_RATE))
            elif kind == "contention" and p.period != 0:
                s.values = [values[0] * p.period, values[1] * p.period]
            p.samples.append(s)
            limits.check("samples", len(p.samples))
        start = after
    return text[start:], locs


def _base(path: str) -> str:
    """filepath.Base."""
    if not path:
        return "."
    path = path.rstrip("/")
    return "/" if not path else path.rsplit("/", 1)[-1]


def locations(text: str, locs: dict[int, Location], p: Profile) -> None:
    """parseJavaLocations: `0xADDR function (file:line)` lines give the sampled locations
    their one line each; the address itself is dropped."""
    functions: dict[str, Function] = {}
    for line in text.split("\n"):
        line = trim_space(line)
        if not line:
            continue
        m = _LOCATION.search(line)
        if not m:
            continue
        try:
            addr = parse_uint(m.group(1), 16)
        except ValueError:
            raise ParseError(
                f'parsing sample {line}: strconv.ParseUint: parsing "{m.group(1)}": '
                "value out of range"
            ) from None
        loc = locs.get(addr)
        if loc is None:
            continue
        rest, func, file, number = m.group(2), "", "", 0
        if fl := _FILE_LINE.search(rest):
            func, file = fl.group(1), fl.group(2)
            try:
                number = max(parse_int(fl.group(3)), 0)
            except ValueError:
                number = 0
        elif path := _PATH.search(rest):
            func, file = path.group(1), _base(path.group(2))
        elif "generated stub/JIT" in rest:
            func = "STUB"
        else:
            func = rest
        fn = functions.get(func)
        if fn is None:
            fn = functions[func] = Function(name=func, filename=file)
            p.functions.append(fn)
        loc.lines = [Line(fn, number)]
        loc.address = 0
    p.remap_location_ids()
    p.remap_function_ids()
    remap_mapping_ids(p)


def aggregate(p: Profile) -> None:
    """Profile.Aggregate(true, true, true, true, false): addresses dropped for better merges."""
    for loc in p.locations:
        loc.address = 0
