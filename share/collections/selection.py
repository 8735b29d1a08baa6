"""What a collection's request selects: a time range, a label selector, a kind (and a base).

Times are RFC 3339 or unix seconds (or `now`, `now-1h`); the selector is Prometheus' syntax
(`pod="api-1", version=~"v2.*"`, braces optional) with its regexes in RE2, anchored at both
ends as Prometheus anchors them, so a selector from a request runs in linear time. Labels of an
add are checked here too: keys as Prometheus' label names, bounded counts and lengths.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..analysis.model import goregexp
from ..config import parse_duration
from ..errors import ShareError

LABEL_KEY = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]{0,63}\Z")  # a fixed, linear pattern
MAX_LABELS = 16
MAX_VALUE = 256
MAX_SELECTOR = 4096
OPERATORS = ("=~", "!~", "!=", "=")
SELECTION_PARAMS = ("from", "to", "match", "kind")
BASE_PARAMS = ("base_from", "base_to", "base_match")
RELATIVE_STEP = 10  # seconds: `now-1h` is rounded down to these (the finest block)


class SelectionError(ShareError):
    """A selection or a label the server refuses: a 400 naming it."""

    code = 400


def parse_time(text: str, what: str, now: float) -> float:
    """RFC 3339, unix seconds, `now` or `now-DURATION` -> epoch seconds. `now-DURATION` is
    rounded down to whole RELATIVE_STEP seconds: the views of `from=now-1h` asked within the
    same 10 s are one selection (one merge, one cache entry), and it starts on a block's edge."""
    value = text.strip()
    if value == "now":
        return now
    if value.startswith("now-"):
        try:
            seconds = parse_duration(value[4:])
        except ValueError:
            seconds = None
        if seconds is None:
            raise SelectionError(f"{what}={text!r}: not a time (now-1h, RFC 3339 or unix seconds)")
        return math.floor((now - seconds) / RELATIVE_STEP) * RELATIVE_STEP
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if math.isfinite(number):
        if not 0 <= number < 1e11:
            raise SelectionError(f"{what}={text!r}: unix seconds out of range")
        return number
    try:
        parsed = datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError:
        parsed = None
    if parsed is None or parsed.tzinfo is None or "T" not in value.upper():
        raise SelectionError(
            f"{what}={text!r}: not a time (RFC 3339 with a zone, like 2026-12-01T14:00:00Z, "
            "or unix seconds)"
        )
    return parsed.timestamp()


def check_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """An add's labels, checked: Prometheus' label names, values of at most 256 characters."""
    if len(labels) > MAX_LABELS:
        raise SelectionError(f"{len(labels)} labels: a member has at most {MAX_LABELS}")
    for key, value in labels.items():
        if not LABEL_KEY.match(key):
            raise SelectionError(
                f"label key {key[:80]!r}: keys are letters, digits and _, not starting with a "
                "digit, at most 64 characters"
            )
        if len(value) > MAX_VALUE:
            raise SelectionError(f"label {key}: the value is over {MAX_VALUE} characters")
    return dict(labels)


def parse_label_pairs(items: list[str]) -> dict[str, str]:
    """`key=value` items (repeated label= parameters, or X-Labels split at commas)."""
    labels: dict[str, str] = {}
    for item in items:
        key, eq, value = item.strip().partition("=")
        if not eq:
            raise SelectionError(f"label {item[:80]!r}: give key=value")
        key = key.strip()
        if key in labels and labels[key] != value:
            raise SelectionError(f"label {key} is given twice")
        labels[key] = value.strip()
    return check_labels(labels)


@dataclass(frozen=True)
class Matcher:
    key: str
    op: str
    value: str
    regex: Any = field(default=None, compare=False, hash=False)

    def matches(self, labels: Mapping[str, str]) -> bool:
        have = labels.get(self.key, "")  # as Prometheus: a missing label is the empty value
        if self.op == "=":
            return have == self.value
        if self.op == "!=":
            return have != self.value
        found = self.regex.search(have) is not None
        return found if self.op == "=~" else not found

    def __str__(self) -> str:
        quoted = self.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
        return f'{self.key}{self.op}"{quoted}"'


