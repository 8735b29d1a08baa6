"""`pprof-share collect`: scrape Go programs' /debug/pprof endpoints into a collection, every
interval, each profile labelled instance=<host:port>.

A round fetches every (target, profile) at once, a thread each: a CPU profile takes its seconds
to answer, so a round lasts about as long as its longest profile, whatever the number of
targets. A target's failure (no answer, or an answer the server refuses as a profile) is
reported and tried again after a backoff that doubles (the next round, then every 2nd, 4th, ...
round, at most BACKOFF_MAX seconds apart) while the others go on; the server's own failures
are reported and the next round tries again, and a refusal every add would get (the token, a
collection gone) ends the run. SIGINT (Ctrl-C) or SIGTERM lets the round in flight finish, then
exits 0; a second one stops at once. Standard library only, like the upload client; the threads
are daemons, so stopping at once does not wait for a slow target.
"""

from __future__ import annotations

import argparse
import http.client
import queue
import re
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO
from urllib.parse import urlsplit

from .client import USER_AGENT, ClientError, _error_message, _reason
from .script import (
    LINK_HELP,
    TOKEN_HELP,
    add_to_collection,
    check_labels,
    collection_of,
    collection_token,
    request_json,
    server_help,
)

# Profile name -> its endpoint under /debug/pprof/ (net/http/pprof's names).
ENDPOINTS = {
    "cpu": "profile",
    "heap": "heap",
    "allocs": "allocs",
    "goroutine": "goroutine",
    "mutex": "mutex",
    "block": "block",
    "threadcreate": "threadcreate",
}
NO_DELTA = {"goroutine", "threadcreate"}  # net/http/pprof refuses seconds= for these
DEFAULT_EVERY = "10s"
DEFAULT_PROFILES = ("cpu=5s", "heap")
BACKOFF_MAX = 300.0  # seconds between tries of a target that keeps failing, at most
ADD_TIMEOUT = 60.0
# A refusal that every add would get: stop rather than fail the same way each round.
FATAL = {401, 403, 404, 410}
_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|s|m|h)?")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_seconds(text: str, what: str) -> float:
    """10s, 1.5s, 500ms, 2m, 1h, or a number of seconds -> seconds (more than 0)."""
    found = _DURATION.fullmatch(text.strip())
    seconds = float(found[1]) * _UNITS[found[2]] if found else 0.0
    if seconds <= 0:
        raise ClientError(f"{what} {text!r}: give a duration such as 10s, 500ms or 2m")
    return seconds


@dataclass(frozen=True)
class Profile:
    """One profile to fetch from every target: a name, and its seconds (0: a snapshot)."""

    name: str
    seconds: int

    def path(self) -> str:
        query = f"?seconds={self.seconds}" if self.seconds else ""
        return f"/{ENDPOINTS[self.name]}{query}"

    def __str__(self) -> str:
        return f"{self.name}={self.seconds}s" if self.seconds else self.name


def parse_profile(text: str, every: float) -> Profile:
    """cpu=5s, cpu (half the interval), heap, heap=30s (a delta over 30 s, as net/http/pprof
    gives one), goroutine, ..."""
    name, eq, duration = text.strip().partition("=")
    if name not in ENDPOINTS:
        raise ClientError(f"--profile {text!r}: the profiles are {', '.join(ENDPOINTS)}")
    if not eq:
        return Profile(name, max(1, int(every / 2)) if name == "cpu" else 0)
    if name in NO_DELTA:
        raise ClientError(f"--profile {text!r}: {name} is a snapshot; give it no duration")
    seconds = parse_seconds(duration, f"--profile {name}")
    if seconds != int(seconds):
        raise ClientError(f"--profile {text!r}: net/http/pprof takes whole seconds")
    return Profile(name, int(seconds))


@dataclass(frozen=True)
class Target:
    """A program serving net/http/pprof: its instance label and the URL of its /debug/pprof."""

    instance: str
    root: str


def parse_target(text: str) -> Target:
    """host:port, or a URL (http://host:port, or one that ends in its /debug/pprof)."""
    url = text.strip() if "://" in text else "http://" + text.strip()
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = -1
    if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
        raise ClientError(f"target {text!r}: give host:port or an http:// URL")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    instance = f"{host}:{port or (443 if parts.scheme == 'https' else 80)}"
    path = parts.path.rstrip("/")
    if not path.endswith("/debug/pprof"):
        path += "/debug/pprof"
    return Target(instance, f"{parts.scheme}://{parts.netloc}{path}")


