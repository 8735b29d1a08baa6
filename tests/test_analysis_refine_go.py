"""top, peek, tags and dot with pprof's options against the real `go tool pprof`, byte for byte.

For every valid corpus profile and every sample type, some 40 option sets (each filter alone,
pairs, tag filters on strings and on numeric ranges with units, tagroot/tagleaf, each
granularity with and without noinlines, relative_percentages, -cum, node counts and fractions,
regexes pprof refuses) are rendered by our server's path (options.parse + views.render) and by
pprof. Compared: the text, the warnings pprof prints on stderr, and where pprof refuses, its
error line against our 400's message.

Speed (about 35 s on two idle cores, 80 s when they are busy). One `go tool pprof` process per
(profile, sample type) runs every report of that pair in its interactive mode (settings,
`output=FILE`, then `top` / `peek RE` / `tags` / `dot`, with an unknown command between reports
so stderr splits per report): pprof parses the profile once instead of ~100 times. The
processes run two at a time in the session's go pool while the tests compare. A few plain
command-line runs check that the interactive mode prints what the flags print, and pprof's
exit status where it refuses. The choice of cases:
- each small profile's default sample type: every option set (47) in the views where it
  means something (VIEWS_FOR: every view meets every kind of option, ~95 reports);
- its other sample types, and the profiles whose content is another's (only the encoding
  differs, TWINS): the top view of 31 option sets (TOP_ONLY);
- the five profiles over 500 kB, where pprof takes up to 2 s a report: four (option set,
  view) pairs on the default type (BIG_SET).

Go's DOT and peek orders are not deterministic where two edges weigh the same with opposite
signs (diff profiles: sort.Sort on a map's order, edgeList.Less not being a strict order); there
the lines inside such a block are compared as sets, and since which of those edges
RemoveRedundantEdges drops follows the same order, a report that still differs is compared
with a few more runs of pprof: ours must be one of the reports pprof gives.
"""

from __future__ import annotations

import csv
import difflib
import json
import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from share import pprof
from share.analysis.model.graph import graph
from share.analysis.model.labels import labels
from share.analysis.model.tables import tables
from share.analysis.reports.top import top
from share.analysis.views import options, views

from conftest import CORPUS

pytestmark = pytest.mark.go

with open(CORPUS / "MANIFEST.tsv", newline="") as _f:
    ROWS = [r for r in csv.DictReader(_f, delimiter="\t") if r["valid"] == "yes"]
# The legacy formats: two of them here (their -top is checked for all in test_formats_legacy).
ROWS = [r for r in ROWS if not r["path"].startswith("legacy/")] + [
    r
    for r in ROWS
    if r["path"] in ("legacy/google-pprof/cppbench.cpu", "legacy/google-pprof/java.heap")
]
BIG = 500_000  # bytes: the subset only
VIEW_OF = {"top": "toptext", "peek": "peektext", "tags": "tagstext", "dot": "dot"}
NOISE = ("Main binary filename not available", "Some binary filenames not available")


def sample_args(row: dict[str, str]) -> list[str]:
    """One -sample_index per type: its name when unambiguous, else its index."""
    types = [t.split("/")[0] for t in row["sample_types"].split(",")] if row["sample_types"] else []
    out = []
    for i, name in enumerate(types):
        unique = name and types.count(name) == 1 and not name.lstrip("+-").isdigit()
        out.append(name if unique else str(i))
    return out


@cache
def parsed(path: str) -> Any:
    return pprof.parse((CORPUS / path).read_bytes(), max_profile_bytes=1 << 30)


