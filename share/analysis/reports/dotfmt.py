"""The small formatting pieces of pprof's DOT output (internal/graph/dotgraph.go, graph.go).

escapeForDot, ShortenFunctionName (its Go, Java and C++ patterns, in Go's regexp dialect),
dotColor (red for positive, green for negative, grey near zero) and Go's integer division.
"""

from __future__ import annotations

import math

from ..model import goregexp

_JAVA = goregexp.compile(
    r"^(?:[a-z]\w*\.)*([A-Z][\w\$]*\.(?:<init>|[a-z][\w\$]*(?:\$\d+)?))(?:(?:\()|$)"
)
_GO = goregexp.compile(r"^(?:[\w\-\.]+\/)+(.+)")
_GO_VERSION = goregexp.compile(r"^(.*?)/v(?:[2-9]|[1-9][0-9]+)([./].*)$")
_CPP = goregexp.compile(r"^(?:[_a-zA-Z]\w*::)+(_*[A-Z]\w*::~?[_a-zA-Z]\w*(?:<.*>)?)")
_CPP_ANONYMOUS = goregexp.compile(r"^\(anonymous namespace\)::")


def escape(text: str) -> str:
    """escapeForDot: backslashes and quotes escaped, newlines made left-justified breaks."""
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\l")


def shorten(name: str) -> str:
    """graph.ShortenFunctionName: package paths, Java packages and C++ namespaces dropped."""
    m = _CPP_ANONYMOUS.search(name)
    if m:
        name = name[m.end() :]
    m = _GO_VERSION.search(name)
    if m:
        name = (m.group(1) or "") + (m.group(2) or "")
    for rx in (_GO, _JAVA, _CPP):
        m = rx.search(name)
        if m and m.lastindex:
            return "".join(g or "" for g in m.groups())
    return name


def color(score: float, background: bool) -> str:
    """dotColor: a score in [-1, 1] as '#rrggbb' (light for backgrounds)."""
    shift = 0.7
    saturation, value = (0.1, 0.93) if background else (1.0, 0.7)
    score = max(-1.0, min(1.0, score)) if not math.isnan(score) else score
    if abs(score) < 0.2:
        saturation *= abs(score) / 0.2
    if score > 0.0:
        score = math.pow(score, 1.0 - shift)
    if score < 0.0:
        score = -math.pow(-score, 1.0 - shift)
    if score < 0.0:
        g = value
        r = value * (1 + saturation * score)
    else:
        r = value
        g = value * (1 - saturation * score)
    b = value * (1 - saturation)
    return f"#{_u8(r * 255.0):02x}{_u8(g * 255.0):02x}{_u8(b * 255.0):02x}"


def _u8(x: float) -> int:
    """Go's uint8(float64) for the values dotColor makes (0..255, truncated)."""
    if math.isnan(x) or math.isinf(x):
        return 0
    return int(x) & 0xFF


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q
