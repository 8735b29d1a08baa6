"""The fleet as a load bench (issue 18): a collection fed by a fleet while people look at it, on
the balanced pair (HAProxy with README's haproxy.cfg, two `pprof-share serve` instances on one
redis-server and one moto S3, all started here: tests/balanced_pair.py).

    .venv/bin/python bench/fleet.py [--seconds 300] [--targets 100] [--viewers 20] [--no-ramp]
                                    [--setting SHARE_MERGE_WORKERS=2 ...]

--targets simulated targets (labels pod=target-N, zone=zN%4, app=fleet) each add a CPU and a
heap profile of ~100 KB (bench/fleet_profiles.py: distinct bytes each, built before the clock
runs) every --every seconds (100 targets / 10 s: 20 adds/s), open loop: each target on its own
schedule (a random phase, each round jittered by up to 10% of the period), and an add's latency
counts from its scheduled time, so a stalled server cannot hide the adds it delayed.
Meanwhile --viewers viewers (closed loop, --think seconds between two things they look at)
open a collection view — its page, timeline, flame graph and top for a selection: the last
5/15/60 min or a random range, everything or pod="target-K" or zone="zN", CPU or heap — or a
member's page with its flame graph and top. A random range is a drag on the page's timeline of
everything added so far, snapped to its step as the page snaps it (--typed-ranges: any second,
as someone typing times into the API would ask, whose edges cut into the blocks' windows).

Phases: adds alone for --calibrate seconds (the CPU an add costs), then adds and viewers for
--seconds (goals: p99 add < 250 ms, p99 view < 1 s, 0 errors), then the ramp: the add rate
times --factor per --step-seconds step while it holds (down instead when the steady phase did
not), each step on a collection of its own, and the highest rate that held. Each phase prints
p50/p90/p99/max of adds and views (and per view), errors, the adds/s achieved, and the CPU
seconds of every process by role (web workers, compute processes, gunicorn masters, Redis,
moto, HAProxy, and this generator) read from /proc, per add and per view. Rate limits are
off (one address sends everything).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from balanced_pair import haproxy_exe, start_pair  # noqa: E402
from fleet_meter import ROLES, CpuMeter, JobLog  # noqa: E402
from fleet_profiles import FleetProfiles  # noqa: E402

from share.collections.timeline import nice_step, snap_range  # noqa: E402

from conftest import _AWS_ENV, start_moto, start_redis, stop  # noqa: E402

GOAL_ADD, GOAL_VIEW = 0.250, 1.0
RATES_OFF = {"SHARE_RATE_UPLOADS": "off", "SHARE_RATE_UPLOAD_BYTES": "off"}
KINDS = ("cpu", "heap")


@dataclass
class Phase:
    """What one phase measured: latencies (seconds) by request, errors, CPU by role."""

    name: str
    seconds: float
    rate: float  # adds per second asked for
    adds: list[float] = field(default_factory=list)
    views: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, tuple[int, float]] = field(default_factory=dict)  # (count, wall seconds)
    started: float = 0.0  # when the first add was due (monotonic)
    wall: float = 0.0  # from then to the end of the phase: the CPU figures' window
    last_add: float = 0.0  # when the last add was answered
    lock: threading.Lock = field(default_factory=threading.Lock)

    def achieved(self) -> float:
        """Adds answered 2xx per second, from the first one due to the last one answered."""
        ok = len(self.adds) - sum(e.startswith("add:") for e in self.errors)
        return ok / max(1e-9, self.last_add - self.started)

    def all_views(self) -> list[float]:
        return [t for times in self.views.values() for t in times]

    def held(self) -> bool:
        views = self.all_views()
        slow_views = bool(views) and pct(views, 99) >= GOAL_VIEW
        return not self.errors and pct(self.adds, 99) < GOAL_ADD and not slow_views

    def record(self, what: str, seconds: float, problem: str = "") -> None:
        with self.lock:
            (self.adds if what == "add" else self.views.setdefault(what, [])).append(seconds)
            if problem:
                self.errors.append(f"{what}: {problem}")


def pct(values: list[float], p: float) -> float:
    """The p-th percentile (nearest rank); nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def figures(values: list[float]) -> str:
    ms = [pct(values, p) * 1000 for p in (50, 90, 99, 100)]
    return (
        "p50 {:6.0f}  p90 {:6.0f}  p99 {:6.0f}  max {:6.0f} ms".format(*ms) + f"  n={len(values)}"
    )


def said(r: requests.Response) -> str:
    """A failed reply in one line: the status and the server's message (or HAProxy's)."""
    try:
        message = r.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = re.sub(r"<[^>]+>|\s+", " ", r.text).strip()
    return f"{r.status_code} {message[:160]}"


