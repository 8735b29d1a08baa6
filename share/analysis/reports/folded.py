"""`/<id>/folded`: the stacks of a (refined) report as folded text, `root;...;leaf N` a line.

The input of flamegraph.pl and speedscope, and what the folded-stacks upload reads back: one
line per distinct stack of the report's graph (after the view's filters and granularity),
its frames root first by pprof's printable names, its weight the stack's value for the sample
type (signed in a diff); stacks weighing nothing are left out (share.pprof.formats.export).
"""

from __future__ import annotations

from ...pprof.formats.export import folded_lines
from .explore import Report


def folded_text(rep: Report) -> str:
    g = rep.graph
    st = g.stacks
    off = st.frame_off.tolist()
    nodes = st.frame_node.tolist()
    names = st.names
    stacks = ([names[n] for n in nodes[off[i] : off[i + 1]]] for i in range(len(off) - 1))
    lines = folded_lines(stacks, g.stack_weights.tolist())
    return "".join(f"{line}\n" for line in lines)