@dataclass
class Job:
    """One profile of one target, with its backoff."""

    target: Target
    profile: Profile
    failures: int = 0
    next_round: int = 1

    @property
    def url(self) -> str:
        return self.target.root + self.profile.path()

    @property
    def name(self) -> str:
        return f"{self.target.instance} {self.profile.name}"


@dataclass
class Outcome:
    job: Job
    added: bool = False  # a new member (False: the same one was already there)
    error: str | None = None  # None: the profile is in the collection
    backoff: bool = False  # the target's failure (no answer, not a profile): try it later
    fatal: bool = False  # every add would fail the same way (the token, the collection)


def fetch(url: str, timeout: float) -> bytes:
    """GET a profile from a target (no countdown: many run at once)."""
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise ClientError(f"{url}: {_error_message(exc.code, exc.read())}", exc.code) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        raise ClientError(f"cannot reach {url}: {_reason(exc)}") from None


class Collector:
    """The rounds of one `pprof-share collect` run."""

    def __init__(
        self,
        server: str,
        cid: str,
        token: str,
        jobs: list[Job],
        labels: list[str],
        every: float,
        out: TextIO,
        err: TextIO,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.server, self.cid, self.token = server, cid, token
        self.jobs, self.labels, self.every = jobs, labels, every
        self.out, self.err, self.clock = out, err, clock
        self.stop = threading.Event()
        self.max_skip = max(0, int(BACKOFF_MAX / every) - 1)

    def attempt(self, job: Job) -> Outcome:
        """Fetch one profile and add it with its labels."""
        try:
            data = fetch(job.url, job.profile.seconds + max(self.every, 5.0))
        except ClientError as exc:
            return Outcome(job, error=str(exc), backoff=True)
        labels = [f"instance={job.target.instance}", *self.labels]
        name = f"{job.target.instance}-{job.profile.name}.pb.gz"
        try:
            reply = add_to_collection(
                self.server, self.cid, self.token, name, data, labels=labels, progress=False,
                timeout=ADD_TIMEOUT,
            )  # fmt: skip
        except ClientError as exc:
            # 400, 413: what the target answered is not a profile, or too large for one.
            bad = exc.status in (400, 413)
            return Outcome(job, error=f"not added: {exc}", backoff=bad, fatal=exc.status in FATAL)
        return Outcome(job, added=bool(reply.get("added", True)))

    def _work(self, job: Job, results: queue.Queue[Outcome]) -> None:
        try:
            outcome = self.attempt(job)
        except Exception as exc:  # noqa: BLE001 - a bug must not leave the round waiting
            outcome = Outcome(job, error=f"{type(exc).__name__}: {exc}", backoff=True)
        results.put(outcome)

    def round(self, n: int) -> list[Outcome]:
        """Every due job at once, each on a daemon thread; their outcomes."""
        due = [j for j in self.jobs if j.next_round <= n]
        results: queue.Queue[Outcome] = queue.Queue()
        for job in due:
            threading.Thread(target=self._work, args=(job, results), daemon=True).start()
        return [results.get() for _ in due]

    def settle(self, n: int, outcome: Outcome) -> None:
        """Report a failure (or a recovery) and set the job's next round."""
        job = outcome.job
        if not outcome.backoff:
            if job.failures and outcome.error is None:
                self.say(f"{job.name}: back after {job.failures} failed tries")
                job.failures = 0
            job.next_round = n + 1
            if outcome.error is not None and not outcome.fatal:
                self.say(f"{job.name}: {outcome.error}")  # the server's: try again next round
            return
        job.failures += 1
        skip = min(2 ** (job.failures - 1) - 1, self.max_skip)
        job.next_round = n + 1 + skip
        self.say(f"{job.name}: {outcome.error}; next try in {_seconds((skip + 1) * self.every)}")

    def say(self, line: str) -> None:
        print(f"pprof-share: {line}", file=self.err, flush=True)

    def run(self, rounds: int) -> int:
        """Rounds every interval until `rounds` are done (0: no bound) or a signal stops them."""
        added = failed = n = 0
        start = self.clock()
        while not self.stop.is_set() and not (rounds and n >= rounds):
            n += 1
            began = self.clock()
            outcomes = self.round(n)
            for outcome in outcomes:
                self.settle(n, outcome)
            ok = [o for o in outcomes if o.error is None]
            again = sum(not o.added for o in ok)
            added, failed = added + len(ok), failed + len(outcomes) - len(ok)
            waiting = len(self.jobs) - len(outcomes)
            line = f"round {n}: {len(ok)} added, {len(outcomes) - len(ok)} failed"
            line += f", {waiting} waiting" if waiting else ""
            line += f" ({again} already there)" if again else ""
            print(f"{line}, took {self.clock() - began:.2f}s", file=self.out, flush=True)
            fatal = next((o for o in outcomes if o.fatal), None)
            if fatal is not None:
                self.say((fatal.error or "").removeprefix("not added: "))
                return 1
            if rounds and n >= rounds:
                break
            start = max(start + self.every, self.clock())  # late: start now, no burst
            self.stop.wait(max(0.0, start - self.clock()))
        return 0 if added or not failed else 1


def _seconds(value: float) -> str:
    return f"{value:g}s"


def _on_signals(stop: threading.Event, say: Callable[[str], None]) -> Callable[[], None]:
    """SIGINT and SIGTERM set stop (the round in flight finishes); a second one interrupts.
    Returns what puts the previous handlers back."""

    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        # Not printed here: the main thread may be inside a print, which must not be re-entered.
        message = "stopping after this round (again to stop now)"
        threading.Thread(target=say, args=(message,), daemon=True).start()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old)

    return restore