# --- the fleet and the viewers ---------------------------------------------------------------
class Fleet:
    """The collection, its targets' adds on their schedules, the viewers."""

    def __init__(self, url: str, profiles: FleetProfiles, args: argparse.Namespace) -> None:
        self.url, self.profiles, self.args = url, profiles, args
        r = requests.post(url + "/api/v1/collections", data={"title": "fleet bench"}, timeout=30)
        r.raise_for_status()
        self.cid = r.text.strip().rsplit("/", 1)[1]
        self.token = r.headers["X-Collection-Token"]
        self.nth = 0  # adds made so far: each one's bytes are its own
        self.members: dict[str, list[str]] = {kind: [] for kind in KINDS}
        self.first_add = time.time()

    def schedule(self, seconds: float, every: float, seed: str) -> list[tuple[float, int, str]]:
        """(offset from the phase's start, target, kind) of every add, in time order."""
        rng, events = random.Random(seed), []
        for target in range(self.args.targets):
            phase = rng.uniform(0, every)
            for r in range(int(seconds / every) + 2):
                at = phase + (r + rng.uniform(-0.1, 0.1)) * every
                if 0 <= at < seconds:
                    events += [(at, target, kind) for kind in KINDS]
        return sorted(events)

    def adds(self, phase: Phase, stop: threading.Event) -> None:
        """Open loop: each add sent at its scheduled time, however the earlier ones fare."""
        every = self.args.targets * len(KINDS) / phase.rate
        events = self.schedule(phase.seconds, every, f"schedule {phase.name}")
        begin = time.time() + 2.0  # the bodies are made before the clock runs
        suffixes = []  # each add's own part; joined to its target's base when it is sent
        for at, target, kind in events:
            self.nth += 1
            suffix = self.profiles.suffix(target, kind, self.nth, int((begin + at) * 1e9))
            suffixes.append((at, target, kind, suffix))
        start = time.monotonic() + (begin - time.time())
        phase.started = start
        with ThreadPoolExecutor(self.args.clients) as pool:
            for at, target, kind, suffix in suffixes:
                due = start + at
                if stop.wait(max(0.0, due - time.monotonic())):
                    break
                pool.submit(self.add, phase, due, target, kind, suffix)

    def add(self, phase: Phase, due: float, target: int, kind: str, suffix: bytes) -> None:
        labels = f"pod=target-{target}, zone=z{target % 4}, app=fleet"
        headers = {"X-Collection-Token": self.token, "X-Labels": labels}
        body, problem = self.profiles.bases[target, kind] + suffix, ""
        try:  # a connection of its own per add: each target is a process of its own
            r = requests.post(f"{self.url}/c/{self.cid}", data=body, headers=headers, timeout=60)
            if r.status_code != 201 or r.headers.get("X-Member-Added") != "1":
                problem = said(r)
            else:
                self.members[kind].append(r.text.strip().rsplit("/", 1)[1])
        except requests.RequestException as exc:
            problem = f"{type(exc).__name__}: {exc}"
        phase.record("add", time.monotonic() - due, problem)
        phase.last_add = max(phase.last_add, time.monotonic())

    def selection(self, rng: random.Random) -> dict[str, str]:
        """A selection someone would look at: a recent or random range, a label or not."""
        q = {"kind": rng.choice(KINDS)}
        how = rng.random()
        if how < 0.45:
            q["from"] = f"now-{rng.choice((5, 15, 60))}m"
        elif how < 0.9:  # a minute or more of what was added so far, dragged on the timeline
            now = time.time()
            start = rng.uniform(self.first_add, max(self.first_add, now - 60))
            end = rng.uniform(start + 60, now + 1)
            if not self.args.typed_ranges:  # the page snaps a drag to its timeline's step
                start, end = snap_range(start, end, nice_step(now - self.first_add))
            q["from"], q["to"] = str(int(start)), str(int(end))
        who = rng.random()
        if who < 0.3:
            q["match"] = f'pod="target-{rng.randrange(self.args.targets)}"'
        elif who < 0.5:
            q["match"] = f'zone="z{rng.randrange(4)}"'
        return q

    def viewer(self, phase: Phase, seed: int, stop: threading.Event) -> None:
        """One person: a collection view or a member's page, then a pause, until stop."""
        rng, session = random.Random(seed), requests.Session()
        html = {"Accept": "text/html"}
        while not stop.wait(rng.uniform(0.5, 1.5) * self.args.think):
            if rng.random() < 0.5 or not self.members["cpu"]:
                q = self.selection(rng)
                api = f"{self.url}/api/v1/collections/{self.cid}"
                # A label selection's series has blocks of its own, built when first viewed:
                # its range views are reported apart from the whole collection's.
                of = ", labels" if "match" in q else ""
                steps = [  # what the collection page asks for, as it asks
                    ("collection page", f"{self.url}/c/{self.cid}", q, html),
                    ("selection", f"{api}/selection", {**q, "summed": "1"}, {}),
                    ("timeline", f"{api}/timeline", {**q, "group_by": "zone"}, {}),
                    (f"range flame{of}", f"{api}/flamegraph", q, {}),
                    (f"range top{of}", f"{api}/top", q, {}),
                ]
            else:
                recent = self.members[rng.choice(KINDS)][-200:] or self.members["cpu"][-200:]
                pid = rng.choice(recent)
                api = f"{self.url}/api/v1/profiles/{pid}"
                steps = [
                    ("member page", f"{self.url}/{pid}", {}, html),
                    ("member flame graph", f"{api}/flamegraph", {}, {}),
                    ("member top", f"{api}/top", {}, {}),
                ]
            for what, url, params, headers in steps:
                started, problem = time.monotonic(), ""
                try:
                    r = session.get(url, params=params, headers=headers, timeout=60)
                    # An empty selection (a range in a pause between phases) is an answer.
                    empty = r.status_code == 404 and "holds no members" in r.text
                    if r.status_code != 200 and not empty:
                        problem = said(r)
                except requests.RequestException as exc:
                    problem = f"{type(exc).__name__}: {exc}"
                phase.record(what, time.monotonic() - started, problem)
        session.close()


