"""pprof's refinements of a profile: label pseudo-frames, filters, granularity, in its order.

generateRawReport's pipeline (Go 1.19 internal/driver/driver.go), on whole arrays:
  1. tagroot / tagleaf add a pseudo-frame per label key to every sample (before any filter);
  2. the total is computed before the filters (after them with relative_percentages);
  3. applyFocus: focus/ignore/hide/show, show_from, tagfocus/tagignore, tagshow/taghide,
     prune_from, each warning "<X> expression matched no samples" when it matched nothing;
  4. aggregate: granularity (and noinlines) decide what a node is.
The result is a Stacks (stacks.py) plus which samples survive, so top, flame graph, peek, dot
and tags all read the same refined profile. Without a filter that changes frames (only sample
selection, at "functions" granularity) the profile's own Stacks are reused as they are.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from ..measure.units import wrap64
from ..model import goregexp
from ..model.graph import Graph, first_sums, graph
from ..model.labels import Labels, labels
from ..model.stacks import Stacks, first_frames, located, stacks
from ..model.tables import Tables
from . import tagfilter
from .locfilter import Work
from .nodes import Info, info_of, nodes
from .tagroot import pseudo_frames

_I64 = np.int64
_CACHED = 4  # refinements kept per profile: one that changes frames holds arrays the size of
# the frames (~30 MB on the 2.4 MB cpu-xl); one that only selects samples, an int per sample


class RefineError(ValueError):
    """An option pprof refuses (a regex that does not compile...); str() is pprof's line."""


@dataclass(frozen=True)
class Spec:
    """The options that refine a profile, with pprof's names; defaults change nothing."""

    focus: str = ""
    ignore: str = ""
    hide: str = ""
    show: str = ""
    show_from: str = ""
    tagfocus: str = ""
    tagignore: str = ""
    tagshow: str = ""
    taghide: str = ""
    prune_from: str = ""
    tagroot: str = ""
    tagleaf: str = ""
    granularity: str = "functions"
    noinlines: bool = False
    relative_percentages: bool = False

    @classmethod
    def of(cls, options: dict[str, Any]) -> Spec:
        """The Spec in a view's options (options.py keeps only values that differ)."""
        return cls(**{f.name: options[f.name] for f in fields(cls) if f.name in options})

    def active_filters(self) -> list[str]:
        """report.Options.ActiveFilters: 'name=value' of each filter given, pprof's order."""
        names = ("focus", "ignore", "hide", "show", "show_from")
        names += ("tagfocus", "tagignore", "tagshow", "taghide")
        return [f"{n}={getattr(self, n)}" for n in names if getattr(self, n)]

    @property
    def frames_change(self) -> bool:
        """Whether frames differ from the profile's own (not only which samples are kept)."""
        return bool(
            self.tagroot or self.tagleaf or self.hide or self.show or self.show_from
            or self.prune_from or self.noinlines or self.granularity != "functions"
        )  # fmt: skip


def compile_regex(name: str, value: str) -> Any:
    """compileRegexOption: None for "", else Go's regexp; RefineError with pprof's text."""
    if not value:
        return None
    try:
        return goregexp.compile(value)
    except goregexp.RegexpError as exc:
        raise RefineError(f"parsing {name} regexp: {exc}") from None


def check(spec: Spec) -> list[str]:
    """Compile every option as applyFocus does, in its order; the messages compiling prints
    (tag ranges). Raises RefineError with pprof's text for the first it refuses."""
    for name in ("focus", "ignore", "hide", "show", "show_from"):
        compile_regex(name, getattr(spec, name))
    printed = []
    for name in ("tagfocus", "tagignore"):
        try:
            printed += tagfilter.compile_filter(name, getattr(spec, name))[1]
        except tagfilter.TagFilterError as exc:
            raise RefineError(str(exc)) from None
    for name in ("prune_from", "tagshow", "taghide"):
        compile_regex(name, getattr(spec, name))
    return printed


@dataclass
class Refined:
    """A profile after pprof's refinements: the frames left and the samples kept."""

    stacks: Stacks
    sample_stack: np.ndarray  # per profile sample: its stack in `stacks`, -1 when dropped
    removed_keys: frozenset[int]  # label keys (text codes) tagshow/taghide removed
    warnings: list[str]  # pprof's stderr lines, in its order
    graphs: dict[Any, Graph] = field(default_factory=dict, repr=False)  # per sample type


