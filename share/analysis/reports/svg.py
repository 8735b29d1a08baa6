"""The call graph as SVG: pprof's DOT laid out by Graphviz's `dot -Tsvg`, as its web UI does.

`dot` runs in a subprocess with a time limit and an address-space limit (set in the child
before it starts), so a pathological graph costs a bounded amount; the node count is capped
by query.py. As pprof's dotToSvg: `&;` (a Graphviz bug) becomes `&amp;;` and everything before
`<svg` (the XML prolog, the DOCTYPE) is dropped, so the SVG can be inlined in a page.
"""

from __future__ import annotations

import resource
import shutil
import subprocess

from ...errors import ShareError

TIMEOUT_SECONDS = 10  # a graph of the node limit lays out in well under a second
MEMORY_BYTES = 1 << 30  # address space of the dot process


class GraphvizMissing(ShareError):
    """The server has no Graphviz: 501, as pprof says 'may need to install graphviz'."""

    code = 501


def _limit_memory() -> None:  # runs in the child, before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def render(dot_source: bytes) -> bytes:
    """SVG bytes of a DOT graph (ShareError when Graphviz is missing, too slow or fails)."""
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizMissing(
            "graphviz not installed: the server cannot draw the call graph "
            "(install Debian's graphviz package; /ID/dot gives the DOT text)"
        )
    try:
        done = subprocess.run(
            [exe, "-Tsvg"],
            input=dot_source,
            capture_output=True,
            timeout=TIMEOUT_SECONDS,
            preexec_fn=_limit_memory,  # between fork and exec: one setrlimit call, nothing more
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ShareError(
            f"graphviz took over {TIMEOUT_SECONDS} s to lay out this graph: ask for fewer "
            "nodes (?nodecount=)",
            422,
        ) from None
    if done.returncode != 0:
        problem = done.stderr.decode("utf-8", "replace").strip().splitlines()
        detail = problem[-1] if problem else f"exit status {done.returncode}"
        raise ShareError(f"graphviz could not lay out this graph: {detail}", 422)
    out = done.stdout.replace(b"&;", b"&amp;;")
    at = out.find(b"<svg")
    return out[at:] if at >= 0 else out
