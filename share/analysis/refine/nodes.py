"""Graph nodes at each granularity: pprof's NodeInfo per line of every location.

`-granularity` decides which of a frame's name, file, line and address make a node
(profile.Aggregate clears the others before graph.CreateNodes builds NodeInfo): one node per
distinct NodeInfo. The table gives every line (and every location without lines) its node id,
and each node its printable name, its sort key (fmt.Sprint of NodeInfo, pprof's last
tie-break) and what the DOT labels need. It does not depend on the filters, so it is built once
per profile and granularity; tagroot/tagleaf pseudo-frames are added per request (extend()).
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

import numpy as np

from ..measure.text import go_base
from ..model.tables import Tables

_I64 = np.int64
GRANULARITIES = ("functions", "filefunctions", "files", "lines", "addresses")

# NodeInfo as a tuple: (name, address, file, start_line, lineno, objfile).
Info = tuple[str, int, str, int, int, str]


def go_clean(path: str) -> str:
    """filepath.Clean (posixpath.normpath keeps exactly two leading slashes; Go does not)."""
    if path == "":
        return "."
    cleaned = posixpath.normpath(path)
    if cleaned.startswith("//"):
        cleaned = "/" + cleaned.lstrip("/")
    return cleaned


def components(info: Info) -> list[str]:
    """NodeInfo.NameComponents: [address] name file:line, down to [binary] or <unknown>."""
    name, address, file, _, lineno, objfile = info
    parts = [f"{address:016x}"] if address else []
    if name:
        parts.append(name)
    if lineno:
        parts.append(f"{file}:{lineno}")
    elif file:
        parts.append(file)
    elif not name:
        parts.append("[" + go_base(objfile) + "]" if objfile else "<unknown>")
    return parts


def printable(info: Info) -> str:
    """NodeInfo.PrintableName: the components, space separated."""
    return " ".join(components(info))


def sprint(info: Info) -> str:
    """fmt.Sprint(NodeInfo): compareNodes' key (OrigName is always empty here)."""
    name, address, file, start, lineno, objfile = info
    return f"{{{name}  {address} {file} {start} {lineno} {objfile}}}"


@dataclass
class Nodes:
    """The nodes of one granularity: per line and per bare location, and per node."""

    granularity: str
    line_node: np.ndarray  # node of each line of the profile
    bare_node: np.ndarray  # node of each location, used where it has no lines
    infos: list[Info]
    names: list[str]  # printable names
    files: list[str]  # a source file per node, for the JSON (the function's, else the binary)
    keys: list[str]
    index: dict[Info, int] = field(repr=False)

    def extend(self, infos: list[Info], files: list[str]) -> tuple[Nodes, np.ndarray]:
        """These nodes plus any of infos not among them (a copy; self is shared): (nodes, ids)."""
        ids = np.array([self.index.get(i, -1) for i in infos], dtype=_I64)
        if (ids >= 0).all():
            return self, ids
        out = Nodes(
            self.granularity,
            self.line_node,
            self.bare_node,
            list(self.infos),
            list(self.names),
            list(self.files),
            list(self.keys),
            dict(self.index),
        )
        for k in np.flatnonzero(ids < 0).tolist():
            info = infos[k]
            found = out.index.get(info)
            if found is None:
                found = out.index[info] = len(out.infos)
                out.infos.append(info)
                out.names.append(printable(info))
                out.files.append(info[2] or files[k])
                out.keys.append(sprint(info))
            ids[k] = found
        return out, ids


def info_of(granularity: str, name: str, file: str, lineno: int, start: int) -> Info:
    """The NodeInfo of a frame with no mapping or address (tagroot/tagleaf pseudo-frames)."""
    keep_name = granularity != "files"
    keep_file = granularity != "functions"
    name = name if keep_name else ""
    clean = go_clean(file) if keep_file and file else ""
    lineno = lineno if granularity in ("lines", "addresses") else 0
    return (name, 0, clean, 0 if name else start, lineno, "")