def refine(t: Tables, spec: Spec) -> Refined:
    """The refined profile (cached on t for the last few specs)."""
    key = replace(spec, relative_percentages=False)
    cache: OrderedDict[Spec, Refined] = t.cache.setdefault("refined", OrderedDict())
    found = cache.get(key)
    if found is None:
        found = _refine(t, key)
        cache[key] = found
        while len(cache) > _CACHED:
            cache.popitem(last=False)
    cache.move_to_end(key)
    return found


def refined_graph(t: Tables, index: int | None, spec: Spec) -> tuple[Graph, Refined]:
    """The Graph (graph.py) of one sample type over the refined profile, and the refinement
    (cached with it: the views of one query share its edges and tags)."""
    r = refine(t, spec)
    key = (index, spec.relative_percentages)
    found = r.graphs.get(key)
    if found is None:
        found = r.graphs[key] = _refined_graph(t, index, spec, r)
    return found, r


def _refined_graph(t: Tables, index: int | None, spec: Spec, r: Refined) -> Graph:
    base = graph(t, index)
    kept = r.sample_stack >= 0
    w = np.where(kept, base.weights, 0)
    st = r.stacks
    n_stacks = len(st.frame_off) - 1
    ws = np.zeros(n_stacks, dtype=_I64)
    np.add.at(ws, r.sample_stack[kept], w[kept])
    live = np.zeros(n_stacks, dtype=bool)
    live[r.sample_stack[kept & (w != 0)]] = True
    n_nodes = len(st.names)
    flat = np.zeros(n_nodes, dtype=_I64)
    cum = np.zeros(n_nodes, dtype=_I64)
    off = st.frame_off
    nonempty = np.flatnonzero(off[1:] > off[:-1])
    np.add.at(flat, st.frame_node[off[1:][nonempty] - 1], ws[nonempty])
    if len(st.first_owner):
        cum[st.first_nodes] = first_sums(st, ws)
    total = base.total
    if spec.relative_percentages:
        total = _total(t, w, kept, r.removed_keys)
    return Graph(t, st, index, base.sample_type, w, ws, live, total, flat, cum)


def _total(t: Tables, w: np.ndarray, kept: np.ndarray, removed: frozenset[int]) -> int:
    """report.computeTotal over the kept samples: sum of |v|, or of the diff base's samples."""
    a = np.abs(w)
    total = wrap64(int(a[kept].sum(dtype=_I64)))
    lab = labels(t)
    key, true = lab.key_code("pprof::base"), lab.key_code("true")
    if key >= 0 and true >= 0 and key not in removed:
        rows = (lab.key == key) & (lab.value == true) & ~lab.numeric
        base = np.zeros(len(w), dtype=bool)
        base[lab.sample[rows]] = True
        diff_total = wrap64(int(a[base & kept].sum(dtype=_I64)))
        if diff_total > 0:
            total = diff_total
    return total


def _live_locations(t: Tables, alive: np.ndarray) -> np.ndarray:
    """Locations in some sample Merge keeps (only those are in pprof's profile)."""
    found = t.cache.get("live_locations")
    if found is None:
        entries = np.repeat(alive, np.diff(t.stack_off))
        found = np.bincount(t.stack_loc[entries], minlength=len(t.loc_mapping)) > 0
        t.cache["live_locations"] = found
    return found


def _layout(
    t: Tables, line_off: np.ndarray, line_first: np.ndarray, stack_off: np.ndarray, cached: bool
) -> tuple[np.ndarray, ...]:
    """(location and rank of each line, lines pruning kept, stack and position of each entry):
    the same for every filter, so cached unless pseudo-frames changed the stacks."""
    found = t.cache.get("layout") if cached else None
    if found is None:
        n_all, n_stacks = len(line_off) - 1, len(stack_off) - 1
        line_loc = np.repeat(np.arange(n_all, dtype=_I64), np.diff(line_off))
        line_rank = np.arange(len(line_loc), dtype=_I64) - line_off[:-1][line_loc]
        lkeep = np.arange(len(line_loc)) >= line_first[line_loc]
        owner = np.repeat(np.arange(n_stacks, dtype=_I64), np.diff(stack_off))
        entry_pos = np.arange(len(owner), dtype=_I64) - stack_off[:-1][owner]
        found = (line_loc, line_rank, lkeep, owner, entry_pos)
        if cached:
            t.cache["layout"] = found
    return found


