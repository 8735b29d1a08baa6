"""A profile from named frames: stacks of (function, file, line) frames and their values.

The text and JSON formats name their frames instead of addressing them: one function per
(name, file), one location per (function, line), identical stacks with identical labels summed
into one sample. Limits are checked as elements are added, before anything grows past them.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...errors import BadProfile
from .._proto import profile_pb2
from ..limits import Limits

INT64 = range(-(1 << 63), 1 << 63)


class StackProfile:
    """Samples added stack by stack (frames root first), encoded as profile.proto once."""

    def __init__(
        self,
        sample_types: Sequence[tuple[str, str]],
        limits: Limits,
        period_type: tuple[str, str] | None = None,
        period: int = 0,
        format: str = "profile",  # noqa: A002 - the format's name, for messages
    ) -> None:
        self.format = format
        self.sample_types = list(sample_types)
        self.limits, self.period_type, self.period = limits, period_type, period
        self.strings: dict[str, int] = {"": 0}
        self.functions: dict[tuple[int, int], int] = {}
        self.locations: dict[tuple[int, int], int] = {}
        self.samples: dict[tuple, list[int]] = {}
        self.frames = 0
        self.duration_nanos = 0
        self.comments: list[str] = []
        self.default_sample_type = ""

    def string(self, text: str) -> int:
        i = self.strings.get(text)
        if i is None:
            i = self.strings[text] = len(self.strings)
            self.limits.check("strings", i + 1)
        return i

    def location(self, name: str, file: str = "", line: int = 0) -> int:
        """The id of the location of this frame (a new function and location if new)."""
        if line not in INT64:
            raise BadProfile(f"{self.format}: line number {line} of {name!r} is out of range")
        fkey = (self.string(name), self.string(file))
        fid = self.functions.get(fkey)
        if fid is None:
            fid = self.functions[fkey] = len(self.functions) + 1
            self.limits.check("functions", fid)
        lkey = (fid, line)
        lid = self.locations.get(lkey)
        if lid is None:
            lid = self.locations[lkey] = len(self.locations) + 1
            self.limits.check("locations", lid)
        return lid

    def add(
        self,
        stack: Sequence[int],
        values: Sequence[int],
        labels: Sequence[tuple[str, str]] = (),
        num_labels: Sequence[tuple[str, int, str]] = (),
    ) -> None:
        """One sample: location ids root first, a value per sample type, its labels."""
        key = (tuple(stack), tuple(labels), tuple(num_labels))
        summed = self.samples.get(key)
        if any(v not in INT64 for v in values):
            raise BadProfile(f"{self.format}: a sample's value is out of range: {list(values)}")
        if summed is None:
            self.frames += len(stack)
            self.limits.check("frames", self.frames)
            self.samples[key] = list(values)
            self.limits.check("samples", len(self.samples))
        else:
            for i, v in enumerate(values):
                summed[i] += v
                if summed[i] not in INT64:
                    raise BadProfile(f"{self.format}: the values of one stack add up past 2^63")

    def encode(self) -> bytes:
        """profile.proto bytes: stacks leaf first, as pprof stores them."""
        out = profile_pb2.Profile()
        s = self.string
        for type_, unit in self.sample_types:
            out.sample_type.add(type=s(type_), unit=s(unit))
        for (stack, labels, nums), values in self.samples.items():
            sample = out.sample.add(location_id=stack[::-1], value=values)
            for key, value in labels:
                sample.label.add(key=s(key), str=s(value))
            for key, num, unit in nums:
                sample.label.add(key=s(key), num=num, num_unit=s(unit))
        for (fid, line), lid in self.locations.items():
            out.location.add(id=lid).line.add(function_id=fid, line=line)
        for (name, file), fid in self.functions.items():
            out.function.add(id=fid, name=name, system_name=name, filename=file)
        if self.period_type:
            out.period_type.type = s(self.period_type[0])
            out.period_type.unit = s(self.period_type[1])
        out.period = self.period
        out.duration_nanos = self.duration_nanos
        out.comment.extend(s(c) for c in self.comments)
        out.default_sample_type = s(self.default_sample_type)
        out.string_table.extend(_utf8(t) for t in self.strings)
        return out.SerializeToString()


def _utf8(text: str) -> str:
    """text as protobuf can hold it: a lone surrogate (JSON's "\\ud800") becomes "?"."""
    return text if text.isascii() else text.encode("utf-8", "replace").decode("utf-8")