def quote(name: str) -> str:
    """regexp.QuoteMeta."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", name)


@cache
def picks(path: str) -> dict[str, str]:
    """Names and labels of the profile itself, so every filter has something to match."""
    t = tables(parsed(path))
    g = graph(t, t.sample_index(None))
    rows = top(g).rows
    names = [n for n in rows.names if " " not in n] or ["main"]
    by_cum = [rows.names[i] for i in (-rows.cum).argsort(kind="stable") if " " not in rows.names[i]]
    hot = names[0]
    mid = (by_cum[len(by_cum) // 3] if by_cum else "main") if len(by_cum) > 2 else hot
    lab = labels(t)
    keys = [lab.texts[k] for k in sorted(set(lab.key[~lab.numeric].tolist()))] or ["endpoint"]
    nums = [lab.texts[k] for k in sorted(set(lab.key[lab.numeric].tolist()))] or ["bytes"]
    key = keys[0]
    code = lab.key_code(key)
    values = sorted({lab.texts[v] for v in lab.value[(lab.key == code) & ~lab.numeric].tolist()})
    values = [v for v in values if v and "," not in v and " " not in v] or ["x"]
    return {
        "hot": quote(hot),
        "mid": quote(mid),
        "key": key,
        "key2": keys[-1],
        "value": quote(values[0]),
        "value2": quote(values[-1]),
        "num": nums[0],
    }


def combos(p: dict[str, str]) -> dict[str, dict[str, str]]:
    """Name -> query of every option set tried."""
    k, v, v2, num = p["key"], p["value"], p["value2"], p["num"]
    out: dict[str, dict[str, str]] = {
        "base": {},
        "focus": {"focus": p["mid"]},
        "ignore": {"ignore": p["hot"]},
        "hide": {"hide": p["hot"]},
        "show": {"show": p["mid"]},
        "show_from": {"show_from": p["mid"]},
        "prune_from": {"prune_from": p["mid"]},
        "focus+ignore": {"focus": p["mid"], "ignore": p["hot"]},
        "focus+hide": {"focus": p["mid"], "hide": p["hot"]},
        "show_from+hide": {"show_from": p["mid"], "hide": p["hot"]},
        "show+prune_from": {"show": p["mid"] + "|" + p["hot"], "prune_from": p["hot"]},
        "tagfocus": {"tagfocus": f"{k}={v}"},
        "tagignore": {"tagignore": f"{k}={v}"},
        "tagfocus-nokey": {"tagfocus": f"{v},{k}"},
        "tagfocus-or": {"tagfocus": f"{k}={v},{v2}"},
        "tagfocus-range": {"tagfocus": f"{num}=1kb:"},
        "tagignore-range": {"tagignore": ":100b"},
        "tagignore-unitless": {"tagignore": ":64"},
        "tagfocus-between": {"tagfocus": f"{num}=4kb:64mb"},
        "tagfocus-time": {"tagfocus": "2ms:1s"},
        "tagroot": {"tagroot": k},
        "tagroot-numeric": {"tagroot": num, "tagleaf": k},
        "tagleaf": {"tagleaf": f"{p['key2']},{k}"},
        "tagroot+focus": {"tagroot": k, "focus": v},
        "taghide": {"taghide": k, "focus": p["mid"]},
        "tagshow": {"tagshow": k},
        "relative": {"relative_percentages": "t", "focus": p["mid"]},
        "relative+tagfocus": {"relative_percentages": "t", "tagfocus": f"{k}={v}"},
        "cum": {"cum": "t"},
        "nodecount": {"nodecount": "5"},
        "nodefraction": {"nodefraction": "0.05", "edgefraction": "0.01"},
        "lines+focus": {"granularity": "lines", "focus": p["mid"]},
        "tagroot+lines": {"granularity": "lines", "tagroot": k},
        "nomatch": {"focus": "zz_none", "hide": "zz_none", "show_from": "zz_none"},
        "bad-focus": {"focus": "["},
        "bad-tagfocus": {"tagfocus": f"{k}=a(b"},
        "bad-show_from": {"show_from": "(?<x>a)"},
        "bad-granularity": {"granularity": "x"},
    }
    for g in ("functions", "filefunctions", "files", "lines", "addresses"):
        if g != "functions":
            out[g] = {"granularity": g}
        out[g + "+noinlines"] = {"granularity": g, "noinlines": "t"}
    return out


# Option set -> the views it is compared in, on each profile's default sample type. Every
# view meets every kind of option; the views that show labels meet the tag options.
VIEWS_FOR = {
    "base": "top peek tags dot", "focus": "top peek dot", "ignore": "top tags",
    "hide": "top peek dot", "show": "top dot", "show_from": "top peek dot",
    "prune_from": "top peek dot", "focus+ignore": "top dot", "focus+hide": "top peek",
    "show_from+hide": "top dot", "show+prune_from": "top peek", "tagfocus": "top tags dot",
    "tagignore": "top tags", "tagfocus-nokey": "top tags", "tagfocus-or": "top dot",
    "tagfocus-range": "top tags dot", "tagignore-range": "top tags",
    "tagignore-unitless": "top tags", "tagfocus-between": "top tags", "tagfocus-time": "top",
    "tagroot": "top peek dot", "tagroot-numeric": "top dot", "tagleaf": "top dot",
    "tagroot+focus": "top tags",
    "taghide": "top tags dot", "tagshow": "top tags", "relative": "top peek dot",
    "relative+tagfocus": "top tags", "cum": "top peek", "nodecount": "top dot",
    "nodefraction": "top dot", "lines+focus": "top peek", "tagroot+lines": "top dot",
    "nomatch": "top tags", "bad-focus": "top", "bad-tagfocus": "tags", "bad-show_from": "dot",
    "bad-granularity": "top", "filefunctions": "top dot", "files": "top peek dot",
    "lines": "top peek dot", "addresses": "top dot", "functions+noinlines": "top peek",
    "filefunctions+noinlines": "top", "files+noinlines": "top", "lines+noinlines": "top dot",
    "addresses+noinlines": "top",
}  # fmt: skip
# Profiles whose content is another corpus profile's (only their encoding differs), and the
# other sample types of every profile: the top view of 30 option sets.
TWINS = {
    f"edge/{n}"
    for n in (
        "gzip-header-fields.pb.gz", "gzip-level0-stored.pb.gz", "gzip-multimember-split.pb.gz",
        "packed-repeated-raw.pb", "unpacked-repeated.pb.gz", "string-table-first.pb.gz",
        "unknown-fields.pb.gz", "field-number-zero.pb.gz", "scalar-field-repeated-last-wins.pb.gz",
        "duplicate-strings.pb.gz", "huge-sparse-ids.pb.gz",
    )
} | {"go-runtime/cpu-labels.pb"}  # fmt: skip
TOP_ONLY = (
    "base", "focus", "ignore", "hide", "show", "show_from", "prune_from", "focus+hide",
    "tagfocus", "tagignore", "tagfocus-nokey", "tagfocus-range", "tagignore-range",
    "tagfocus-time", "tagroot", "tagleaf", "taghide", "relative", "relative+tagfocus", "cum",
    "nodecount", "nodefraction", "lines+focus", "nomatch", "bad-focus", "filefunctions",
    "files", "lines", "addresses", "functions+noinlines", "lines+noinlines",
)  # fmt: skip
# Profiles over BIG bytes (pprof takes up to 2 s a report there): these (option set, view).
BIG_SET = (("focus", "top"), ("hide", "dot"), ("tagfocus", "top"), ("lines", "top"))


def settings(query: dict[str, str], command: str) -> list[str]:
    """pprof's interactive settings for a query (everything reset first)."""
    trimmed = command in ("top", "dot")
    defaults = {
        "focus": "", "ignore": "", "hide": "", "show": "", "show_from": "", "prune_from": "",
        "tagfocus": "", "tagignore": "", "tagshow": "", "taghide": "", "tagroot": "",
        "tagleaf": "", "granularity": "functions", "noinlines": "false",
        "relative_percentages": "false", "sort": "flat",
        "nodecount": "0" if command == "top" else "80" if trimmed else "-1",
        "nodefraction": "0" if command == "top" else "0.005", "edgefraction": "0.001",
    }  # fmt: skip
    lines = [f"{k}={v}" for k, v in defaults.items()]
    for name, value in query.items():  # after the reset: a value pprof refuses changes nothing
        lines.append("sort=cum" if name == "cum" else f"{name}={'true' if value == 't' else value}")
    return lines


