"""What a range's flame graph would cost from summed stack summaries, against a pprof merge.

`.venv/bin/python bench/summaries.py [--windows 30] [--runs 3]`

The fleet goal (issue 18: range views p99 < 1 s at 20 adds/s on two cores) is missed because a
range's flame graph costs pprof merges of its members (bench/fleet.py; README "Running at
scale"). Pyroscope answers the same question from stack summaries summed over a range. This
measures that route on the fleet's own members (bench/fleet_profiles.py, 64 CPU or heap
members of about 100 KB, as one 10 s window of 100 targets) with the analysis core's own
Stacks, and checks it gives the merged profile's flame graph, before anyone wires it in:

- today: decode the 64 members, merge them, encode, gzip, validate again (the merge process's
  block), then decode the block and lay out its flame graph (the analysis process's view);
- summaries: each member's summary (its function-level stacks and their values per sample
  type, taken from the decoded member: the ingest process would do this after its validation,
  so the decode is not counted again), its size as zlib'd arrays (what S3 would hold per
  member), summing 64 of them, and the flame graph laid out from the sum;
- a range: summing the window summaries of --windows windows (a 5-minute range of 10 s
  blocks), against merging the same windows' blocks from kept columns, encoding, gzip and
  decoding the result, and laying it out (today's selection and its view).

Prints CPU milliseconds (process time, median of --runs) and the ratios. The flame graph JSON
from the sum must equal the merged profile's with every node (budget 0: pprof's whole tree),
node for node: the run fails otherwise. Under the page's node budget the two may keep
different nodes among those of equal weight (the budget's last tie-break is the order of the
stacks, which a merge and a sum number differently).
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TypeVar

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_profiles import FleetProfiles  # noqa: E402

from share import pprof  # noqa: E402
from share.analysis.combine import combine  # noqa: E402
from share.analysis.flame import flame  # noqa: E402
from share.analysis.model.graph import _merged_weights, node_sums  # noqa: E402
from share.analysis.model.stacks import Stacks, unique_stacks  # noqa: E402
from share.analysis.model.tables import sample_index, tables  # noqa: E402
from share.analysis.views import views  # noqa: E402
from share.pprof import columns as pc  # noqa: E402

T = TypeVar("T")
LIMITS = pprof.Limits()
MAX_BYTES = 1 << 30
_EMPTY = np.zeros(0, dtype=np.int32)


@dataclass
class Summary:
    """A profile as its function-level stacks (root first, node ids into keys) and the value
    of each stack per sample type: what a flame graph or a top table of its sum needs."""

    keys: list[str]  # pprof's NodeInfo key per node: the identity nodes are matched by
    names: list[str]
    files: list[str]
    frame_node: np.ndarray  # int32
    frame_off: np.ndarray  # int64, n_stacks + 1
    values: np.ndarray  # int64 [n_stacks, n_types]
    sample_types: list[tuple[str, str]]
    default_type: str | None

    def nbytes(self) -> int:
        """Its size as S3 would hold it: the arrays and the node strings, zlib'd."""
        strings = "\0".join(self.keys + self.names + self.files).encode()
        arrays = self.frame_node.tobytes() + self.frame_off.tobytes() + self.values.tobytes()
        return len(zlib.compress(strings + arrays, 6))


def summary(parsed: Any) -> Summary:
    """A decoded profile's summary, from the analysis core's own Stacks."""
    t = tables(parsed)
    g = views.graph_of(parsed, t.sample_index(None))
    st = g.stacks
    columns = [
        node_sums(st, _merged_weights(t, t.values[:, i]))[0] for i in range(t.values.shape[1])
    ]
    # Merge drops samples whose every value is zero (isZeroSample): so does the summary.
    live = np.zeros(len(st.frame_off) - 1, dtype=bool)
    live[st.stack_of[(t.values != 0).any(axis=1)]] = True
    kept = np.flatnonzero(live)
    lengths = np.diff(st.frame_off)[kept]
    off = pc.offsets(lengths)
    take = pc.ranges(st.frame_off[kept], lengths)
    return Summary(
        st.keys,
        st.names,
        st.files,
        st.frame_node[take].astype(np.int32),
        off,
        np.stack(columns, axis=1)[kept],
        list(t.sample_types),
        t.default_sample_type,
    )


