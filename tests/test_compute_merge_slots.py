"""Merge processes (SHARE_MERGE_WORKERS): every merge (/api/v1/merge, a collection's blocks and
selections) and the validation of the merges the server stores run there, so a view never waits
behind one; with 0 of them merges share the analysis processes as before. Real compute
processes throughout (1 analysis + 1 ingest + 1 merge)."""

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

from share.collections import open_collections, windows
from share.collections.leased import entry_lease
from share.compute.pool import ComputePool
from share.compute.service import AFFINITY_KEY
from share.compute.supervisor import INGEST, MERGE
from share.config import ConfigError, load
from share.core import Share, open_share

from conftest import unique_profile

BUSY_SECONDS = 3.0  # a long job: far longer than a small profile's first view or merge takes
ANALYSIS, INGEST_SLOT, MERGE_SLOT = 0, 1, 2


def settings(tmp_path: Path, **more: Any) -> dict[str, Any]:
    stores = {"BLOBS": f"file:{tmp_path}/blobs", "META": f"sqlite:{tmp_path}/meta.sqlite3"}
    return load({}, {**stores, "ANALYSIS_WORKERS": 1, "PRECOMPUTE": "off", **more})


@pytest.fixture(scope="module")
def pool() -> Iterator[ComputePool]:
    """One analysis process (slot 0), one ingest process (1) and one merge process (2)."""
    p = ComputePool(load({}, {"ANALYSIS_WORKERS": 1, "INGEST_WORKERS": 1, "MERGE_WORKERS": 1}))
    for slot in (ANALYSIS, INGEST_SLOT, MERGE_SLOT):
        ping(p, slot)
    yield p
    p.close()


@pytest.fixture
def share(pool: ComputePool, tmp_path: Path) -> Iterator[Share]:
    core = open_share(settings(tmp_path, INGEST_WORKERS=1, MERGE_WORKERS=1), compute=pool)
    yield core
    core.meta.close()  # not core.close(): the module's pool outlives it


def jobs(pool: ComputePool) -> list[int]:
    """Jobs answered so far by each process (these pings included)."""
    return [ping(pool, slot)["jobs"] for slot in range(3)]


@contextlib.contextmanager
def busy(pool: ComputePool, slot: int, seconds: float = BUSY_SECONDS) -> Iterator[threading.Thread]:
    """The slot's process running a sleep of `seconds` that someone waits for; it has taken
    it when this yields (the thread ends with the job)."""
    job = {"op": "sleep", "seconds": seconds}
    thread = threading.Thread(target=pool.run, args=(job,), kwargs={"slot": slot})
    thread.start()
    try:
        while True:  # until the process has taken it: it then takes no reservation
            with pool.reserve(slot, wait=0.05) as probe:
                if probe is None:
                    break
            time.sleep(0.01)
        yield thread
    finally:
        thread.join()


def uploaded(share: Share, *labels: str) -> list[str]:
    return [share.upload(unique_profile(f"merge slots {label}"), precompute=False).record.id
            for label in labels]  # fmt: skip


# --- settings ---------------------------------------------------------------------------------
def test_the_setting_defaults_to_one_and_takes_zero() -> None:
    assert load({})["MERGE_WORKERS"] == 1
    assert load({"SHARE_MERGE_WORKERS": "0"})["MERGE_WORKERS"] == 0
    assert load({"SHARE_MERGE_WORKERS": "2"})["MERGE_WORKERS"] == 2


@pytest.mark.parametrize("value", ["-1", "two", "1.5", ""])
def test_a_bad_count_names_the_variable(value: str) -> None:
    with pytest.raises(ConfigError, match=r"SHARE_MERGE_WORKERS=.*expected a number of proc"):
        load({"SHARE_MERGE_WORKERS": value})


# --- routing (no process started) -------------------------------------------------------------
def test_merges_take_the_merge_slots_after_the_ingest_ones() -> None:
    """2 analysis + 1 ingest + 2 merge processes: slots 0-1, 2 and 3-4."""
    p = ComputePool(load({}, {"ANALYSIS_WORKERS": 2, "INGEST_WORKERS": 1, "MERGE_WORKERS": 2}))
    try:
        assert [p.merge_slot() for _ in range(4)] == [3, 4, 3, 4]
        assert [p.ingest_slot() for _ in range(2)] == [2, 2]
        assert {p.next_slot() for _ in range(6)} == {0, 1}
        assert {p.slot_of(f"profile-{i}") for i in range(300)} == {0, 1}
        assert p.supervisor is not None and p.supervisor.size == 5
        roles = ["analysis"] * 2 + [INGEST] + [MERGE] * 2
        assert [p.supervisor.role(i) for i in range(5)] == roles
        assert p.supervisor.roles() == "2 analysis, 1 ingest, 2 merge"
        web_worker = ComputePool(p.settings, directory="/nonexistent")  # another worker's view
        assert web_worker.merge_slot() == 3 and web_worker.made_slot() == 3
        # A sum of summaries: a merge process by its key, the same in every worker.
        sums = {f"parts-{i}": p.sum_slot(f"parts-{i}") for i in range(300)}
        assert set(sums.values()) == {3, 4}
        assert all(web_worker.sum_slot(key) == slot for key, slot in sums.items())
    finally:
        p.close()