def cases() -> list[tuple[str, str | None, str, str]]:
    """(profile, sample type argument, option set, view): big profiles first (their pprof
    runs are the longest, so they start first)."""
    out = []
    for row in sorted(ROWS, key=lambda r: -int(r["bytes"])):
        if not row["sample_types"]:
            continue
        path = row["path"]
        if int(row["bytes"]) > BIG:
            out += [(path, None, name, view) for name, view in BIG_SET]
            continue
        t = tables(parsed(path))
        for i, si in enumerate(sample_args(row)):
            if path in TWINS or i != t.sample_index(None):
                out += [(path, si, name, "top") for name in TOP_ONLY]
            else:
                out += [(path, si, n, v) for n in combos(picks(path)) for v in VIEWS_FOR[n].split()]
    return out


CASES = cases()


# Runs of pprof for a report of a profile with negative values that differs from ours: its
# edges of equal weight and opposite signs are dropped in a map's order (see compare).
GO_RERUNS = 6


def marker(i: int) -> str:
    return "mark_" + "".join(chr(97 + int(d)) for d in str(i))


@pytest.fixture(scope="session")
def go_batches(go_pool):  # type: ignore[no-untyped-def]
    """Every case's pprof output, one interactive pprof per (profile, sample type)."""
    work = Path(tempfile.mkdtemp(prefix="pprof-refine-"))
    groups: dict[tuple[str, str | None], list[tuple[str, str]]] = {}
    for path, si, name, view in CASES:
        groups.setdefault((path, si), []).append((name, view))
    futures = {}
    for (path, si), todo in groups.items():
        args, script = batch(path, si, todo, work, len(futures))
        futures[(path, si)] = (todo, go_pool.submit(args, script), work)
    results: dict[tuple[str, str | None, str, str], tuple[str | None, list[str]]] = {}

    def result(path: str, si: str | None, name: str, view: str) -> tuple[str | None, list[str]]:
        key = (path, si)
        if (path, si, name, view) not in results:
            todo, future, folder = futures[key]
            done = future.result()
            index = list(futures).index(key)
            chunks = re.split(r'unrecognized command: "mark_[a-j]+"\n', done.stderr.decode())
            for i, (n, v) in enumerate(todo, start=1):
                out = folder / f"{index}-{i}.txt"
                text = out.read_text("utf-8", "replace") if out.exists() else None
                err = [x for x in chunks[i].splitlines() if not x.startswith("Generating report")]
                results[(path, si, n, v)] = (text, err)
        return results[(path, si, name, view)]

    def again(path: str, si: str | None, name: str, view: str) -> tuple[str | None, list[str]]:
        """The report run once more, alone, in a pprof of its own."""
        folder = Path(tempfile.mkdtemp(prefix="pprof-again-", dir=work))
        done = go_pool.run(*batch(path, si, [(name, view)], folder, 0))
        chunks = re.split(r'unrecognized command: "mark_[a-j]+"\n', done.stderr.decode())
        out = folder / "0-1.txt"
        text = out.read_text("utf-8", "replace") if out.exists() else None
        return text, [x for x in chunks[1].splitlines() if not x.startswith("Generating report")]

    result.again = again  # type: ignore[attr-defined]
    return result


