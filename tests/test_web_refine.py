"""The views with pprof's options over HTTP: text with warning headers, JSON, the call graph
SVG under its own CSP, errors as 400 with pprof's line, caching per canonical options."""

from __future__ import annotations

import shutil

import pytest

from share.pprof._proto import profile_pb2

from conftest import CORPUS, make_app


@pytest.fixture
def pid(client) -> str:  # type: ignore[no-untyped-def]
    reply = client.post(
        "/",
        data=(CORPUS / "go-runtime/cpu-labels.pb.gz").read_bytes(),
        headers={"Accept": "application/json"},
    )
    assert reply.status_code in (200, 201)
    return reply.get_json()["id"]


@pytest.mark.parametrize(
    ("path", "first_line"),
    [
        ("/{}/top?focus=sort&granularity=lines&nodecount=3", "File: gen"),
        ("/{}/peek?peek=sort.pdqsort$", "File: gen"),
        ("/{}/tags?tagfocus=endpoint=/api/users", " endpoint: Total 2.0s"),
        ("/{}/dot?nodecount=5", 'digraph "gen" {'),
    ],
)
def test_text_views(client, pid: str, path: str, first_line: str) -> None:  # type: ignore[no-untyped-def]
    reply = client.get(path.format(pid))
    assert reply.status_code == 200 and reply.mimetype == "text/plain"
    assert reply.get_data(as_text=True).splitlines()[0] == first_line
    assert reply.headers.getlist("X-Pprof-Warning") == []


def test_text_views_carry_pprof_warnings_as_headers(client, pid: str) -> None:  # type: ignore[no-untyped-def]
    reply = client.get(f"/{pid}/top?focus=zz_none&tagfocus=endpoint=1kb:")
    assert reply.status_code == 200
    assert reply.headers.getlist("X-Pprof-Warning") == [
        "tagfocus:Interpreted '1kb:' as range, not regexp",
        "Focus expression matched no samples",
        "TagFocus expression matched no samples",
    ]
    assert "Active filters:\n   focus=zz_none\n" in reply.get_data(as_text=True)
    accented = client.get(f"/{pid}/top?tagroot=clé")
    assert accented.headers.getlist("X-Pprof-Warning") == ["TagRoot expression matched no samples"]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/{}/top?focus=[", "parsing focus regexp: error parsing regexp: missing closing ]: `[`"),
        ("/{}/peek?peek=zz_none", "no matches found for regexp: zz_none"),
        ("/api/v1/profiles/{}/top?g=x", 'invalid "granularity" value "x"'),
        ("/api/v1/profiles/{}/flamegraph?tagfocus=a=b(", "parsing tagfocus regexp"),
        ("/{}/graph.svg?nodecount=501", "graph limit of 500 nodes"),
    ],
)
def test_refusals_are_400_with_pprof_line(client, pid: str, path: str, message: str) -> None:  # type: ignore[no-untyped-def]
    reply = client.get(path.format(pid))
    assert reply.status_code == 400
    if path.startswith("/api/"):
        body = reply.get_json()["error"]["message"]
    else:
        body = reply.get_data(as_text=True)
    assert message in body


def test_json_views(client, pid: str) -> None:  # type: ignore[no-untyped-def]
    api = f"/api/v1/profiles/{pid}"
    peek = client.get(f"{api}/peek?peek=^sort\\.pdqsort$").get_json()
    assert [peek["names"][m["name"]] for m in peek["matches"]] == ["sort.pdqsort"]
    assert peek["sample_type"]["type"] == "cpu" and peek["warnings"] == []
    tags = client.get(f"{api}/tags").get_json()
    assert [k["key"] for k in tags["keys"]] == ["endpoint", "worker"]
    top = client.get(f"{api}/top?cum=t&tagfocus=worker=0").get_json()
    assert top["sort"] == "cum" and top["filters"] == ["tagfocus=worker=0"]
    flame = client.get(f"{api}/flamegraph?hide=runtime").get_json()
    assert flame["filters"] == ["hide=runtime"] and "runtime.main" not in flame["names"]


def test_graph_svg_under_its_own_csp(client, pid: str) -> None:  # type: ignore[no-untyped-def]
    if shutil.which("dot") is None:
        pytest.skip("graphviz is not installed (make test installs it)")
    reply = client.get(f"/{pid}/graph.svg?nodecount=8&focus=sort")
    assert reply.status_code == 200 and reply.mimetype == "image/svg+xml"
    assert (
        reply.headers["Content-Security-Policy"] == "default-src 'none'; style-src 'unsafe-inline'"
    )
    body = reply.get_data(as_text=True)
    assert body.startswith("<svg") and "<?xml" not in body and "<script" not in body
    assert "sort.pdqsort" in body and "&;" not in body


def quoted_label_profile(value: str) -> bytes:
    """main.main calls work, whose samples carry the label worker=value."""
    prof = profile_pb2.Profile()
    prof.string_table.extend(["", "samples", "count", "main.main", "work", "worker", value])
    prof.sample_type.add(type=1, unit=2)
    for i in (1, 2):
        prof.function.add(id=i, name=i + 2)
        prof.location.add(id=i).line.add(function_id=i)
    sample = prof.sample.add(location_id=[2, 1], value=[7])
    sample.label.add(key=5, str=6)
    return prof.SerializeToString()