def test_a_merge_s_result_is_validated_where_this_thread_merged_it() -> None:
    """Two threads merging at once: each one's made_slot is the slot of its own last merge."""
    p = ComputePool(load({}, {"ANALYSIS_WORKERS": 1, "INGEST_WORKERS": 1, "MERGE_WORKERS": 2}))
    try:
        assert p.made_slot() in (2, 3)  # no merge in this thread yet: a merge process
        first = p.merge_slot()
        other: list[int] = []
        thread = threading.Thread(target=lambda: other.extend([p.merge_slot(), p.made_slot()]))
        thread.start()
        thread.join()
        assert other[0] == other[1] != first
        assert p.made_slot() == first
    finally:
        p.close()


def test_without_merge_processes_merges_and_their_results_take_analysis_slots() -> None:
    p = ComputePool(load({}, {"ANALYSIS_WORKERS": 2, "INGEST_WORKERS": 1, "MERGE_WORKERS": 0}))
    try:
        assert {p.merge_slot() for _ in range(4)} == {0, 1}
        assert {p.made_slot() for _ in range(4)} == {0, 1}
        assert {p.sum_slot(f"parts-{i}") for i in range(100)} == {0, 1}
        assert p.supervisor is not None and p.supervisor.size == 3
        assert MERGE not in [p.supervisor.role(i) for i in range(3)]
        assert p.supervisor.roles() == "2 analysis, 1 ingest"
    finally:
        p.close()