def nodes(t: Tables, granularity: str) -> Nodes:
    """The node table of a granularity (cached on t)."""
    key = ("nodes", granularity)
    found = t.cache.get(key)
    if found is None:
        found = t.cache[key] = _build(t, granularity)
    return found


def _codes(values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Each value's code in a table of distinct values; code 0 is ''."""
    index: dict[str, int] = {"": 0}
    codes = np.fromiter(
        (index.setdefault(v, len(index)) for v in values), dtype=_I64, count=len(values)
    )
    return codes, list(index)


def _build(t: Tables, granularity: str) -> Nodes:
    if granularity not in GRANULARITIES:
        raise ValueError(f"invalid granularity {granularity!r}")
    keep_name = granularity != "files"
    keep_file = granularity != "functions"
    keep_line = granularity in ("lines", "addresses")
    keep_address = granularity == "addresses"

    n_loc = len(t.loc_mapping)
    n_func = len(t.func_name)
    raw_files = t.func_names[2]
    name_code, name_text = _codes(t.func_name if keep_name else [""] * n_func)
    cleaned = {f: go_clean(f) for f in set(raw_files) if f} if keep_file else {}
    file_code, file_text = _codes([cleaned.get(f, "") for f in raw_files])
    obj_code, obj_text = _codes(t.map_file + [""])  # index -1: no mapping
    start = np.asarray(t.func_start, dtype=_I64) if n_func else np.zeros(0, _I64)

    line_loc = np.repeat(np.arange(n_loc, dtype=_I64), np.diff(t.line_off))
    func = t.line_func
    has_func = func >= 0
    f = np.where(has_func, func, 0)
    if n_func:
        lname = np.where(has_func, name_code[f], 0)
        lfile = np.where(has_func, file_code[f], 0)
        lstart = np.where(has_func, start[f], 0)
    else:
        lname = lfile = lstart = np.zeros(len(func), dtype=_I64)
    lline = t.line_no if keep_line else np.zeros(len(func), dtype=_I64)
    loc_addr = t.loc_address.view(_I64) if keep_address else np.zeros(n_loc, dtype=_I64)
    lobj = obj_code[t.loc_mapping[line_loc]] if len(line_loc) else np.zeros(0, _I64)
    # Objfile and start line only name nodes without a function name (graph.nodeInfo); a line
    # without a function has neither name, file nor line.
    nameless = lname == 0
    lobj = np.where(nameless, lobj, 0)
    lstart = np.where(nameless & has_func, lstart, 0)
    lline = np.where(has_func, lline, 0)
    rows = np.stack(
        [lname, lfile, lline, loc_addr[line_loc] if len(line_loc) else lname, lobj, lstart],
        axis=1,
    )
    bare = np.stack(
        [
            np.zeros(n_loc, dtype=_I64),
            np.zeros(n_loc, dtype=_I64),
            np.zeros(n_loc, dtype=_I64),
            loc_addr,
            obj_code[t.loc_mapping],
            np.zeros(n_loc, dtype=_I64),
        ],
        axis=1,
    )
    both = np.concatenate((rows, bare)) if len(rows) + len(bare) else np.zeros((0, 6), _I64)
    uniq, first, inverse = np.unique(both, axis=0, return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    infos: list[Info] = [
        (
            name_text[a],
            b & ((1 << 64) - 1),
            file_text[c],
            s,
            ln,
            obj_text[o],
        )
        for a, c, ln, b, o, s in uniq.tolist()
    ]
    # A display file per node: the first function's source file, else the binary.
    src = []
    for k, row in enumerate(first.tolist()):
        if infos[k][2]:
            src.append(infos[k][2])
        elif row < len(func) and func[row] >= 0 and raw_files[int(func[row])]:
            src.append(raw_files[int(func[row])])
        else:
            src.append(infos[k][5])
    return Nodes(
        granularity=granularity,
        line_node=inverse[: len(rows)].astype(_I64),
        bare_node=inverse[len(rows) :].astype(_I64),
        infos=infos,
        names=[printable(i) for i in infos],
        files=src,
        keys=[sprint(i) for i in infos],
        index={info: k for k, info in enumerate(infos)},
    )