def test_graph_svg_lays_out_a_label_value_with_a_quote(client) -> None:  # type: ignore[no-untyped-def]
    """pprof's -dot writes a label value as it is (ours too, byte for byte), which Graphviz
    cannot read when it holds a quote: the call graph escapes it and lays it out."""
    if shutil.which("dot") is None:
        pytest.skip("graphviz is not installed (make test installs it)")
    value = 'say "hi" \\ bye'
    reply = client.post(
        "/", data=quoted_label_profile(value), headers={"Accept": "application/json"}
    )
    pid = reply.get_json()["id"]
    dot = client.get(f"/{pid}/dot").get_data(as_text=True)
    assert f'[label = "worker:{value}" id=' in dot  # unescaped, as go tool pprof -dot writes it
    svg = client.get(f"/{pid}/graph.svg")
    assert svg.status_code == 200, svg.get_data(as_text=True)
    assert "worker:say &quot;hi&quot; \\ bye" in svg.get_data(as_text=True)


def test_graph_svg_without_graphviz_is_501(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Compute processes that find no `dot` on their PATH (their own, started here)."""
    from share.compute.pool import ComputePool
    from share.config import load

    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    pool = ComputePool(load({}, {"ANALYSIS_WORKERS": 1}))
    try:
        app = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m",
                        "COMPUTE": pool})  # fmt: skip
        client = app.test_client()
        data = (CORPUS / "go-runtime/cpu-labels.pb.gz").read_bytes()
        pid = client.post("/", data=data, headers={"Accept": "application/json"}).get_json()["id"]
        reply = client.get(f"/{pid}/graph.svg")
        assert reply.status_code == 501
        assert "graphviz not installed" in reply.get_data(as_text=True)
    finally:
        pool.close()


def test_equivalent_queries_are_computed_once(client, pid: str) -> None:  # type: ignore[no-untyped-def]
    once = client.application.extensions["share"].once  # counts computations (compute tier)
    before = once.computed
    for query in ("f=sort&g=lines", "focus=sort&granularity=lines", "granularity=lines&f=sort"):
        assert client.get(f"/{pid}/top?{query}").status_code == 200
    assert once.computed == before + 2  # the top text, and its warnings (one view each)


def topmost_matches(doc: dict, pattern: str, column: str = "value") -> int:
    """What the page sums over a flame graph document: each stack's topmost matching frame."""
    import re

    names, nodes = doc["names"], doc["nodes"]
    hit = [i > 0 and re.search(pattern, n) is not None for i, n in enumerate(names)]
    total, i, depth = 0, 1, nodes["depth"]
    while i < len(depth):
        if hit[nodes["name"][i]]:
            total += nodes[column][i]
            d, i = depth[i], i + 1
            while i < len(depth) and depth[i] > d:
                i += 1
        else:
            i += 1
    return total


@pytest.mark.parametrize(
    ("pattern", "query"),
    [
        ("runtime", ""),
        ("main\\.c1", ""),
        ("main\\.c1", "&hide=^main\\.c1[0-5]"),
        ("runtime", "&hide=runtime"),
    ],
)
def test_search_counts_every_stack_the_budget_left_out_too(
    client, pattern: str, query: str
) -> None:  # type: ignore[no-untyped-def]
    """The search share of cpu-xl (whose default flame graph leaves most of its weight in
    trees too small to draw) equals the page's sum over the whole, unbudgeted tree."""
    reply = client.post("/", data=(CORPUS / "go-runtime/cpu-xl.pb.gz").read_bytes(),
                        headers={"Accept": "application/json"})  # fmt: skip
    api = f"/api/v1/profiles/{reply.get_json()['id']}"
    q = f"q={pattern}{query}"
    found = client.get(f"{api}/search?{q}").get_json()
    whole = client.get(f"{api}/flamegraph?budget=0{query}").get_json()
    drawn = client.get(f"{api}/flamegraph?{query[1:]}").get_json()
    assert found["value"] == topmost_matches(whole, pattern)
    assert found["kept"] == whole["nodes"]["value"][0]
    if "hide=runtime" in query:
        assert found["value"] == 0
    else:
        assert drawn["trimmed"]["nodes"] > 0 and topmost_matches(drawn, pattern) < found["value"]


def test_search_on_a_diff_gives_both_sides_and_refuses_a_bad_regex(client) -> None:  # type: ignore[no-untyped-def]
    ids = [client.post("/", data=(CORPUS / f"go-runtime/{n}.pb.gz").read_bytes(),
                       headers={"Accept": "application/json"}).get_json()["id"]
           for n in ("cpu-labels", "cpu-small")]  # fmt: skip
    api = f"/api/v1/profiles/{ids[0]}"
    query = f"diff_base={ids[1]}&hide=runtime"
    found = client.get(f"{api}/search?q=sort&{query}").get_json()
    whole = client.get(f"{api}/flamegraph?budget=0&{query}").get_json()
    assert found["diff"] and found["filters"] == ["hide=runtime"]
    assert found["before"] == topmost_matches(whole, "sort", "before") > 0
    assert found["after"] == topmost_matches(whole, "sort", "after") > 0
    assert found["value"] == found["after"] - found["before"]
    for q, message in (("(", "parsing search regexp"), ("", "?q=REGEX is needed")):
        reply = client.get(f"{api}/search?q={q}")
        assert reply.status_code == 400 and message in reply.get_json()["error"]["message"]
