"""The ingest core end to end, on both backend pairs: every corpus file through every idiom."""

from __future__ import annotations

import gzip
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

from share import pprof

from conftest import make_app

CORPUS = Path(__file__).parent / "corpus"

Manifest = list[dict[str, str]]


def corpus_paths(valid: bool) -> list[str]:
    import csv

    with open(CORPUS / "MANIFEST.tsv", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    return [r["path"] for r in rows if r["valid"] == ("yes" if valid else "no")]


VALID = corpus_paths(valid=True)
INVALID = corpus_paths(valid=False)


def inflate_all(data: bytes) -> bytes:
    """Every gzip member, as Go's multistream reader does; raw bytes as they are."""
    if data[:2] != b"\x1f\x8b":
        return data
    out, rest = [], data
    while rest:
        inflater = zlib.decompressobj(31)
        out.append(inflater.decompress(rest))
        rest = inflater.unused_data
    return b"".join(out)


def stored(app: Any) -> tuple[int, int]:
    """How many blobs and records the app's stores hold, counted behind the interface."""
    share = app.extensions["share"]
    blobs, meta = share.blobs, share.meta
    if hasattr(blobs, "root"):
        n_blobs = sum(1 for p in Path(blobs.root).rglob("*") if p.is_file())
    else:
        listing = blobs.client.list_objects_v2(Bucket=blobs.bucket)
        n_blobs = listing.get("KeyCount", 0)
    return n_blobs, sum(1 for _ in meta.ids())


@pytest.fixture
def backend_app(backend: dict[str, Any]) -> Any:
    # A lower decompressed limit keeps the gzip-bomb cases quick; the default is tested below.
    return make_app({**backend, "MAX_PROFILE_BYTES": 64 << 20})


def upload(client: Any, idiom: str, name: str, data: bytes, **headers: str) -> Any:
    if idiom == "multipart":
        body, content_type = multipart({"file": (name, data)})
        return client.post("/", data=body, content_type=content_type, headers=headers)
    if idiom == "raw":  # curl --data-binary @file (and @- from stdin) sends a form content type
        return client.post(
            "/", data=data, content_type="application/x-www-form-urlencoded", headers=headers
        )
    if idiom == "put":  # curl -T file HOST/ sends PUT /file
        return client.put(f"/{name}", data=data, headers=headers)
    raise AssertionError(idiom)


IDIOMS = ["multipart", "raw", "put"]


def multipart(fields: dict[str, tuple[str, bytes] | str]) -> tuple[bytes, str]:
    """A multipart/form-data body as curl -F sends it (werkzeug's builder leaks a temp file)."""
    from urllib3 import encode_multipart_formdata

    return encode_multipart_formdata(fields)


@pytest.mark.parametrize("path", VALID)
def test_valid_profile_every_idiom_same_link_byte_identical(backend_app, path):
    client = backend_app.test_client()
    data = (CORPUS / path).read_bytes()
    name = Path(path).name
    links = []
    for n, idiom in enumerate(IDIOMS):
        reply = upload(client, idiom, name, data)
        assert reply.status_code == (201 if n == 0 else 200), reply.text
        assert reply.mimetype == "text/plain"
        assert reply.text.endswith("\n") and reply.text.count("\n") == 1
        assert ("X-Delete-Token" in reply.headers) == (n == 0)
        links.append(reply.text.strip())
    assert len(set(links)) == 1
    pid = links[0].rsplit("/", 1)[1]
    raw = client.get(f"/{pid}/raw")
    assert raw.status_code == 200
    assert raw.data[:2] == b"\x1f\x8b"
    # A legacy format is stored as the protobuf pprof's legacy parser makes of it.
    legacy = path.startswith("legacy/")
    expected = pprof.parse(data, max_profile_bytes=1 << 30).raw if legacy else inflate_all(data)
    assert inflate_all(raw.data) == expected
    assert stored(backend_app) == (1, 1)
    record = client.get(f"/api/v1/profiles/{pid}").get_json()
    assert record["title"] == name
    assert record["size_bytes"] == len(expected)
    assert (record["converted_from"] is not None) == legacy


@pytest.mark.parametrize("path", INVALID)
def test_invalid_file_gets_4xx_with_a_message_and_nothing_stored(backend_app, path):
    client = backend_app.test_client()
    data = (CORPUS / path).read_bytes()
    for idiom in IDIOMS:
        reply = upload(client, idiom, Path(path).name, data)
        assert 400 <= reply.status_code < 500, (idiom, reply.status_code, reply.text)
        message = reply.text.strip()
        assert message and "\n" not in message and "Traceback" not in message
    json_reply = upload(client, "raw", "x", data, Accept="application/json")
    error = json_reply.get_json()["error"]
    assert error["code"] == json_reply.status_code and error["message"]
    assert stored(backend_app) == (0, 0)


def test_gzip_bomb_with_default_limit_is_413_naming_the_limit(tmp_path):
    app = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m.sqlite3"})
    reply = app.test_client().post(
        "/", data=(CORPUS / "invalid/gzip-bomb-1GiB-zeros.gz").read_bytes()
    )
    assert reply.status_code == 413
    assert "512 MiB" in reply.text
    assert stored(app) == (0, 0)


def test_upload_over_the_size_limit_is_413(tmp_path):
    app = make_app(
        {"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m", "MAX_UPLOAD_BYTES": 4096}
    )
    data = (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes()
    for idiom in IDIOMS:
        reply = upload(app.test_client(), idiom, "cpu.pb.gz", data)
        assert reply.status_code == 413, idiom
        assert "4 KiB" in reply.text
    assert stored(app) == (0, 0)


def test_same_profile_any_gzip_level_or_raw_is_one_link(backend_app):
    client = backend_app.test_client()
    raw = inflate_all((CORPUS / "go-runtime/heap.pb.gz").read_bytes())
    forms = [raw, gzip.compress(raw, 1), gzip.compress(raw, 9), gzip.compress(raw, 0)]
    links = {upload(client, "raw", "heap", form).text for form in forms}
    assert len(links) == 1
    assert stored(backend_app) == (1, 1)


def test_concurrent_identical_uploads_one_blob_one_record(backend_app):
    data = (CORPUS / "go-runtime/cpu-labels.pb.gz").read_bytes()
    barrier = threading.Barrier(32)
    replies: list[tuple[int, str, bool]] = []

    def one() -> None:
        client = backend_app.test_client()
        barrier.wait()
        reply = upload(client, "raw", "cpu", data)
        replies.append((reply.status_code, reply.text, "X-Delete-Token" in reply.headers))

    threads = [threading.Thread(target=one) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(replies) == 32
    assert len({text for _, text, _ in replies}) == 1
    assert sorted(code for code, _, _ in replies) == [200] * 31 + [201]
    assert sum(token for _, _, token in replies) == 1
    assert stored(backend_app) == (1, 1)


def test_json_reply_fields(client):
    data = (CORPUS / "go-runtime/heap.pb.gz").read_bytes()
    first = client.post("/", data=data, headers={"Accept": "application/json"})
    body = first.get_json()
    assert first.status_code == 201
    for field in ("id", "url", "raw_url", "created_at", "size_bytes", "delete_token"):
        assert body[field]
    assert body["deduplicated"] is False
    assert body["url"] == f"http://localhost/{body['id']}"
    assert body["raw_url"] == body["url"] + "/raw"
    assert body["sample_types"] == [
        {"type": "alloc_objects", "unit": "count"},
        {"type": "alloc_space", "unit": "bytes"},
        {"type": "inuse_objects", "unit": "count"},
        {"type": "inuse_space", "unit": "bytes"},
    ]
    assert "default_sample_type" in body
    again = client.post("/", data=data, headers={"Accept": "application/json"}).get_json()
    assert again["deduplicated"] is True and "delete_token" not in again
    assert again["id"] == body["id"]


def test_public_url_is_the_base_of_links(tmp_path):
    app = make_app(
        {
            "BLOBS": f"file:{tmp_path}/b",
            "META": f"sqlite:{tmp_path}/m",
            "PUBLIC_URL": "https://pprof.example.com/",
        }
    )
    reply = app.test_client().post("/", data=(CORPUS / "go-runtime/heap.pb.gz").read_bytes())
    assert reply.text.startswith("https://pprof.example.com/") and "//" not in reply.text[8:]


def test_raw_download_headers_and_revalidation(client):
    data = (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes()
    link = client.put("/cpu-small.pb.gz", data=data).text.strip()
    pid = link.rsplit("/", 1)[1]
    raw = client.get(f"/{pid}/raw")
    assert raw.mimetype == "application/octet-stream"
    assert "cpu-small.pb.gz" in raw.headers["Content-Disposition"]
    assert "immutable" in raw.headers["Cache-Control"]
    assert raw.headers["Access-Control-Allow-Origin"] == "*"
    etag = raw.headers["ETag"]
    again = client.get(f"/{pid}/raw", headers={"If-None-Match": etag})
    assert again.status_code == 304 and not again.data


@pytest.mark.parametrize(
    ("accept", "check"),
    [
        ("*/*", lambda r: r.mimetype == "text/plain" and "no profile" in r.text),
        ("application/json", lambda r: r.get_json()["error"]["code"] == 404),
        ("text/html,application/xhtml+xml", lambda r: r.mimetype == "text/html"),
    ],
)
def test_unknown_id_is_404_in_the_clients_format(client, accept, check):
    for path in ("/AAAAAAAAAAAAAAAA", "/AAAAAAAAAAAAAAAA/raw"):
        reply = client.get(path, headers={"Accept": accept})
        assert reply.status_code == 404
        assert check(reply)
    assert client.get("/api/v1/profiles/AAAAAAAAAAAAAAAA").get_json()["error"]["code"] == 404


def test_no_file_field_is_a_clear_400(client):
    reply = client.post("/", data={"title": "no file"})
    assert reply.status_code == 400 and "file" in reply.text


def test_browser_form_post_redirects_to_the_link(client):
    data = (CORPUS / "go-runtime/heap.pb.gz").read_bytes()
    body, content_type = multipart({"file": ("heap.pb.gz", data), "title": "my heap"})
    reply = client.post(
        "/",
        data=body,
        content_type=content_type,
        headers={"Accept": "text/html,application/xhtml+xml"},
    )
    assert reply.status_code == 303
    pid = reply.headers["Location"].rsplit("/", 1)[1]
    assert client.get(f"/api/v1/profiles/{pid}").get_json()["title"] == "my heap"
