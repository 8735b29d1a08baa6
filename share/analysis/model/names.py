"""Function names as pprof shows them: its demangling heuristic, and drop_frames matching.

symbolizer.Demangle (run by every `go tool pprof` report) rewrites names that equal their
system name: C++-looking ones lose parameters and template arguments. profile.Prune matches
drop_frames/keep_frames against names simplified by simplifyFunc.
"""

from __future__ import annotations

import re

import numpy as np

_CPP_HINT = re.compile(r"[<>\[\]]|::")


def _looks_demangled(name: str) -> bool:
    """symbolizer.looksLikeDemangledCPlusPlus."""
    if _CPP_HINT.search(name) is None:
        return False
    return ".<" not in name and "])." not in name


def _remove_matching(name: str, start: str, end: str) -> str:
    """symbolizer.removeMatching: drop nested start..end groups (all of them, outermost)."""
    nesting = first = 0
    current = 0
    while True:
        idx = [i for i in (name.find(start, current), name.find(end, current)) if i >= 0]
        if not idx:
            return name
        current = min(idx)
        if name[current] == start:
            nesting += 1
            if nesting == 1:
                first = current
        else:
            nesting -= 1
            if nesting < 0:
                return name
            if nesting == 0:
                name = name[:first] + name[current + 1 :]
                current = first - 1
        current += 1


def demangled_name(name: str, system_name: str) -> str:
    """The name pprof shows after its default demangling pass (symbolizer.Demangle).

    Names set apart from their system name are kept. Otherwise pprof demangles the system
    name; C++/Rust mangled names (_Z..., _R...) are not demangled here, so they show as is.
    Already demangled C++-looking names lose their parameters and template arguments.
    """
    if name and system_name != name:
        return name
    if _looks_demangled(system_name):
        system_name = _remove_matching(system_name, "(", ")")
        system_name = _remove_matching(system_name, "<", ">")
    return system_name


def demangled_names(names: list[str], systems: list[str]) -> list[str]:
    """demangled_name for every function; one regex scan finds the C++-looking names."""
    out = [n if n and n != sy else sy for n, sy in zip(names, systems, strict=True)]
    todo = [i for i, (n, sy) in enumerate(zip(names, systems, strict=True)) if not n or n == sy]
    if not todo:
        return out
    text = "\n".join(systems[i] for i in todo)
    hits = [m.start() for m in _CPP_HINT.finditer(text)]
    if hits:
        lengths = np.fromiter((len(systems[i]) + 1 for i in todo), dtype=np.int64, count=len(todo))
        starts = np.cumsum(lengths) - lengths
        for k in np.unique(np.searchsorted(starts, hits, side="right") - 1).tolist():
            i = todo[k]
            out[i] = demangled_name(names[i], systems[i])
    return out


def simplify(name: str) -> str:
    """profile.simplifyFunc: strip a leading '.' and the argument list."""
    name = name.removeprefix(".")
    for m in re.finditer(r"\(anonymous namespace\)|operator\(\)|\(", name):
        if m.group(0) == "(":
            return name[: m.start()]
    return name
