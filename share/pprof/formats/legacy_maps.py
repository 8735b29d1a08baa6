"""The memory maps that end legacy profiles, as google/pprof reads them (legacy_profile.go's
ParseMemoryMapFromScanner, massageMappings, remapMappingIDs): mappings, then ids renumbered."""

from __future__ import annotations

import bisect

from .model import Mapping, Profile
from .text import ParseError, Scanner, compile, groups, parse_uint, trim

_HEX = r"(?:0x)?([[:xdigit:]]+)"
_RANGE = r"\s*" + _HEX + r"[\s-]?\s*" + _HEX + ":?"
_PERM = r"(?:\s+([-rwxp]+))?"
_PROC_MAPS = compile(
    "^" + _RANGE + _PERM + r"(?:\s+([[:xdigit:]]+))?" + r"\s+[[:xdigit:]]+:[[:xdigit:]]+"
    r"\s+[[:digit:]]+" + r"(?:\s+(\S+))?"
)
_BRIEF_MAPS = compile(
    "^" + _RANGE + _PERM + r"(?:\s+(\S+))?" + r"(?:\s+\(@([[:xdigit:]]+)\))?"
    r"(?:\s+([[:xdigit:]]+))?"
)
_LOG_INFO = compile(r"^[^\[\]]+:[0-9]+]\s")
_HEX_NUMBER = compile(r"0x[0-9a-f]+")
_LIB = compile(r"([.]so$|[.]so[._][0-9]+)")
SENTINELS = ("--- Memory map: ---", "MAPPED_LIBRARIES:")
MAX_MAPPINGS = 10_000  # real memory maps hold hundreds; matching them is quadratic in pprof
MAX_ATTRIBUTES = 1000  # $attr substitutions: each line tries every one (pprof has no bound)


def is_memory_map_sentinel(line: str) -> bool:
    return any(s in line for s in SENTINELS)


def parse_hex_addresses(text: str) -> list[int]:
    """Every 0x... number in text; ParseError for one over 64 bits."""
    out = []
    for s in _HEX_NUMBER.findall(text):
        try:
            out.append(parse_uint(s, 0))
        except ValueError:
            raise ParseError(f"failed to parse as hex 64-bit number: {s}") from None
    return out


def _replace(line: str, pairs: list[tuple[str, str]]) -> str:
    """strings.NewReplacer(pairs...).Replace: leftmost, first pair in order at a position."""
    if not pairs:
        return line
    out, i, heads = [], 0, {old[0] for old, _ in pairs}
    while i < len(line):
        if line[i] in heads:
            for old, new in pairs:
                if line.startswith(old, i):
                    out.append(new)
                    i += len(old)
                    break
            else:
                out.append(line[i])
                i += 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


class _Unrecognized(Exception):
    pass


def _mapping_entry(line: str) -> Mapping | None:
    m = _PROC_MAPS.search(line)
    if m:
        g = groups(m)
        start, end, perm, offset, file, build_id = g[1], g[2], g[3], g[4], g[5], ""
    else:
        m = _BRIEF_MAPS.search(line)
        if not m:
            raise _Unrecognized
        g = groups(m)
        start, end, perm, file, offset, build_id = g[1], g[2], g[3], g[4], g[5], g[6]
    mapping = Mapping(file=file, build_id=build_id)
    if perm and "x" not in perm:
        return None  # not executable
    try:
        mapping.start = parse_uint(start, 16)
        mapping.limit = parse_uint(end, 16)
        if offset:
            mapping.offset = parse_uint(offset, 16)
    except ValueError:
        raise _Unrecognized from None
    return mapping


def parse_maps(s: Scanner) -> list[Mapping]:
    """parseProcMapsFromScanner: the mapping lines left in s; attr=value lines define $attr."""
    mappings: list[Mapping] = []
    pairs: list[tuple[str, str]] = []
    while s.scan():
        line = s.text()
        info = _LOG_INFO.search(line)
        if info:
            line = line[info.end() :]
        line = _replace(line, pairs)
        try:
            mapping = _mapping_entry(line)
        except _Unrecognized:
            key, eq, value = line.partition("=")
            if eq:
                if len(pairs) >= MAX_ATTRIBUTES:
                    raise ParseError("too many attribute lines in the memory map") from None
                pairs.append(("$" + trim(key), trim(value)))
            continue
        if mapping is not None:
            mappings.append(mapping)
            if len(mappings) > MAX_MAPPINGS:
                raise ParseError(f"more than {MAX_MAPPINGS:,} mappings in the memory map")
    s.check()
    return mappings


