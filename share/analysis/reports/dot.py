"""`go tool pprof -dot`: the call graph in Graphviz's language, as Go 1.19's ComposeDot writes it.

The graph is report.newTrimmedGraph in visual mode (callgraph.trimmed: node fraction 0.005,
edge fraction 0.001, 80 nodes with nodelets counted, entropy order, redundant residual edges
removed); each node is a box sized by its flat weight and coloured by its cum, with up to four
nodelets of its label sets and byte sizes; edges carry their weight, dotted when residual.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..measure.text import go_base, report_lines
from ..measure.units import (
    abs64,
    formatter,
    go_int64,
    label,
    output_unit,
    percentage,
    scale,
    wrap64,
)
from ..refine.nodes import Info, components
from . import dotfmt
from .callgraph import MAX_NODELETS, edge_order, trimmed
from .explore import Report
from .nodetags import NodeTags, Tag, Tagger

_I64 = np.int64
NODE_COUNT, NODE_FRACTION, EDGE_FRACTION = 80, 0.005, 0.001  # pprof's defaults for -dot


def dot_text(
    rep: Report,
    node_count: int = NODE_COUNT,
    node_fraction: float = NODE_FRACTION,
    edge_fraction: float = EDGE_FRACTION,
    escape_labels: bool = False,
) -> str:
    """The whole -dot output of a report. pprof writes a label value into its nodelet as it
    is, so a value with a quote makes DOT Graphviz cannot read; escape_labels (for our own
    SVG, never for the -dot text) escapes it as every other string is escaped."""
    g = rep.graph
    total_value = wrap64(int(g.flat[g.present].sum(dtype=_I64)))
    cutoff = abs64(go_int64(float(total_value) * node_fraction))
    tagger = Tagger(g, rep.sample_stack, rep.removed_keys, cutoff)
    cache: dict[int, NodeTags] = {}

    def tags_of(n: int) -> NodeTags:
        if n not in cache:
            cache[n] = tagger.tags(n)
            cache[n].trim(cutoff)
        return cache[n]

    def tag_counts(nodes: np.ndarray, _: int) -> np.ndarray:
        return np.array([tags_of(n).count() for n in nodes.tolist()], dtype=_I64)

    tr = trimmed(
        g,
        node_count=node_count,
        node_fraction=node_fraction,
        edge_fraction=edge_fraction,
        visual=True,
        tag_counts=tag_counts,
    )
    nodes = tr.nodes
    unit = output_unit(rep.header.sample_unit, g.total, g.flat[nodes], g.cum[nodes])
    fmt = formatter(rep.header.sample_unit, unit)
    total = g.total
    lines = report_lines(
        rep.header,
        total,
        fmt,
        filters=rep.filters,
        flat_sum=wrap64(int(g.flat[nodes].sum(dtype=_I64))),
        shown=len(nodes),
        orig_count=tr.orig_count,
        dropped_nodes=tr.dropped_nodes,
        node_cutoff=abs64(go_int64(float(total) * node_fraction)),
        dropped_edges=tr.dropped_edges,
        edge_cutoff=abs64(go_int64(float(total) * edge_fraction)),
        full=True,
    )
    title = go_base(rep.header.main_file) if rep.header.main_file else ""
    out = [f'digraph "{title or "unnamed"}" {{', 'node [style=filled fillcolor="#f8f8f8"]']
    legend = f'subgraph cluster_L {{ "{dotfmt.escape(lines[0])}" [shape=box fontsize=16'
    legend += ' label="' + r"\l".join(dotfmt.escape(x) for x in lines) + r'\l"'
    if title:
        legend += f' tooltip="{title}"'
    out.append(legend + "] }")
    if len(nodes):
        st = g.stacks
        infos = st.infos or []
        ids = {n: i + 1 for i, n in enumerate(nodes.tolist())}
        flats, cums = g.flat[nodes].tolist(), g.cum[nodes].tolist()
        max_flat = float(max(abs64(f) for f in flats))
        out_edges = set(tr.edges.src.tolist())
        nodelets = set()
        for n, flat, cum in zip(nodes.tolist(), flats, cums, strict=True):
            out.append(_node(ids[n], infos[n], st.names[n], flat, cum, max_flat, total, fmt))
            text = _nodelets(ids[n], tags_of(n), n in out_edges, fmt, escape_labels)
            if text:
                nodelets.add(n)
                out.append(text.rstrip("\n"))
        e = tr.edges
        listed = np.zeros(len(st.names), dtype=bool)
        listed[nodes] = True
        for k in edge_order(g, e, np.flatnonzero(listed[e.src])).tolist():  # listed nodes' out
            out.append(_edge(e, k, ids, st.names, total, fmt, int(e.src[k]) in nodelets))
    out.append("}")
    return "\n".join(out) + "\n"


def _pct(value: int, total: int) -> str:
    return percentage(value, total).strip()


def _node(
    i: int, info: Any, name: str, flat: int, cum: int, max_flat: float, total: int, fmt: Any
) -> str:
    """builder.addNode."""
    text = multiline_name(info)
    flat_value = fmt(flat)
    text += f"{flat_value} ({_pct(flat, total)})" if flat != 0 else "0"
    cum_value = flat_value
    if cum != flat:
        text += r"\n" if flat != 0 else " "
        cum_value = fmt(cum)
        text += f"of {cum_value} ({_pct(cum, total)})"
    size = 8
    if max_flat != 0 and flat != 0 and float(abs64(flat)) <= max_flat:
        size += int(math.ceil(16.0 * math.sqrt(float(abs64(flat)) / max_flat)))
    score = _ratio(cum, total)
    return (
        f'N{i} [label="{text}" id="node{i}" fontsize={size} shape=box '
        f'tooltip="{dotfmt.escape(name)} ({cum_value})" color="{dotfmt.color(score, False)}" '
        f'fillcolor="{dotfmt.color(score, True)}"]'
    )


def _ratio(value: int, total: int) -> float:
    """float64(v) / float64(abs64(total)), with Go's infinities for a zero total."""
    denominator = float(abs64(total))
    if denominator == 0:
        return math.nan if value == 0 else math.copysign(math.inf, value)
    return float(value) / denominator


