"""Server time of pprof's refinements on a warm profile, beside `go tool pprof` on the same report.

    .venv/bin/python bench/refine.py [--runs 5]

On go-runtime/cpu-xl.pb.gz and on the labelled CPU profile Go records of itself (bench/run.py's
bench/out/labelled-go-cpu.pb.gz, recorded once if missing), with the profile parsed and its
tables warm (what the compute tier keeps per profile), each run asks for a filter combination
not seen before (a regex alternative that matches nothing is varied, so no cache answers) and
times what the server does for it: options.parse, views.render and the gzip of the bytes for
the cache. Beside each, `go tool pprof` making the same report on the same file, the whole
process (it parses the profile every time: that is what a user waits for). Medians of --runs,
all in one run, round robin, so load from other processes hits both alike.

Goals (issue 10): a new filter combination within 150 ms on cpu-xl and 500 ms on the labelled
profile; the call graph SVG at the default node count (80) within 1 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import LABELLED_GO, process, record_labelled_go  # noqa: E402

from share import pprof  # noqa: E402
from share.analysis.model.graph import graph  # noqa: E402
from share.analysis.model.tables import tables  # noqa: E402
from share.analysis.views import options, views  # noqa: E402
from share.compute.worker import view_gzip  # noqa: E402

CPU_XL = ROOT / "tests" / "corpus" / "go-runtime" / "cpu-xl.pb.gz"
# (profile, label, view, query, goal in seconds or None, go's flags for the same report)
Case = tuple[Path, str, str, dict[str, str], float | None, list[str]]
CASES: list[Case] = [
    (CPU_XL, "top -focus", "toptext", {"focus": "main\\.(deep|cpu)"}, 0.150,
     ["-top", "-nodefraction=0", "-focus=main\\.(deep|cpu)"]),
    (CPU_XL, "top JSON -focus -cum", "top", {"focus": "main\\.(deep|cpu)", "cum": "t"}, 0.150,
     ["-top", "-nodefraction=0", "-focus=main\\.(deep|cpu)", "-cum"]),
    (CPU_XL, "flame JSON -focus", "flamegraph", {"focus": "main\\.(deep|cpu)"}, 0.150,
     ["-top", "-nodefraction=0", "-focus=main\\.(deep|cpu)"]),
    (CPU_XL, "top -hide", "toptext", {"hide": "runtime"}, 0.150,
     ["-top", "-nodefraction=0", "-hide=runtime"]),
    (CPU_XL, "top -lines -focus", "toptext", {"focus": "main", "granularity": "lines"}, 0.150,
     ["-top", "-nodefraction=0", "-focus=main", "-lines"]),
    (CPU_XL, "peek", "peektext", {"peek": "^main\\.deepWork\\.func1$"}, 0.150,
     ["-peek=^main\\.deepWork\\.func1$"]),
    (CPU_XL, "graph.svg (dot: -dot)", "svg", {"focus": "main"}, 1.0, ["-dot", "-focus=main"]),
    (LABELLED_GO, "top -tagfocus", "toptext", {"tagfocus": "route=orders"}, 0.500,
     ["-top", "-nodefraction=0", "-tagfocus=route=orders"]),
    (LABELLED_GO, "flame JSON -tagfocus", "flamegraph", {"tagfocus": "route=orders"}, 0.500,
     ["-top", "-nodefraction=0", "-tagfocus=route=orders"]),
    (LABELLED_GO, "top -tagroot=route", "toptext", {"tagroot": "route"}, 0.500,
     ["-top", "-nodefraction=0", "-tagroot=route"]),
    (LABELLED_GO, "top -focus -lines", "toptext", {"focus": "json", "granularity": "lines"}, 0.500,
     ["-top", "-nodefraction=0", "-focus=json", "-lines"]),
    (LABELLED_GO, "tags -focus", "tagstext", {"focus": "json"}, 0.500, ["-tags", "-focus=json"]),
    (LABELLED_GO, "graph.svg (dot: -dot)", "svg", {"tagfocus": "route=orders"}, 1.0,
     ["-dot", "-tagfocus=route=orders"]),
]  # fmt: skip
# The option each run varies (an alternative matching nothing), so every run is a new query.
VARY = ("focus", "hide", "tagfocus")


def varied(query: dict[str, str], run: int) -> dict[str, str]:
    """The query with a new, equivalent filter: an alternative matching nothing added to its
    regex, else (peek, tagroot) an ignore= that matches nothing."""
    out = dict(query)
    for name in VARY:
        if name in out:
            out[name] += f"|zz_none{run}"
            return out
    out["ignore"] = f"zz_none{run}"
    return out


def serve(parsed: pprof.ParsedProfile, view: str, query: dict[str, str]) -> None:
    """What the compute tier does for a view: canonical options, render, gzip for the cache."""
    types = parsed.sample_types()
    opts = options.parse(view, query, types, tables(parsed).default_sample_type)
    view_gzip(views.render(view, [parsed], opts))


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    args = parser.parse_args()
    go = shutil.which("go")
    work = Path(tempfile.mkdtemp(prefix="pprof-share-bench-"))
    env = {**os.environ, "HOME": str(work), "GOCACHE": str(work / "gocache")}
    env.update(PPROF_BINARY_PATH=str(work / "none"), PPROF_TMPDIR=str(work / "pprof"))
    if go and not LABELLED_GO.exists():
        record_labelled_go(go, work, env)
    cases = [c for c in CASES if c[0].exists()]
    if len(cases) < len(CASES):
        print(f"{LABELLED_GO.name} missing (go is not installed): cpu-xl only")
    profiles: dict[Path, pprof.ParsedProfile] = {}
    for path in {c[0] for c in cases}:
        parsed = pprof.parse(path.read_bytes(), max_profile_bytes=1 << 30)
        t = tables(parsed)
        graph(t, t.sample_index(None))  # warm: tables, stacks, the default type's graph
        profiles[path] = parsed
        serve(parsed, "toptext", {"focus": "zz_warm"})  # and the labels, node tables
        serve(parsed, "toptext", {"tagfocus": "zz_warm", "granularity": "lines"})
    ours: dict[int, list[float]] = {i: [] for i in range(len(cases))}
    theirs: dict[int, list[float]] = {i: [] for i in range(len(cases))}
    for run in range(args.runs):
        for i, (path, _, view, query, _, flags) in enumerate(cases):
            parsed = profiles[path]
            ours[i].append(timed(lambda: serve(parsed, view, varied(query, run))))  # noqa: B023
            if go:
                cmd = [go, "tool", "pprof", *flags, str(path)]
                theirs[i].append(timed(process(cmd, env)))
    python = sys.version.split()[0]
    print(f"medians of {args.runs} runs, ms; python {python}, {os.cpu_count()} cpus")
    print(f"{'profile':24} {'report':24} {'ours':>8} {'go':>9} {'ours/go':>8}  goal")
    failed = 0
    for i, (path, label, _, _, goal, _) in enumerate(cases):
        mine = statistics.median(ours[i])
        go_time = statistics.median(theirs[i]) if theirs[i] else float("nan")
        met = goal is None or mine <= goal
        failed += not met
        verdict = "" if goal is None else f"{'pass' if met else 'FAIL'} <= {goal * 1000:.0f} ms"
        print(f"{path.name:24} {label:24} {mine * 1000:8.1f} {go_time * 1000:9.1f} "
              f"{mine / go_time:8.3f}  {verdict}")  # fmt: skip
    print(f"\n{len(cases) - failed} of {len(cases)} within their goal")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