def batch(
    path: str, si: str | None, todo: list[tuple[str, str]], folder: Path, index: int
) -> tuple[list[str], bytes]:
    """(pprof's arguments, its interactive script) for reports todo of one profile and sample
    type, each written to folder/{index}-{i}.txt, an unknown command after each."""
    lines = ["compact_labels=false", marker(0)]
    for i, (name, view) in enumerate(todo, start=1):
        query = combos(picks(path))[name]
        command = f"peek {picks(path)['mid']}" if view == "peek" else view
        out = folder / f"{index}-{i}.txt"
        lines += settings(query, view) + [f"output={out}", command, marker(i)]
    args = [f"-sample_index={si}"] if si is not None else []
    return [*args, str(CORPUS / path)], ("\n".join(lines) + "\n").encode()


def ours(path: str, si: str | None, name: str, view: str) -> tuple[str | None, list[str]]:
    """(text or None, warnings + the error line) by the server's path."""
    p = parsed(path)
    query = dict(combos(picks(path))[name])
    if si is not None:
        query["si"] = si
    if view == "peek":
        query["peek"] = picks(path)["mid"]
    types = p.sample_types()
    default = tables(p).default_sample_type
    try:
        opts = options.parse(VIEW_OF[view], query, types, default)
        warn = options.parse("warnings", {**query, **({"labels": "t"} if view == "tags" else {})},
                             types, default)  # fmt: skip
    except options.OptionError as exc:
        return None, [str(exc)]
    warnings = json.loads(views.render("warnings", [p], warn))["warnings"]
    try:
        return views.render(VIEW_OF[view], [p], opts).decode(), warnings
    except Exception as exc:  # a ShareError: pprof's refusal
        return None, [*warnings, getattr(exc, "message", str(exc))]


