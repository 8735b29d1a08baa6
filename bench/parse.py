"""Upload validation against its floor, in this process (no server: bench/compute.py has one).

    .venv/bin/python bench/parse.py [--runs 9]

For go-runtime/cpu-xl.pb.gz, google-pprof-testdata/large.cpu and the labelled profile
bench/gen/labelled.py writes into bench/out/ (made on first use), medians over --runs of:

  (a) floor    gunzip + SHA-256 + protobuf decode (upb) of the file, nothing else
  (p) parse    share.pprof.parse: inflate, decode, pprof's rules (the compiled core, scan.c)
  (u) upload   the compute tier's "ingest" job: parse + share.compute.ingest.ingest() (id,
               record fields, summary, kind)
  (y) python   (u) on the pure-Python path, as without scan.c built (for comparison)

and the ratios (u)/(a) (goal: at most 2.5, the compute issue's upload -> link goal less the
HTTP round trip) and (y)/(a). Every measurement of a profile is taken round robin in the same
run, so load from other processes hits them alike; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import LABELLED, PROFILES, floor, timed  # noqa: E402

from share import pprof  # noqa: E402
from share.compute.ingest import ingest  # noqa: E402
from share.pprof import scan  # noqa: E402

GOAL_UPLOAD = 2.5  # (u)/(a) at most


def parse(data: bytes) -> pprof.ParsedProfile:
    return pprof.parse(data, max_profile_bytes=1 << 30, limits=pprof.Limits())


def upload(data: bytes) -> None:
    ingest(parse(data), os.devnull)  # the blob (when one is made) written nowhere


def python_upload(data: bytes) -> None:
    saved, scan.LIB = scan.LIB, None
    try:
        upload(data)
    finally:
        scan.LIB = saved


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs per measurement (median)")
    args = parser.parse_args()
    if not LABELLED.exists():
        subprocess.run([sys.executable, str(ROOT / "bench/gen/labelled.py"), str(LABELLED)],
                       check=True)  # fmt: skip
    built = f"share/pprof/{scan.LIBRARY}" if scan.LIB is not None else "NOT BUILT"
    print(f"medians of {args.runs} runs, ms; compiled core: {built}; load {load()}")
    print(f"{'profile':22} {'MB':>5} {'(a)floor':>9} {'(p)parse':>9} {'(u)upload':>10} "
          f"{'(y)python':>10} {'u/a':>6} {'y/a':>6}")  # fmt: skip
    goals = []
    for path in PROFILES:
        data = path.read_bytes()
        steps: dict[str, Callable[[], object]] = {
            "a": lambda d=data: floor(d),
            "p": lambda d=data: parse(d),
            "u": lambda d=data: upload(d),
            "y": lambda d=data: python_upload(d),
        }
        for step in steps.values():
            step()  # warm: imports, caches, first-touch page faults
        times: dict[str, list[float]] = {k: [] for k in steps}
        for _ in range(args.runs):
            for k, step in steps.items():
                times[k].append(timed(step))
        med = {k: statistics.median(v) * 1000 for k, v in times.items()}
        u_a, y_a = med["u"] / med["a"], med["y"] / med["a"]
        print(f"{path.name:22} {len(data) / 1e6:5.1f} {med['a']:9.1f} {med['p']:9.1f} "
              f"{med['u']:10.1f} {med['y']:10.1f} {u_a:6.2f} {y_a:6.2f}")  # fmt: skip
        goals.append((path.name, u_a))
    print(f"load {load()}\n\ngoals")
    for name, ratio in goals:
        verdict = "pass" if ratio <= GOAL_UPLOAD else "FAIL"
        print(f"  {verdict}  {name:22} (u)/(a) <= {GOAL_UPLOAD:g}  {ratio:5.2f}")
    return 0 if all(r <= GOAL_UPLOAD for _, r in goals) else 1


if __name__ == "__main__":
    sys.exit(main())