def _adjacent(m1: Mapping, m2: Mapping) -> bool:
    if m1.file and m2.file and m1.file != m2.file:
        return False
    if m1.build_id and m2.build_id and m1.build_id != m2.build_id:
        return False
    if m1.limit != m2.start:
        return False
    if m1.offset and m2.offset:
        return m1.offset + (m1.limit - m1.start) & (1 << 64) - 1 == m2.offset
    return True


def _massage(p: Profile) -> None:
    if len(p.mappings) > 1:
        merged = [p.mappings[0]]
        for m in p.mappings[1:]:
            last = merged[-1]
            if _adjacent(last, m):
                last.limit = m.limit
                last.file = m.file or last.file
                last.build_id = m.build_id or last.build_id
                for loc in p.locations:
                    if loc.mapping is m:
                        loc.mapping = last
                continue
            merged.append(m)
        p.mappings = merged
    for i, m in enumerate(p.mappings):
        file = trim(m.file.replace("(deleted)", ""))
        if not file or _LIB.search(file) or file[0] == "[":
            continue
        p.mappings[0], p.mappings[i] = p.mappings[i], p.mappings[0]
        break
    for i, m in enumerate(p.mappings):
        m.id = i + 1


def remap_mapping_ids(p: Profile) -> None:
    if p.mappings:
        m = p.mappings[0]
        if m.file.startswith("/anon_hugepage") and len(p.mappings) > 1:
            p.mappings = p.mappings[1:] if m.limit == p.mappings[1].start else p.mappings
    if p.mappings:
        m = p.mappings[0]
        if (m.start - m.offset) & (1 << 64) - 1 == 0x400000:
            m.start, m.offset = 0x400000, 0
    fake: Mapping | None = None
    find = _Finder(p.mappings)
    for loc in p.locations:
        a = loc.address
        if loc.mapping is not None or a == 0:
            continue
        loc.mapping = find.containing(a)
        if loc.mapping is None and fake is not None and a < fake.limit:
            loc.mapping = fake
        if loc.mapping is None:
            loc.mapping = _split_first_part(p.mappings, a, find)
        if loc.mapping is None:
            if fake is None:
                fake = Mapping(id=1, limit=(1 << 64) - 1)
                p.mappings.append(fake)
            loc.mapping = fake
    for i, m in enumerate(p.mappings):
        m.id = i + 1


class _Finder:
    """The first mapping holding an address, found by bisection when mappings do not overlap
    (real memory maps), else by pprof's linear scan within a bound."""

    def __init__(self, mappings: list[Mapping]) -> None:
        self.mappings = mappings
        self.rebuild()

    def rebuild(self) -> None:
        ranges = sorted(
            (m.start, m.limit, i) for i, m in enumerate(self.mappings) if m.start < m.limit
        )
        self.starts = [r[0] for r in ranges]
        self.ranges = ranges
        self.disjoint = all(a[1] <= b[0] for a, b in zip(ranges, ranges[1:], strict=False))

    def containing(self, a: int) -> Mapping | None:
        if self.disjoint:
            k = bisect.bisect_right(self.starts, a) - 1
            if k >= 0 and a < self.ranges[k][1]:
                return self.mappings[self.ranges[k][2]]
            return None
        return next((m for m in self.mappings if m.start <= a < m.limit), None)


def _split_first_part(mappings: list[Mapping], a: int, find: _Finder) -> Mapping | None:
    """A mapping split in two whose first part the handler did not write: extend it down."""
    for m in mappings:
        if m.offset != 0 and (m.start - m.offset) & (1 << 64) - 1 <= a < m.start:
            m.start = (m.start - m.offset) & (1 << 64) - 1
            m.offset = 0
            find.rebuild()
            return m
    return None


def finish(p: Profile, s: Scanner) -> None:
    """ParseMemoryMapFromScanner: the maps read, mappings merged, every id renumbered."""
    p.mappings.extend(parse_maps(s))
    _massage(p)
    p.remap_location_ids()
    p.remap_function_ids()
    remap_mapping_ids(p)


def additional_sections(p: Profile, s: Scanner) -> None:
    """parseAdditionalSections: skip to the memory map sentinel, then read the maps."""
    while not is_memory_map_sentinel(s.text()) and s.scan():
        pass
    s.check()
    finish(p, s)


def cleanup_duplicate_locations(p: Profile) -> None:
    """The leaf both from the signal context and (less one) from unwinding: drop the copy."""
    for s in p.samples:
        if (
            len(s.locations) > 1
            and s.locations[0].address == (s.locations[1].address + 1) & (1 << 64) - 1
        ):
            del s.locations[1]
