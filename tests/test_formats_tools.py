"""Real profilers' files, made here: `node --cpu-prof`, `py-spy record` (raw and speedscope),
`perf record -g` + `perf script`. Each converts, and its stacks read back through our parser
and through `go tool pprof -raw` equal the file's own. A missing tool is unavailable (a
failure under CI, which installs them); one the machine refuses (ptrace, perf events) skips
and says why."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BIN, unavailable
from formats_readback import (
    cpuprofile_expected,
    folded,
    framed,
    go_raw_stacks,
    parse,
    speedscope_expected,
    stacks,
)

pytestmark = pytest.mark.tools

NODE_SCRIPT = """
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function main() {
  let s = 0;
  const end = Date.now() + 400;
  while (Date.now() < end) s += fib(20);
  return s;
}
console.log(main());
"""
PY_SCRIPT = """
import time
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
def main():
    end = time.time() + 1.0
    while time.time() < end:
        fib(16)
main()
"""
C_PROGRAM = r"""
#include <stdio.h>
#include <time.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void leaf(void) { for (int i = 0; i < 1000; i++) sink += i; }
__attribute__((noinline)) static void middle(void) { leaf(); }
int main(void) {
  time_t end = time(NULL) + 1;
  while (time(NULL) < end) middle();
  printf("%lu\n", sink);
  return 0;
}
"""


def tool(name: str, where: Path | None = None) -> str:
    path = str(where) if where and where.exists() else shutil.which(name)
    if path is None:
        unavailable(f"{name} is not installed (make test installs it)")
    return str(path)


def run(cmd: list[str], cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def go_raw(go_pool, raw: bytes, where: Path) -> str:  # type: ignore[no-untyped-def]
    path = where / "converted.pb"
    path.write_bytes(raw)
    done = go_pool.run(["-raw", str(path)])
    assert done.returncode == 0, done.stderr
    return done.stdout.decode("utf-8", "replace")


def test_node_cpu_prof(tmp_path: Path, go_pool) -> None:  # type: ignore[no-untyped-def]
    node = tool("node")
    (tmp_path / "work.js").write_text(NODE_SCRIPT)
    done = run([node, "--cpu-prof", "--cpu-prof-name=out.cpuprofile", "work.js"], tmp_path)
    assert done.returncode == 0, done.stderr
    data = (tmp_path / "out.cpuprofile").read_bytes()
    p = parse(data)
    assert p.converted_from == "cpuprofile"
    count, wall = cpuprofile_expected(json.loads(data))
    assert stacks(p, "samples") == count and stacks(p, "wall") == wall
    assert sum(count.values()) == len(json.loads(data)["samples"]) > 0
    assert any("fib" in stack for stack in count)
    files = {p.string(f.filename) for f in p.message.function}
    assert any(f.endswith("work.js") for f in files)
    text = go_raw(go_pool, p.raw, tmp_path)
    assert go_raw_stacks(text, 0) == framed(count) and go_raw_stacks(text, 1) == framed(wall)


def py_spy(tmp_path: Path, fmt: str) -> bytes:
    exe = tool("py-spy", BIN / "py-spy")
    (tmp_path / "work.py").write_text(PY_SCRIPT)
    out = tmp_path / f"out.{fmt}"
    cmd = [exe, "record", "--format", fmt, "-r", "200", "-o", str(out), "--"]
    done = run([*cmd, sys.executable, "work.py"], tmp_path)
    if done.returncode != 0 or not out.exists():
        pytest.skip(f"py-spy cannot sample here (ptrace refused?): {done.stderr.strip()[-300:]}")
    return out.read_bytes()


def test_py_spy_raw(tmp_path: Path, go_pool) -> None:  # type: ignore[no-untyped-def]
    data = py_spy(tmp_path, "raw")
    p = parse(data)
    assert p.converted_from == "folded"
    expected = folded(data.decode())
    assert stacks(p, "samples") == expected and any("fib (work.py:" in s for s in expected)
    assert go_raw_stacks(go_raw(go_pool, p.raw, tmp_path), 0, p) == framed(expected)
    # py-spy writes samples it found no stack in as a count alone: pprof's total has them
    top = go_pool.run(["-top", str(tmp_path / "converted.pb")]).stdout.decode()
    assert f" of {sum(expected.values())} total" in top


def test_py_spy_speedscope(tmp_path: Path, go_pool) -> None:  # type: ignore[no-untyped-def]
    data = py_spy(tmp_path, "speedscope")
    p = parse(data)
    assert p.converted_from == "speedscope"
    expected = speedscope_expected(json.loads(data))
    (sample_type,) = p.sample_types()
    assert stacks(p, sample_type[0]) == expected and sum(expected.values()) > 0
    assert go_raw_stacks(go_raw(go_pool, p.raw, tmp_path), 0, p) == framed(expected)


def test_file_names_with_spaces_read_back_from_go(tmp_path: Path, go_pool) -> None:  # type: ignore[no-untyped-def]
    """py-spy names Python's frozen modules' files `<frozen importlib._bootstrap>` (when it
    samples an import): the read-back of `go tool pprof -raw` must not cut the name there."""
    frames = [
        {"name": "main", "file": "work.py", "line": 3},
        {"name": "_find_and_load", "file": "<frozen importlib._bootstrap>", "line": 1165},
    ]
    doc = {
        "$schema": "https://www.speedscope.app/file-format-schema.json",
        "shared": {"frames": frames},
        "profiles": [{"type": "sampled", "name": "MainThread", "unit": "none", "startValue": 0,
                      "endValue": 3, "samples": [[0], [0, 1], [0, 1]], "weights": [1, 1, 1]}],
    }  # fmt: skip
    p = parse(json.dumps(doc).encode())
    expected = speedscope_expected(doc)
    assert expected == {"main": 1, "main;_find_and_load": 2}
    assert stacks(p, p.sample_types()[0][0]) == expected
    assert go_raw_stacks(go_raw(go_pool, p.raw, tmp_path), 0, p) == expected


def test_perf_record_and_script(tmp_path: Path, go_pool) -> None:  # type: ignore[no-untyped-def]
    perf, cc = tool("perf"), tool("cc")
    (tmp_path / "spin.c").write_text(C_PROGRAM)
    built = run([cc, "-O1", "-fno-omit-frame-pointer", "-o", "spin", "spin.c"], tmp_path)
    assert built.returncode == 0, built.stderr
    record = [perf, "record", "-e", "cpu-clock", "-g", "-o", "perf.data", "./spin"]
    done = run(record, tmp_path)
    if done.returncode != 0:
        pytest.skip(f"perf record refused here (perf events?): {done.stderr.strip()[-300:]}")
    script = subprocess.run(
        [perf, "script", "-i", "perf.data"], cwd=tmp_path, capture_output=True, timeout=120
    )
    assert script.returncode == 0, script.stderr
    data = script.stdout
    p = parse(data)
    assert p.converted_from == "perf script"
    assert p.sample_types() == [("cpu-clock", "count"), ("cpu-clock_period", "nanoseconds")]
    collapse = Path(__file__).parent / "data" / "flamegraph" / "stackcollapse-perf.pl"
    perl = subprocess.run(["perl", str(collapse)], input=data + b"\n", capture_output=True)
    expected = folded(perl.stdout.decode("utf-8", "surrogateescape"), exact=True)
    assert stacks(p, "cpu-clock_period") == expected
    assert any(s.startswith("spin;") and s.endswith(";leaf") for s in expected)
    assert go_raw_stacks(go_raw(go_pool, p.raw, tmp_path), 1) == framed(expected)