def warnings(t: Tables, spec: Spec) -> list[str]:
    """What pprof prints on stderr for these options (granularity plays no part): from a
    cached refinement when there is one, else from the filters alone (no frames built)."""
    bare = replace(spec, granularity="functions", noinlines=False, relative_percentages=False)
    for key, found in t.cache.get("refined", {}).items():
        if replace(key, granularity="functions", noinlines=False) == bare:
            return found.warnings
    return _refine(t, bare, frames=False).warnings


def _refine(t: Tables, spec: Spec, frames: bool = True) -> Refined:
    """The pipeline; frames=False stops once samples are chosen (the stacks are then the
    profile's own, whatever the spec: for the warnings only)."""
    printed = check(spec)
    lab = labels(t)
    loc = located(t)
    warnings = list(lab.unit_warnings)
    n_func = len(t.func_name)
    stack_of, stack_loc, stack_off = loc.stack_of, loc.stack_loc, loc.stack_off
    live = _live_locations(t, lab.alive)
    line_off, line_func, line_first = t.line_off, t.line_func, loc.line_first
    func_name, func_file = t.func_name, t.func_names[2]
    mapping = t.loc_mapping
    pseudo: list[tuple[str, str]] = []
    if spec.tagroot or spec.tagleaf:
        roots = [k for k in spec.tagroot.split(",") if k]
        leaves = [k for k in spec.tagleaf.split(",") if k]
        stack_of, stack_loc, stack_off, pseudo, pseudo_live, rootm, leafm = pseudo_frames(
            t, lab, stack_of, stack_loc, stack_off, roots, leaves
        )
        if spec.tagroot and not rootm:
            warnings.append("TagRoot expression matched no samples")
        if spec.tagleaf and not leafm:
            warnings.append("TagLeaf expression matched no samples")
        n_pseudo = len(pseudo)
        base_end = int(line_off[-1])
        line_off = np.concatenate((line_off, base_end + np.arange(1, n_pseudo + 1)))
        line_func = np.concatenate((line_func, n_func + np.arange(n_pseudo)))
        line_first = np.concatenate((line_first, base_end + np.arange(n_pseudo)))
        func_name = func_name + [p[0] for p in pseudo]
        func_file = func_file + [p[1] for p in pseudo]
        mapping = np.concatenate((mapping, np.full(n_pseudo, -1, dtype=_I64)))
        live = np.concatenate((live, pseudo_live))
    warnings += printed

    layout = _layout(t, line_off, line_first, stack_off, cached=not pseudo)
    line_loc, line_rank, lkeep, owner, entry_pos = layout
    n_all, n_stacks = len(mapping), len(stack_off) - 1
    w = Work(
        line_loc=line_loc,
        line_func=line_func,
        line_rank=line_rank,
        line_off=line_off,
        lkeep=lkeep.copy(),
        loc_mapping=mapping,
        live=live,
        hidden=np.zeros(n_all, dtype=bool),
        func_name=func_name,
        func_file=func_file,
        map_file=t.map_file,
        stack_loc=stack_loc,
        stack_off=stack_off,
        entry_owner=owner,
        entry_pos=entry_pos,
        entry_ok=np.ones(len(stack_loc), dtype=bool),
        stack_ok=np.ones(n_stacks, dtype=bool),
        func_cache=t.cache.setdefault("func_match", {}) if not pseudo else {},
    )
    rx = {n: compile_regex(n, getattr(spec, n)) for n in ("focus", "ignore", "hide", "show")}
    flags = w.by_name(rx["focus"], rx["ignore"], rx["hide"], rx["show"])
    for name, label, flag in zip(rx, ("Focus", "Ignore", "Hide", "Show"), flags, strict=True):
        if rx[name] is not None and not flag:
            warnings.append(f"{label} expression matched no samples")
    if spec.show_from and not w.show_from(compile_regex("show_from", spec.show_from)):
        warnings.append("ShowFrom expression matched no samples")
    keep = lab.alive & w.stack_ok[stack_of]
    for name, label in (("tagfocus", "TagFocus"), ("tagignore", "TagIgnore")):
        f = tagfilter.compile_filter(name, getattr(spec, name))[0]
        if f is None:
            continue
        hit = tagfilter.matches(f, lab, t.n_samples)
        if not (hit & keep).any():
            warnings.append(f"{label} expression matched no samples")
        keep &= hit if name == "tagfocus" else ~hit
    removed, tag_warnings = _tags_by_name(spec, lab, keep)
    warnings += tag_warnings
    if spec.prune_from:
        w.prune_from(compile_regex("prune_from", spec.prune_from))

    if not spec.frames_change or not frames:
        base = stacks(t)  # its stack i is located stack n - 1 - i
        sample_stack = np.where(keep, base.stack_of, -1)
        return Refined(base, sample_stack, removed, warnings)

    if spec.noinlines:
        w.no_inlines()
    table = nodes(t, spec.granularity)
    line_node, bare_node = table.line_node, table.bare_node
    if pseudo:
        infos = [info_of(spec.granularity, name, key, 0, 0) for name, key in pseudo]
        table, ids = table.extend(infos, [key for _, key in pseudo])
        line_node = np.concatenate((line_node, ids))
        bare_node = np.concatenate((bare_node, np.zeros(len(pseudo), dtype=_I64)))
    used = np.zeros(n_stacks, dtype=bool)
    used[stack_of[keep]] = True
    chosen = np.flatnonzero(used & w.stack_ok)
    frame_node, frame_inline, frame_off = w.frames(line_node, bare_node, chosen)
    new_id = np.full(n_stacks, -1, dtype=_I64)
    new_id[chosen] = np.arange(len(chosen))[::-1]  # frames() lists the stacks reversed
    sample_stack = np.where(keep, new_id[stack_of], -1)
    return Refined(
        _assemble(frame_node, frame_inline, frame_off, table.names, table.files, table.keys,
                  table.infos),
        sample_stack,
        removed,
        warnings,
    )  # fmt: skip


