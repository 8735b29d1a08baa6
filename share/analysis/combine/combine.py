"""Profiles combined as go tool pprof combines them: merges, -diff_base / -base diffs, and
profiles that are themselves diffs.

merged_profile(parsed...) is what `go tool pprof -proto a b c` writes. shown(profiles, mode,
normalize) is the profile a view shows: the first of profiles, less the others as pprof's
fetchProfiles computes it (internal/driver/fetch.go, G119):

    p = Merge(ScaleProfiles(sources));  b = Merge(ScaleProfiles(bases))
    -diff_base: b.SetLabel("pprof::base", "true");  -normalize: p.Normalize(b)
    b.Scale(-1);  result = Merge(ScaleProfiles([p, b]))

The result is a merge's Tables, so every view and filter reads it as it reads an upload. With it
come each sample's two sides, before (the base's part, in its own sign) and after, which the
diff views show beside pprof's signed values. A stored profile whose samples carry pprof::base
(`go tool pprof -proto -diff_base` output) is shown as a diff too, its sides told apart by that
label.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..model.tables import Tables, tables
from .encode import compact_strings, encode
from .merge import IncompatibleProfiles, Merged, merge
from .prof import Prof, from_parsed, retable, sample_hashes, to_tables
from .scaling import negate, normalize, scale_profiles, set_label

_I64 = np.int64
BASE_KEY = b"pprof::base"
CHUNK = 64  # go tool pprof merges its sources 64 at a time, then the chunks pairwise


class CombineError(IncompatibleProfiles):
    """Profiles pprof refuses to combine: the message says which step, reason is Go's text."""

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(reason)
        self.message = f"{what}: {reason}"
        self.args = (self.message,)


@dataclass
class Shown:
    """The profile a view shows, and for a diff each sample's two sides."""

    tables: Tables
    mode: str = ""  # "diff_base", "base", "labels" (a stored diff) or "" (not a diff)
    normalize: bool = False
    before: np.ndarray | None = None  # [n_samples, n_types]: the base's part, its own sign
    after: np.ndarray | None = None  # the new profile's part
    sums: dict[int | None, Any] = field(default_factory=dict, repr=False)  # diffview's

    @property
    def diff(self) -> bool:
        return bool(self.mode)


def _merge_all(profs: Sequence[Prof], what: str) -> Merged:
    """Sources (or bases) combined as pprof's chunkedGrab does: 64 at a time, then pairwise."""
    try:
        merged: Merged | None = None
        for start in range(0, len(profs), CHUNK):
            scaled, _ = scale_profiles(profs[start : start + CHUNK])
            chunk = merge(scaled)
            if merged is None:
                merged = chunk
            else:
                both, _ = scale_profiles([merged.prof, chunk.prof])
                merged = merge(both)
    except IncompatibleProfiles as exc:
        raise CombineError(what, exc.reason) from None
    assert merged is not None
    return merged


def merged_profile(parsed: Sequence[Any], comment: str = "") -> bytes:
    """The protobuf (not compressed) of the profiles merged, as `go tool pprof -proto` writes
    it; comment is appended to the comments (pprof's -add_comment)."""
    return merged_columns([from_parsed(p) for p in parsed], comment)


def merged_columns(profs: Sequence[Prof], comment: str = "") -> bytes:
    """merged_profile of profiles already in columns (from_parsed): a merge of many files
    keeps only their columns, not each decoded message beside them."""
    return encode(merged_prof(profs, comment))


def merged_prof(profs: Sequence[Prof], comment: str = "") -> Prof:
    """The columns of merged_columns' profile as from_parsed reads them back from its bytes:
    a merge of it gives the same bytes as a merge of those (its string table is the one
    encode writes), and it holds none of its parts' tables (no origin). A merge process keeps
    it for the merges its output goes into (a collection's block into the next larger one:
    share.compute.worker), which then neither fetch nor decode it."""
    prof = _merge_all(profs, "the profiles cannot be merged").prof
    if comment:
        strings = [*prof.strings, comment.encode()]
        prof = replace(prof, strings=strings, comments=[*prof.comments, len(strings) - 1])
    used, index = compact_strings(prof)
    return replace(retable(prof, index, used), origin=None)


