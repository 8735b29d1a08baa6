"""share.pprof: bytes -> a validated profile, accepting exactly what google/pprof's parser accepts.

Owns everything about the format: gzip inflation within a size limit (inflate), protobuf decoding
as Go decodes (decode, scan with its compiled scan.c, wire, schema, columns, _proto),
google/pprof's validity rules (rules), converting the other profile formats people have into
protobufs (formats: pprof's legacy parsers, folded stacks, perf script, .cpuprofile,
speedscope), naming files that are not profiles (sniff), the pipeline that runs them in order
(parse), and the rewrite that removes what an uploader chose not to share (strip).
It imports nothing from share but share.errors: every other package may import it.
"""

from .limits import Limits
from .pipeline import ParsedProfile, parse
from .strip import StripError, StripSpec, parse_spec, strip

__all__ = [
    "Limits",
    "ParsedProfile",
    "StripError",
    "StripSpec",
    "parse",
    "parse_spec",
    "strip",
]