def _assemble(
    frame_node: np.ndarray,
    frame_inline: np.ndarray,
    frame_off: np.ndarray,
    names: list[str],
    files: list[str],
    keys: list[str],
    infos: list[Info],
) -> Stacks:
    """A Stacks over given frames (what stacks.py builds for the profile's own frames)."""
    n = len(frame_off) - 1
    frame_node = frame_node.astype(np.int32)
    frame_owner = np.repeat(np.arange(n, dtype=np.int32), np.diff(frame_off))
    first_owner, first_starts, first_nodes, frame_first, frame_group = first_frames(
        frame_node, frame_owner, len(names)
    )
    return Stacks(
        frame_node=frame_node,
        frame_inline=frame_inline,
        frame_off=frame_off,
        frame_owner=frame_owner,
        first_owner=first_owner,
        first_starts=first_starts,
        first_nodes=first_nodes,
        stack_of=np.zeros(0, dtype=_I64),  # samples map through Refined.sample_stack
        names=names,
        files=files,
        keys=keys,
        any_inline=bool(frame_inline.any()),
        frame_first=frame_first,
        infos=infos,
        frame_group=frame_group,
    )


def _tags_by_name(spec: Spec, lab: Labels, keep: np.ndarray) -> tuple[frozenset[int], list[str]]:
    """FilterTagsByName: the label keys tagshow/taghide remove, and their warnings."""
    show = compile_regex("tagshow", spec.tagshow)
    hide = compile_regex("taghide", spec.taghide)
    if show is None and hide is None:
        return frozenset(), []
    present = set(np.unique(lab.key[keep[lab.sample]]).tolist()) if len(lab.key) else set()
    removed, shown, hidden = set(), False, False
    for k in np.unique(lab.key).tolist() if len(lab.key) else []:
        text = lab.texts[k]
        s = show is None or show.search(text) is not None
        h = hide is not None and hide.search(text) is not None
        if k in present:
            shown |= s
            hidden |= h
        if not s or h:
            removed.add(k)
    warnings = []
    if show is not None and not shown:
        warnings.append("TagShow expression matched no samples")
    if hide is not None and not hidden:
        warnings.append("TagHide expression matched no samples")
    return frozenset(removed), warnings
