"""The name filters of pprof's applyFocus on whole arrays: locations, their lines, the stacks.

pprof edits each Location's Line list and each Sample's Location list in place
(profile/filter.go, prune.go). Here a location's lines carry a keep mask, a location a hidden
flag and each stack entry a keep flag, so every filter is a few numpy passes over all locations
or all stack entries: no loop per sample or per frame. Stacks are the distinct stacks of the
samples (stacks.located), leaf first; `frames()` turns what is left into graph frames.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...pprof import columns as pc
from ..model.names import simplify

_I64 = np.int64
_BIG = np.iinfo(_I64).max


@dataclass
class Work:
    """A profile's locations and stacks while the filters run (pseudo-frames included)."""

    line_loc: np.ndarray  # location of each line
    line_func: np.ndarray  # function of each line (-1: none)
    line_rank: np.ndarray  # position of each line in its location (0: the innermost)
    line_off: np.ndarray  # lines of location j: line_off[j]:line_off[j + 1]
    lkeep: np.ndarray  # bool per line: still in its location
    loc_mapping: np.ndarray  # mapping of each location (-1: none)
    live: np.ndarray  # bool per location: in a sample pprof sees (the "matched" flags' scope)
    hidden: np.ndarray  # bool per location: removed from every stack
    func_name: list[str]
    func_file: list[str]
    map_file: list[str]
    stack_loc: np.ndarray  # entries of every stack, leaf first
    stack_off: np.ndarray
    entry_owner: np.ndarray  # the stack of each entry
    entry_pos: np.ndarray  # position of each entry in its stack (0: the leaf)
    entry_ok: np.ndarray  # bool per entry: still in its stack
    stack_ok: np.ndarray  # bool per stack
    func_cache: dict[Any, np.ndarray]

    @property
    def n_loc(self) -> int:
        return len(self.loc_mapping)

    def _func_match(self, rx: Any, simplified: bool = False) -> np.ndarray:
        """Per function: the name or the file matches (prune_from: the simplified name only)."""
        key = (rx.pattern, simplified, len(self.func_name))
        found = self.func_cache.get(key)
        if found is None:
            search = rx.search
            if simplified:
                hits = [bool(n) and search(simplify(n)) is not None for n in self.func_name]
            else:
                seen: dict[str, bool] = {}
                hits = []
                for n, f in zip(self.func_name, self.func_file, strict=True):
                    hit = seen.get(n)
                    if hit is None:
                        hit = seen[n] = search(n) is not None
                    if not hit:
                        hit = seen.get("\0" + f)
                        if hit is None:
                            hit = seen["\0" + f] = search(f) is not None
                    hits.append(hit)
            found = np.array(hits + [False], dtype=bool)  # index -1: a line without function
            if len(self.func_cache) > 64:
                self.func_cache.clear()
            self.func_cache[key] = found
        return found

    def line_match(self, rx: Any, simplified: bool = False) -> np.ndarray:
        """Per line: its function matches (a line without function never does)."""
        return self._func_match(rx, simplified)[self.line_func]

    def map_match(self, rx: Any) -> np.ndarray:
        """Per location: its mapping's file matches."""
        hits = np.array([rx.search(f) is not None for f in self.map_file] + [False], dtype=bool)
        return hits[self.loc_mapping]

    def loc_any(self, line_mask: np.ndarray) -> np.ndarray:
        """Per location: some line in line_mask."""
        return np.bincount(self.line_loc[line_mask], minlength=self.n_loc) > 0

    def matches(self, rx: Any) -> np.ndarray:
        """Location.matchesName on the lines still kept."""
        return self.loc_any(self.lkeep & self.line_match(rx)) | self.map_match(rx)

    def stacks_with(self, loc_mask: np.ndarray) -> np.ndarray:
        """Per stack: the number of its kept entries whose location is in loc_mask."""
        sel = self.entry_ok & loc_mask[self.stack_loc]
        return np.bincount(self.entry_owner[sel], minlength=len(self.stack_ok))

    # --- the filters, in applyFocus's order -------------------------------------------------
    def by_name(self, focus: Any, ignore: Any, hide: Any, show: Any) -> list[bool]:
        """FilterSamplesByName; returns (fm, im, hm, hnm), the 'matched' flags."""
        live = self.live
        ignored = self.matches(ignore) if ignore is not None else np.zeros(self.n_loc, bool)
        focused = self.matches(focus) & ~ignored if focus is not None else ~ignored
        flags = [bool((focused & live).any()), bool((ignored & live).any()), False, False]
        if hide is not None:
            matched = self.matches(hide)
            flags[2] = bool((matched & live).any())
            gone = self.line_match(hide) | self.map_match(hide)[self.line_loc]
            self.lkeep &= ~(gone & matched[self.line_loc])
            self.hidden |= matched & ~self.loc_any(self.lkeep)
        if show is not None:
            by_map = self.map_match(show)[self.line_loc]
            self.lkeep &= self.line_match(show) | (self.line_func < 0) | by_map
            nonempty = self.loc_any(self.lkeep)
            self.hidden |= ~nonempty
            flags[3] = bool((nonempty & live).any())
        # focusedAndNotIgnored: some focused entry, no ignored one (an empty stack has neither).
        length = np.diff(self.stack_off)
        n_ignored = self.stacks_with(ignored) if ignore is not None else 0
        if focus is not None:
            self.stack_ok &= self.stacks_with(focused) > 0
        else:  # every entry not ignored is focused
            self.stack_ok &= length - n_ignored > 0
        self.stack_ok &= n_ignored == 0
        if self.hidden.any():
            self.entry_ok &= ~self.hidden[self.stack_loc]
            self.stack_ok &= self.stacks_with(np.ones(self.n_loc, dtype=bool)) > 0
        return flags

    def show_from(self, rx: Any) -> bool:
        """ShowFrom: cut each location above its outermost matching line, and each stack above
        its rootmost matching location; stacks without one are dropped."""
        by_map = self.map_match(rx)
        hit = self.lkeep & self.line_match(rx)
        last = np.full(self.n_loc, -1, dtype=_I64)
        np.maximum.at(last, self.line_loc[hit], self.line_rank[hit])
        cut = ~by_map & (last >= 0)
        self.lkeep &= ~(cut[self.line_loc] & (self.line_rank > last[self.line_loc]))
        matched = by_map | (last >= 0)
        sel = self.entry_ok & matched[self.stack_loc]
        top = np.full(len(self.stack_ok), -1, dtype=_I64)
        np.maximum.at(top, self.entry_owner[sel], self.entry_pos[sel])
        self.entry_ok &= self.entry_pos <= top[self.entry_owner]
        self.stack_ok &= top >= 0
        return bool((matched & self.live).any())

    def prune_from(self, rx: Any) -> None:
        """PruneFrom: cut each location below its innermost matching line (simplified names),
        and each stack below its leafmost such location."""
        hit = self.lkeep & self.line_match(rx, simplified=True)
        first = np.full(self.n_loc, _BIG, dtype=_I64)
        np.minimum.at(first, self.line_loc[hit], self.line_rank[hit])
        beneath = first < _BIG
        self.lkeep &= ~(beneath[self.line_loc] & (self.line_rank < first[self.line_loc]))
        sel = self.entry_ok & beneath[self.stack_loc]
        low = np.full(len(self.stack_ok), _BIG, dtype=_I64)
        np.minimum.at(low, self.entry_owner[sel], self.entry_pos[sel])
        self.entry_ok &= self.entry_pos >= np.where(low < _BIG, low, 0)[self.entry_owner]

    def no_inlines(self) -> None:
        """Aggregate(inlineFrame=false): only the outermost line of each location stays."""
        kept = np.flatnonzero(self.lkeep)
        last = np.full(self.n_loc, -1, dtype=_I64)
        np.maximum.at(last, self.line_loc[kept], self.line_rank[kept])
        self.lkeep &= self.line_rank == last[self.line_loc]

    # --- what is left, as graph frames ------------------------------------------------------
    def frames(
        self, line_node: np.ndarray, bare_node: np.ndarray, stacks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(frame_node, frame_inline, frame_off) of the given stacks (ascending ids), root first,
        in reverse order: frame stack i is stacks[len(stacks) - 1 - i].

        A location gives one frame per kept line, outermost first (the others are inlined
        into it), or, without lines, one frame of its own (bare_node). Reversing the kept
        entries of all stacks at once turns each stack root first (and reverses their order).
        """
        n_lines = np.diff(self.line_off)
        kept = np.flatnonzero(self.lkeep)
        count = np.bincount(self.line_loc[kept], minlength=self.n_loc)
        per_loc = np.where(n_lines == 0, 1, count)
        lf_off = pc.offsets(per_loc)
        lf_node = np.empty(int(lf_off[-1]), dtype=np.int32)
        lf_inline = np.ones(len(lf_node), dtype=bool)
        lf_inline[lf_off[:-1][per_loc > 0]] = False
        kloc = self.line_loc[kept]
        rank = np.arange(len(kept)) - pc.offsets(count)[:-1][kloc]
        lf_node[lf_off[kloc] + count[kloc] - 1 - rank] = line_node[kept]
        bare = np.flatnonzero(n_lines == 0)
        lf_node[lf_off[bare]] = bare_node[bare]

        chosen = np.zeros(len(self.stack_ok), dtype=bool)
        chosen[stacks] = True
        sel = self.entry_ok & chosen[self.entry_owner]
        entries = np.flatnonzero(sel)[::-1]
        per_stack = np.bincount(self.entry_owner[entries], minlength=len(chosen))[stacks][::-1]
        loc = self.stack_loc[entries]
        counts = per_loc[loc]
        eoff = pc.offsets(per_stack)
        if not len(counts) or counts.max() == 1:  # no inlined frame left: one frame per entry
            return lf_node[lf_off[:-1][loc]], np.zeros(len(loc), dtype=bool), eoff
        src = pc.ranges(lf_off[:-1][loc], counts)
        return lf_node[src], lf_inline[src], pc.offsets(counts)[eoff]
