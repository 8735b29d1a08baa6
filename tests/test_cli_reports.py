"""`pprof-share top|peek|tags|dot FILE` with pprof's flag spellings, as whole processes."""

from __future__ import annotations

import subprocess

import pytest

from conftest import BIN, CORPUS

PROFILE = CORPUS / "go-runtime/cpu-labels.pb.gz"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "pprof-share"), *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.go
@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (["top", "-focus=sort", "-lines", "-nodecount=5"],
         ["-top", "-nodefraction=0", "-focus=sort", "-lines", "-nodecount=5"]),
        (["top", "--tagfocus", "endpoint=/api/users", "-cum", "-sample_index=samples"],
         ["-top", "-nodefraction=0", "-tagfocus=endpoint=/api/users", "-cum",
          "-sample_index=samples"]),
        (["peek", "zsortinterface", "-files"], ["-peek=zsortinterface", "-files"]),
        (["peek", "-peek=sort.pdqsort$", "-noinlines"], ["-peek=sort.pdqsort$", "-noinlines"]),
        (["tags", "-focus=sort", "-taghide=worker"], ["-tags", "-focus=sort", "-taghide=worker"]),
        (["dot", "-tagroot=endpoint", "-nodecount=12"],
         ["-dot", "-tagroot=endpoint", "-nodecount=12"]),
        (["top", "-focus=zz_none", "-tagfocus=1kb:"],
         ["-top", "-nodefraction=0", "-focus=zz_none", "-tagfocus=1kb:"]),
    ],
)  # fmt: skip
def test_same_text_and_stderr_as_go(go_pool, ours: list[str], theirs: list[str]) -> None:  # type: ignore[no-untyped-def]
    go = go_pool.run([*theirs, str(PROFILE)])
    assert go.returncode == 0, go.stderr
    done = run(ours[0], str(PROFILE), *ours[1:])
    assert done.returncode == 0, done.stderr
    assert done.stdout == go.stdout.decode()
    assert done.stderr == go.stderr.decode()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["peek", str(PROFILE), "zz_none"], "no matches found for regexp: zz_none"),
        (["top", str(PROFILE), "-focus=["], "parsing focus regexp: error parsing regexp"),
        (["dot", str(PROFILE), "-granularity=lines2"], 'invalid "granularity" value "lines2"'),
        (["peek", str(PROFILE)], "?peek=REGEX is needed"),
    ],
)
def test_refusals_are_one_line_and_status_1(args: list[str], message: str) -> None:
    done = run(*args)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and message in done.stderr
