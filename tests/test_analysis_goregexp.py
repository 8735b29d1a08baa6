"""share.analysis.model.goregexp against Go 1.19's regexp: same verdicts, matches, error texts."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from share.analysis.model import goregexp

from conftest import unavailable

PATTERNS = [
    "[a", "(a", "a)", "(?=x)", "a**", "*a", r"\8", "a\\", "[z-a]", "[[:foo:]]", "a{2,1}",
    "(?P<>a)", "x{1001}", r"\pX", "(?i)abc", r"\z", "(?P<n>a)", r"\Q*\E", "a{,5}", r"\C",
    r"[a-\d]", "(?<n>a)", r"\b", "x++", "(a|b", "(?", r"\1", r"[\C]", r"\Q(?<\E", "[(?<]",
    "^runtime\\.", "sort\\.(partition|insertionSort)$", "(a+)+b", "", "é+", "[]a]", "[^]a]",
]  # fmt: skip
SUBJECTS = ["runtime.mallocgc", "sort.partition", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab", "ABC", "é"]

GO_PROGRAM = """package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)
import "regexp"

func main() {
	subjects := strings.Split(os.Args[1], "|")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		re, err := regexp.Compile(sc.Text())
		if err != nil {
			fmt.Println(err)
			continue
		}
		var hits []string
		for _, s := range subjects {
			hits = append(hits, fmt.Sprint(re.MatchString(s)))
		}
		fmt.Println(strings.Join(hits, " "))
	}
}
"""


def ours(pattern: str) -> str:
    try:
        compiled = goregexp.compile(pattern)
    except goregexp.RegexpError as exc:
        return str(exc)
    return " ".join("true" if compiled.search(s) else "false" for s in SUBJECTS)


@pytest.mark.go
def test_verdicts_matches_and_messages_are_go_s(tmp_path: Path) -> None:
    if shutil.which("go") is None:
        unavailable("go is not installed (make test installs golang-go)")
    (tmp_path / "main.go").write_text(GO_PROGRAM)
    go = subprocess.run(
        ["go", "run", "main.go", "|".join(SUBJECTS)],
        input="\n".join(PATTERNS) + "\n", cwd=tmp_path, capture_output=True, text=True,
        check=True, env={"GOCACHE": str(tmp_path / "cache"), "HOME": str(tmp_path),
                         "PATH": "/usr/bin:/bin", "GOFLAGS": "-mod=mod", "GO111MODULE": "off"},
    ).stdout.splitlines()  # fmt: skip
    assert [ours(p) for p in PATTERNS] == go


def test_backtracking_patterns_run_in_linear_time() -> None:
    """(a+)+b against a run of a's: exponential for a backtracking engine, instant here."""
    compiled = goregexp.compile("^((a+)+b)$")
    assert compiled.search("a" * 100_000) is None
    assert compiled.search("a" * 100_000 + "b") is not None
