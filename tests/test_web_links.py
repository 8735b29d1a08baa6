"""Where links travel: og/twitter tags, the preview PNG, embed framing, GET /<id> by Accept,
strip= at upload, the kind, the favicon, the served CLI and which title a re-upload keeps."""

from __future__ import annotations

import gzip
import html.parser
import io
import re
import urllib.parse

import pytest
from PIL import Image

from share.analysis.views import preview
from share.pprof._proto import profile_pb2

from conftest import CORPUS, make_app

HOSTILE = '"><script>alert(1)</script><img src=x onerror=alert(2)>'
LABELS = CORPUS / "go-runtime/cpu-labels.pb.gz"


def upload(client, path=LABELS, headers=None, query=""):  # type: ignore[no-untyped-def]
    reply = client.post(
        "/" + query,
        data=path.read_bytes(),
        headers={"Accept": "application/json", **(headers or {})},
    )
    assert reply.status_code in (200, 201), reply.data
    return reply


class Meta(html.parser.HTMLParser):
    """The <meta> tags of <head>, in order, with attribute values as the browser reads them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[dict[str, str | None]] = []
        self.first_in_head: str | None = None
        self.in_head = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "head":
            self.in_head = True
        elif self.in_head and self.first_in_head is None and tag != "meta":
            self.first_in_head = tag
        if tag == "meta":
            self.tags.append(dict(attrs))

    def content(self, key: str) -> str:
        for t in self.tags:
            if key in (t.get("property"), t.get("name")):
                return t["content"] or ""
        raise KeyError(key)


SLACK = "Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)"


def page_meta(client, pid: str, agent: str = SLACK) -> tuple[str, Meta]:  # type: ignore[no-untyped-def]
    reply = client.get(f"/{pid}", headers={"Accept": "text/html", "User-Agent": agent})
    assert reply.status_code == 200 and reply.mimetype == "text/html"
    text = reply.data.decode()
    parser = Meta()
    parser.feed(text)
    return text, parser


def test_og_and_twitter_tags_are_there_first_and_escaped(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client, headers={"X-Title": HOSTILE}).get_json()["id"]
    text, meta = page_meta(client, pid)
    assert meta.content("og:title") == HOSTILE  # the browser reads back the exact title
    assert "<script>alert(1)" not in text  # ...which never reaches the page as markup
    description = meta.content("og:description")
    assert description.startswith("CPU profile · 5.82s of cpu over 3.15s · top: ")
    assert "sort.partition 36.08%" in description
    assert description.count("%") == 3  # the three heaviest functions
    image = meta.content("og:image")
    assert image == f"http://localhost/{pid}/preview.png"  # absolute
    assert meta.content("og:url") == f"http://localhost/{pid}"
    assert meta.content("twitter:card") == "summary_large_image"
    assert meta.content("twitter:image") == image
    # Nothing but <meta> tags come before them in <head>, well within the first 32 KB.
    assert meta.first_in_head == "title"
    assert text.index('property="og:image"') < min(text.index("<title>"), 32 * 1024)


def test_a_browser_page_renders_without_waiting_for_the_analysis(client) -> None:  # type: ignore[no-untyped-def]
    """Only a preview bot waits for the summary; a browser's page has the tags at once, with
    what the record says, and its script asks for the rest."""
    pid = upload(client).get_json()["id"]
    once = client.application.extensions["share"].once
    before = once.computed
    _, meta = page_meta(client, pid, agent="Mozilla/5.0 (X11; Linux x86_64) Chrome/156")
    assert meta.content("og:description") == "CPU profile on pprof-share"
    assert meta.content("og:image").endswith(f"/{pid}/preview.png")
    assert once.computed == before  # nothing computed for the page
    assert client.get(f"/api/v1/profiles/{pid}").get_json()["header"] is None
    page_meta(client, pid)  # a bot's visit computes the summary...
    assert once.computed == before + 1
    _, meta = page_meta(client, pid, agent="Mozilla/5.0 Chrome/156")  # ...then pages have it
    assert meta.content("og:description").startswith("CPU profile · ")
    assert client.get(f"/api/v1/profiles/{pid}").get_json()["header"][0].startswith("File: ")


def test_a_link_preview_bot_gets_the_page(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client).get_json()["id"]
    reply = client.get(
        f"/{pid}", headers={"Accept": "*/*", "User-Agent": "Slackbot-LinkExpanding 1.0"}
    )
    assert reply.status_code == 200 and reply.mimetype == "text/html"
    assert b'property="og:image"' in reply.data


def test_preview_png_is_1200x630_with_a_flame_graph_and_is_cached(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client).get_json()["id"]
    once = client.application.extensions["share"].once  # counts computations (compute tier)
    before = once.computed
    first = client.get(f"/{pid}/preview.png")
    assert first.status_code == 200 and first.mimetype == "image/png"
    image = Image.open(io.BytesIO(first.data))
    assert image.size == (1200, 630)
    flame = image.convert("RGB").crop((0, preview.FLAME_TOP, 1200, preview.FLAME_BOTTOM))
    colours = flame.getcolors(maxcolors=1 << 20) or []
    painted = sum(n for n, c in colours if c != preview.BACKGROUND)
    assert painted > 0.3 * flame.width * flame.height
    assert len(colours) > 10  # frames of several packages, and their labels
    assert "max-age" in first.headers["Cache-Control"] and first.headers["ETag"]
    second = client.get(f"/{pid}/preview.png")
    drawn = once.computed - before
    assert second.data == first.data and drawn == 1  # drawn once, then from the cache
    again = client.get(f"/{pid}/preview.png", headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304 and once.computed - before == 1


def test_preview_of_a_profile_without_samples(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client, CORPUS / "go-runtime/cpu-empty.pb.gz").get_json()["id"]
    reply = client.get(f"/{pid}/preview.png")
    assert Image.open(io.BytesIO(reply.data)).size == (1200, 630)


def frame_ancestors(reply) -> str:  # type: ignore[no-untyped-def]
    policy = reply.headers["Content-Security-Policy"]
    return re.search(r"frame-ancestors ([^;]+)", policy).group(1).strip()


def test_only_the_embed_may_be_framed(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client).get_json()["id"]
    embed = client.get(f"/{pid}/embed")
    assert embed.status_code == 200 and b'id="fg-canvas"' in embed.data
    assert frame_ancestors(embed) == "*"
    for path in (f"/{pid}", "/", f"/api/v1/profiles/{pid}", f"/{pid}/raw", f"/{pid}/preview.png"):
        reply = client.get(path, headers={"Accept": "text/html"})
        assert frame_ancestors(reply) == "'none'", path


def test_the_embed_keeps_the_pages_query_as_text(client) -> None:  # type: ignore[no-untyped-def]
    """The embed passes its query (filters, diff_base) on to the API and to its link, escaped."""
    pid = upload(client).get_json()["id"]
    html = client.get(f"/{pid}/embed?hide=runtime&focus=%22%3E%3Cscript%3E").get_data(as_text=True)
    assert 'data-query="hide=runtime&amp;focus=%22%3E%3Cscript%3E"' in html
    assert f'href="http://localhost/{pid}?hide=runtime&amp;focus=%22%3E%3Cscript%3E"' in html
    assert "<script>" not in html
    plain = client.get(f"/{pid}/embed").get_data(as_text=True)
    assert 'data-query=""' in plain and f'href="http://localhost/{pid}"' in plain


def test_embed_ancestors_from_the_setting(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from share import create_app
    from share.config import ConfigError

    app = create_app(
        {
            "BLOBS": f"file:{tmp_path}/b",
            "META": f"sqlite:{tmp_path}/m.sqlite3",
            "EMBED_FRAME_ANCESTORS": "https://wiki.example.com  'self'",
        }
    )
    client = app.test_client()
    pid = upload(client).get_json()["id"]
    assert frame_ancestors(client.get(f"/{pid}/embed")) == "https://wiki.example.com 'self'"
    with pytest.raises(ConfigError, match="EMBED_FRAME_ANCESTORS"):
        create_app({"BLOBS": f"file:{tmp_path}/b", "EMBED_FRAME_ANCESTORS": "x; script-src *"})


@pytest.mark.parametrize(
    ("accept", "mimetype"),
    [
        (None, "application/octet-stream"),  # Go's HTTP client: go tool pprof LINK
        ("*/*", "text/plain"),  # curl
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "text/html"),
        ("application/json", "application/json"),
        ("application/json, */*;q=0.5", "application/json"),  # HTTPie
        ("application/octet-stream", "application/octet-stream"),
        ("text/plain", "text/plain"),
    ],
)
def test_get_link_by_accept(client, accept, mimetype) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client).get_json()["id"]
    headers = {} if accept is None else {"Accept": accept}
    reply = client.get(f"/{pid}", headers=headers)
    assert reply.status_code == 200 and reply.mimetype == mimetype
    assert {"Accept", "User-Agent"} <= set(reply.vary)
    if accept is None:
        raw = client.get(f"/{pid}/raw")
        assert reply.data == raw.data
        for header in ("ETag", "Access-Control-Allow-Origin", "Content-Disposition"):
            assert reply.headers[header] == raw.headers[header]


def test_curl_gets_a_text_summary(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client, headers={"X-Title": "checkout\x1b[2J"}).get_json()["id"]
    text = client.get(f"/{pid}", headers={"Accept": "*/*"}).data.decode()
    lines = text.splitlines()
    assert lines[0] == "checkout?[2J"  # no terminal escape from a title
    assert lines[1].startswith("CPU profile: Time spent running on a CPU")
    assert "File: gen" in lines and "Type: cpu" in lines
    assert "Duration: 3.15s, Total samples = 5.82s (184.55%)" in lines
    top = [line for line in lines if re.match(r"^\s+[\d.]+\w*\s+[\d.]+%\s+\S", line)]
    assert len(top) == 10 and top[0].split()[-1] == "sort.partition"
    assert f"page:  http://localhost/{pid}" in lines
    assert f"raw:   http://localhost/{pid}/raw" in lines


def test_strip_labels_at_upload_stores_the_stripped_profile(client) -> None:  # type: ignore[no-untyped-def]
    plain = upload(client).get_json()
    for how in ({"query": "?strip=labels"}, {"headers": {"X-Strip": "labels"}}):
        reply = upload(client, **how)
        body = reply.get_json()
        assert body["stripped"] == ["labels"] and reply.headers["X-Stripped"] == "labels"
        assert body["id"] != plain["id"]  # the id is the hash of what is stored
        stored = profile_pb2.Profile.FromString(
            gzip.decompress(client.get(f"/{body['id']}/raw").data)
        )
        assert not any(len(s.label) for s in stored.sample)
        assert body["sha256"] != plain["sha256"] and body["n_samples"] == plain["n_samples"]
    form = client.post(
        "/",
        data={"file": (LABELS.open("rb"), "cpu.pb.gz"), "strip": "paths"},
        headers={"Accept": "application/json"},
    )
    stored = profile_pb2.Profile.FromString(
        gzip.decompress(client.get(f"/{form.get_json()['id']}/raw").data)
    )
    names = [stored.string_table[f.filename] for f in stored.function]
    assert names and not any("/" in n for n in names)


def test_a_bad_strip_is_a_400_that_says_why(client) -> None:  # type: ignore[no-untyped-def]
    reply = client.post("/?strip=types:nope", data=LABELS.read_bytes())
    assert reply.status_code == 400
    assert b"no sample type 'nope'" in reply.data and b"'samples', 'cpu'" in reply.data


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("go-runtime/mutex.pb.gz", "mutex"),
        ("go-runtime/block.pb.gz", "block"),
        ("go-runtime/allocs.pb.gz", "allocs"),
        ("go-runtime/heap.pb.gz", "heap"),
        ("nodejs/time.pb.gz", "node-time"),
        ("edge/minimal-empty-profile.pb", "unknown"),
    ],
)
def test_record_and_page_name_the_kind(client, path, name) -> None:  # type: ignore[no-untyped-def]
    body = upload(client, CORPUS / path).get_json()
    assert body["kind"]["name"] == name and body["kind"]["meaning"].endswith(".")
    record = client.get(f"/api/v1/profiles/{body['id']}").get_json()
    assert record["kind"] == body["kind"]
    page = client.get(f"/{body['id']}", headers={"Accept": "text/html"}).data.decode()
    assert f'data-kind="{name}"' in page


def test_record_has_pprofs_header_lines(client) -> None:  # type: ignore[no-untyped-def]
    pid = upload(client).get_json()["id"]
    assert client.get(f"/api/v1/profiles/{pid}").get_json()["header"] is None  # not yet
    summary = client.get(f"/api/v1/profiles/{pid}/summary").get_json()
    header = client.get(f"/api/v1/profiles/{pid}").get_json()["header"]
    assert header == summary["header"]
    assert header[0] == "File: gen" and header[1] == "Type: cpu"
    assert header[2].startswith("Time: ") and header[3].startswith("Duration: 3.15s")
    samples = client.get(f"/api/v1/profiles/{pid}/summary?si=samples").get_json()
    assert samples["header"][1] == "Type: samples"


def test_a_reupload_says_which_title_is_kept(client) -> None:  # type: ignore[no-untyped-def]
    first = upload(client, headers={"X-Title": "first ünïcode"})
    assert first.get_json()["title_kept"] is None and "X-Title-Kept" not in first.headers
    again = upload(client, headers={"X-Title": "second"})
    assert again.status_code == 200 and again.get_json()["title"] == "first ünïcode"
    assert again.get_json()["title_kept"] == "first ünïcode"
    assert urllib.parse.unquote(again.headers["X-Title-Kept"]) == "first ünïcode"
    same = upload(client, headers={"X-Title": "first ünïcode"})
    assert same.get_json()["title_kept"] is None


def test_favicon(client) -> None:  # type: ignore[no-untyped-def]
    reply = client.get("/favicon.ico")
    assert reply.status_code == 200 and reply.mimetype == "image/x-icon"
    assert Image.open(io.BytesIO(reply.data)).format == "ICO"


def test_the_cli_script_knows_its_server(tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = make_app({"BLOBS": f"file:{tmp_path}/b", "META": f"sqlite:{tmp_path}/m",
                       "ALLOWED_HOSTS": "pprof.example.com"}).test_client()  # fmt: skip
    reply = client.get("/pprof-share", base_url="http://pprof.example.com:8123")
    text = reply.data.decode()
    assert reply.status_code == 200 and text.startswith("#!/usr/bin/env python3\n")
    assert "DEFAULT_SERVER = 'http://pprof.example.com:8123'\n" in text
    assert "from ." not in text and "import share" not in text
    compile(text, "pprof-share", "exec")
    index = client.get("/", base_url="http://pprof.example.com:8123").data.decode()
    assert (
        "curl -o pprof-share http://pprof.example.com:8123/pprof-share &amp;&amp; "
        "chmod +x pprof-share" in index
    )