def _sort_tags(tags: list[Tag], flat: bool) -> list[Tag]:
    """graph.SortTags: by |flat| (or |cum|, then |flat|) descending, then name."""
    if flat:
        return sorted(tags, key=lambda t: (-abs(t.flat), t.name))
    return sorted(tags, key=lambda t: (-abs(t.cum), -abs(t.flat), t.name))


def _nodelets(i: int, tags: NodeTags, flat_tags: bool, fmt: Any, escape: bool) -> str:
    """builder.addNodelets: the top label-set tags, each with its numeric tags, then the node's
    own numeric tags (flat weights for inner nodes, cum for leaves)."""
    out = ""
    ts = _sort_tags(list(tags.label.values()), flat_tags)[:MAX_NODELETS]
    for j, t in enumerate(ts):
        w = t.flat if flat_tags else t.cum
        if w == 0:
            continue
        weight, name = fmt(w), dotfmt.escape(t.name) if escape else t.name
        out += (
            f'N{i}_{j} [label = "{name}" id="N{i}_{j}" fontsize=8 shape=box3d tooltip="{weight}"]\n'
        )
        out += (
            f'N{i} -> N{i}_{j} [label=" {weight}" weight=100 tooltip="{weight}" '
            f'labeltooltip="{weight}"]\n'
        )
        numeric = tags.numeric.get(t.name)
        if numeric:
            out += _numeric(list(numeric.values()), flat_tags, f"N{i}_{j}", fmt)
    own = tags.numeric.get("")
    if own:
        out += _numeric(list(own.values()), flat_tags, f"N{i}", fmt)
    return out


