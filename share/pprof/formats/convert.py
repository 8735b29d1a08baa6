"""Which format an upload that is not a pprof protobuf is, by its content, and its conversion.

pprof's own legacy parsers go first, in pprof's order (what `go tool pprof` would read, it reads
here the same way); then JSON (speedscope, .cpuprofile), `perf script` text and folded stacks.
A file of a recognised format that is broken is a BadProfile naming the format and the place.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ...errors import BadProfile
from ..limits import Limits
from . import cpuprofile, folded, legacy, perf, speedscope
from .text import ParseError

MAX_JSON_DEPTH = 64  # speedscope and .cpuprofile nest a few levels; deeper JSON is not theirs


@dataclass(frozen=True)
class Converted:
    """profile.proto bytes (uncompressed) and what they were converted from ("perf script")."""

    data: bytes
    origin: str


def convert(raw: bytes, limits: Limits) -> Converted | None:
    """raw as a profile, when it is one of the formats this package reads; else None."""
    try:
        found = legacy.convert(raw, limits)
    except ParseError as err:
        raise BadProfile(f"pprof refuses this legacy profile: {err}") from None
    if found is not None:
        return Converted(*found)
    text = decode_text(raw)
    if text is None:
        return None
    head = text.lstrip()[:1]
    if head in ("{", "["):
        document = _json(text)
        if document is None:
            return None
        for module in (speedscope, cpuprofile):
            if module.recognise(document):
                return Converted(_json_convert(module, document, limits), module.FORMAT)
        return None
    if perf.recognise(text):
        return Converted(perf.convert(text, limits), "perf script")
    if folded.recognise(text):
        return Converted(folded.convert(text, limits), "folded")
    return None


def _json_convert(module: ModuleType, document: Any, limits: Limits) -> bytes:
    """The converter's checks name the field; a shape they did not foresee is still a 400."""
    try:
        return module.convert(document, limits)
    except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError) as err:
        raise BadProfile(
            f"{module.FORMAT}: the document does not have the format's shape "
            f"({type(err).__name__}: {str(err)[:200]})"
        ) from None


def decode_text(raw: bytes) -> str | None:
    """raw as text: UTF-16 with a byte order mark, else UTF-8 (a BOM dropped); None if binary."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            text = raw.decode("utf-16")
        except UnicodeDecodeError:
            return None
    else:
        text = raw.decode("utf-8", "replace").removeprefix("\ufeff")
        if text.count("\ufffd") > len(text) // 100:
            return None
    if any(c < " " and c not in "\t\n\r" for c in text[:4096]):
        return None
    return text


def _json(text: str) -> object | None:
    """The document, or None when it is not JSON (a RecursionError is not JSON of ours)."""
    depth = 0
    for c in text[:65536]:  # refuse nesting json's recursive parser would choke on, cheaply
        depth += c in "[{"
        depth -= c in "]}"
        if depth > MAX_JSON_DEPTH:
            return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None