def _string(text: str, i: int) -> tuple[str, int]:
    """A quoted value starting at text[i] (", ' or `) -> (value, index after it)."""
    quote = text[i]
    out, i = [], i + 1
    while i < len(text):
        c = text[i]
        if c == quote:
            return "".join(out), i + 1
        if c == "\\" and quote != "`" and i + 1 < len(text):
            nxt = text[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r"}.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    raise SelectionError(f"match: the value at character {i} has no closing {quote}")


def parse_selector(text: str) -> tuple[Matcher, ...]:
    """`pod="api-1", version=~"v2.*"` (braces optional) -> matchers; every one must hold."""
    if len(text) > MAX_SELECTOR:
        raise SelectionError(f"match: over {MAX_SELECTOR} characters")
    s = text.strip()
    if s.startswith("{") and s.endswith("}"):
        s = s[1:-1]
    matchers: list[Matcher] = []
    i = 0
    while True:
        while i < len(s) and s[i] in " \t\n,":
            i += 1
        if i >= len(s):
            break
        j = i
        while j < len(s) and (s[j].isalnum() or s[j] == "_"):
            j += 1
        key = s[i:j]
        if not LABEL_KEY.match(key):
            raise SelectionError(f"match: expected a label name at character {i + 1} of {text!r}")
        while j < len(s) and s[j] == " ":
            j += 1
        op = next((o for o in OPERATORS if s.startswith(o, j)), None)
        if op is None:
            raise SelectionError(f"match: expected =, !=, =~ or !~ after {key}")
        j += len(op)
        while j < len(s) and s[j] == " ":
            j += 1
        if j >= len(s) or s[j] not in "\"'`":
            raise SelectionError(f'match: the value of {key} must be quoted, like {key}{op}"x"')
        value, i = _string(s, j)
        regex = None
        if op in ("=~", "!~"):
            try:
                regex = goregexp.compile(f"^(?:{value})$")
            except goregexp.RegexpError as exc:
                raise SelectionError(f"match: {key}{op}: {exc}") from None
        matchers.append(Matcher(key, op, value, regex))
        while i < len(s) and s[i] == " ":
            i += 1
        if i < len(s) and s[i] != ",":
            raise SelectionError(f"match: expected , after {key}{op}{value!r}")
    return tuple(matchers)


@dataclass(frozen=True)
class Selection:
    """Members with start <= time < end whose labels every matcher accepts, of one kind."""

    start: float | None = None
    end: float | None = None
    matchers: tuple[Matcher, ...] = ()
    kind: str | None = None  # None: the kind with the most members
    # `now-15m` as asked (start is where it stands now): the same relative selection asked
    # later is the same open selection, moved on (its entry is replaced, not one more kept).
    relative: str = field(default="", compare=False)

    def accepts(self, labels: Mapping[str, str]) -> bool:
        return all(m.matches(labels) for m in self.matchers)

    def canonical(self) -> str:
        """The selection as one string (cache keys), matchers sorted."""
        ms = ",".join(sorted(str(m) for m in self.matchers))
        return f"{self.start}|{self.end}|{ms}|{self.kind}"


def _one(args: Mapping[str, str], name: str, now: float) -> float | None:
    text = args.get(name)
    return parse_time(text, name, now) if text not in (None, "") else None


def selection(args: Mapping[str, str], now: float, prefix: str = "") -> Selection:
    """The selection that a request's from/to/match/kind (base_from/... with prefix base_)
    name; a base selection takes the main one's kind."""
    start, end = _one(args, prefix + "from", now), _one(args, prefix + "to", now)
    if start is not None and end is not None and end <= start:
        raise SelectionError(f"{prefix}to must be after {prefix}from")
    matchers = parse_selector(args.get(prefix + "match") or "")
    kind = (args.get("kind") or "").strip() or None
    text = (args.get(prefix + "from") or "").strip()
    relative = text if start is not None and text.startswith("now") else ""
    return Selection(start, end, matchers, kind, relative)


def has_base(args: Mapping[str, str]) -> bool:
    return any(args.get(p) for p in BASE_PARAMS)


def waits(args: Mapping[str, str]) -> bool:
    """`wait=1`: every member selected is merged in before the answer, none left pending
    (behind.BEHIND_FROM); `wait=0`, or none, lets recent times be answered behind."""
    text = (args.get("wait") or "").strip().lower()
    if text in ("", "0", "false", "no"):
        return False
    if text in ("1", "true", "yes"):
        return True
    raise SelectionError(f"wait={text!r}: 1 waits for every member to be merged in, 0 does not")


def view_args(args: Mapping[str, str]) -> dict[str, str]:
    """The request's parameters less the selection's: the pprof options of the view."""
    skip = {*SELECTION_PARAMS, *BASE_PARAMS, "token", "group_by", "step", "wait", "summed"}
    return {k: v for k, v in args.items() if k not in skip}


def parse_duration_seconds(text: str) -> int:
    """A step: seconds (300) or a duration (5m, 1h), from 1 s to 7 days."""
    value = text.strip()
    seconds = int(value) if value.isdigit() else parse_duration(value)
    if not seconds or not 1 <= seconds <= 7 * 86400:
        raise ValueError(f"{text!r} is not a step from 1s to 7d")
    return seconds