def unordered_blocks(text: str) -> str:
    """Lines of each run of edges / context lines of equal |weight| sorted (Go's order there
    depends on a map's)."""
    out, run = [], []

    def flush() -> None:
        out.extend(sorted(run))
        run.clear()

    for line in text.splitlines():
        weight = re.search(r'label=" -?([^"\\ ]+)|^ {20,}-?(\S+) ', line)
        if weight and ("->" in line or "|" in line):
            if run and re.search(re.escape(weight.group(1) or weight.group(2)), run[-1]) is None:
                flush()
            run.append(line)
        else:
            flush()
            out.append(line)
    flush()
    return "\n".join(out)


PAIRS = sorted({(p, si) for p, si, _, _ in CASES}, key=lambda x: (x[0], str(x[1])))


@pytest.mark.parametrize(("path", "si"), PAIRS, ids=[f"{p}:{s}" for p, s in PAIRS])
def test_views_match_go(go_batches, path: str, si: str | None) -> None:  # type: ignore[no-untyped-def]
    """Every option set and view of one profile and sample type (one test: the cases of a
    pair share pprof's process and our parsed profile)."""
    failures = []
    for p, s, name, view in CASES:
        if (p, s) == (path, si):
            problem = compare(go_batches, path, si, name, view)
            if problem:
                failures.append(f"--- {name} / {view}: {problem}")
    assert not failures, "\n".join(failures)[:6000]


def compare(go_batches: Any, path: str, si: str | None, name: str, view: str) -> str | None:
    """What differs between pprof's report and ours (None: nothing)."""
    expected, go_err = go_batches(path, si, name, view)
    text, err = ours(path, si, name, view)
    go_err = [x for x in go_err if not x.startswith(NOISE)]
    if name.startswith("bad-") or (expected is None and go_err):
        # pprof refuses: its error is its last line (lines before it are warnings it printed
        # on the way; the interactive mode goes on with the old value of a bad setting).
        line = go_err[0 if name == "bad-granularity" else -1] if go_err else None
        if text is not None or not err or err[-1] != line:
            return f"pprof refused with {line!r}, we said {err!r}"
        return None
    if err != go_err:
        return f"stderr: go {go_err} ours {err}"
    if text is None or expected is None:
        return f"a report on one side only (ours: {err})"
    if text != expected and (parsed(path).values < 0).any():
        text, expected = unordered_blocks(text), unordered_blocks(expected)
        # Which of such edges RemoveRedundantEdges drops follows that order too: pprof's
        # report itself differs between runs, so ours is checked against a few more of its.
        for _ in range(GO_RERUNS if text != expected else 0):
            rerun, _err = go_batches.again(path, si, name, view)
            if rerun is not None and unordered_blocks(rerun) == text:
                return None
    if text != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(1), text.splitlines(1), n=1))
        return "differs from go tool pprof:\n" + diff[:2000]
    return None


