"""Reading uploaded text as Go's bufio.Scanner and strconv read it, with linear-time regexes.

Text is decoded as latin-1 (one character per byte), so any bytes survive and RE2's ASCII classes
match what Go's do; model.encode writes the strings back as those bytes. Every regex here is RE2.
"""

from __future__ import annotations

import re2

MAX_LINE = 64 * 1024  # bufio.MaxScanTokenSize
WHITESPACE = " \t\n\v\f\r"  # what Go's strings.TrimSpace trims from ASCII text


class ParseError(Exception):
    """A parser's error other than "unrecognized": the file is this format, but broken."""


class Unrecognized(Exception):
    """google/pprof's errUnrecognized: the next parser may try."""


TOO_LONG = "bufio.Scanner: token too long"


def latin1(data: bytes) -> str:
    return data.decode("latin-1")


def compile(pattern: str) -> re2._Regexp:  # noqa: A001
    """An RE2 regex: linear time on any input."""
    return re2.compile(pattern)


def groups(match: re2._Match) -> list[str]:
    """FindStringSubmatch: the whole match, then each group ("" when it did not take part)."""
    return [match.group(0)] + [g or "" for g in match.groups()]


class Scanner:
    """bufio.Scanner with ScanLines: text() is "" once scan() has returned False."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._pos = 0
        self._line = ""
        self.err: str | None = None

    def scan(self) -> bool:
        self._line = ""
        if self.err is not None or self._pos >= len(self._text):
            return False
        end = self._text.find("\n", self._pos)
        stop = len(self._text) if end < 0 else end
        if stop - self._pos >= MAX_LINE:
            self.err = TOO_LONG
            return False
        line = self._text[self._pos : stop]
        self._pos = stop + 1
        self._line = line[:-1] if line.endswith("\r") else line
        return True

    def text(self) -> str:
        return self._line

    def check(self) -> None:
        if self.err is not None:
            raise ParseError(self.err)


def trim(line: str) -> str:
    return line.strip(WHITESPACE)


def is_space_or_comment(line: str) -> bool:
    t = trim(line)
    return not t or t[0] == "#"


def parse_int(text: str, base: int = 10, bits: int = 64) -> int:
    """strconv.ParseInt (base 0: Go's prefixes 0x, 0o, 0b, 0 and underscores); ValueError."""
    value = _parse_unsigned(text.lstrip("+-") if text[:1] in "+-" else text, base)
    if text[:1] == "-":
        value = -value
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise ValueError(f"strconv.ParseInt: parsing {text!r}: value out of range")
    return value


def parse_uint(text: str, base: int = 10) -> int:
    """strconv.ParseUint; ValueError."""
    if text[:1] in "+-":
        raise ValueError(f"strconv.ParseUint: parsing {text!r}: invalid syntax")
    value = _parse_unsigned(text, base)
    if value >= 1 << 64:
        raise ValueError(f"strconv.ParseUint: parsing {text!r}: value out of range")
    return value


_DIGITS = {2: "01", 8: "01234567", 10: "0123456789", 16: "0123456789abcdefABCDEF"}


def _parse_unsigned(text: str, base: int) -> int:
    body = text
    if base == 0:
        base, lower = 10, body.lower()
        if lower.startswith("0x"):
            base, body = 16, body[2:]
        elif lower.startswith("0b"):
            base, body = 2, body[2:]
        elif lower.startswith("0o"):
            base, body = 8, body[2:]
        elif lower.startswith("0") and len(body) > 1:
            base, body = 8, body[1:]
        body = body.replace("_", "") if "__" not in body and not body.endswith("_") else "!"
    if not body or any(c not in _DIGITS[base] for c in body) or len(body) > 70:
        raise ValueError(f"invalid syntax: {text!r}")
    return int(body, base)


_FIELD = re2.compile(r"[^\t\n\v\f\r ]+")


def fields(text: str) -> list[str]:
    """strings.Fields on ASCII text."""
    return _FIELD.findall(text)
