"""Folded stacks, `perf script`, .cpuprofile and speedscope JSON: converted, then read back.

The inputs are the sample files of speedscope's repository (tests/data/speedscope, MIT) and
the perf examples of Brendan Gregg's FlameGraph repository (tests/data/flamegraph, CDDL-1.0);
perf's are compared with what FlameGraph's own stackcollapse-perf.pl makes of them, run here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from share.errors import BadProfile, TooLarge
from share.pprof import Limits
from share.pprof import parse as pprof_parse

from formats_readback import (
    cpuprofile_expected,
    folded,
    framed,
    go_raw_stacks,
    parse,
    speedscope_expected,
    stacks,
)

DATA = Path(__file__).parent / "data"
SPEEDSCOPE = DATA / "speedscope"
FLAMEGRAPH = DATA / "flamegraph"
EVENT = re.compile(r":\s*(?:\d+)?\s+(\S+):\s*$", re.M)  # the script's event, on headers
PERF_FILES = sorted(FLAMEGRAPH.glob("perf-*.txt"))
FOLDED_FILES = [
    p for p in sorted(SPEEDSCOPE.glob("stackcollapse_*.txt")) if "invalid" not in p.name
]


def refused(data: bytes) -> str:
    with pytest.raises(BadProfile) as info:
        parse(data)
    return info.value.message


# --- folded stacks ---------------------------------------------------------------------------
@pytest.mark.parametrize("path", FOLDED_FILES, ids=lambda p: p.name)
def test_folded_file_reads_back_stack_for_stack(path: Path) -> None:
    data = path.read_bytes()
    p = parse(data)
    assert p.converted_from == "folded" and p.sample_types() == [("samples", "count")]
    text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode()
    assert stacks(p, "samples") == folded(text)


def test_crlf_and_utf16_files_are_the_same_profile() -> None:
    plain = parse((SPEEDSCOPE / "stackcollapse_simple.txt").read_bytes()).raw
    for name in ("simple-crlf", "simple-utf16-le", "simple-utf16-be"):
        assert parse((SPEEDSCOPE / f"stackcollapse_{name}.txt").read_bytes()).raw == plain


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("# comment\n// some other comment\na;b 1\n", 2),
        ("a;b;c 1\na;b;c 1\ninvalid line\n", 3),
        ("a;b 1\na;b 1.5\n", 2),
        ("a;b 1\r\n\r\nmain;x\r\n", 3),
        (f"a 1\nb {1 << 64}\n", 2),
    ],
)
def test_folded_line_that_is_not_a_stack_is_a_400_naming_it(text: str, line: int) -> None:
    message = refused(text.encode())
    assert message.startswith(f"folded stacks, line {line}:")


def test_a_count_alone_is_samples_without_frames() -> None:
    p = parse(b"main;work 3\n 2\n")
    assert stacks(p, "samples") == Counter({"main;work": 3, "": 2})


def test_speedscope_sample_with_invalid_lines_is_refused_at_its_first() -> None:
    message = refused((SPEEDSCOPE / "stackcollapse_simple-with-invalids.txt").read_bytes())
    assert message.startswith("folded stacks, line 2:") and "// some other comment" in message


def test_folded_is_bounded_by_the_limits() -> None:
    text = "".join(f"main;f{i} 1\n" for i in range(100)).encode()
    with pytest.raises(TooLarge):
        pprof_parse(text, max_profile_bytes=1 << 20, limits=Limits(samples=50))
    with pytest.raises(TooLarge):
        pprof_parse(text, max_profile_bytes=1 << 20, limits=Limits(frames=150))


# --- perf script -----------------------------------------------------------------------------
def stackcollapse(data: bytes, *options: str) -> Counter[str]:
    """FlameGraph's stackcollapse-perf.pl on data. It counts a sample when a blank line ends
    it, so it is given the file with one: we count the last sample of a file without one too."""
    script = FLAMEGRAPH / "stackcollapse-perf.pl"
    done = subprocess.run(
        ["perl", str(script), *options], input=data + b"\n", capture_output=True, check=True
    )
    return folded(done.stdout.decode("utf-8", "surrogateescape"), exact=True)


@pytest.mark.skipif(shutil.which("perl") is None, reason="perl is not installed")
@pytest.mark.parametrize("path", PERF_FILES, ids=lambda p: p.name)
def test_perf_script_reads_back_as_stackcollapse_perf_folds_it(path: Path) -> None:
    data = path.read_bytes()
    p = parse(data)
    assert p.converted_from == "perf script"
    types = [t for t, _ in p.sample_types()]
    # The script keeps the first event only, counting periods where perf printed them.
    assert stacks(p, p.default_sample_type()) == stackcollapse(data)
    # Every other event is a sample type of its own: the script's --event-filter=EVENT.
    events = list(dict.fromkeys(EVENT.findall(data.decode("latin-1"))))
    if len(events) > 1:
        for event in events:
            name = event.split(":")[0]
            kept = f"{name}_period" if f"{name}_period" in types else name
            assert stacks(p, kept) == stackcollapse(data, f"--event-filter={event}")


def test_perf_labels_and_types() -> None:
    p = parse((FLAMEGRAPH / "perf-iperf-stacks-pidtid-01.txt").read_bytes())
    keys = {p.string(label.key) for s in p.message.sample for label in s.label}
    assert keys == {"comm", "pid", "tid"}
    p = parse((FLAMEGRAPH / "perf-dd-stacks-01.txt").read_bytes())
    assert p.sample_types() == [("cpu-clock", "count"), ("cpu-clock_period", "nanoseconds")]
    assert p.default_sample_type() == "cpu-clock_period"
    p = parse((FLAMEGRAPH / "perf-cycles-instructions-01.txt").read_bytes())
    assert [t for t, _ in p.sample_types()] == ["instructions", "cycles"]


def test_perf_line_that_is_not_a_frame_is_a_400_naming_it() -> None:
    text = "java 123 [000] 1.0: 1 cycles:\n\t7f00 main (/bin/x)\n\tgarbage\n\n"
    assert refused(text.encode()).startswith("perf script, line 3:")


# --- .cpuprofile -----------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(SPEEDSCOPE.glob("*.cpuprofile")), ids=lambda p: p.name)
def test_cpuprofile_reads_back_samples_and_wall_time(path: Path) -> None:
    p = parse(path.read_bytes())
    assert p.converted_from == "cpuprofile"
    assert p.sample_types() == [("samples", "count"), ("wall", "nanoseconds")]
    count, wall = cpuprofile_expected(json.loads(path.read_bytes()))
    assert stacks(p, "samples") == count and stacks(p, "wall") == wall
    assert p.values[:, 0].sum() == len(json.loads(path.read_bytes())["samples"])


def test_cpuprofile_frames_carry_url_and_1_based_line() -> None:
    doc = {
        "nodes": [
            {"id": 1, "callFrame": {"functionName": "(root)", "url": "", "lineNumber": -1},
             "children": [2]},
            {"id": 2, "callFrame": {"functionName": "work", "url": "file:///app/x.js",
                                    "lineNumber": 9, "columnNumber": 3}},
        ],
        "startTime": 0, "endTime": 2000, "samples": [2, 2], "timeDeltas": [1000, 1000],
    }  # fmt: skip
    p = parse(json.dumps(doc).encode())
    (fn,) = p.message.function
    (loc,) = p.message.location
    assert (p.string(fn.name), p.string(fn.filename), loc.line[0].line) == (
        "work",
        "file:///app/x.js",
        10,
    )
    assert p.values.sum(axis=0).tolist() == [2, 2_000_000]
    assert p.outline.duration_nanos == 2_000_000


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"nodes": [{"id": 1, "children": [9]}], "samples": []}, "node 1: child 9"),
        ({"nodes": [{"id": 1, "callFrame": {}}], "samples": [7]}, "samples[0]: node 7"),
        ({"nodes": [{"id": 1, "callFrame": {}}], "samples": [1], "timeDeltas": []}, "timeDeltas"),
        ({"nodes": [{"id": 1, "children": [1]}], "samples": [1]}, "node 1"),
        ({"nodes": [{"id": 1, "callFrame": {"functionName": 5}}], "samples": [1]}, "node 1"),
    ],
)
def test_broken_cpuprofile_is_a_400_naming_the_field(doc: dict, where: str) -> None:
    assert refused(json.dumps(doc).encode()).startswith(f"cpuprofile: {where}")


# --- speedscope ------------------------------------------------------------------------------
@pytest.mark.parametrize("path", sorted(SPEEDSCOPE.glob("0.*.json")), ids=lambda p: p.name)
def test_speedscope_file_reads_back_every_stack(path: Path) -> None:
    doc = json.loads(path.read_bytes())
    p = parse(path.read_bytes())
    assert p.converted_from == "speedscope"
    (sample_type,) = p.sample_types()
    assert stacks(p, sample_type[0]) == speedscope_expected(doc)
    profiles = {p.string(lb.str) for s in p.message.sample for lb in s.label}
    assert profiles == {str(prof.get("name", i)) for i, prof in enumerate(doc["profiles"])}


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("invalid_incomplete-trace.json", "speedscope: profiles[0].events: frame 0 is opened"),
        ("invalid_out-of-order-events.json", "speedscope: profiles[0].events[6]: closes frame 1"),
    ],
)
def test_speedscope_invalid_samples_are_400s_naming_the_event(name: str, words: str) -> None:
    assert words in refused((SPEEDSCOPE / name).read_bytes())


# --- the same stacks through go tool pprof -raw ---------------------------------------------
GO_CASES = [
    *FOLDED_FILES,
    *sorted(SPEEDSCOPE.glob("*.cpuprofile")),
    *sorted(SPEEDSCOPE.glob("0.*")),
]


@pytest.mark.go
@pytest.mark.parametrize("path", GO_CASES, ids=lambda p: p.name)
def test_go_tool_pprof_raw_reads_the_same_stacks(path: Path, go_pool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    p = parse(path.read_bytes())
    converted = tmp_path / "converted.pb"
    converted.write_bytes(p.raw)
    done = go_pool.run(["-raw", str(converted)])
    assert done.returncode == 0, done.stderr
    text = done.stdout.decode("utf-8", "replace")
    for column, (name, _) in enumerate(p.sample_types()):
        assert go_raw_stacks(text, column) == framed(stacks(p, name))
    if p.converted_from == "folded":
        data = path.read_bytes()
        decoded = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode()
        assert go_raw_stacks(text, 0) == framed(folded(decoded))


@pytest.mark.go
def test_samples_without_frames_count_in_go_tool_pprofs_total(go_pool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    converted = tmp_path / "converted.pb"
    converted.write_bytes(parse(b"main;a 3\n 2\n").raw)
    done = go_pool.run(["-top", str(converted)])
    assert " of 5 total" in done.stdout.decode()
