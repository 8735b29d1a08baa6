"""share.pprof: bytes -> a validated profile, accepting exactly what google/pprof's parser accepts.

Owns everything about the format: gzip inflation within a size limit (inflate), protobuf decoding
as Go decodes (decode, wire, schema, columns, _proto), google/pprof's validity rules (rules),
naming files that are not profiles (sniff), and the pipeline that runs them in order (parse).
It imports nothing from share but share.errors: every other package may import it.
"""

from .limits import Limits
from .pipeline import ParsedProfile, parse

__all__ = ["Limits", "ParsedProfile", "parse"]
