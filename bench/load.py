"""Load: `pprof-share serve` on both store pairs against a hello-world route, under the same
gunicorn settings, at 100 connections, with wrk (Debian's `wrk`).

    .venv/bin/python bench/load.py [--seconds 60] [--phase-seconds 20] [--workers 2]

For each store pair (local dir + SQLite; moto's S3 server + redis-server, started here) it
runs --rounds rounds of: the hello-world route (bench/hello.py), page views alone, small new
uploads alone (each body a profile of its own), --phase-seconds each; then --seconds of mixed
traffic (pages, -top text, flame graph JSON, raw, uploads). The peer is measured next to each
phase because this machine is shared: a ratio is the median over rounds of (phase / the
hello-world run of the same round). Printed: req/s, p50/p99 latency and errors (non-2xx/3xx
replies and socket errors); goals: 0 errors, page views >= 0.5x, small new uploads >= 0.25x.
Rate limits are off for the run (one client address sends everything).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from conftest import (  # noqa: E402
    _AWS_ENV,
    free_port,
    new_bucket,
    start_moto,
    start_redis,
    stop,
    unique_profile,
    wait_for_port,
)

BIN = Path(sys.executable).parent
SCRIPT = ROOT / "bench" / "load" / "mixed.lua"
CONNECTIONS, THREADS = 100, 2
MIXED = "page:50,top:15,flame:15,raw:10,upload:10"
GOAL_PAGES, GOAL_UPLOADS = 0.5, 0.25
SEEDS = ["go-runtime/cpu-small.pb.gz", "go-runtime/heap.pb.gz", "go-runtime/cpu-labels.pb.gz"]


def wrk(url: str, seconds: int, kinds: str, pids: list[str], bodies: Path | None) -> dict:
    env = dict(
        os.environ,
        LOAD_KINDS=kinds,
        LOAD_PIDS=",".join(pids),
        LOAD_BODIES=str(bodies or ""),
        LOAD_THREADS=str(THREADS),
    )
    out = subprocess.run(
        ["wrk", f"-t{THREADS}", f"-c{CONNECTIONS}", f"-d{seconds}s", "--latency", "--timeout",
         "10s", "-s", str(SCRIPT), url],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    errors = sum(int(n) for n in re.findall(r"(?:connect|read|write|timeout) (\d+)", out))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
        "p50": _ms(re.search(r"\s50%\s+([\d.]+\w+)", out).group(1)),
        "p99": _ms(re.search(r"\s99%\s+([\d.]+\w+)", out).group(1)),
        "errors": errors + (int(non2xx.group(1)) if non2xx else 0),
    }


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def serve(env: dict[str, str], workers: int, log: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "pprof-share"), "serve", "--port", str(port), "--workers", str(workers)],
            env=env, stdout=subprocess.DEVNULL, stderr=out,
        )  # fmt: skip
    if not wait_for_port(port, proc, timeout=30):
        raise SystemExit(f"pprof-share serve did not start: {log.read_text()[-2000:]}")
    return f"http://127.0.0.1:{port}", proc


def bodies_file(directory: Path, count: int, tag: str) -> Path:
    """count small profiles, each new (a string of its own), length-prefixed for mixed.lua."""
    path = directory / f"bodies-{tag}.bin"
    with open(path, "wb") as out:
        for i in range(count):
            body = unique_profile(f"{tag}-{i}", base=SEEDS[1])
            out.write(b"%08d" % len(body) + body)
    return path


def stored(url: str) -> list[str]:
    pids = []
    for seed in SEEDS:
        data = (ROOT / "tests" / "corpus" / seed).read_bytes()
        request = urllib.request.Request(url + "/", data=data, method="POST")
        with urllib.request.urlopen(request, timeout=30) as reply:
            pids.append(reply.read().decode().strip().rsplit("/", 1)[1])
    for pid in pids:  # views computed once before the clock runs, as they are in service
        for path in (f"/{pid}", f"/{pid}/top", f"/api/v1/profiles/{pid}/flamegraph"):
            urllib.request.urlopen(url + path, timeout=60).read()
    return pids


def line(name: str, r: dict, peer: float | None = None) -> str:
    ratio = f"  {r['rps'] / peer:5.2f}x" if peer else ""
    return (
        f"  {name:<34} {r['rps']:8.0f} req/s  p50 {r['p50']:7.1f} ms  p99 {r['p99']:7.1f} ms  "
        f"errors {r['errors']}{ratio}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=60, help="mixed traffic, per store pair")
    parser.add_argument("--phase-seconds", type=int, default=10, help="each phase of a round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--pair", choices=["local", "s3"], help="only this store pair")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("bench/load.py needs wrk: apt-get install wrk")
    work = Path(tempfile.mkdtemp(prefix="pprof-share-load-"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHARE_")}
    base.update(
        SHARE_PUBLIC_URL="",
        SHARE_RATE_UPLOADS="off",
        SHARE_RATE_UPLOAD_BYTES="off",
        SHARE_RATE_DELETES="off",
    )
    per_run = 30_000  # more new bodies than a run sends, so each upload is a new profile
    print(f"wrk -t{THREADS} -c{CONNECTIONS}; gunicorn workers {args.workers} (gevent)")

    port = free_port()
    hello_proc = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "hello.py"), str(port), str(args.workers)],
        env=base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    wait_for_port(port, hello_proc)
    hello_url = f"http://127.0.0.1:{port}"

    redis_url, redis_proc = start_redis(work)
    endpoint, moto = start_moto()
    os.environ.update(_AWS_ENV)
    pairs = {
        "local dir + SQLite": {
            "SHARE_BLOBS": f"file:{work}/blobs",
            "SHARE_META": f"sqlite:{work}/meta.sqlite3",
        },
        "S3 (moto) + Redis": {
            "SHARE_BLOBS": f"s3://{new_bucket(endpoint)}/p",
            "SHARE_META": redis_url,
            **_AWS_ENV,
            "AWS_ENDPOINT_URL": endpoint,
        },
    }
    failed = []
    try:
        for pair, settings in pairs.items():
            if args.pair and (args.pair == "local") != pair.startswith("local"):
                continue
            url, proc = serve({**base, **settings}, args.workers, work / "server.log")
            try:
                pids = stored(url)
                tag = re.sub(r"\W+", "", pair)
                runs: dict[str, list[dict]] = {"hello": [], "pages": [], "uploads": []}
                for i in range(args.rounds):
                    bodies = bodies_file(work, per_run // args.rounds, f"{tag}{i}")
                    t = args.phase_seconds
                    runs["hello"].append(wrk(hello_url, t, "hello:1", [], None))
                    runs["pages"].append(wrk(url, t, "page:1", pids, None))
                    runs["uploads"].append(wrk(url, t, "upload:1", pids, bodies))
                hello_mixed = wrk(hello_url, min(args.seconds, 20), "hello:1", [], None)
                mixed = wrk(url, args.seconds, MIXED, pids, bodies_file(work, per_run, tag + "m"))
            finally:
                stop(proc)
            print(pair)
            for i in range(args.rounds):
                print(line(f"round {i + 1}: hello-world route", runs["hello"][i]))
                for name in ("pages", "uploads"):
                    print(line(f"round {i + 1}: {name}", runs[name][i], runs["hello"][i]["rps"]))
            print(line("hello-world route (next to mixed)", hello_mixed))
            print(line(f"mixed ({MIXED})", mixed, hello_mixed["rps"]))
            for name, goal in (("pages", GOAL_PAGES), ("uploads", GOAL_UPLOADS)):
                ratios = [
                    r["rps"] / h["rps"] for r, h in zip(runs[name], runs["hello"], strict=False)
                ]
                ratio = statistics.median(ratios)
                print(f"  median ratio {name}: {ratio:.2f}x (goal {goal}x)")
                if ratio < goal:
                    failed.append(f"{pair}: {name} {ratio:.2f}x < {goal}x")
            every = [*runs["pages"], *runs["uploads"], mixed]
            if sum(r["errors"] for r in every):
                failed.append(f"{pair}: {sum(r['errors'] for r in every)} errors")
    finally:
        stop(hello_proc)
        stop(redis_proc)
        stop(moto)
        shutil.rmtree(work, ignore_errors=True)
    print("goals: 0 errors, page views >= 0.5x, small new uploads >= 0.25x of hello-world")
    print("met" if not failed else "missed: " + "; ".join(failed))
    return 0 if not failed else 1


if __name__ == "__main__":
    time.sleep(0)
    sys.exit(main())