def settle(meter: CpuMeter, most: float = 180.0) -> None:
    """Wait until the servers are about idle (under 15% of a core over 2 s: what the earlier
    phase left, block builds and merges, is not the next one's), for at most most seconds."""
    started = time.monotonic()
    while time.monotonic() - started < most:
        before = meter.snapshot()
        time.sleep(2.0)
        used = CpuMeter.spent(before, meter.snapshot())
        if sum(used[r] for r in ROLES if r != "generator") < 0.3:
            break
    print(f"  (servers idle after {time.monotonic() - started:.0f} s)")


def run_phase(fleet: Fleet, meter: CpuMeter, phase: Phase, viewers: int) -> Phase:
    settle(meter)
    stop = threading.Event()
    threads = [
        threading.Thread(target=fleet.viewer, args=(phase, 1000 * len(phase.name) + i, stop))
        for i in range(viewers)
    ]
    before, jobs = meter.snapshot(), JobLog(meter.pair)
    for thread in threads:
        thread.start()
    timer = threading.Timer(phase.seconds + 2.0, stop.set)  # the adds' lead-in, then stop
    timer.start()
    fleet.adds(phase, stop)
    stop.set()
    timer.cancel()
    for thread in threads:
        thread.join()
    phase.cpu = CpuMeter.spent(before, meter.snapshot())
    phase.jobs = jobs.jobs()
    phase.wall = time.monotonic() - phase.started
    return phase


# --- the report ------------------------------------------------------------------------------
def by_role(values: dict[str, float], scale: float, unit: str = "") -> str:
    return "  ".join(f"{role} {values[role] * scale:.1f}{unit}" for role in ROLES)