@pytest.mark.parametrize(
    ("flags", "view", "query"),
    [
        (["-top", "-nodefraction=0", "-focus=sort", "-lines"], "toptext",
         {"focus": "sort", "granularity": "lines"}),
        (["-tags", "-tagfocus=endpoint=/api/users"], "tagstext",
         {"tagfocus": "endpoint=/api/users"}),
        (["-dot", "-tagroot=endpoint"], "dot", {"tagroot": "endpoint"}),
        (["-peek=sort.pdqsort$", "-cum"], "peektext", {"peek": "sort.pdqsort$", "cum": "t"}),
    ],
)  # fmt: skip
def test_command_line_flags_print_the_same(
    go_pool, flags: list[str], view: str, query: dict
) -> None:  # type: ignore[no-untyped-def]
    """The interactive batches stand for the flags: a few plain runs say they print the same."""
    path = "go-runtime/cpu-labels.pb.gz"
    done = go_pool.run([*flags, str(CORPUS / path)])
    assert done.returncode == 0, done.stderr
    p = parsed(path)
    opts = options.parse(view, query, p.sample_types(), None)
    assert views.render(view, [p], opts).decode() == done.stdout.decode()


@pytest.mark.parametrize(
    ("flags", "view", "query"),
    [
        (["-top", "-focus=["], "toptext", {"focus": "["}),
        (["-peek=zz_none"], "peektext", {"peek": "zz_none"}),
        (["-peek=a("], "peektext", {"peek": "a("}),
        (["-tags", "-tagfocus=a(b"], "tagstext", {"tagfocus": "a(b"}),
    ],
)
def test_refusals_exit_non_zero_with_our_message(
    go_pool, flags: list[str], view: str, query: dict
) -> None:  # type: ignore[no-untyped-def]
    """Where pprof exits 1, we answer 400 with its last stderr line."""
    path = "go-runtime/cpu-labels.pb.gz"
    done = go_pool.run([*flags, str(CORPUS / path)])
    assert done.returncode == 1 and done.stdout == b""
    line = done.stderr.decode().strip().splitlines()[-1]
    p = parsed(path)
    with pytest.raises(Exception) as caught:
        opts = options.parse(view, query, p.sample_types(), None)
        views.render(view, [p], opts)
    assert getattr(caught.value, "message", str(caught.value)) == line
    assert getattr(caught.value, "code", 400) == 400


def test_every_valid_profile_and_type_has_30_option_sets() -> None:
    per_pair: dict[tuple[str, str | None], set[str]] = {}
    for path, si, name, _ in CASES:
        per_pair.setdefault((path, si), set()).add(name)
    small = [r for r in ROWS if r["sample_types"] and int(r["bytes"]) <= BIG]
    assert all(len(per_pair[(r["path"], si)]) >= 30 for r in small for si in sample_args(r))
    assert set(VIEWS_FOR) == set(combos(picks("go-runtime/cpu-labels.pb.gz")))
    assert set(TOP_ONLY) <= set(VIEWS_FOR) and len(TOP_ONLY) >= 30
    big = [r for r in ROWS if r["sample_types"] and int(r["bytes"]) > BIG]
    assert len(big) >= 4 and all((r["path"], None) in per_pair for r in big)
