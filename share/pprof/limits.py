"""Sizes real profiles never reach but attacks do, checked before the costly decoding.

A 93 KB upload can hold 8 M tiny samples (61 MiB once inflated), a 194 KB one 100 M strings:
fully decoded and analysed they take GBs. decode.py counts each kind of element as soon as a
cheap (shallow) decode can tell, and refuses the profile before building anything per element.
The defaults are about ten times the largest real profiles seen (a Go-recorded labelled CPU
profile: 375 k samples; 37 k locations), and each is a setting (SHARE_MAX_<NAME>).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import TooLarge


@dataclass(frozen=True)
class Limits:
    """The most of each element one profile may hold."""

    samples: int = 4_000_000
    locations: int = 1_000_000
    functions: int = 1_000_000
    mappings: int = 100_000
    strings: int = 4_000_000
    labels: int = 20_000_000  # over all samples
    frames: int = 50_000_000  # location ids over all samples

    def check(self, what: str, count: int) -> None:
        """Raise TooLarge (413) naming the setting when count is over the limit for what."""
        limit = getattr(self, what)
        if count > limit:
            noun = "stack frames (location ids over all samples)" if what == "frames" else what
            raise TooLarge(
                f"the profile has {count:,} {noun}, over the limit of {limit:,} "
                f"(SHARE_MAX_{what.upper()})"
            )


NO_LIMITS = Limits(*([1 << 62] * 7))
