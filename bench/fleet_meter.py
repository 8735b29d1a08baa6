"""Where bench/fleet.py's time goes: the CPU seconds of every process of the balanced pair by
role, from /proc, and the compute processes' jobs, from the instances' logs."""

from __future__ import annotations

import os
import re
from pathlib import Path

from balanced_pair import Pair

CLOCK_TICK = os.sysconf("SC_CLK_TCK")
# compute: the analysis processes (views); ingest: those that validate the adds; merge: those
# that merge the collection's blocks and selections (and validate what they merged).
ROLES = ("web", "compute", "ingest", "merge", "master", "redis", "moto", "haproxy", "generator")


def cpu_seconds(pid: int) -> float:
    """utime + stime of pid so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICK


Snapshot = dict[int, tuple[str, float]]
JOB_LINE = re.compile(r"compute\[\d+\]: done (.*?): (ok|error \d+) in ([\d.]+) s")
# A merge's name (share/collections/blocks.py's BLOCK_TITLE, service.py's SELECTION_TITLE).
BLOCK = re.compile(r"block of collection \S+: \S+?( of .*)?, (\d+) s from \d+")


def job_kind(what: str) -> str:
    """A log line's job as the report groups it: `view flamegraph`, `ingest`, `merge 10 s
    blocks, labels` (a label selection's), `merge selections` (the ranges views asked for)."""
    op, _, rest = what.partition(" ")
    if op == "view":
        return f"view {rest.split(' ')[0]}"
    if op != "merge" or not rest:
        return op
    block = BLOCK.fullmatch(rest)
    if block is None:
        return "merge selections"
    return f"merge {block[2]} s blocks" + (", labels" if block[1] else "")


class JobLog:
    """The compute processes' jobs over a phase, from the instances' logs (one line per job:
    share/compute/worker.py): count and wall seconds by job (ingest, view NAME, merge, ...)."""

    def __init__(self, pair: Pair) -> None:
        self.logs = [instance.log for instance in pair.instances]
        self.offsets = [log.stat().st_size for log in self.logs]

    def jobs(self) -> dict[str, tuple[int, float]]:
        found: dict[str, tuple[int, float]] = {}
        for log, offset in zip(self.logs, self.offsets, strict=True):
            with open(log, "rb") as f:
                f.seek(offset)
                text = f.read().decode(errors="replace")
            for name, outcome, seconds in JOB_LINE.findall(text):
                what = job_kind(name) + ("" if outcome == "ok" else f" ({outcome})")
                count, total = found.get(what, (0, 0.0))
                found[what] = (count + 1, total + float(seconds))
        return found


class CpuMeter:
    """CPU seconds per role over a phase: each live process's, less what it had at the start
    (a process that ended during the phase is not counted)."""

    def __init__(self, pair: Pair, services: dict[str, int]) -> None:
        self.pair, self.services = pair, services

    def snapshot(self) -> Snapshot:
        roles = {pid: name for name, pid in self.services.items()}
        roles[self.pair.haproxy.pid] = "haproxy"
        for instance in self.pair.instances:
            for role, pids in instance.roles().items():
                roles.update(dict.fromkeys(pids, role))
        snap = {pid: (role, cpu_seconds(pid)) for pid, role in roles.items()}
        times = os.times()  # this process: the generator's every thread
        snap[-1] = ("generator", times.user + times.system)
        return snap

    @staticmethod
    def spent(before: Snapshot, after: Snapshot) -> dict[str, float]:
        used = dict.fromkeys(ROLES, 0.0)
        for pid, (role, now) in after.items():
            used[role] += now - before.get(pid, (role, 0.0))[1]
        return used
