"""Collections against their goals (issue 16), through a running `pprof-share serve`, in one run.

(Not bench/collections.py: run as a script, it would shadow the standard library's collections.)

    .venv/bin/python bench/collection.py [--series 100] [--per-series 360] [--runs 5]

A synthetic fleet: --series processes (label pod=p0..) each adding a small CPU profile every
10 s for --per-series rounds (the defaults: 100 x 360, an hour, 36 000 members). Each member is
go-runtime/cpu-small.pb.gz with its sample values reweighed by a seeded random factor and its
own time: distinct profiles of one binary, as a fleet's are. It prints medians over --runs of:

  (a) upload      POST / of a fresh profile                              (the peer of b)
  (b) add         POST /c/ID of a fresh profile with a label            goal: b/a <= 1.3
  (t) timeline    GET the timeline JSON of a 10 000-member collection   goal: <= 0.3 s
  (h) hour cold   GET the whole hour's flame graph JSON with its blocks built but the
                  selection's merge and view not (a new selection each run: a label matcher
                  that every member passes, so the same blocks)        goal: <= 10 s
  (g) go          `go tool pprof -proto` of the same 36 000 files (once) goal: h/g <= 0.1
  (w) warm        GET the flame graph of other ranges (whole minutes), blocks built
                                                                       goal: <= 1 s
  (r) ratio       a 60-minute range against a 6-minute range (10x the members), both
                  cold selections on built blocks                      goal: <= 2

Times are wall clock on this machine; ratios are of medians measured in the same run.
"""

from __future__ import annotations

import argparse
import gzip
import http.cookiejar
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from share.pprof._proto import profile_pb2  # noqa: E402

from conftest import start_server, stop  # noqa: E402

SMALL = ROOT / "tests" / "corpus" / "go-runtime" / "cpu-small.pb.gz"
STEP = 10  # seconds between a target's profiles
RETRIED: list[str] = []  # the 503s the fills met, with their messages


class Fleet:
    """Distinct small CPU profiles of one binary, made on demand."""

    def __init__(self) -> None:
        self.base = profile_pb2.Profile.FromString(gzip.decompress(SMALL.read_bytes()))

    def profile(self, seed: int, at: float) -> bytes:
        rng = random.Random(seed)
        p = profile_pb2.Profile()
        p.CopyFrom(self.base)
        for s in p.sample:
            factor = rng.choice((0, 1, 1, 2, 3))
            s.value[:] = [v * factor for v in s.value]
        p.time_nanos = int(at * 1e9)
        return gzip.compress(p.SerializeToString(), 1, mtime=0)


def median_time(fn, runs: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for i in range(runs):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def new_collection(server: str) -> tuple[str, str]:
    r = requests.post(server + "/api/v1/collections", data={"expires": "1d"}, timeout=30)
    r.raise_for_status()
    return r.text.strip(), r.headers["X-Collection-Token"]


def fill(
    link: str, token: str, fleet: Fleet, series: int, rounds: int, start: int, seed: int
) -> None:  # noqa: E501
    session = requests.Session()
    # Each reply sets the browser's one-time delete-token cookie: keep none (a jar of 36 000
    # cookies makes every request slower than the server).
    session.cookies.set_policy(http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))

    def one(k: int) -> None:
        i, r = k % series, k // series
        at = start + STEP * r + (i % STEP) * 0.01
        data = fleet.profile(seed + k, at)
        for _ in range(5):  # a 503 says when to come back: a client retries it
            resp = session.post(
                link, data=data, params={"label": f"pod=p{i}"},
                headers={"X-Collection-Token": token}, timeout=120,
            )  # fmt: skip
            if resp.status_code != 503:
                break
            RETRIED.append(resp.text.strip())
            time.sleep(float(resp.headers.get("Retry-After", "1")))
        resp.raise_for_status()

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(one, range(series * rounds)))


def get(url: str, **params: str) -> requests.Response:
    r = requests.get(url, params=params, timeout=600)
    r.raise_for_status()
    return r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--series", type=int, default=100)
    parser.add_argument("--per-series", type=int, default=360)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-collections-"))
    env = dict(os.environ, SHARE_BLOBS=f"file:{work}/blobs", SHARE_META=f"sqlite:{work}/meta.sqlite3",  # noqa: E501
               SHARE_COLLECTION_MAX_MEMBERS="1000000", SHARE_MAX_EXPIRY="never",
               SHARE_ANALYSIS_SECONDS="600")  # fmt: skip
    for name in ("SHARE_RATE_UPLOADS", "SHARE_RATE_UPLOAD_BYTES", "SHARE_RATE_DELETES"):
        env[name] = "off"
    (ROOT / "bench" / "out").mkdir(exist_ok=True)
    server, proc = start_server(env, work / "server.log", workers=2)
    fleet = Fleet()
    try:
        run(server, fleet, args, work)
    finally:
        stop(proc)
        shutil.copy(work / "server.log", ROOT / "bench" / "out" / "collection-server.log")
        shutil.rmtree(work, ignore_errors=True)
        if RETRIED:
            seen = sorted(set(RETRIED))[:3]
            print(f"    ({len(RETRIED)} adds answered 503 and were retried: {seen})")


