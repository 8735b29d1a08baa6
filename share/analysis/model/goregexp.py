"""Go's regexp, as pprof uses it: RE2 semantics and linear-time matching (google-re2, the C++
library Go's package was modelled on), and Go 1.19's error texts for patterns it refuses.

Every pattern that comes from a profile (drop_frames, keep_frames) or a request (focus, ignore,
...) goes through compile(): a pattern such as `(a+)+b` cannot backtrack here, whatever it meets.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # RE2 would print every refused pattern on stderr

# RE2's C++ error codes -> Go's regexp/syntax ErrorCode texts.
_GO_CODES = {
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "bad repetition operator": "invalid nested repetition operator",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class range": "invalid character class range",
    "invalid character class": "invalid character class",
    "invalid repetition size": "invalid repeat count",
    "invalid named capture group": "invalid named capture",
    "invalid UTF-8": "invalid UTF-8",
    "pattern too large - compile failed": "expression too large",
    "pattern too large - reverse compile failed": "expression too large",
}


class RegexpError(ValueError):
    """A pattern Go 1.19's regexp.Compile refuses; str() is Go's message."""


def _go_message(cxx: str) -> str:
    """'missing ]: [a' -> 'error parsing regexp: missing closing ]: `[a`' (Go's format)."""
    if cxx.startswith("trailing \\"):
        return "error parsing regexp: trailing backslash at end of expression: ``"
    code, sep, arg = cxx.partition(": ")
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{arg if sep else ''}`"


def _go_only_refusals(pattern: str) -> str | None:
    """Syntax RE2 takes but Go 1.19 refuses: \\C and (?<name>...). None if there is none."""
    i, in_class = 0, False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            if pattern[i + 1] == "C" and not in_class:
                return "error parsing regexp: invalid escape sequence: `\\C`"
            if pattern[i + 1] == "Q" and not in_class:  # \Q...\E is literal text
                end = pattern.find("\\E", i + 2)
                i = len(pattern) if end < 0 else end + 2
                continue
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern[i + 1 : i + 2] == "^":
                i += 1
            if pattern[i + 1 : i + 2] == "]":  # a leading ] is a literal
                i += 1
        elif pattern.startswith("(?<", i):
            return "error parsing regexp: invalid or unsupported Perl syntax: `(?<`"
        i += 1
    return None


@functools.lru_cache(maxsize=1024)
def compile(pattern: str) -> Any:  # noqa: A001 - the name Go's package uses
    """The compiled pattern (search() is Go's MatchString); raises RegexpError as Go would."""
    try:
        compiled = re2.compile(pattern, options=_OPTIONS)
    except re2.error as exc:
        text = exc.args[0] if exc.args else ""
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        raise RegexpError(_go_message(str(text))) from None
    refused = _go_only_refusals(pattern)
    if refused:
        raise RegexpError(refused)
    return compiled
