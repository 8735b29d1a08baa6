"""What a range's flame graph would cost from summed stack summaries, against a pprof merge.

`.venv/bin/python bench/summaries.py [--windows 30] [--runs 3]`

The fleet goal (issue 18: range views p99 < 1 s at 20 adds/s on two cores) is missed because a
range's flame graph costs pprof merges of its members (bench/fleet.py; README "Running at
scale"). Pyroscope answers the same question from stack summaries summed over a range. This
measures that route on the fleet's own members (bench/fleet_profiles.py, 64 CPU or heap
members of about 100 KB, as one 10 s window of 100 targets) with the core's summaries
(share.analysis.combine.summed, what a collection's range views now sum), and checks that they
give the merged profile's flame graph:

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
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_profiles import FleetProfiles  # noqa: E402

from share import pprof  # noqa: E402
from share.analysis.combine import combine, summed  # noqa: E402
from share.analysis.flame import flame  # noqa: E402
from share.analysis.model.tables import sample_index, tables  # noqa: E402
from share.analysis.views import views  # noqa: E402

T = TypeVar("T")
LIMITS = pprof.Limits()
MAX_BYTES = 1 << 30


def nbytes(s: summed.Summary) -> int:
    """A summary's size as S3 would hold it: its arrays and node strings, zlib'd."""
    strings = "\0".join(s.keys + s.names + s.files).encode()
    arrays = s.frame_node.tobytes() + s.frame_inline.tobytes() + s.frame_off.tobytes()
    return len(zlib.compress(strings + arrays + s.values.tobytes(), 6))


def flame_doc(s: summed.Summary, budget: int = flame.FLAME_NODE_BUDGET) -> dict[str, Any]:
    """The flame graph JSON of a summary's default sample type, as the collection's range
    view lays it out (views.render_summed), before its encoding."""
    index = sample_index(s.sample_types, s.default_type, None)
    doc = flame.flamegraph(summed.graph(s, index), 0.0, budget)
    return {**doc, "diff": False, "warnings": []}


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
    sums, ms = cpu_ms(lambda: [summed.of(p) for p in parsed])
    note("member summaries (after decode)", ms)
    note("summary KB per member (zlib)", statistics.mean(nbytes(s) for s in sums) / 1000)
    total, ms = cpu_ms(lambda: summed.summed(sums))
    note("sum of member summaries", ms)
    _, ms = cpu_ms(lambda: flame_doc(total))
    note("flame graph from the sum", ms)
    got, want = flame.by_name(flame_doc(total, budget=0)), flame.by_name(every_node)
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
    _, ms = cpu_ms(lambda: flame_doc(summed.summed([total] * args.windows)))
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