def _numeric(tags: list[Tag], flat_tags: bool, source: str, fmt: Any) -> str:
    """builder.numericNodelets: byte sizes collapsed into at most four ranges."""
    out = ""
    for j, t in enumerate(_collapsed(tags, MAX_NODELETS, flat_tags)):
        w, attr = t.cum, ' style="dotted"'
        if flat_tags or t.flat == t.cum:
            w, attr = t.flat, ""
        if w != 0:
            weight = fmt(w)
            out += (
                f'N{source}_{j} [label = "{t.name}" id="N{source}_{j}" fontsize=8 '
                f'shape=box3d tooltip="{weight}"]\n'
            )
            out += (
                f'{source} -> N{source}_{j} [label=" {weight}" weight=100 tooltip="{weight}" '
                f'labeltooltip="{weight}"{attr}]\n'
            )
    return out


def _collapsed(tags: list[Tag], count: int, flat_tags: bool) -> list[Tag]:
    """builder.collapsedTags: the first `count` tags seed groups; the rest join the nearest."""
    tags = _sort_tags(tags, flat_tags)
    if len(tags) <= count:
        return tags
    groups = [[t] for t in tags[:count]]
    for t in tags[count:]:
        best, distance = 0, _distance(t, groups[0][0])
        for k in range(1, count):
            d = _distance(t, groups[k][0])
            if d < distance:
                best, distance = k, d
        groups[best].append(t)
    return _sort_tags([_group(g) for g in groups], flat_tags)


def _distance(t: Tag, u: Tag) -> float:
    v, _ = scale(u.value, u.unit, t.unit)
    return float(t.value) - v if v < float(t.value) else v - float(t.value)


def _group(g: list[Tag]) -> Tag:
    """tagGroupLabel: one tag's value, or 'min..max' of the group, weights summed."""
    if len(g) == 1:
        t = g[0]
        return Tag(label(t.value, t.unit), t.flat, t.cum)
    low = high = g[0]
    flat, cum = g[0].flat, g[0].cum
    for t in g[1:]:
        if go_int64(scale(t.value, t.unit, low.unit)[0]) < low.value:
            low = t
        if go_int64(scale(t.value, t.unit, high.unit)[0]) > high.value:
            high = t
        flat, cum = wrap64(flat + t.flat), wrap64(cum + t.cum)
    return Tag(label(low.value, low.unit) + ".." + label(high.value, high.unit), flat, cum)


def _edge(
    e: Any, k: int, ids: dict[int, int], names: list[str], total: int, fmt: Any, nodelets: bool
) -> str:
    """builder.addEdge."""
    w = int(e.weight[k])
    inline = r"\n (inline)" if e.inline[k] else ""
    value = fmt(w)
    attr = f'label=" {value}{inline}"'
    if total != 0:
        weight = 1 + min(abs64(dotfmt.go_div(wrap64(w * 100), total)), 100)
        if weight > 1:
            attr += f" weight={weight}"
        width = 1 + min(abs64(dotfmt.go_div(wrap64(w * 5), total)), 5)
        if width > 1:
            attr += f" penwidth={width}"
        attr += f' color="{dotfmt.color(_ratio(w, total), False)}"'
    residual = bool(e.residual[k])
    arrow = "..." if residual else "->"
    src, dst = int(e.src[k]), int(e.dst[k])
    tip = f'"{dotfmt.escape(names[src])} {arrow} {dotfmt.escape(names[dst])} ({value})"'
    attr += f" tooltip={tip} labeltooltip={tip}"
    if residual:
        attr += ' style="dotted"'
    if nodelets:
        attr += " minlen=2"
    return f"N{ids.get(src, 0)} -> N{ids.get(dst, 0)} [{attr}]"


def multiline_name(info: Info) -> str:
    """dotgraph.multilinePrintableName: the DOT label's name part (escaped, one part a line)."""
    name, address, file, start, lineno, objfile = info
    name = dotfmt.escape(dotfmt.shorten(name)).replace("::", r"\n").replace("[...]", "[…]")
    name = name.replace(".", r"\n")
    if file:
        file = go_base(file)
    return r"\n".join(components((name, address, file, start, lineno, objfile))) + r"\n"