def report(phase: Phase, per_add: dict[str, float] | None) -> None:
    views, adds = phase.all_views(), max(1, len(phase.adds))
    held = "held" if phase.held() else "did not hold"
    print(f"\n{phase.name}: {phase.rate:.1f} adds/s asked for, {phase.seconds:.0f} s: {held}")
    print(f"  adds  {figures(phase.adds)}  (achieved {phase.achieved():.1f} adds/s)")
    if views:
        print(f"  views {figures(views)}")
        for what, times in phase.views.items():
            print(f"    {what:<19} {figures(times)}")
    print(f"  errors {len(phase.errors)}")
    for problem, count in Counter(phase.errors).most_common(8):
        print(f"    {count} x {problem}")
    server = sum(phase.cpu[r] for r in ROLES if r != "generator")
    cores = phase.wall * (os.cpu_count() or 1)
    print(f"  CPU s: {by_role(phase.cpu, 1)}")
    print(f"  server side {server:.1f} CPU s of {cores:.0f} core-seconds in {phase.wall:.0f} s;"
          f" the generator {phase.cpu['generator']:.1f} s")  # fmt: skip
    ranked = sorted(phase.jobs.items(), key=lambda kv: -kv[1][1])
    print("  compute jobs (count, wall s): "
          + ", ".join(f"{what} {n} {t:.1f}" for what, (n, t) in ranked[:8]))  # fmt: skip
    if per_add is None:
        print(f"  per add, CPU ms: {by_role(phase.cpu, 1000 / adds)}")
    elif views:
        rest = {r: phase.cpu[r] - per_add[r] * len(phase.adds) for r in ROLES}
        print(f"  per view, CPU ms (the adds' share taken out): {by_role(rest, 1000 / len(views))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=300, help="the steady phase")
    parser.add_argument("--targets", type=int, default=100)
    parser.add_argument("--every", type=float, default=10, help="seconds between a target's adds")
    parser.add_argument("--viewers", type=int, default=20)
    parser.add_argument("--think", type=float, default=2.0, help="mean pause of a viewer, s")
    parser.add_argument("--calibrate", type=float, default=30, help="adds alone first, s")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers per instance")
    parser.add_argument("--clients", type=int, default=128, help="threads sending adds")
    parser.add_argument("--factor", type=float, default=1.5, help="the ramp's step")
    parser.add_argument("--step-seconds", type=float, default=60)
    parser.add_argument("--steps", type=int, default=6, help="most ramp steps")
    parser.add_argument("--no-ramp", action="store_true")
    parser.add_argument(
        "--typed-ranges",
        action="store_true",
        help="random ranges of any second, as typed into the API, not dragged on the page",
    )
    parser.add_argument("--keep", action="store_true", help="keep the logs and configs")
    parser.add_argument("--setting", action="append", default=[], metavar="SHARE_X=VALUE",
                        help="a setting of both instances (repeatable)")  # fmt: skip
    args = parser.parse_args()
    if haproxy_exe() is None:
        raise SystemExit("bench/fleet.py needs haproxy: apt-get install haproxy")
    work = Path(tempfile.mkdtemp(prefix="pprof-share-fleet-"))
    redis_url, redis_proc = start_redis(work)
    endpoint, moto = start_moto()
    os.environ.update(_AWS_ENV)
    pair = None
    try:
        built = time.monotonic()
        profiles = FleetProfiles(args.targets)
        print(f"profiles: {args.targets} targets x (cpu {profiles.size('cpu') / 1000:.0f} KB,"
              f" heap {profiles.size('heap') / 1000:.0f} KB), built in"
              f" {time.monotonic() - built:.1f} s before the clock runs")  # fmt: skip
        settings = dict(item.split("=", 1) for item in args.setting)
        extra = {**RATES_OFF, **settings}
        pair = start_pair(redis_url, endpoint, work, workers=args.workers, extra=extra)
        print(f"balanced pair: HAProxy {pair.url} -> {', '.join(i.url for i in pair.instances)}"
              f" ({args.workers} gunicorn workers each{''.join(', ' + k for k in args.setting)}),"
              " redis-server, moto; "
              f"{os.cpu_count()} cores shared by all, the generator included")  # fmt: skip
        meter = CpuMeter(pair, {"redis": redis_proc.pid, "moto": moto.pid})
        fleet = Fleet(pair.url, profiles, args)
        rate = args.targets * len(KINDS) / args.every
        per_add = None
        if args.calibrate:
            calibration = run_phase(fleet, meter, Phase("adds alone", args.calibrate, rate), 0)
            report(calibration, None)
            per_add = {r: calibration.cpu[r] / max(1, len(calibration.adds)) for r in ROLES}
        steady = run_phase(fleet, meter, Phase("steady", args.seconds, rate), args.viewers)
        report(steady, per_add)
        verdict = "met" if steady.held() else "missed"
        print(f"\ngoals: p99 add < {GOAL_ADD * 1000:.0f} ms, p99 view < {GOAL_VIEW:.0f} s,"
              f" 0 errors: {verdict} at {rate:.0f} adds/s")  # fmt: skip
        if not args.no_ramp:
            ramp(fleet, meter, args, rate, steady.held(), per_add)
    finally:
        if pair is not None:
            pair.close()
        stop(redis_proc)
        stop(moto)
        if args.keep:
            print(f"logs and configs kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def ramp(
    fleet: Fleet,
    meter: CpuMeter,
    args: argparse.Namespace,
    rate: float,
    held: bool,
    per_add: dict[str, float] | None,
) -> None:
    """Up by --factor per step while the goals hold; when the steady rate did not hold, down
    until one does."""
    best = rate if held else None
    for i in range(args.steps):
        rate = rate * args.factor if held else rate / args.factor
        # A collection of its own: a fleet adding at this rate, viewed over its own past. On
        # the steady phase's collection the viewers' ranges (now-60m, drags over everything so
        # far) kept merging its 20 adds/s, whatever the step's rate.
        fleet = Fleet(fleet.url, fleet.profiles, args)
        phase = Phase(f"ramp {i + 1}", args.step_seconds, rate)
        report(run_phase(fleet, meter, phase, args.viewers), per_add)
        if phase.held():
            best = max(best or 0.0, rate)
        if phase.held() != held:
            break
    said = f"{best:.1f} adds/s" if best is not None else "none of the rates tried"
    print(f"\nramp: the highest add rate that held (p99 add < 250 ms, p99 view < 1 s, 0 errors):"
          f" {said}")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
