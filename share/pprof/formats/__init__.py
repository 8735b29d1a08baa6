"""share.pprof.formats: the profile files people have that are not pprof protobufs, converted.

Owns reading every format `go tool pprof` (Go 1.19) reads through google/pprof's legacy
parsers (gperftools CPU, heap / growth / contention / thread text, Go's debug=1 pages, Java's
profiles: legacy, legacy_text, legacy_java, legacy_maps) and the common profilers' outputs
(folded stacks, `perf script`, Chrome / V8 .cpuprofile, speedscope JSON), detected by content,
each turned into profile.proto bytes (model, stacks) that the normal pipeline then validates. It
also owns the other direction: folded stack lines from stacks and weights (export).
It may import only share.errors and share.pprof's own modules (limits, _proto); share.pprof's
pipeline calls it, nothing else in share does.
"""

from .convert import Converted, convert
from .export import folded_lines

__all__ = ["Converted", "convert", "folded_lines"]
