"""The compute tier's speed against its floor, through a real `pprof-share serve`.

    .venv/bin/python bench/compute.py [--runs 5]      (make bench)

For the largest bench profiles (go-runtime/cpu-xl.pb.gz, google-pprof-testdata/large.cpu and the
labelled ones bench/run.py generates into bench/out/), medians over --runs of:

  (a) floor    gunzip + SHA-256 + protobuf decode (upb) of the file, in this process
  (u) upload   POST of the file to the service until its link comes back (a new profile
               each run: a field Go skips is appended, so nothing is deduplicated)
  (f) first    the page's first two views right after the upload (flame graph + top JSON):
               the process that validated the upload has it decoded
  (c) cold     the same two views of a profile no process holds (its process was replaced,
               and the new one is ready: parse + flame graph + top, as the goal counts it)
  (s) started  the same, asked for right after the replacement was started: (c) plus what a
               new compute process takes to import and listen (~0.3 s)
  (w) warm     another view of a warm profile, not cached yet: another sample type's flame
               graph, and the flame graph with another node budget (the larger of the two)

and the ratios against the goals: (u)/(a) <= 2.5, (c)/(a) <= 4, (w) <= 50 ms on cpu-xl.
All timings are wall clock from the client on localhost, HTTP included; one compute process,
so each job runs alone.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from run import LABELLED, LABELLED_GO, PROFILES, floor, timed  # noqa: E402

GOAL_UPLOAD = 2.5
GOAL_COLD = 4.0
GOAL_WARM = 0.050  # seconds, on cpu-xl
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(work: Path) -> tuple[str, subprocess.Popen[bytes], Path]:
    port = free_port()
    log = work / "server.log"
    env = dict(os.environ, SHARE_BLOBS=f"file:{work}/blobs", SHARE_META=f"sqlite:{work}/m.db",
               SHARE_ANALYSIS_WORKERS="1", SHARE_VIEW_CACHE_BYTES="1GiB",
               # One process for everything, as the figures say: (f) counts on the validating
               # process holding the profile, and make_cold() on replacing the only one.
               SHARE_INGEST_WORKERS="0", SHARE_MERGE_WORKERS="0")  # fmt: skip
    out = open(log, "wb")  # noqa: SIM115 - the server's lifetime
    command = [str(BIN / "pprof-share"), "serve", "--port", str(port), "--workers", "2"]
    proc = subprocess.Popen(command, env=env, stderr=out, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            urllib.request.urlopen(url + "/", timeout=1).close()
            return url, proc, log
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"pprof-share serve did not start: {log.read_text()}")


def get(url: str) -> bytes:
    request = urllib.request.Request(url, headers={"Accept": "application/json",
                                                   "Accept-Encoding": "gzip"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=120) as reply:
        return reply.read()


def upload(url: str, data: bytes) -> dict:
    request = urllib.request.Request(url + "/", data=data, headers={"Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.loads(reply.read())


def variant(data: bytes, n: int) -> bytes:
    """The same profile with field 100 (skipped by Go and by us) = n appended: a new id."""
    raw = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    tag, value = bytearray(b"\xa0\x06"), bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        value.append(byte | (0x80 if n else 0))
        if not n:
            break
    return gzip.compress(raw + bytes(tag + value), 6)


def make_cold(log: Path, url: str, ready: bool) -> None:
    """Replace the compute process, and wait until the new one is started (ready: until it
    listens, its imports done)."""
    text = log.read_text()
    pids = re.findall(r"compute\[(\d+)\]", text)
    readies = text.count("]: ready")
    os.kill(int(pids[-1]), signal.SIGKILL)
    time.sleep(0.2)
    get(url + "/")  # the page itself needs no compute process
    for _ in range(400):
        text = log.read_text()
        if f"compute process {pids[-1]} ended" in text and (
            not ready or text.count("]: ready") > readies
        ):
            return
        time.sleep(0.05)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median)")
    args = parser.parse_args()
    if not LABELLED.exists():
        subprocess.run([sys.executable, str(ROOT / "bench/gen/labelled.py"), str(LABELLED)],
                       check=True)  # fmt: skip
    profiles = list(PROFILES) + ([LABELLED_GO] if LABELLED_GO.exists() else [])
    work = Path(tempfile.mkdtemp(prefix="pprof-share-bench-compute-"))
    url, proc, log = start(work)
    print(f"medians of {args.runs} runs, seconds, through pprof-share serve on localhost; "
          f"{os.cpu_count()} cpus")  # fmt: skip
    print(f"{'profile':26} {'MB':>5} {'(a)floor':>9} {'(u)upload':>10} {'(f)first':>9} "
          f"{'(c)cold':>9} {'(s)start':>9} {'(w)warm':>9} {'u/a':>6} {'c/a':>6}")  # fmt: skip
    goals = []
    serial = int(time.time())
    try:
        for path in profiles:
            data = path.read_bytes()
            times: dict[str, list[float]] = {k: [] for k in "aufcsw"}
            for _ in range(args.runs):
                serial += 1
                times["a"].append(timed(lambda d=data: floor(d)))
                first = variant(data, serial)
                start_u = time.perf_counter()
                record = upload(url, first)
                times["u"].append(time.perf_counter() - start_u)
                api = f"{url}/api/v1/profiles/{record['id']}"
                times["f"].append(timed(lambda a=api: (get(a + "/flamegraph"), get(a + "/top"))))
                serial += 1
                record = upload(url, variant(data, serial))
                api = f"{url}/api/v1/profiles/{record['id']}"
                make_cold(log, url, ready=True)
                times["c"].append(timed(lambda a=api: (get(a + "/flamegraph"), get(a + "/top"))))
                other = record["sample_types"][0]["type"]
                warm = [timed(lambda a=api, o=other: get(f"{a}/flamegraph?si={o}")),
                        timed(lambda a=api: get(f"{a}/flamegraph?budget=49999"))]  # fmt: skip
                times["w"].append(max(warm))
                serial += 1
                started = upload(url, variant(data, serial))
                make_cold(log, url, ready=False)
                at = f"{url}/api/v1/profiles/{started['id']}"
                times["s"].append(timed(lambda a=at: (get(a + "/flamegraph"), get(a + "/top"))))
            med = {k: statistics.median(v) for k, v in times.items()}
            u_a, c_a = med["u"] / med["a"], med["c"] / med["a"]
            cells = [f"{path.name:26}", f"{len(data) / 1e6:5.1f}", f"{med['a']:9.3f}",
                     f"{med['u']:10.3f}", f"{med['f']:9.3f}", f"{med['c']:9.3f}",
                     f"{med['s']:9.3f}", f"{med['w']:9.4f}", f"{u_a:6.2f}",
                     f"{c_a:6.2f}"]  # fmt: skip
            print(" ".join(cells))
            goals.append((path.name, f"(u)/(a) <= {GOAL_UPLOAD:g}", u_a, u_a <= GOAL_UPLOAD))
            goals.append((path.name, f"(c)/(a) <= {GOAL_COLD:g}", c_a, c_a <= GOAL_COLD))
            if path.name == "cpu-xl.pb.gz":
                ok = med["w"] <= GOAL_WARM
                goals.append((path.name, f"(w) <= {GOAL_WARM * 1000:g} ms", med["w"], ok))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    print("\ngoals")
    for name, goal, value, met in goals:
        print(f"  {'pass' if met else 'FAIL':4}  {name:26} {goal:16} {value:7.3f}")
    digest = hashlib.sha256(log.read_bytes()).hexdigest()[:8]
    print(f"(server log: {log}, {digest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
