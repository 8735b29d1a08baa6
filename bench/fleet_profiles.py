"""The fleet's profiles for bench/fleet.py: a CPU and a heap profile of about 100 KB per target,
each add's bytes distinct, all built before the clock runs.

Each target has its own slice of the samples of a corpus profile (go-runtime/cpu-large,
heap-large), the locations and functions it uses with it, gzipped once: targets of one binary
whose profiles differ, so a merge of the fleet is larger than one member. Each add is that
gzip member followed by a second, small one (Go and the server read every member of a gzip
stream) holding what makes the add its own: a string of its own, one more sample whose value
varies, and the profile's time (`time_nanos`, the member's time in the collection). Distinct
bytes, so every add is a new profile to validate and store: dedup makes none of them free.
"""

from __future__ import annotations

import gzip
import random
from pathlib import Path

from share.pprof._proto import profile_pb2
from share.pprof.wire import uvarint

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "go-runtime"
SOURCES = {"cpu": "cpu-large.pb.gz", "heap": "heap-large.pb.gz"}
PERIOD_NS = 10_000_000  # a CPU sample: 10 ms


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return uvarint(number << 3 | 2) + uvarint(len(payload)) + payload


def _header(source: profile_pb2.Profile) -> profile_pb2.Profile:
    """source without samples, locations, functions and time (each add says its own time)."""
    p = profile_pb2.Profile()
    p.CopyFrom(source)
    del p.sample[:], p.location[:], p.function[:]
    p.time_nanos = 0
    return p


def _slice(
    source: profile_pb2.Profile, header: profile_pb2.Profile, start: int, count: int
) -> profile_pb2.Profile:
    """count samples of source from start on (wrapping), with the locations and functions
    they use; the rest as in header."""
    p = profile_pb2.Profile()
    p.CopyFrom(header)
    n = len(source.sample)
    p.sample.extend(source.sample[(start + j) % n] for j in range(count))
    used = {lid for s in p.sample for lid in s.location_id}
    p.location.extend(loc for loc in source.location if loc.id in used)
    functions = {line.function_id for loc in p.location for line in loc.line}
    p.function.extend(f for f in source.function if f.id in functions)
    return p


class FleetProfiles:
    """Per target and kind, its base gzip member; per add, the member that makes it distinct."""

    def __init__(self, targets: int, size: int = 100_000) -> None:
        self.bases: dict[tuple[int, str], bytes] = {}
        self.leaf: dict[tuple[int, str], int] = {}  # a location the extra sample stands on
        self.values: dict[str, int] = {}  # how many values a sample of the kind has
        for kind, name in SOURCES.items():
            source = profile_pb2.Profile.FromString(gzip.decompress((CORPUS / name).read_bytes()))
            header = _header(source)
            count = self._count_for(source, header, size)
            self.values[kind] = len(source.sample_type)
            for t in range(targets):
                p = _slice(source, header, t * len(source.sample) // targets, count)
                self.bases[t, kind] = gzip.compress(p.SerializeToString(), 6, mtime=0)
                self.leaf[t, kind] = p.sample[0].location_id[0]

    @staticmethod
    def _count_for(source: profile_pb2.Profile, header: profile_pb2.Profile, size: int) -> int:
        """How many samples make a slice of about size bytes, gzipped (a bisection)."""
        low, high = 1, len(source.sample)
        while high - low > len(source.sample) // 100:
            mid = (low + high) // 2
            got = len(gzip.compress(_slice(source, header, 0, mid).SerializeToString(), 6))
            low, high = (mid, high) if got < size else (low, mid)
        return low

    def suffix(self, target: int, kind: str, nth: int, when_ns: int) -> bytes:
        """The second gzip member of target's nth add of kind, at when_ns."""
        rng = random.Random(f"{target} {kind} {nth}")
        weight = rng.randint(1, 400)
        if kind == "cpu":
            values = [weight, weight * PERIOD_NS]
        else:
            values = [weight, weight * 4096] * (self.values[kind] // 2)
        sample = _field(1, uvarint(self.leaf[target, kind]))
        sample += _field(2, b"".join(uvarint(v) for v in values))
        tag = f"fleet target-{target} {kind} {nth}".encode()
        message = _field(6, tag) + _field(2, sample) + uvarint(9 << 3) + uvarint(when_ns)
        return gzip.compress(message, 1, mtime=0)

    def size(self, kind: str) -> int:
        sizes = [len(b) for (_, k), b in self.bases.items() if k == kind]
        return sum(sizes) // len(sizes)
