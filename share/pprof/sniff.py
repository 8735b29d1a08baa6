"""Name what an upload is when it is not a pprof profile, so the error tells the user what to do.

Formats that share.pprof.formats converts never get here: a legacy header seen here is on a
file that google/pprof's legacy parsers do not recognise either.
"""

from __future__ import annotations

import json
import re
import struct

_CONVERT = (
    "but google/pprof's legacy parsers do not read this one either (parsing profile: "
    "unrecognized profile format)"
)
_GO_TEXT = "fetch {path} without ?debug={n} to get the protobuf profile"

# (magic prefix, what the file is)
_MAGIC = [
    (b"\x89PNG\r\n\x1a\n", "this is a PNG image, not a profile"),
    (b"\xff\xd8\xff", "this is a JPEG image, not a profile"),
    (b"GIF8", "this is a GIF image, not a profile"),
    (b"%PDF", "this is a PDF document, not a profile"),
    (b"PK\x03\x04", "this is a ZIP archive, not a profile: unzip it and upload the profile"),
    (b"\x7fELF", "this is an ELF executable, not a profile"),
    (b"BZh", "this is bzip2-compressed: pprof-share takes gzip or uncompressed profiles"),
    (
        b"\x28\xb5\x2f\xfd",
        "this is zstd-compressed: pprof-share takes gzip or uncompressed profiles",
    ),
    (b"\xfd7zXZ\x00", "this is xz-compressed: pprof-share takes gzip or uncompressed profiles"),
    (
        b"\x1f\x8b",
        "gzip inside gzip: decompress it once (gunzip the file) and upload the result",
    ),
]
_PERF = "perf.data is not supported: convert it with perf_to_profile (perf_data_converter) first"

# First matching pattern (on the start of a text upload) wins.
_TEXT: list[tuple[re.Pattern[str], str]] = [
    (
        re.compile(r"goroutine profile: total \d+"),
        "this is a Go goroutine profile in text form (debug=1): "
        + _GO_TEXT.format(path="/debug/pprof/goroutine", n=1),
    ),
    (
        re.compile(r"goroutine \d+ \[[^\]]*\]:"),
        "this is a Go goroutine stack dump (debug=2), not a profile: "
        + _GO_TEXT.format(path="/debug/pprof/goroutine", n=2),
    ),
    (
        re.compile(r"threadcreate profile: total \d+"),
        "this is a Go threadcreate profile in text form (debug=1): "
        + _GO_TEXT.format(path="/debug/pprof/threadcreate", n=1),
    ),
    (
        re.compile(r"heap profile: .*@ heap/\d+"),
        "this is a legacy text heap profile (Go, debug=1): fetch it without debug=1 "
        "(/debug/pprof/heap or /debug/pprof/allocs) to get the protobuf profile",
    ),
    (
        re.compile(r"--- (mutex|contention):"),
        "this is a Go mutex/block profile in text form (debug=1): fetch it without debug=1 "
        "to get the protobuf profile",
    ),
    (
        re.compile(r"heap profile: .*@ *(heapz?[_a-z0-9]*|growthz?|fragmentationz?)"),
        f"this looks like a legacy gperftools heap profile (text), {_CONVERT}",
    ),
    (
        re.compile(r"--- (heapz|contentionz|cpuz) \d+ ---\s*\n(format = java)"),
        f"this looks like a legacy Java profile (text), {_CONVERT}",
    ),
    (
        re.compile(r"--- heapz \d+ ---"),
        f"this looks like a legacy heapz profile (text), {_CONVERT}",
    ),
    (
        re.compile(r"--- contentionz? \d+ ---"),
        f"this looks like a legacy contention profile (text), {_CONVERT}",
    ),
    (
        re.compile(r"--- threadz \d+ ---"),
        f"this looks like a legacy thread profile (text), {_CONVERT}",
    ),
]
_HTML = re.compile(r"\s*(<!--.*?-->\s*)*<(!doctype html|html|head|body)\b", re.I | re.S)


def _text(data: bytes) -> str | None:
    """The start of data as text, or None if it is binary."""
    head = data[:65536]
    cuts = range(4) if len(data) > len(head) else range(1)  # a character may straddle the cut
    for cut in cuts:
        try:
            text = head[: len(head) - cut].decode("utf-8").lstrip("\ufeff")
            break
        except UnicodeDecodeError:
            continue
    else:
        return None
    if any(c < " " and c not in "\t\n\r" for c in text):
        return None
    return text


def _binary_cpu(data: bytes) -> str | None:
    """gperftools' binary CPU profile header, as google/pprof's parseCPU recognizes it."""
    for fmt in ("<5I", ">5I", "<5Q", ">5Q"):
        if len(data) >= struct.calcsize(fmt):
            n1, n2, n3, n4, n5 = struct.unpack_from(fmt, data)
            if n1 == 0 and n2 == 3 and n3 in (0, 1) and n4 > 0 and n5 == 0:
                kind = "Java" if n3 == 1 else "gperftools"
                return f"this looks like a legacy {kind} CPU profile (binary), {_CONVERT}"
    return None


def describe(data: bytes) -> str | None:
    """What data is, when that explains why it is not a profile; None if it is not recognized."""
    for magic, what in _MAGIC:
        if data.startswith(magic):
            return what
    if data.startswith((b"PERFILE2", b"PERFFILE")):
        return _PERF
    legacy_cpu = _binary_cpu(data)
    if legacy_cpu:
        return legacy_cpu
    text = _text(data)
    if text is None:
        return None
    for pattern, what in _TEXT:
        if pattern.match(text):
            return what
    if _HTML.match(text):
        return (
            "this looks like an HTML page, not a profile: download the profile itself "
            "(for Go, /debug/pprof/profile), not the page that links to it"
        )
    if text.lstrip()[:1] in ("{", "["):
        try:
            json.loads(data)
        except ValueError:
            pass
        else:
            return (
                "this is JSON, not a pprof profile (pprof profiles are protobuf, often gzipped), "
                "nor a .cpuprofile or speedscope file"
            )
    return (
        "this is a text file, not a pprof profile: pprof-share takes protobuf profiles "
        "(usually .pb.gz) such as Go's /debug/pprof endpoints write, the legacy formats pprof "
        "reads, folded stacks, perf script output, .cpuprofile and speedscope JSON"
    )