def summed(parts: Sequence[Summary]) -> Summary:
    """The summary of the parts' merge: nodes matched by key, equal stacks found as the core
    finds them (stacks.unique_stacks: hashed, then compared), their values added."""
    ids: dict[str, int] = {}
    keys: list[str] = []
    names: list[str] = []
    files: list[str] = []
    frames, lengths, values = [], [], []
    for p in parts:
        known = len(ids)
        remap = np.array([ids.setdefault(k, len(ids)) for k in p.keys], dtype=np.int64)
        for i in np.flatnonzero(remap >= known).tolist():  # nodes first seen here
            keys.append(p.keys[i])
            names.append(p.names[i])
            files.append(p.files[i])
        frames.append(remap[p.frame_node])
        lengths.append(np.diff(p.frame_off))
        values.append(p.values)
    stack, frame_node, off = unique_stacks(
        np.concatenate(frames), pc.offsets(np.concatenate(lengths)), always=True
    )
    vals = np.zeros((len(off) - 1, parts[0].values.shape[1]), dtype=np.int64)
    np.add.at(vals, stack, np.concatenate(values))
    first = parts[0]
    return Summary(
        keys, names, files, frame_node.astype(np.int32), off, vals, first.sample_types,
        first.default_type,
    )  # fmt: skip


def flame_doc(s: Summary, budget: int = flame.FLAME_NODE_BUDGET) -> dict[str, Any]:
    """The flame graph JSON of a summary's default sample type, as views.flamegraph_doc: the
    core's own flame.flamegraph, given the parts of a Graph it reads."""
    index = sample_index(s.sample_types, s.default_type, None)
    assert index is not None
    w = s.values[:, index]
    st = Stacks(
        frame_node=s.frame_node, frame_inline=_EMPTY, frame_off=s.frame_off, frame_owner=_EMPTY,
        first_owner=_EMPTY, first_starts=_EMPTY, first_nodes=_EMPTY, stack_of=_EMPTY,
        names=s.names, files=s.files, keys=s.keys, any_inline=False,
    )  # fmt: skip
    header = SimpleNamespace(sample_types=s.sample_types, sample_index=lambda _name: index)
    g = SimpleNamespace(
        tables=header, stacks=st, stack_weights=w, weights=w, total=int(np.abs(w).sum()),
        index=index, sample_type=s.sample_types[index],
    )  # fmt: skip
    return {**flame.flamegraph(g, 0.0, budget), "diff": False, "warnings": []}  # type: ignore[arg-type]


def canonical(doc: dict[str, Any]) -> dict[str, Any]:
    """A flame graph JSON with each node's name and file in place of its index: the table of
    names lists them in the order of the profile's node ids, which a merge and a sum number
    differently."""
    doc = dict(doc)
    names, files = doc.pop("names"), doc.pop("files")
    nodes = dict(doc["nodes"])
    nodes["name"] = [(names[i], files[i]) for i in nodes["name"]]
    doc["nodes"] = nodes
    return doc


def cpu_ms(f: Callable[[], T]) -> tuple[T, float]:
    start = time.process_time()
    result = f()
    return result, (time.process_time() - start) * 1000


def parse(data: bytes) -> Any:
    return pprof.parse(data, max_profile_bytes=MAX_BYTES, limits=LIMITS)


def window(fleet: FleetProfiles, kind: str, nth: int, members: int) -> list[bytes]:
    when = 1_700_000_000_000_000_000 + nth * 10_000_000_000
    return [fleet.bases[k, kind] + fleet.suffix(k, kind, nth, when + k) for k in range(members)]