def _once(what: str, names: list[str]) -> None:
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ClientError(f"{what} {twice[0]} is given twice")


def collect_main(args: argparse.Namespace) -> int:
    """Scrape the targets into the collection; one line per round on stdout."""
    err = sys.stderr
    try:
        every = parse_seconds(args.every, "--every")
        profiles = [parse_profile(p, every) for p in (args.profile or DEFAULT_PROFILES)]
        targets = [parse_target(t) for t in args.targets]
        _once("--profile", [p.name for p in profiles])
        _once("target", [t.instance for t in targets])
        labels = check_labels(args.label or ())
        if any(item.partition("=")[0].strip() == "instance" for item in labels):
            raise ClientError("--label instance=…: instance is each target's host:port")
        if args.rounds < 0:
            raise ClientError("--rounds: give a number of rounds (0: until stopped)")
        server, cid = collection_of(args.collection, args.server)
        token = collection_token(args.token)
        record = request_json("GET", f"{server}/api/v1/collections/{cid}")  # there at all?
    except ClientError as exc:
        print(f"pprof-share: {exc}", file=err)
        return 1
    jobs = [Job(t, p) for t in targets for p in profiles]
    collector = Collector(server, cid, token, jobs, labels, every, sys.stdout, err)
    restore = _on_signals(collector.stop, collector.say)
    try:
        collector.say(
            f"collecting {', '.join(map(str, profiles))} from {len(targets)} "
            f"target{'s' if len(targets) > 1 else ''} every "
            f"{_seconds(every)} into {record.get('url', args.collection)} (Ctrl-C stops after "
            "the round in flight)"
        )
        if max(p.seconds for p in profiles) >= every:
            collector.say("a profile lasts --every or longer: each round starts as the last ends")
        return collector.run(args.rounds)
    finally:
        restore()


def add_parser(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = commands.add_parser(
        "collect",
        help="scrape /debug/pprof of Go programs into a collection every interval",
        description="Every --every, fetch each --profile from every TARGET at once and add it "
        "to the collection, labelled instance=HOST:PORT (and --label). Default: "
        f"--every {DEFAULT_EVERY} --profile {' --profile '.join(DEFAULT_PROFILES)}. A target "
        "that fails is reported and retried with backoff while the others go on. Ctrl-C "
        "finishes the round in flight and exits 0.",
    )
    p.add_argument(
        "targets", nargs="+", metavar="TARGET",
        help="host:port of a program serving net/http/pprof, or its URL",
    )  # fmt: skip
    p.add_argument("--collection", required=True, metavar="LINK", help=LINK_HELP)
    p.add_argument("--token", help=TOKEN_HELP)
    p.add_argument("--server", help=server_help())
    p.add_argument(
        "--every", default=DEFAULT_EVERY, metavar="DURATION",
        help=f"time between rounds' starts (default: {DEFAULT_EVERY})",
    )  # fmt: skip
    p.add_argument(
        "--profile", action="append", metavar="NAME[=DURATION]",
        help=f"{', '.join(ENDPOINTS)}; cpu=5s profiles for 5 s (cpu alone: half of --every), "
        "heap=30s etc. are deltas; repeat for several (default: "
        f"{' and '.join(DEFAULT_PROFILES)})",
    )  # fmt: skip
    p.add_argument(
        "--rounds", type=int, default=0, metavar="N", help="stop after N rounds (default: never)"
    )
    p.add_argument(
        "--label", action="append", metavar="KEY=VALUE", help="a label of every profile (repeat)"
    )
    p.set_defaults(func=collect_main)
