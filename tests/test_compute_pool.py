"""The compute tier's processes: answers, warm routing, and what happens past each limit."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from share.compute import spool
from share.compute.pool import AnalysisFailed, ComputePool, job_settings
from share.config import load
from share.errors import ShareError

CORPUS = Path(__file__).parent / "corpus"
CPU = (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes()


def gone(pid: int, within: float = 3.0) -> bool:
    """Whether the process ends (and is reaped by its supervisor) within a few seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def pool(**settings: Any) -> ComputePool:
    return ComputePool(load({}, {"ANALYSIS_WORKERS": 1, **settings}))


@pytest.fixture
def one() -> Any:
    p = pool(ANALYSIS_SECONDS=3)
    # Started before the tests' jobs, which are held to 3 s: under the suite's load on a slow
    # day, starting the processes took longer than that ("no compute process is answering").
    p.run({"op": "ping"}, seconds=60)
    yield p
    p.close()


def ingest(p: ComputePool, data: bytes, **settings: Any) -> dict[str, Any]:
    """The upload job on data, from a spool file as the core sends it."""
    with spool.holding(data, len(data)) as path, spool.new_file() as made:
        job = {"op": "ingest", "path": str(path), "blob_path": str(made)}
        return p.run({**job, **job_settings(load({}, settings))})


def test_ingest_answers_what_the_record_needs_and_keeps_the_profile_warm(one) -> None:
    facts = ingest(one, CPU)
    assert len(facts["id"]) == 16 and facts["blob"] is None  # gzip upload: stored as is
    assert facts["sample_types"] == [["samples", "count"], ["cpu", "nanoseconds"]]
    assert facts["n_samples"] > 0 and facts["metadata"]["period"] == 10_000_000
    assert one.warm[0] == {facts["id"]}


def test_a_job_past_its_time_is_stopped_and_its_process_replaced(one) -> None:
    first = one.run({"op": "ping"})["pid"]
    started = time.monotonic()
    with pytest.raises(AnalysisFailed, match=r"longer than 3 s \(SHARE_ANALYSIS_SECONDS\)"):
        one.run({"op": "sleep", "seconds": 60})
    assert time.monotonic() - started < 3 + 2
    assert gone(first)  # killed, and reaped
    assert one.run({"op": "ping"})["pid"] != first


def test_a_process_killed_mid_job_is_a_clear_503_then_replaced(one) -> None:
    victim = one.run({"op": "ping"})["pid"]
    threading.Timer(0.3, os.kill, (victim, signal.SIGKILL)).start()
    with pytest.raises(AnalysisFailed, match="compute process died during the analysis") as e:
        one.run({"op": "sleep", "seconds": 30})
    assert e.value.code == 503 and e.value.kind == "died"
    assert one.run({"op": "sleep", "seconds": 0.01}) == 0.01
    assert one.run({"op": "ping"})["pid"] != victim


def test_a_job_past_the_memory_limit_fails_clearly_and_the_process_starts_afresh() -> None:
    p = pool(ANALYSIS_MEMORY=512 << 20)
    try:
        before = p.run({"op": "ping"})["pid"]
        assert p.run({"op": "allocate", "bytes": 64 << 20}) == 64 << 20
        with pytest.raises(AnalysisFailed, match=r"more memory than the 512 MiB .*ANALYSIS_MEM"):
            p.run({"op": "allocate", "bytes": 1 << 30})
        assert p.run({"op": "ping"})["pid"] != before
    finally:
        p.close()


def test_job_errors_come_back_as_share_errors(one) -> None:
    with pytest.raises(ShareError, match="not a pprof profile") as e:
        ingest(one, b"\x0a\x05hello world, not a profile")
    assert e.value.code == 400 and not isinstance(e.value, AnalysisFailed)
    assert one.run({"op": "ping"})["jobs"] >= 2  # the same process, still serving


def test_element_limits_refuse_an_amplifying_upload_before_decoding_it(one) -> None:
    """~1 M samples in a few KB: over a lowered SHARE_MAX_SAMPLES, refused with the limit."""
    from test_compute_live import many_samples

    with pytest.raises(ShareError, match=r"1,000,000 samples, over the limit of 100,000 "
                                         r"\(SHARE_MAX_SAMPLES\)") as e:  # fmt: skip
        ingest(one, many_samples(1_000_000), MAX_SAMPLES=100_000)
    assert e.value.code == 413


def test_a_profile_goes_to_the_same_process_from_every_pool_of_the_instance() -> None:
    """Two pools on one Supervisor (two web workers of one instance) route a profile alike,
    so the process that decoded it answers both."""
    first = pool(ANALYSIS_WORKERS=2)
    try:
        second = ComputePool(first.settings, directory=first.directory)
        facts = ingest(first, CPU)
        slot = first.slot_of(facts["id"])
        assert second.slot_of(facts["id"]) == slot
        job = {"op": "ping"}
        assert (
            first.run(job, profile=facts["id"])["pid"]
            == second.run(job, profile=facts["id"])["pid"]
        )
        jobs = [second.run(job, slot=i)["pid"] for i in range(4)]
        assert len(set(jobs)) == 4  # two analysis processes, the ingest and the merge one
        assert second.ingest_slot() == first.ingest_slot() == 2
        assert second.merge_slot() == first.merge_slot() == 3
    finally:
        first.close()


def test_a_busy_process_makes_the_next_job_wait_then_answer() -> None:
    p = pool(ANALYSIS_SECONDS=5)
    try:
        p.run({"op": "ping"}, seconds=60)  # started before the race below
        slow = threading.Thread(target=p.run, args=({"op": "sleep", "seconds": 0.5},))
        slow.start()
        time.sleep(0.2)
        started = time.monotonic()
        assert p.run({"op": "sleep", "seconds": 0.01}) == 0.01
        assert time.monotonic() - started >= 0.2  # it waited its turn, it was not refused
        slow.join()
    finally:
        p.close()


def test_processes_end_with_the_pool() -> None:
    p = pool()
    slots = (0, p.ingest_slot(), p.merge_slot())
    children = [p.run({"op": "ping"}, slot=slot)["pid"] for slot in slots]
    assert len(set(children)) == 3
    assert p.supervisor is not None and sorted(p.supervisor.pids()) == sorted(children)
    directory = p.directory
    p.close()
    assert all(gone(child) for child in children) and not os.path.exists(directory)
