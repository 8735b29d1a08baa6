"""share.pprof.parse accepts exactly what google/pprof's own code accepts: a differential test.

Builds a tiny Go program from the google/pprof `profile` package that Go vendors in its source
tree, and compares its verdict (gunzip, ParseUncompressed, CheckValid: ParseData without the
legacy formats) with ours on every corpus file and on seeded random mutations of them, both
with the compiled decoder (share/pprof/scan.c) and without it.
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from share import pprof
from share.errors import ShareError
from share.pprof import scan

from conftest import CORPUS, unavailable

pytestmark = pytest.mark.go

VERDICT_GO = """package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"

	"gopprof/profile"
)

func main() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		data, err := os.ReadFile(sc.Text())
		if err != nil {
			panic(err)
		}
		fmt.Println(verdict(data))
	}
}

func verdict(data []byte) string {
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		gz, err := gzip.NewReader(bytes.NewBuffer(data))
		if err == nil {
			data, err = io.ReadAll(gz)
		}
		if err != nil {
			return "decompressing profile: " + err.Error()
		}
	}
	p, err := profile.ParseUncompressed(data)
	if err != nil {
		return "parsing profile: " + err.Error()
	}
	if err := p.CheckValid(); err != nil {
		return "malformed profile: " + err.Error()
	}
	return "ok"
}
"""


@pytest.fixture(scope="module")
def go_verdict(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The compiled verdict program."""
    go = shutil.which("go")
    if go is None:
        unavailable("go is not installed (make test installs golang-go)")
    goroot = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True).stdout.strip()
    vendored = Path(goroot) / "src/cmd/vendor/github.com/google/pprof/profile"
    if not vendored.is_dir():
        unavailable(f"google/pprof is not vendored in {goroot}")
    work = tmp_path_factory.mktemp("gopprof")
    (work / "profile").mkdir()
    for source in vendored.glob("*.go"):
        if not source.name.endswith("_test.go"):
            shutil.copy(source, work / "profile")
    (work / "go.mod").write_text("module gopprof\n\ngo 1.19\n")
    (work / "main.go").write_text(VERDICT_GO)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOPROXY="off")
    subprocess.run([go, "build", "-o", "verdict", "."], cwd=work, env=env, check=True)
    return work / "verdict"


def _varint(x: int) -> bytes:
    out = bytearray()
    while x >= 0x80:
        out.append(x & 0x7F | 0x80)
        x >>= 7
    return bytes(out + bytes([x]))


def _mutate(rng: random.Random, data: bytes, seeds: list[bytes]) -> bytes:
    """Flip, replace, cut, insert bytes or whole fields (all wire types), or append a profile."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 3))):
        i = rng.randrange(len(out) or 1)
        kind = rng.randrange(7)
        if kind == 0 and out:
            out[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del out[i : i + rng.randrange(1, 20)]
        elif kind == 2:
            out[i:i] = rng.randbytes(rng.randrange(1, 6))
        elif kind == 3:
            out = out[:i]
        elif kind == 4:
            field = rng.choice((0, 1, 2, 3, 4, 5, 6, 9, 11, 12, 13, 14, 15, 16, 100))
            wire = rng.choice((0, 0, 1, 2, 2, 5, 3))
            body = {
                0: _varint(rng.getrandbits(rng.choice((3, 10, 64)))),
                1: rng.randbytes(8),
                2: _varint(3) + rng.randbytes(3),
                3: b"",
                5: rng.randbytes(4),
            }[wire]
            out[i:i] = _varint(field << 3 | wire) + body
        elif kind == 5:
            out += rng.choice(seeds)
        elif out and out[i] < 0x80:
            out[i] = rng.choice((0, 1, 2, out[i] + 1, 0x7F))
    return bytes(out)


def _gunzipped(data: bytes) -> bytes:
    """data, gunzipped when it is a readable gzip file: mutations work on the protobuf."""
    try:
        return gzip.decompress(data)
    except (OSError, EOFError):
        return data


def _ours(data: bytes, compiled: bool) -> str:
    saved = scan.LIB
    scan.LIB = saved if compiled else None  # None: as when scan.c was not built
    try:
        parsed = pprof.parse(data, max_profile_bytes=1 << 26)
    except ShareError:
        return "error"
    finally:
        scan.LIB = saved
    # The Go side is ParseData without its legacy parsers: a file we converted from another
    # format (legacy, folded, ...) is one our protobuf stage refused (test_formats_* cover it).
    return "error" if parsed.converted_from else "ok"


def test_verdicts_match_google_pprof(go_verdict: Path, tmp_path: Path) -> None:
    # Big files (the gzip bomb among them: Go would inflate all 1 GiB) are left to test_pprof.
    files = sorted(
        p
        for p in CORPUS.rglob("*")
        if p.is_file() and p.suffix not in (".tsv", ".md") and p.stat().st_size < 500_000
    )
    small = [
        p.read_bytes()
        for p in files
        if p.stat().st_size < 40_000
        and not {"legacy", "formats"} & set(p.relative_to(CORPUS).parts)
    ]
    seeds = [s for s in map(_gunzipped, small) if s]
    rng = random.Random(20240601)
    cases: list[tuple[str, bytes]] = [(str(p), p.read_bytes()) for p in files]
    for n in range(800):
        mutated = _mutate(rng, rng.choice(seeds), seeds)
        if rng.random() < 0.2:
            mutated = gzip.compress(mutated, 1)
        cases.append((f"mutation {n}", mutated))
    paths = []
    for n, (_, data) in enumerate(cases):
        path = tmp_path / f"{n}.bin"
        path.write_bytes(data)
        paths.append(str(path))
    go = subprocess.run(
        [str(go_verdict)], input="\n".join(paths) + "\n", capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(go) == len(cases)
    differ = []
    accepted = 0
    for (name, data), theirs in zip(cases, go, strict=True):
        theirs = "ok" if theirs == "ok" else "error"
        accepted += theirs == "ok"
        for compiled in (True, False):
            if _ours(data, compiled) != theirs:
                differ.append((name, compiled, theirs, data[:40]))
    assert not differ
    assert accepted > 60  # the mutations must exercise acceptance too, not only refusals
