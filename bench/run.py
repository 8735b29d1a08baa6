"""Analysis speed against its floor and against `go tool pprof`, on three large profiles.

    .venv/bin/python bench/run.py [--runs 5]      (make bench)

For go-runtime/cpu-xl.pb.gz, google-pprof-testdata/large.cpu and heavy labelled CPU profiles
generated into bench/out/ once (delete a file to make it again) — a synthetic one by
bench/gen/labelled.py, and, when `go` is installed, a real one that bench/gen/labelled.go records
of itself with runtime/pprof in about 30 s — it prints medians over --runs of:

  (a) floor    gunzip + SHA-256 + protobuf decode (upb), nothing else
  (b) analysis share.pprof.parse (validation included) + flame graph JSON + top JSON, cold
               (not the gzip of each view for the cache: bench/paint.py's cold analysis has it)
  (c) warm     the cached flame graph JSON fetched through the app (Flask test client), gzipped
  (d) top      `pprof-share top FILE`, the whole process
  (e) go       `go tool pprof -top -nodefraction=0 FILE`, the whole process (the rows we print)
  (f) go -top  plain `go tool pprof -top FILE` (default node fraction), on the labelled ones only

and the ratios (b)/(a) (goal: within 3x) and (d)/(e) (goal: under 1 on every profile over 1 MB,
at most 0.1 on the labelled one), then which goals each profile meets. All timings of one profile
are taken in the same run, round robin, so load from other processes hits them alike.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from share import create_app, pprof  # noqa: E402
from share.analysis.model.tables import tables  # noqa: E402
from share.analysis.views import views  # noqa: E402
from share.pprof._proto import profile_pb2  # noqa: E402

CORPUS = ROOT / "tests" / "corpus"
OUT = ROOT / "bench" / "out"
LABELLED = OUT / "labelled-cpu.pb.gz"
LABELLED_GO = OUT / "labelled-go-cpu.pb.gz"
PROFILES = [
    CORPUS / "go-runtime/cpu-xl.pb.gz",
    CORPUS / "google-pprof-testdata/large.cpu",
    LABELLED,
]
BIN = Path(sys.executable).parent
GOAL_ANALYSIS = 3.0  # (b)/(a) at most
GOAL_TOP = 1.0  # (d)/(e) under, for profiles over 1 MB
GOAL_TOP_LABELLED = 0.1  # (d)/(e) at most, on the labelled profiles


def floor(data: bytes) -> None:
    raw = gzip.decompress(data)
    hashlib.sha256(raw).digest()
    profile_pb2.Profile.FromString(raw)


def analyse(data: bytes) -> None:
    parsed = pprof.parse(data, max_profile_bytes=1 << 30)
    index = tables(parsed).sample_index(None)
    views.flamegraph_json(parsed, index)
    views.top_json(parsed, index, 0)


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def record_labelled_go(go: str, work: Path, env: dict[str, str]) -> None:
    """Build bench/gen/labelled.go and let it write LABELLED_GO (a temporary name until done)."""
    binary = work / "labelled-go"
    build = [go, "build", "-o", str(binary), "."]
    subprocess.run(build, cwd=ROOT / "bench/gen", env=env, check=True)
    partial = LABELLED_GO.with_suffix(".partial")
    print(f"recording {LABELLED_GO.name} with runtime/pprof (about 30 s)", file=sys.stderr)
    subprocess.run([str(binary), "-out", str(partial)], env=env, check=True)
    partial.replace(LABELLED_GO)


def process(cmd: list[str], env: dict[str, str]) -> Callable[[], object]:
    def run() -> None:
        subprocess.run(
            cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )

    return run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    args = parser.parse_args()
    if not LABELLED.exists():
        subprocess.run(
            [sys.executable, str(ROOT / "bench/gen/labelled.py"), str(LABELLED)], check=True
        )
    go = shutil.which("go")
    work = Path(tempfile.mkdtemp(prefix="pprof-share-bench-"))
    env = {**os.environ, "HOME": str(work), "GOCACHE": str(work / "gocache")}
    profiles = list(PROFILES)
    if go:
        if not LABELLED_GO.exists():
            record_labelled_go(go, work, env)
        profiles.append(LABELLED_GO)
    else:
        print(f"go is not installed: no {LABELLED_GO.name}, only the synthetic labelled profile")
    app = create_app({"BLOBS": f"file:{work}/blobs", "META": f"sqlite:{work}/meta.sqlite3"})
    client = app.test_client()

    python = sys.version.split()[0]
    print(f"medians of {args.runs} runs, seconds; python {python}, {os.cpu_count()} cpus")
    header = f"{'profile':28} {'MB':>5} {'(a)floor':>9} {'(b)anal':>9} {'(c)warm':>9} "
    header += f"{'(d)top':>9} {'(e)go':>9} {'b/a':>6} {'d/e':>6}"
    print(header)
    goals: list[tuple[str, str, float, bool]] = []  # (profile, goal, measured ratio, met)
    for path in profiles:
        data = path.read_bytes()
        reply = client.post("/", data=data, headers={"Accept": "application/json"})
        pid = reply.get_json()["id"]
        url = f"/api/v1/profiles/{pid}/flamegraph"
        assert client.get(url).status_code == 200  # computes and caches the view
        jobs: dict[str, Callable[[], object]] = {
            "a": functools.partial(floor, data),
            "b": functools.partial(analyse, data),
            "c": functools.partial(client.get, url, headers={"Accept-Encoding": "gzip"}),
            "d": process([str(BIN / "pprof-share"), "top", str(path)], env),
        }
        if go:
            jobs["e"] = process([go, "tool", "pprof", "-top", "-nodefraction=0", str(path)], env)
            if path in (LABELLED, LABELLED_GO):  # the words: `go tool pprof -top`
                jobs["f"] = process([go, "tool", "pprof", "-top", str(path)], env)
        times: dict[str, list[float]] = {k: [] for k in jobs}
        for _ in range(args.runs):
            for key, job in jobs.items():
                times[key].append(timed(job))
        med = {k: statistics.median(v) for k, v in times.items()}
        e = med.get("e")
        print(
            f"{path.name:28} {len(data) / 1e6:5.1f} {med['a']:9.3f} {med['b']:9.3f} "
            f"{med['c']:9.4f} {med['d']:9.3f} {e if e is not None else float('nan'):9.3f} "
            f"{med['b'] / med['a']:6.2f} {(med['d'] / e) if e else float('nan'):6.2f}"
        )
        b_a = med["b"] / med["a"]
        goals.append((path.name, f"(b)/(a) <= {GOAL_ANALYSIS:g}", b_a, b_a <= GOAL_ANALYSIS))
        if e:
            d_e = med["d"] / e
            if len(data) > 1_000_000:
                goals.append((path.name, f"(d)/(e) < {GOAL_TOP:g}", d_e, d_e < GOAL_TOP))
            if path in (LABELLED, LABELLED_GO):
                ok = d_e <= GOAL_TOP_LABELLED
                goals.append((path.name, f"(d)/(e) <= {GOAL_TOP_LABELLED:g}", d_e, ok))
        if "f" in med:
            d_f = med["d"] / med["f"]
            print(f"{'':28} (f) plain go tool pprof -top {med['f']:.3f} s, (d)/(f) {d_f:.2f}")
            ok = d_f <= GOAL_TOP_LABELLED
            goals.append((path.name, f"(d)/(f) <= {GOAL_TOP_LABELLED:g}", d_f, ok))
    print("\ngoals")
    for name, goal, ratio, met in goals:
        print(f"  {'pass' if met else 'FAIL':4}  {name:28} {goal:16} {ratio:6.2f}")
    if not go:
        print("(e) skipped: go is not installed, so the (d)/(e) goals are not checked")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