Figures = dict[str, list[float]]
RANGE_MERGE = "range: merged, flame graph"
RANGE_SUM = "range: summed, flame graph"


def one_run(
    fleet: FleetProfiles, kind: str, nth: int, args: argparse.Namespace, f: Figures
) -> None:
    """Both routes on the nth window of kind, CPU ms into f; fails if their trees differ."""

    def note(name: str, ms: float) -> None:
        f.setdefault(name, []).append(ms)

    members = window(fleet, kind, nth, args.members)
    parsed, ms = cpu_ms(lambda: [parse(m) for m in members])
    note("decode members", ms)
    columns, ms = cpu_ms(lambda: [combine.from_parsed(p) for p in parsed])
    merged, ms2 = cpu_ms(lambda: combine.merged_prof(columns, ""))
    raw, ms3 = cpu_ms(lambda: combine.encode(merged))
    gz, ms4 = cpu_ms(lambda: gzip.compress(raw, 1, mtime=0))
    block, ms5 = cpu_ms(lambda: parse(gz))
    note("merge, encode, gzip, validate", ms + ms2 + ms3 + ms4 + ms5)
    note("block KB gzip", len(gz) / 1000)
    t = tables(block)
    _, ms = cpu_ms(lambda: views.flamegraph_doc(t, t.sample_index(None)))
    note("block decoded, flame graph", ms + ms5)  # the analysis process decodes it again
    every_node = views.flamegraph_doc(t, t.sample_index(None), 0.0, 0)
    sums, ms = cpu_ms(lambda: [summary(p) for p in parsed])
    note("member summaries (after decode)", ms)
    note("summary KB per member (zlib)", statistics.mean(s.nbytes() for s in sums) / 1000)
    total, ms = cpu_ms(lambda: summed(sums))
    note("sum of member summaries", ms)
    _, ms = cpu_ms(lambda: flame_doc(total))
    note("flame graph from the sum", ms)
    got, want = canonical(flame_doc(total, budget=0)), canonical(every_node)
    if got != want:
        bad = [k for k in want if got.get(k) != want[k]]
        raise SystemExit(f"{kind}: the summed flame graph differs from the merge's in {bad}")
    # A range of --windows windows, each this one (the fleet's windows differ by a sample per
    # member): today its blocks are merged into a selection, stored, decoded and laid out.
    blocks = [merged] * args.windows

    def selection_view() -> None:
        t = tables(parse(gzip.compress(combine.encode(combine.merged_prof(blocks, "")), 1)))
        views.flamegraph_doc(t, t.sample_index(None))

    _, ms = cpu_ms(selection_view)
    note(RANGE_MERGE, ms)
    _, ms = cpu_ms(lambda: flame_doc(summed([total] * args.windows)))
    note(RANGE_SUM, ms)


def report(kind: str, f: Figures, args: argparse.Namespace) -> None:
    med = {k: statistics.median(v) for k, v in f.items()}
    print(
        f"\n{kind}: {args.members} members, {args.windows} windows a range, median of {args.runs}"
    )
    for k, v in med.items():
        print(f"  {k:40s} {v:9.1f}")
    today = med["decode members"] + med["merge, encode, gzip, validate"]
    today += med["block decoded, flame graph"]
    route = med["member summaries (after decode)"] + med["sum of member summaries"]
    route += med["flame graph from the sum"]
    print(f"  a window's flame graph, merged / summed: {today:.0f} / {route:.0f} ms")
    print(f"    = {today / route:.1f}x (the summed route's decode is the ingest's, not counted)")
    print(f"  a range's flame graph, merged / summed: {med[RANGE_MERGE] / med[RANGE_SUM]:.1f}x")
    print("  every node of the summed flame graph equals the merged profile's: yes")


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--members", type=int, default=64)
    ap.add_argument("--windows", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    fleet = FleetProfiles(100)
    for kind in ("cpu", "heap"):
        figures: Figures = {}
        for nth in range(args.runs):
            one_run(fleet, kind, nth, args, figures)
        report(kind, figures, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
