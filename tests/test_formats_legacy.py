"""Every legacy corpus file `go tool pprof` reads: uploaded, converted as pprof's legacy parsers
convert it, so that our `/ID/top` is `go tool pprof -top -nodefraction=0 FILE` byte for byte,
and `go tool pprof` on the link prints the same (the stored protobuf is pprof's own reading)."""

from __future__ import annotations

import csv
import random

import pytest
import requests

from conftest import CORPUS

pytestmark = pytest.mark.go

with open(CORPUS / "MANIFEST.tsv", newline="") as _f:
    LEGACY = [
        r
        for r in csv.DictReader(_f, delimiter="\t")
        if r["valid"] == "yes" and r["path"].startswith("legacy/")
    ]
CASES = [
    (r["path"], t.split("/")[0] if i == 0 or r["sample_types"].count(t.split("/")[0]) == 1 else i)
    for r in LEGACY
    for i, t in enumerate(r["sample_types"].split(","))
] + [(r["path"], None) for r in LEGACY]


def test_every_legacy_kind_is_in_the_corpus() -> None:
    origins = {r["note"].split("converted_from: ")[1].split(";")[0] for r in LEGACY}
    assert {"legacy CPU", "legacy Java CPU", "legacy heap", "legacy thread"} <= origins
    assert {"legacy contention", "legacy Java heap", "legacy Java contention"} <= origins
    assert {"Go goroutine (debug=1)", "Go threadcreate (debug=1)", "Go heap (debug=1)"} <= origins


@pytest.fixture(scope="module")
def links(live_server: str) -> dict[str, str]:
    out = {}
    for row in LEGACY:
        data = (CORPUS / row["path"]).read_bytes()
        reply = requests.put(f"{live_server}/{row['path'].rsplit('/', 1)[1]}", data=data)
        assert reply.status_code in (200, 201), reply.text
        out[row["path"]] = reply.text.strip()
    return out


@pytest.fixture(scope="module")
def go_tops(go_pool, links):  # type: ignore[no-untyped-def]
    """go tool pprof -top on each original file and on its link, started up front."""

    def args(sample: str | int | None, source: str) -> list[str]:
        flags = ["-top", "-nodefraction=0"]
        return [*flags, *([f"-sample_index={sample}"] if sample is not None else []), source]

    futures = {}
    for path, sample in CASES:
        futures[(path, sample, "file")] = go_pool.submit(args(sample, str(CORPUS / path)))
        futures[(path, sample, "link")] = go_pool.submit(args(sample, links[path]))
    return futures


@pytest.mark.parametrize(("path", "sample"), CASES, ids=[f"{p}:{s}" for p, s in CASES])
def test_top_is_go_tool_pprof_on_the_original_and_on_the_link(go_tops, links, path, sample):
    from_file = go_tops[(path, sample, "file")].result()
    from_link = go_tops[(path, sample, "link")].result()
    assert from_file.returncode == 0, from_file.stderr
    expected = from_file.stdout.decode("utf-8", "replace")
    query = {"si": str(sample)} if sample is not None else {}
    ours = requests.get(f"{links[path]}/top", params=query)
    assert ours.status_code == 200, ours.text
    assert ours.text == expected
    assert from_link.returncode == 0, from_link.stderr
    assert b"Fetching profile over HTTP" in from_link.stderr
    assert from_link.stdout.decode("utf-8", "replace") == expected


def test_the_record_says_what_it_was_converted_from(links) -> None:
    for row in LEGACY:
        record = requests.get(links[row["path"]], headers={"Accept": "application/json"}).json()
        origin = row["note"].split("converted_from: ")[1].split(";")[0]
        assert record["converted_from"] == origin
        assert record["metadata"]["converted_from"] == origin


def test_what_pprof_refuses_keeps_its_reason(live_server: str) -> None:
    crasher = CORPUS / "invalid/legacy/google-pprof/7e3c92482f6f39fc502b822ded792c589849cca8"
    reply = requests.post(live_server, data=crasher.read_bytes())
    assert reply.status_code == 400
    assert "parsing profile: parsing sample 0 0 @ 0: second value must be non-zero" in reply.text
    dump = CORPUS / "invalid/legacy/go-runtime/goroutine-debug2.txt"
    reply = requests.post(live_server, data=dump.read_bytes())
    assert reply.status_code == 400 and "debug=2" in reply.text


DIFFERENTIAL = 160  # mutated legacy files, each read by go tool pprof and by us


def test_mutated_legacy_files_are_read_as_go_tool_pprof_reads_them(go_pool, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Differential fuzz: where pprof's legacy parsers fail with a reason, so do we, with that
    reason; where pprof reads the file, our -top text is its -top text. (A file no legacy
    parser recognises may still be another format of ours, e.g. folded stacks.)"""
    from test_formats_fuzz import mutate_bytes

    from share import pprof
    from share.analysis.measure import text
    from share.analysis.model.graph import graph
    from share.analysis.model.tables import tables
    from share.analysis.reports.top import top
    from share.errors import BadProfile

    rng = random.Random(7)
    seeds = [CORPUS / r["path"] for r in LEGACY]
    cases = []
    for k in range(DIFFERENTIAL):
        path = tmp_path / f"mutated-{k}"
        path.write_bytes(mutate_bytes(rng, rng.choice(seeds).read_bytes()))
        cases.append((path, go_pool.submit(["-top", "-nodefraction=0", str(path)])))
    compared = refused = 0
    for path, future in cases:
        go = future.result()
        stderr = go.stderr.decode("utf-8", "replace")
        try:
            parsed = pprof.parse(path.read_bytes(), max_profile_bytes=1 << 26)
        except BadProfile as err:
            assert go.returncode != 0, (path, err.message)
            reason = stderr.split("parsing profile: ", 1)[1].splitlines()[0]
            # pprof names no reason for these; ours says what the file is instead
            anything = ("unrecognized profile format", "empty input file")
            assert reason in err.message or reason in anything, (path, stderr)
            refused += 1
            continue
        if go.returncode != 0:
            # Only what no legacy parser recognised (our other formats), or an empty profile.
            assert "unrecognized profile format" in stderr or "has no samples" in stderr, path
            continue
        tab = tables(parsed)
        t = top(graph(tab, tab.sample_index(None)))
        ours = text.top_text(
            t.header,
            t.total,
            t.rows,
            orig_count=t.orig_count,
            dropped_nodes=t.dropped_nodes,
            node_cutoff=t.node_cutoff_label,
        )
        assert ours == go.stdout.decode("utf-8", "replace"), path
        compared += 1
    assert compared > DIFFERENTIAL // 3 and refused > 0
