"""Uploads of the other formats through every idiom: stored as the converted protobuf, whose
hash is the id (so a file and its CRLF or UTF-16 copy are one profile), served by /raw, named
in the record; strip= applies to the conversion; broken files are a one-line 400."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
import requests
from test_web_upload import IDIOMS, stored, upload

from share import pprof

from conftest import CORPUS, make_app

DATA = Path(__file__).parent / "data"
FILES = [
    (CORPUS / "formats/folded-stacks.txt", "folded"),
    (DATA / "flamegraph/perf-iperf-stacks-pidtid-01.txt", "perf script"),
    (DATA / "speedscope/Chrome_65_simple.cpuprofile", "cpuprofile"),
    (DATA / "speedscope/0.6.0_two-sampled.speedscope.json", "speedscope"),
    (CORPUS / "legacy/google-pprof/cppbench.cpu", "legacy CPU"),
]


@pytest.fixture
def app(tmp_path: Path):  # type: ignore[no-untyped-def]
    return make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m.sqlite3"})


@pytest.mark.parametrize(("path", "origin"), FILES, ids=[o for _, o in FILES])
def test_every_idiom_stores_the_conversion_once(app, path: Path, origin: str) -> None:  # type: ignore[no-untyped-def]
    client = app.test_client()
    data = path.read_bytes()
    links = []
    for n, idiom in enumerate(IDIOMS):
        reply = upload(client, idiom, path.name, data)
        assert reply.status_code == (201 if n == 0 else 200), reply.text
        links.append(reply.text.strip())
    assert len(set(links)) == 1
    pid = links[0].rsplit("/", 1)[1]
    converted = pprof.parse(data, max_profile_bytes=1 << 30).raw
    raw = client.get(f"/{pid}/raw")
    assert raw.status_code == 200 and gzip.decompress(raw.data) == converted
    assert stored(app) == (1, 1)
    record = client.get(f"/api/v1/profiles/{pid}").get_json()
    assert record["converted_from"] == origin == record["metadata"]["converted_from"]
    assert record["size_bytes"] == len(converted)
    assert client.get(f"/{pid}/top").status_code == 200


def test_a_file_and_its_crlf_and_utf16_copies_are_one_profile(app) -> None:  # type: ignore[no-untyped-def]
    client = app.test_client()
    replies = [
        client.post("/", data=(DATA / f"speedscope/stackcollapse_{name}.txt").read_bytes())
        for name in ("simple", "simple-crlf", "simple-utf16-le", "simple-utf16-be")
    ]
    assert [r.status_code for r in replies] == [201, 200, 200, 200]
    assert len({r.text for r in replies}) == 1


def test_gzipped_text_is_inflated_then_converted(app) -> None:  # type: ignore[no-untyped-def]
    client = app.test_client()
    data = (DATA / "flamegraph/perf-dd-stacks-01.txt").read_bytes()
    plain = client.post("/", data=data)
    zipped = client.post("/", data=gzip.compress(data))
    assert (plain.status_code, zipped.status_code) == (201, 200) and plain.text == zipped.text


def test_strip_applies_to_the_conversion(app) -> None:  # type: ignore[no-untyped-def]
    client = app.test_client()
    data = (DATA / "flamegraph/perf-iperf-stacks-pidtid-01.txt").read_bytes()
    plain = client.post("/", data=data).text.strip()
    stripped = client.post("/?strip=labels", data=data).text.strip()
    assert plain != stripped
    raw = gzip.decompress(client.get(f"{stripped.rsplit('/', 1)[1]}/raw").data)
    assert not any(s.label for s in pprof.parse(raw, max_profile_bytes=1 << 30).message.sample)
    record = client.get(f"/api/v1/profiles/{stripped.rsplit('/', 1)[1]}").get_json()
    assert record["converted_from"] == "perf script"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"main;a 1\nmain;b x\n", "folded stacks, line 2:"),
        (b"app 1 [000] 1.0: 1 cycles:\n\t7f main (/a)\n!!\n", "perf script, line 3:"),
        (b'{"nodes": [{"id": 1}], "samples": [3]}', "cpuprofile: samples[0]: node 3"),
        (b'{"$schema": "https://www.speedscope.app/file-format-schema.json"}', "speedscope:"),
    ],
    ids=["folded", "perf", "cpuprofile", "speedscope"],
)
def test_broken_file_is_a_one_line_400_naming_format_and_place(app, data: bytes, words: str):  # type: ignore[no-untyped-def]
    client = app.test_client()
    for idiom in IDIOMS:
        reply = upload(client, idiom, "x", data)
        assert reply.status_code == 400 and reply.text.startswith(words), reply.text
        assert reply.text.count("\n") == 1
    error = upload(client, "raw", "x", data, Accept="application/json").get_json()["error"]
    assert error["code"] == 400 and error["message"].startswith(words)
    assert stored(app) == (0, 0)


@pytest.mark.go
@pytest.mark.parametrize(("path", "origin"), FILES[:4], ids=[o for _, o in FILES[:4]])
def test_go_tool_pprof_on_the_link_prints_our_top(live_server, go_pool, path, origin):  # type: ignore[no-untyped-def]
    link = requests.post(live_server, data=path.read_bytes()).text.strip()
    ours = requests.get(f"{link}/top")
    done = go_pool.run(["-top", "-nodefraction=0", link])
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode("utf-8", "replace") == ours.text
