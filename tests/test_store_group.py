"""GroupCommit: concurrent callers share one write, each gets its own result or the error."""

from __future__ import annotations

import threading
import time

import pytest

from share.store.group import GroupCommit


def test_concurrent_commits_share_writes_and_get_their_own_results():
    batches: list[list[int]] = []

    def write(items: list[int]) -> list[bool]:
        batches.append(items)
        time.sleep(0.02)  # an fsync: callers arriving meanwhile form the next batch
        return [i % 2 == 0 for i in items]

    group = GroupCommit(write)
    results: dict[int, bool] = {}
    barrier = threading.Barrier(40)

    def call(i: int) -> None:
        barrier.wait()
        results[i] = group.commit(i)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert results == {i: i % 2 == 0 for i in range(40)}
    assert sorted(i for batch in batches for i in batch) == list(range(40))  # each once
    assert len(batches) < 40  # some were written together


def test_a_failed_write_fails_every_caller_of_its_batch_and_the_next_one_works():
    calls = []

    def write(items: list[str]) -> list[bool]:
        calls.append(items)
        if len(calls) == 1:
            raise OSError("disk full")
        return [True] * len(items)

    group = GroupCommit(write)
    with pytest.raises(OSError, match="disk full"):
        group.commit("a")
    assert group.commit("b") is True