_COMPACT: weakref.WeakKeyDictionary[Any, Prof] = weakref.WeakKeyDictionary()


def _compacted(parsed: Any) -> Prof:
    """Merge([p]) of one stored profile (what pprof makes of a single source), cached."""
    found = _COMPACT.get(parsed)
    if found is None:
        found = _COMPACT[parsed] = merge([from_parsed(parsed)]).prof
        sample_hashes(found)  # kept with it: the merges it goes into look for equal keys
    return found


def _side(parsed: Sequence[Any], what: str) -> Prof:
    if len(parsed) == 1:
        return _compacted(parsed[0])
    return _merge_all([from_parsed(p) for p in parsed], what).prof


def diff(profiles: Sequence[Any], mode: str, do_normalize: bool) -> Shown:
    """profiles[0] less the others (merged), as `go tool pprof -<mode>=... [-normalize]`."""
    p = _side(profiles[:1], "the profile cannot be read as pprof reads it")
    b = _side(profiles[1:], "the base profiles cannot be merged")
    if mode == "diff_base":
        b = set_label(b, BASE_KEY, b"true")
    try:
        if do_normalize:
            p, _ = normalize(p, b)
        b, _ = negate(b)
        both, _ = scale_profiles([p, b])
        m = merge(both)
    except IncompatibleProfiles as exc:
        raise CombineError("the profiles cannot be compared", exc.reason) from None
    n, k = m.prof.n_samples, len(m.prof.sample_types)
    after = np.zeros((n, k), dtype=_I64)
    before = np.zeros((n, k), dtype=_I64)
    for side, values, sign in ((after, both[0].values, 1), (before, both[1].values, -1)):
        where = m.sample_maps[0 if sign == 1 else 1]
        kept = where >= 0
        np.add.at(side, where[kept], sign * values[kept])
    return Shown(to_tables(m.prof), mode, do_normalize, before, after)


def stored(parsed: Any) -> Shown:
    """A stored profile as shown: a diff when a sample carries pprof::base=true."""
    t = tables(parsed)
    if "pprof::base" not in t.strings or "true" not in t.strings:
        return Shown(t)
    sample, key, text, _, _ = t.labels()
    is_key = np.array([s == "pprof::base" for s in t.strings])
    is_true = np.array([s == "true" for s in t.strings])
    hit = is_key[key] & (text != 0) & is_true[text]
    if not hit.any():
        return Shown(t)
    base = np.zeros(t.n_samples, dtype=bool)
    base[sample[hit]] = True
    values = t.values
    before = np.where(base[:, None], -values, 0)
    after = np.where(base[:, None], 0, values)
    return Shown(t, "labels", False, before, after)


_RECENT: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Shown]] = OrderedDict()
_RECENT_SIZE = 2  # a diff's views are asked for together (flame graph, top, text)


def shown(profiles: Sequence[Any], mode: str = "", do_normalize: bool = False) -> Shown:
    """What a view of profiles shows (see the module docstring); recent diffs are kept."""
    if not mode or len(profiles) < 2:
        return stored(profiles[0])
    key = (tuple(map(id, profiles)), mode, do_normalize)
    hit = _RECENT.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], profiles, strict=True)):
        _RECENT.move_to_end(key)
        return hit[1]
    result = diff(profiles, mode, do_normalize)
    _RECENT[key] = (tuple(profiles), result)
    while len(_RECENT) > _RECENT_SIZE:
        _RECENT.popitem(last=False)
    return result


def forget() -> None:
    """Drop the recent diffs (the per-profile work stays with the profiles)."""
    _RECENT.clear()
