"""Ingest processes (SHARE_INGEST_WORKERS): an upload's validation never waits behind an
analysis or a background view, which keep to the analysis processes, nor a merge, which keeps to
the merge process (tests/test_compute_merge_slots.py); with 0 of them uploads share the analysis
processes as before. Real compute processes throughout."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from compute_roles import cmdline, first_options, ping

from share.compute.pool import ComputePool
from share.compute.service import AFFINITY_KEY
from share.compute.supervisor import INGEST, MERGE
from share.config import ConfigError, load
from share.core import Share, open_share

from conftest import unique_profile

BUSY_SECONDS = 3.0  # a long job on the analysis process: far longer than a small upload takes


def settings(tmp_path: Path, **more: Any) -> dict[str, Any]:
    stores = {"BLOBS": f"file:{tmp_path}/blobs", "META": f"sqlite:{tmp_path}/meta.sqlite3"}
    return load({}, {**stores, "ANALYSIS_WORKERS": 1, "PRECOMPUTE": "off", **more})


@pytest.fixture(scope="module")
def pool() -> Iterator[ComputePool]:
    """One analysis process (slot 0), one ingest process (slot 1) and one merge process (2)."""
    p = ComputePool(load({}, {"ANALYSIS_WORKERS": 1, "INGEST_WORKERS": 1}))
    p.run({"op": "ping"}, slot=0)
    yield p
    p.close()


@pytest.fixture
def share(pool: ComputePool, tmp_path: Path) -> Iterator[Share]:
    core = open_share(settings(tmp_path, INGEST_WORKERS=1), compute=pool)
    yield core
    core.meta.close()  # not core.close(): the module's pool outlives it


@contextlib.contextmanager
def analysis_busy(pool: ComputePool, background: bool) -> Iterator[threading.Thread]:
    """Slot 0 running a sleep of BUSY_SECONDS, as a job someone waits for or as a background
    one; the process has taken it when this yields (the thread ends with the job)."""
    job = {"op": "sleep", "seconds": BUSY_SECONDS}
    with contextlib.ExitStack() as stack:
        if background:
            reservation = stack.enter_context(pool.reserve(0, wait=10))
            assert reservation is not None
            thread = threading.Thread(target=reservation.run, args=(job,))
            thread.start()
        else:
            thread = threading.Thread(target=pool.run, args=(job,), kwargs={"slot": 0})
            thread.start()
            while True:  # until the process has taken it: it then takes no reservation
                with pool.reserve(0, wait=0.05) as probe:
                    if probe is None:
                        break
                time.sleep(0.01)
        yield thread
        thread.join()


def timed_upload(share: Share, label: str) -> tuple[str, float]:
    started = time.monotonic()
    upload = share.upload(unique_profile(label), precompute=False)
    return upload.record.id, time.monotonic() - started


# --- settings ---------------------------------------------------------------------------------
def test_the_setting_defaults_to_one_and_takes_zero() -> None:
    assert load({})["INGEST_WORKERS"] == 1
    assert load({"SHARE_INGEST_WORKERS": "0"})["INGEST_WORKERS"] == 0
    assert load({"SHARE_INGEST_WORKERS": "3"})["INGEST_WORKERS"] == 3


@pytest.mark.parametrize("value", ["-1", "two", "1.5", ""])
def test_a_bad_count_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=r"SHARE_INGEST_WORKERS=.*expected a number of proc"):
        load({"SHARE_INGEST_WORKERS": value})


# --- routing ----------------------------------------------------------------------------------
def test_uploads_take_the_ingest_slots_and_nothing_else_does() -> None:
    """3 analysis + 2 ingest + 1 merge processes: slots 0-2, 3-4 and 5 (the routing alone:
    none started)."""
    p = ComputePool(load({}, {"ANALYSIS_WORKERS": 3, "INGEST_WORKERS": 2}))
    try:
        assert [p.ingest_slot() for _ in range(4)] == [3, 4, 3, 4]
        assert {p.next_slot() for _ in range(9)} == {0, 1, 2}
        assert {p.slot_of(f"profile-{i}") for i in range(300)} == {0, 1, 2}
        assert p.supervisor is not None and p.supervisor.size == 6
        roles = ["analysis"] * 3 + [INGEST] * 2 + [MERGE]
        assert [p.supervisor.role(i) for i in range(6)] == roles
        web_worker = ComputePool(p.settings, directory="/nonexistent")  # another worker's view
        assert web_worker.slot_of("profile-7") == p.slot_of("profile-7")
        assert web_worker.ingest_slot() == 3
    finally:
        p.close()


def test_the_supervisor_starts_both_kinds_and_replaces_an_ingest_process_in_kind(
    pool: ComputePool,
) -> None:
    analysis, ingest, merge = (ping(pool, slot)["pid"] for slot in (0, 1, 2))
    assert pool.supervisor is not None
    assert sorted(pool.supervisor.pids()) == sorted([analysis, ingest, merge])
    assert cmdline(ingest)[-1] == INGEST and INGEST not in cmdline(analysis)
    os.kill(ingest, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (replacement := ping(pool, 1)["pid"]) == ingest:
        assert time.monotonic() < deadline, "the ingest process was not replaced"
        time.sleep(0.05)
    assert cmdline(replacement)[-1] == INGEST
    assert ping(pool, 0)["pid"] == analysis  # the analysis process was left alone


def test_uploads_views_and_merges_each_reach_their_own_processes(share: Share) -> None:
    pool = share.compute
    before = {slot: ping(pool, slot)["jobs"] for slot in (0, 1, 2)}
    first, _ = timed_upload(share, "routed first")
    second, _ = timed_upload(share, "routed second")
    share.view(first, "top", first_options(share, first, "top"))
    merged = share.merge([first, second])
    after = {slot: ping(pool, slot) for slot in (0, 1, 2)}
    # Each ping is a job too: one more on each side.
    assert after[1]["jobs"] - before[1] == 3 + 1  # two uploads and the merge's result, validated
    assert after[0]["jobs"] - before[0] == 1 + 1  # the view
    assert after[2]["jobs"] - before[2] == 1 + 1  # the merge
    assert {first, second} <= set(after[1]["warm"])  # kept decoded, for their precompute
    assert first in after[0]["warm"] and second not in after[0]["warm"]
    assert {first, second} <= set(after[2]["warm"])  # the merge's parts, decoded there
    for pid in (first, second, merged.record.id):  # no view is sent to where it was validated
        assert share.meta.view_get(pid, AFFINITY_KEY) is None


# --- an upload waits for nothing on the analysis side -----------------------------------------
@pytest.mark.parametrize("background", [False, True], ids=["waited-for", "background"])
def test_an_upload_is_validated_while_the_analysis_process_is_busy(
    share: Share, background: bool
) -> None:
    with analysis_busy(share.compute, background) as busy:
        _, seconds = timed_upload(share, f"while busy {background}")
        still_busy = busy.is_alive()
    assert still_busy, "the long job ended before the upload did"
    assert seconds < BUSY_SECONDS / 2, seconds


def test_precompute_runs_on_the_ingest_process_that_holds_the_upload_decoded(
    share: Share,
) -> None:
    """Not on the analysis process, which would fetch and decode it first (slower than the page
    asks for its first view: bench/paint.py)."""
    share.precompute.enabled = True
    pool = share.compute
    ingest_jobs, analysis_jobs = ping(pool, 1)["jobs"], ping(pool, 0)["jobs"]
    upload = share.upload(unique_profile("precomputed"))
    pid = upload.record.id
    deadline = time.monotonic() + 30
    while share.precompute.computed < 3:
        assert time.monotonic() < deadline, "the first views were not precomputed"
        time.sleep(0.02)
    for name in ("flamegraph", "top", "summary"):
        assert share.cached_view(pid, name, first_options(share, pid, name)) is not None
    analysis = ping(pool, 0)
    assert analysis["jobs"] == analysis_jobs + 1  # this ping: no fetch, no decode there
    assert pid not in analysis["warm"]
    ingest = ping(pool, 1)
    assert ingest["jobs"] == ingest_jobs + 1 + 3 + 1  # its validation, three views, this ping
    assert pid in ingest["warm"]


def test_a_view_asked_while_the_first_is_precomputed_waits_for_the_precompute(
    share: Share, pool: ComputePool
) -> None:
    """The page asks for its flame graph and top table at once: the precompute holds the leases
    of all its views from the start, so the top table waits for the ingest process (a table
    lookup once the flame graph is done) instead of being computed cold on the analysis
    process, which would fetch and decode the profile again, on the same cores."""
    pid = share.upload(unique_profile("second view")).record.id
    analysis_jobs = ping(pool, 0)["jobs"]
    wanted = [(name, first_options(share, pid, name)) for name in ("flamegraph", "top")]
    computed: list[int] = []
    busy = threading.Thread(
        target=pool.run, args=({"op": "sleep", "seconds": 1.5},), kwargs={"slot": 1}
    )
    busy.start()
    time.sleep(0.2)  # the ingest process has taken it: the precompute waits to reserve it
    warming = threading.Thread(
        target=lambda: computed.append(share.views.warm_first(pid, wanted, 10, slot=1))
    )
    warming.start()
    time.sleep(0.3)  # its leases are taken
    started = time.monotonic()
    top = share.view(pid, "top", wanted[1][1])
    waited = time.monotonic() - started
    warming.join()
    busy.join()
    assert top and waited > 0.5, waited  # it waited for the ingest process
    assert computed == [2]
    analysis = ping(pool, 0)
    assert analysis["jobs"] == analysis_jobs + 1, "computed on the analysis process too"
    assert pid not in analysis["warm"]


# --- SHARE_INGEST_WORKERS=0: the old behaviour ------------------------------------------------
def test_without_ingest_processes_uploads_share_the_analysis_process(tmp_path: Path) -> None:
    core = open_share(settings(tmp_path, INGEST_WORKERS=0, MERGE_WORKERS=0))
    try:
        pool = core.compute
        assert pool.ingest_slot() == 0 and pool.supervisor is not None
        assert pool.supervisor.size == 1
        ping(pool, 0)
        with analysis_busy(pool, background=False):
            pid, seconds = timed_upload(core, "shared")
        assert seconds > BUSY_SECONDS / 3, seconds  # it waited behind the long job
        assert pid in ping(pool, 0)["warm"]  # validated there, and kept decoded
        assert core.meta.view_get(pid, AFFINITY_KEY) == b"0"  # its views go there
    finally:
        core.close()
