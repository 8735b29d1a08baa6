"""A collection's range summed in windows through its stack table (share.collections.windows,
share.analysis.combine.stacktable, share.compute.sums): sums by stack id equal to the sums of
summaries (which test_collections_summed.py checks against pprof's merge), windows that cover
a range and leave a filling one pending, numbering that stops at its budget and goes on, and
the warm-up that numbers a collection's members before any view."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_collections_blocks import OPEN, add, create
from test_collections_summed import GO, GROUPS, parse

from share.analysis.combine import stacktable, summed
from share.collections import windows
from share.collections.blocks import FILLED_AFTER
from share.compute import sums
from share.compute.pool import job_settings
from share.compute.worker import Worker
from share.config import load
from share.store.collections.index import Member

from conftest import make_app, unique_profile


def stack_values(s: summed.Summary) -> dict[tuple[tuple[str, bool], ...], tuple[int, ...]]:
    """Each stack (its frames' node keys and inline marks) and its values."""
    out = {}
    for i in range(len(s.frame_off) - 1):
        a, b = s.frame_off[i], s.frame_off[i + 1]
        frames = tuple(
            (s.keys[n], bool(f))
            for n, f in zip(s.frame_node[a:b], s.frame_inline[a:b], strict=True)
        )
        before = out.get(frames, (0,) * s.values.shape[1])  # a profile's may repeat a stack
        out[frames] = tuple(int(a) + int(v) for a, v in zip(before, s.values[i], strict=True))
    return out


@pytest.mark.parametrize("names", GROUPS, ids=lambda g: g[0])
def test_sums_by_stack_id_equal_the_sums_of_summaries(names: tuple[str, ...]) -> None:
    parts = [summed.of(parse((GO / n).read_bytes())) for n in names]
    table = stacktable.StackTable(parts[0])
    assert all(table.accepts(p) for p in parts)
    vectors = [table.vector(p) for p in parts]
    want = stack_values(summed.summed(parts))
    assert stack_values(table.summary(table.add(vectors))) == want
    # Numbered again (a stack seen before keeps its id), and summed in windows: the same.
    again = [table.vector(p) for p in parts]
    assert all(np.array_equal(a.ids, b.ids) for a, b in zip(vectors, again, strict=True))
    window = table.add(again[:2])
    assert stack_values(table.summary(table.add([window, *again[2:]]))) == want
    # One part is itself.
    assert stack_values(table.summary(vectors[0])) == stack_values(parts[0])


def test_a_table_takes_only_what_it_may_sum() -> None:
    cpu, heap = (summed.of(parse((GO / n).read_bytes())) for n in ("cpu-small.pb.gz", "heap.pb.gz"))
    table = stacktable.StackTable(cpu)
    assert table.accepts(cpu) and not table.accepts(heap)
    negative = summed.of(parse((GO / "cpu-small.pb.gz").read_bytes()))
    negative.summable = False
    assert not table.accepts(negative)


def test_sums_past_a_double_s_integers_stay_exact() -> None:
    cpu = summed.of(parse((GO / "cpu-small.pb.gz").read_bytes()))
    big = summed.of(parse((GO / "cpu-small.pb.gz").read_bytes()))
    big.values = big.values * (1 << 30) + 1  # sums past 2**53: a double would round them
    big.magnitude = float(np.abs(big.values.astype(np.float64)).sum())
    table = stacktable.StackTable(cpu)
    got = stack_values(table.summary(table.add([table.vector(big), table.vector(big)])))
    assert got == {k: tuple(2 * v for v in vs) for k, vs in stack_values(big).items()}


def test_vectors_are_kept_narrow_where_they_fit_and_summed_wide() -> None:
    """A vector whose values all fit an int32 is kept so (half the cache); sums past 2**31,
    of narrow parts, are exact, and a part past it is kept wide."""
    cpu = summed.of(parse((GO / "cpu-small.pb.gz").read_bytes()))
    table = stacktable.StackTable(cpu)
    cpu.values = cpu.values * 10  # nanoseconds past 2**31 on a stack
    wide = table.vector(cpu)
    near = table.summary(wide)  # its stacks distinct (a profile's may repeat one)
    near.values = np.zeros_like(near.values)
    near.values[:, 0] = (1 << 31) - 1  # every stack at the edge: still narrow
    narrow = table.vector(near)
    assert narrow.values.dtype == np.int32 and wide.values.dtype == np.int64
    got = stack_values(table.summary(table.add([narrow, narrow, narrow])))
    assert {v[0] for v in got.values()} == {3 * ((1 << 31) - 1)}
    assert table.add([narrow, narrow]).values.dtype == np.int64
    assert stack_values(table.summary(wide)) == stack_values(cpu)
    assert int(wide.values.max()) >= 1 << 31


@pytest.mark.parametrize("name", ["cpu-large.pb.gz", "heap-large.pb.gz", "cpu-empty.pb.gz"])
def test_a_packed_vector_unpacks_to_itself_in_less_room(name: str) -> None:
    """What a process keeps between views is packed: its ids, values and dtype come back."""
    s = summed.of(parse((GO / name).read_bytes()))
    table = stacktable.StackTable(s)
    table.vector(summed.of(parse((GO / "cpu-small.pb.gz").read_bytes())))  # ids start later
    for v in (table.vector(s), table.add([table.vector(s)] * 3)):
        packed = stacktable.pack(v)
        back = stacktable.unpack(packed)
        assert back.ids.dtype == np.int32 and np.array_equal(back.ids, v.ids)
        assert back.values.dtype == v.values.dtype and np.array_equal(back.values, v.values)
        assert (back.magnitude, back.default_type) == (v.magnitude, v.default_type)
        if len(v.ids) > 100:
            assert packed.footprint() < v.footprint() / 4


def members(times: list[float]) -> list[Member]:
    return [Member(f"p{i}", t, {}, "cpu", t) for i, t in enumerate(times)]


def test_windows_cover_a_range_nested_by_resolution() -> None:
    t0 = 1_700_000_400.0  # a 10 min boundary: 1 700 000 400 = 2 833 334 * 600
    times = [t0 + 1, t0 + 2, t0 + 11, t0 + 12, t0 + 75, t0 + 76, t0 + 130]
    ms = members(times)
    parts, pending = windows.cover(ms, t0, t0 + 125)
    assert pending == 0
    assert list(windows.leaves(parts)) == [m.pid for m in ms[:6]]
    minute = parts[0]  # [t0, t0 + 60): its two 10 s windows
    assert isinstance(minute, dict) and [p["p"] for p in minute["p"]] == [
        ["p0", "p1"],
        ["p2", "p3"],
    ]
    # A window is named by its members: the same members, the same digest, in any range.
    again, _ = windows.cover(ms, t0 - 30, None)
    inner = [p for p in again if isinstance(p, dict)]
    assert minute["k"] in {p["k"] for p in inner} | {
        q["k"] for p in inner for q in p["p"] if isinstance(q, dict)
    }
    # A member joining a window names it anew, and its minute, not the minute before.
    more, _ = windows.cover(members([*times[:6], t0 + 77, times[6]]), t0, t0 + 125)
    assert more[0]["k"] == minute["k"] and more[1]["k"] != parts[1]["k"]


def test_a_filling_window_of_many_members_is_pending_for_views() -> None:
    now = 1_700_000_405.0
    t0 = (now - FILLED_AFTER) // 10 * 10  # the 10 s window still filling
    settled = [t0 - 100 + i for i in range(3)]
    few = members([*settled, *(t0 + 0.01 * i for i in range(windows.PENDING_FROM - 1))])
    parts, pending = windows.cover(few, None, None, now)
    assert pending == 0 and len(list(windows.leaves(parts))) == len(few)
    many = members([*settled, *(t0 + 0.01 * i for i in range(windows.PENDING_FROM))])
    parts, pending = windows.cover(many, None, None, now)
    assert pending == windows.PENDING_FROM and list(windows.leaves(parts)) == ["p0", "p1", "p2"]
    parts, pending = windows.cover(many, None, None)  # asked with wait: everything
    assert pending == 0 and len(list(windows.leaves(parts))) == len(many)
    _, plan = windows.plan(many, None, None, now)
    assert plan.members == 3 and plan.pending == windows.PENDING_FROM


def summed_job(tmp_path: Path, pids: list[str], budget: float) -> dict[str, Any]:
    return {
        "op": "summed", "parts": [{"k": "w", "p": pids}], "route": "c", "budget": budget,
        "name": "top", "comment": "", "blobs": f"file:{tmp_path}/b",
        "max_profile_bytes": 1 << 30,
        "options": {"sample_index": 0, "node_fraction": 0.0, "budget": 0, "node_count": 0},
    }  # fmt: skip


def test_numbering_stops_at_its_budget_and_goes_on_when_asked_again(tmp_path: Path) -> None:
    app = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m.db", **OPEN})
    share = app.extensions["share"]
    pids = [share.upload(unique_profile(f"budget{i}")).record.id for i in range(4)]
    worker = Worker(load({}, {}))
    worker.progress = lambda stage: None  # type: ignore[method-assign]  # no one to tell
    with pytest.raises(sums.Busy) as busy:
        worker.run(summed_job(tmp_path, pids, 0))
    assert busy.value.code == 503 and "try again" in busy.value.message
    assert worker.sums.numbered == 1  # one numbered before the budget was seen spent
    assert worker.run(summed_job(tmp_path, pids, 60))
    assert worker.sums.numbered == 3  # the rest, not the first again
    assert worker.run(summed_job(tmp_path, pids, 0))  # all kept: nothing to number
    assert worker.sums.numbered == 0
    names = worker.cache.keys()  # in the order used
    kept = [worker.cache.get(k) for k in names if k.startswith(sums.VECTOR)]
    assert len(kept) == 5 and all(isinstance(k[1], stacktable.Packed) for k in kept)
    # A window of windows is read by every view of a range: kept as it is.
    worker.run({**summed_job(tmp_path, pids, 0), "parts": [{"k": "outer", "p": [
        {"k": "w", "p": pids}, {"k": "w2", "p": pids[:2]}]}]})  # fmt: skip
    outer = worker.cache.get(f"{sums.VECTOR}c:w:outer")
    assert isinstance(outer[1], stacktable.Vector)
    assert isinstance(worker.cache.get(f"{sums.VECTOR}c:w:w2")[1], stacktable.Packed)


def test_the_warm_up_numbers_the_members_before_any_view(tmp_path: Path) -> None:
    app = make_app(
        {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", "PRECOMPUTE": "on", **OPEN}
    )
    client = app.test_client()
    warming = app.extensions["collections"].warming
    cid, token = create(client)
    at = time.time() - 600
    for i in range(3):
        add(client, cid, token, f"warm{i}", at + i)
    deadline = time.monotonic() + 30
    while warming.runs == 0:
        assert time.monotonic() < deadline, "the warm-up never ran"
        time.sleep(0.1)
    # Its sum (the top table of every member) is cached: the same one asked now is a hit.
    share = app.extensions["share"]
    c = app.extensions["collections"].load(cid)
    from share.collections import selection as sel

    _, plan = app.extensions["collections"].merged(
        c, sel.Selection(kind="cpu"), "cpu", False, False
    )
    r = share.record(next(windows.leaves(plan.parts)))
    from share.analysis.views import options

    opts = options.parse("top", {}, [tuple(t) for t in r.sample_types], r.default_sample_type)
    computed = share.views.once.computed
    share.views.summed(tuple(plan.parts), "top", opts, "again", route=cid)
    assert share.views.once.computed == computed, "the warm-up's sum was not there"


def test_a_job_stopped_at_its_budget_is_a_503_to_ask_again(tmp_path: Path) -> None:
    """Through the compute tier: the caller gets sums.Busy (503, Retry-After: 1), not an
    error remembered as a failure, and the process keeps what it numbered."""
    app = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m.db", **OPEN})
    share = app.extensions["share"]
    pids = [share.upload(unique_profile(f"again{i}")).record.id for i in range(3)]
    job = {**job_settings(share.settings), **summed_job(tmp_path, pids, 0)}
    slot = share.compute.sum_slot("c")
    with pytest.raises(sums.Busy) as busy:
        share.compute.run(job, slot=slot)
    assert busy.value.code == 503 and busy.value.retry_after == 1
    assert share.compute.run({**job, "budget": 60}, slot=slot)  # goes on, then answers
