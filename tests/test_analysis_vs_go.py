"""Our top table against the real `go tool pprof -top`, for every valid corpus profile and type.

Each case compares the whole text, byte for byte (Go's output decoded as UTF-8 with invalid
bytes replaced, as our string table is): the rows, their order, flat and cum at the printed
precision, sum%, inline marks, the total and every header line. Go runs two at a time in the
background (the session's shared go pool) while the tests compare.
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from share import pprof
from share.analysis.measure import text
from share.analysis.model.graph import graph
from share.analysis.model.stacks import stacks
from share.analysis.model.tables import SampleTypeError, tables
from share.analysis.reports.top import top

from conftest import CORPUS

pytestmark = pytest.mark.go

BENCH_GEN = Path(__file__).parent.parent / "bench" / "gen" / "labelled.py"
with open(CORPUS / "MANIFEST.tsv", newline="") as _f:
    ROWS = list(csv.DictReader(_f, delimiter="\t"))
VALID = [r for r in ROWS if r["valid"] == "yes"]


def _sample_args(row: dict[str, str]) -> list[str]:
    """One -sample_index per type: its name when that names it unambiguously, else its index."""
    types = [t.split("/")[0] for t in row["sample_types"].split(",")] if row["sample_types"] else []
    args = []
    for i, name in enumerate(types):
        unique = name and types.count(name) == 1 and not name.lstrip("+-").isdigit()
        args.append(name if unique else str(i))
    return args


CASES = [(r["path"], arg) for r in VALID for arg in _sample_args(r)]
CASES += [(r["path"], None) for r in VALID if r["sample_types"]]  # pprof's default type
# -nodecount and -nodefraction exercise "Showing top N", "Dropped N nodes" and rebuilt edges.
TRIMMED = [
    (path, count, fraction)
    for path in (
        "go-runtime/cpu-large.pb.gz",
        "go-runtime/heap-large.pb.gz",
        "go-runtime/cpu-labels.pb.gz",
        "go-runtime/pprof-tool-diffbase-cpu.pb.gz",
        "edge/negative-values.pb.gz",
        "nodejs/time-line-numbers.pb.gz",
    )
    for count, fraction in ((5, 0.0), (25, 0.005), (0, 0.05))
]


def _command(path: str, sample: str | None, count: int = 0, fraction: float = 0.0) -> list[str]:
    cmd = ["go", "tool", "pprof", "-top", f"-nodefraction={fraction}"]
    if sample is not None:
        cmd.append(f"-sample_index={sample}")
    if count:
        cmd.append(f"-nodecount={count}")
    return [*cmd, str(CORPUS / path)]


@pytest.fixture(scope="session")
def go_top(go_pool):  # type: ignore[no-untyped-def]
    """go tool pprof -top output per command, all started up front in the shared go pool."""

    def outcome(done: subprocess.CompletedProcess[bytes]) -> tuple[int, str]:
        out = done.stdout if done.returncode == 0 else done.stderr
        return done.returncode, out.decode("utf-8", "replace")

    commands = [_command(p, s) for p, s in CASES]
    commands += [_command(p, None, c, f) for p, c, f in TRIMMED]
    commands.append(_command("edge/minimal-empty-profile.pb", None))
    futures = {tuple(cmd): go_pool.submit(cmd[3:]) for cmd in commands}
    return lambda cmd: outcome(futures[tuple(cmd)].result())


def _ours(path: str, sample: str | None, count: int = 0, fraction: float = 0.0) -> str:
    parsed = pprof.parse((CORPUS / path).read_bytes(), max_profile_bytes=1 << 30)
    tab = tables(parsed)
    g = graph(tab, tab.sample_index(sample))
    t = top(g, node_count=count, node_fraction=fraction)
    return text.top_text(
        t.header,
        t.total,
        t.rows,
        orig_count=t.orig_count,
        dropped_nodes=t.dropped_nodes,
        node_cutoff=t.node_cutoff_label,
    )


@pytest.mark.parametrize(("path", "sample"), CASES, ids=[f"{p}:{s}" for p, s in CASES])
def test_top_matches_go(go_top, path: str, sample: str | None) -> None:  # type: ignore[no-untyped-def]
    code, expected = go_top(_command(path, sample))
    assert code == 0, expected
    assert _ours(path, sample) == expected


@pytest.mark.parametrize(("path", "count", "fraction"), TRIMMED)
def test_trimmed_top_matches_go(go_top, path: str, count: int, fraction: float) -> None:  # type: ignore[no-untyped-def]
    code, expected = go_top(_command(path, None, count, fraction))
    assert code == 0, expected
    assert _ours(path, None, count, fraction) == expected


def test_generated_labelled_profile_matches_go(tmp_path, go_top) -> None:  # type: ignore[no-untyped-def]
    """Many samples per stack (labels), inlining and recursion: the shape bench/ measures."""
    spec = importlib.util.spec_from_file_location("labelled", BENCH_GEN)
    assert spec is not None and spec.loader is not None
    labelled = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(labelled)
    path = tmp_path / "labelled.pb.gz"
    path.write_bytes(gzip.compress(labelled.generate(4000, seed=3).SerializeToString()))
    env = {**os.environ, "HOME": str(tmp_path), "GOCACHE": str(tmp_path / "cache")}
    for sample in ("samples", "cpu"):
        go = subprocess.run(
            [
                "go",
                "tool",
                "pprof",
                "-top",
                "-nodefraction=0",
                f"-sample_index={sample}",
                str(path),
            ],
            capture_output=True,
            env=env,
            timeout=300,
        )
        assert go.returncode == 0, go.stderr
        parsed = pprof.parse(path.read_bytes(), max_profile_bytes=1 << 30)
        tab = tables(parsed)
        assert stacks(tab).stack_of.max() < 2000  # samples did share stacks
        t = top(graph(tab, tab.sample_index(sample)))
        ours = text.top_text(t.header, t.total, t.rows, orig_count=t.orig_count)
        assert ours == go.stdout.decode()


def test_profile_without_sample_types(go_top) -> None:  # type: ignore[no-untyped-def]
    """Go refuses to report on it; we show an empty report, and refuse to pick a type."""
    code, message = go_top(_command("edge/minimal-empty-profile.pb", None))
    assert code != 0 and "profile has no samples" in message
    data = (CORPUS / "edge/minimal-empty-profile.pb").read_bytes()
    tab = tables(pprof.parse(data, max_profile_bytes=1 << 20))
    assert tab.sample_index(None) is None
    t = top(graph(tab, None))
    assert (t.total, list(t.rows)) == (0, [])
    with pytest.raises(SampleTypeError, match="no sample types"):
        tab.sample_index("cpu")


def test_every_valid_profile_with_types_is_covered() -> None:
    covered = {p for p, _ in CASES}
    expected = {r["path"] for r in VALID if r["sample_types"]}
    assert covered == expected and len(expected) >= 45
    assert Path(CORPUS / "go-runtime/cpu-xl.pb.gz").exists()