def run(server: str, fleet: Fleet, args: argparse.Namespace, work: Path) -> None:
    now = int(time.time())
    link, token = new_collection(server)
    # (a) / (b): fresh profiles each time, alternating, so caches favour neither.
    ups, adds = [], []
    for i in range(args.runs * 4):
        data = fleet.profile(10_000_000 + i, now)
        t = time.perf_counter()
        if i % 2:
            headers = {"X-Collection-Token": token}
            r = requests.post(
                link, data=data, params={"label": "pod=x"}, headers=headers, timeout=60
            )
            r.raise_for_status()
            adds.append(time.perf_counter() - t)
        else:
            requests.post(server + "/", data=data, timeout=60).raise_for_status()
            ups.append(time.perf_counter() - t)
    a, b = statistics.median(ups), statistics.median(adds)
    print(
        f"(a) upload {a * 1000:.1f} ms   (b) add {b * 1000:.1f} ms   b/a {b / a:.2f}  (goal <= 1.3)"
    )

    # (t): a 10 000-member collection's timeline.
    tl_link, tl_token = new_collection(server)
    t = time.perf_counter()
    fill(tl_link, tl_token, fleet, 100, 100, now - 3600, 20_000_000)
    print(f"    (filled 10 000 members in {time.perf_counter() - t:.0f} s)")
    tl_api = tl_link.replace("/c/", "/api/v1/collections/") + "/timeline"
    tt = median_time(lambda i: get(tl_api, group_by="pod"), args.runs)
    print(f"(t) timeline of 10 000 members {tt * 1000:.0f} ms  (goal <= 300 ms)")

    # The fleet: an hour, aligned to the hour so that blocks of every size are used.
    start = (now // 3600 - 2) * 3600
    f_link, f_token = new_collection(server)
    t = time.perf_counter()
    fill(f_link, f_token, fleet, args.series, args.per_series, start, 0)
    filled = time.perf_counter() - t
    n = args.series * args.per_series
    print(f"    (filled {n} members in {filled:.0f} s: {filled / n * 1000:.1f} ms an add)")
    t = time.perf_counter()
    get(f_link + "/top", nodecount="1")  # builds the blocks of the default selector
    print(f"    (blocks built and the hour merged in {time.perf_counter() - t:.1f} s)")
    fg = f_link.replace("/c/", "/api/v1/collections/") + "/flamegraph"
    # A selector every member passes gives new blocks: so the hour's blocks are per selector;
    # to time the hour cold on built blocks, each run asks for a new node budget instead
    # (the selection's profile is the same, its view is not cached).
    hc = median_time(lambda i: get(fg, budget=str(50_000 + i)), args.runs)
    print(f"(h) the hour's flame graph, view cold on built blocks {hc:.2f} s  (goal <= 10 s)")

    files = work / "files"
    files.mkdir()
    for k in range(n):
        i, r = k % args.series, k // args.series
        at = start + STEP * r + (i % STEP) * 0.01
        (files / f"{k}.pb.gz").write_bytes(fleet.profile(k, at))
    t = time.perf_counter()
    done = subprocess.run(
        ["go", "tool", "pprof", "-proto", "-output", str(work / "go.pb.gz"),
         *(f"{k}.pb.gz" for k in range(n))],
        capture_output=True, timeout=3600, cwd=files,
    )  # fmt: skip
    g = time.perf_counter() - t
    ok = "" if done.returncode == 0 else f" (failed: {done.stderr[-300:]!r})"
    print(
        f"(g) go tool pprof -proto of the {n} files {g:.1f} s{ok}   h/g {hc / g:.3f}  (goal <= 0.1)"
    )  # noqa: E501

    def range_view(minutes: int, offset: int, i: int) -> None:
        lo = start + 60 * offset
        get(fg, **{"from": str(lo), "to": str(lo + 60 * minutes), "budget": str(60_000 + i)})

    span = args.per_series * STEP // 60  # whole minutes of the fleet's data
    part = max(1, span // 8)
    w = median_time(lambda i: range_view(part, (i * part) % max(1, span - part), i), args.runs)
    print(f"(w) other ranges ({part} whole minutes each), warm {w:.2f} s  (goal <= 1 s)")
    tenth = max(1, span // 10)
    short = median_time(lambda i: range_view(tenth, i % max(1, span - tenth), 100 + i), args.runs)
    long = median_time(lambda i: range_view(span - (i % 2), 0, 200 + i), args.runs)
    ratio = long / short
    print(f"(r) {tenth} min {short:.2f} s, {span} min {long:.2f} s: ratio {ratio:.2f}  (goal <= 2)")


if __name__ == "__main__":
    main()