# --- the processes ----------------------------------------------------------------------------
def test_the_supervisor_starts_a_merge_process_and_replaces_it_in_kind(pool: ComputePool) -> None:
    pids = [ping(pool, slot)["pid"] for slot in range(3)]
    assert pool.supervisor is not None and sorted(pool.supervisor.pids()) == sorted(pids)
    merge = pids[MERGE_SLOT]
    assert cmdline(merge)[-1] == MERGE
    assert MERGE not in cmdline(pids[ANALYSIS]) and MERGE not in cmdline(pids[INGEST_SLOT])
    os.kill(merge, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while (replacement := ping(pool, MERGE_SLOT)["pid"]) == merge:
        assert time.monotonic() < deadline, "the merge process was not replaced"
        time.sleep(0.05)
    assert cmdline(replacement)[-1] == MERGE
    assert [ping(pool, slot)["pid"] for slot in (ANALYSIS, INGEST_SLOT)] == pids[:2]


def test_api_merges_run_on_the_merge_process_which_keeps_their_parts(share: Share) -> None:
    pool = share.compute
    first, second = uploaded(share, "api first", "api second")
    before = jobs(pool)
    merged = share.merge([first, second])
    after = jobs(pool)
    # Each ping is a job too: one more on each process.
    assert after[MERGE_SLOT] - before[MERGE_SLOT] == 1 + 1  # the merge
    assert after[INGEST_SLOT] - before[INGEST_SLOT] == 1 + 1  # its result: any upload's way
    assert after[ANALYSIS] - before[ANALYSIS] == 0 + 1  # nothing
    assert {first, second} <= set(ping(pool, MERGE_SLOT)["warm"])  # a cache, unlike ingest's
    assert share.meta.view_get(merged.record.id, AFFINITY_KEY) is None


def test_a_derived_upload_is_validated_on_the_merge_process_that_made_it(share: Share) -> None:
    """As a collection's block is made: Merges.merge_ids, then Share.upload(derived=True)."""
    pool = share.compute
    parts = uploaded(share, "block first", "block second", "block third")
    before = jobs(pool)
    data = share.merges.merge_ids(parts)
    block = share.upload(data, title="a block", precompute=False, derived=True).record.id
    after = jobs(pool)
    assert after[MERGE_SLOT] - before[MERGE_SLOT] == 2 + 1  # the merge and its validation
    assert after[INGEST_SLOT] - before[INGEST_SLOT] == 0 + 1
    assert after[ANALYSIS] - before[ANALYSIS] == 0 + 1
    warm = set(ping(pool, MERGE_SLOT)["warm"])
    assert block in warm and set(parts) <= warm  # for the collection's next merge
    assert block not in ping(pool, ANALYSIS)["warm"]
    # A merge process answers no views: the block's go to its own analysis process.
    assert share.meta.view_get(block, AFFINITY_KEY) is None
    assert share.view(block, "top", first_options(share, block, "top"))
    assert block in ping(pool, ANALYSIS)["warm"]


def four_members(share: Share, title: str) -> tuple[Any, Any, float]:
    """A collection of four members 5 s apart, ten minutes ago: (collections, it, start)."""
    collections = open_collections(share)
    c, token = collections.create(title=title)
    start = time.time() - 600
    for i in range(4):
        data = unique_profile(f"{title} member {i}")
        collections.add(c.id, token, data, {"pod": f"p{i % 2}"}, f"{start + 5 * i:.3f}")
    return collections, c, start


def test_a_collection_s_blocks_and_selection_are_merged_on_the_merge_process(
    share: Share,
) -> None:
    collections, c, start = four_members(share, "merge slots")
    pool = share.compute
    before = jobs(pool)
    resolved = collections.resolve(c.id, {})
    assert resolved.pid is not None and resolved.plan.members == 4
    merged = jobs(pool)
    assert merged[MERGE_SLOT] - before[MERGE_SLOT] >= 2 + 1  # merges, their validations
    assert merged[INGEST_SLOT] - before[INGEST_SLOT] == 0 + 1
    assert merged[ANALYSIS] - before[ANALYSIS] == 0 + 1  # nothing of the merging
    assert resolved.pid in ping(pool, MERGE_SLOT)["warm"]
    assert share.view(resolved.pid, "top", first_options(share, resolved.pid, "top"))
    assert jobs(pool)[ANALYSIS] - merged[ANALYSIS] == 1 + 1  # the view alone


def test_a_collection_s_range_is_summed_on_the_merge_process(share: Share) -> None:
    """A range's flame graph summed from its parts (share.analysis.combine.summed) runs where
    they were merged, as the merge it replaces did: a profile's own views never wait for it."""
    collections, c, start = four_members(share, "summed slots")
    resolved = collections.resolve(c.id, {"to": f"{start + 12:.3f}"}, merge=False)
    parts = resolved.plan.parts
    assert resolved.pid is None and len(parts) >= 2
    pool = share.compute
    before = jobs(pool)
    first = parts[0] if isinstance(parts[0], str) else next(windows.leaves(parts))
    options = first_options(share, first, "flamegraph")
    assert collections.summed_view(parts, "flamegraph", options, "a range")
    after = jobs(pool)
    assert after[MERGE_SLOT] - before[MERGE_SLOT] == 1 + 1  # the sum
    assert after[ANALYSIS] - before[ANALYSIS] == 0 + 1
    assert after[INGEST_SLOT] - before[INGEST_SLOT] == 0 + 1


# --- a view waits for no merge, a merge for no view ---------------------------------------------
def test_a_view_is_answered_while_the_merge_process_is_busy(share: Share) -> None:
    (pid,) = uploaded(share, "viewed while merging")
    options = first_options(share, pid, "flamegraph")
    with busy(share.compute, share.compute.merge_slot()) as merging:
        started = time.monotonic()
        assert share.view(pid, "flamegraph", options)
        seconds = time.monotonic() - started
        still_busy = merging.is_alive()
    assert still_busy, "the long job ended before the view did"
    assert seconds < BUSY_SECONDS, seconds


def test_a_merge_is_answered_while_the_analysis_process_is_busy(share: Share) -> None:
    parts = uploaded(share, "merged while viewing 1", "merged while viewing 2")
    with busy(share.compute, ANALYSIS) as viewing:
        data = share.merges.merge_ids(parts)
        block = share.upload(data, precompute=False, derived=True)
        still_busy = viewing.is_alive()
    assert still_busy, "the long job ended before the merge and its validation did"
    assert block.created


# --- SHARE_MERGE_WORKERS=0: the old behaviour -------------------------------------------------
def test_without_merge_processes_merges_share_the_analysis_process(tmp_path: Path) -> None:
    core = open_share(settings(tmp_path, INGEST_WORKERS=1, MERGE_WORKERS=0))
    try:
        pool = core.compute
        assert pool.merge_slot() == 0 and pool.supervisor is not None
        assert pool.supervisor.size == 2  # the analysis and the ingest process
        parts = uploaded(core, "shared 1", "shared 2")
        before = ping(pool, 0)["jobs"]
        with busy(pool, 0):
            started = time.monotonic()
            data = core.merges.merge_ids(parts)
            seconds = time.monotonic() - started
        assert seconds > BUSY_SECONDS / 3, seconds  # it waited behind the long job
        block = core.upload(data, precompute=False, derived=True).record.id
        assert ping(pool, 0)["jobs"] - before == 1 + 1 + 1 + 1  # sleep, merge, validation, ping
        assert block in ping(pool, 0)["warm"]  # validated there, and kept decoded
        assert core.meta.view_get(block, AFFINITY_KEY) == b"0"  # its views go there
    finally:
        core.close()


def test_a_warm_up_s_merge_gives_way_to_a_merge_someone_waits_for(share: Share) -> None:
    """A collection's warm-up merges in the background (Merges.background): a view's merge
    asked after it, while the merge process is busy, is taken first."""
    a, b, c = uploaded(share, "bg a", "bg b", "bg c")
    finished: list[str] = []

    def warm_up() -> None:
        with share.merges.background():
            share.merges.merge_ids([a, b])
        finished.append("warm-up")

    def view() -> None:
        share.merges.merge_ids([a, c])
        finished.append("view")

    with busy(share.compute, MERGE_SLOT):
        first = threading.Thread(target=warm_up)
        first.start()
        time.sleep(0.3)  # the warm-up asked first
        second = threading.Thread(target=view)
        second.start()
        first.join()
        second.join()
    assert finished == ["view", "warm-up"]


def test_a_reservation_stops_waiting_when_its_caller_says_so(share: Share) -> None:
    """give_up(), asked while a reservation waits for a busy process, ends the wait early."""
    told: list[bool] = []
    with busy(share.compute, MERGE_SLOT):
        started = time.monotonic()
        threading.Timer(0.5, told.append, args=(True,)).start()
        with share.compute.reserve(MERGE_SLOT, BUSY_SECONDS * 2, lambda: bool(told)) as got:
            waited = time.monotonic() - started
            assert got is None
    assert 0.4 < waited < BUSY_SECONDS  # told at 0.5 s; it would wait 6 s


def test_a_warm_up_s_merge_under_a_lease_a_view_waits_for_queues_as_the_view_would(
    share: Share, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The warm-up merges a block in the background holding its lease; a view that needs the
    same block waits for the lease and says so, and the warm-up's merge is then taken in
    turn with merges someone waits for: before another view's merge asked after that, not
    behind it (as a warm-up's merge that nobody waits for is: the test above). Each step
    waits for the one before (events, not sleeps: CI runs this beside other tests)."""
    a, b = uploaded(share, "hurry a", "hurry b")
    finished: list[str] = []
    holding, queued = threading.Event(), threading.Event()
    run = share.compute.run

    def noting_run(job: Any, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "warm_up":  # it queues as views' merges do
            queued.set()
        return run(job, *args, **kwargs)

    monkeypatch.setattr(share.compute, "run", noting_run)

    def warm_up() -> None:
        with share.merges.background(), entry_lease(share, "cid", "b|block", "a block", 10):
            holding.set()
            share.merges.merge_ids([a, b])
        finished.append("warm-up")

    def waiter() -> None:
        with entry_lease(share, "cid", "b|block", "a block", 10):
            finished.append("waiter")

    def view() -> None:  # another view's merge: a job someone waits for, long enough that
        # the warm-up's thread notes its end first however busy the machine is
        run({"op": "sleep", "seconds": 1.0}, slot=MERGE_SLOT)
        finished.append("view")

    steps = BUSY_SECONDS  # each step's most: all three happen while the process is busy
    with busy(share.compute, MERGE_SLOT, 3 * steps):
        threads = [threading.Thread(target=f, name=f.__name__) for f in (warm_up, waiter, view)]
        threads[0].start()
        assert holding.wait(steps)
        threads[1].start()
        # Without the hurry nothing is queued while the process is busy: the view asks first.
        if queued.wait(steps):
            time.sleep(0.5)  # its connection made
        threads[2].start()
        for thread in threads:
            thread.join()
    said = f"{finished}, the warm-up's merge queued: {queued.is_set()}"
    assert finished.index("warm-up") < finished.index("view"), said
    assert finished.index("warm-up") < finished.index("waiter"), said
