"""/<id>/folded and /c/<id>/folded: a view's stacks as folded text, read back as they went in."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from conftest import CORPUS

DATA = CORPUS.parent / "data" / "speedscope"


def folded(text: str) -> Counter[str]:
    """Stack -> summed weight of folded lines."""
    out: Counter[str] = Counter()
    for line in text.splitlines():
        stack, _, weight = line.rpartition(" ")
        out[stack] += int(weight)
    return +out


def upload(client: Any, data: bytes) -> str:
    r = client.post("/", data=data, headers={"Accept": "application/json"})
    assert r.status_code in (200, 201), r.data
    return r.json["id"]


def test_folded_stacks_read_back_as_uploaded(client: Any) -> None:
    source = (DATA / "stackcollapse_simple.txt").read_bytes()
    pid = upload(client, source)
    r = client.get(f"/{pid}/folded")
    assert r.status_code == 200 and r.mimetype == "text/plain"
    assert folded(r.data.decode()) == folded(source.decode())


def test_a_profile_s_folded_view_is_its_flame_graph(client: Any) -> None:
    pid = upload(client, (CORPUS / "go-runtime/cpu-small.pb.gz").read_bytes())
    text = client.get(f"/{pid}/folded?si=cpu").data.decode()
    fg = json.loads(client.get(f"/api/v1/profiles/{pid}/flamegraph?si=cpu&nf=0").data)
    assert sum(folded(text).values()) == fg["total"]
    again = upload(client, text.encode())  # folded text is an upload format too
    fg2 = json.loads(client.get(f"/api/v1/profiles/{again}/flamegraph").data)
    assert fg2["total"] == fg["total"]
    focused = folded(client.get(f"/{pid}/folded?si=cpu&focus=main%5C.fib").data.decode())
    assert focused and all("main.fib" in stack for stack in focused)
    assert client.get(f"/{pid}/folded?focus=(").status_code == 400


def test_a_collection_s_selection_folds(client: Any) -> None:
    r = client.post("/api/v1/collections", headers={"Accept": "application/json"}, json={})
    cid, token = r.json["id"], r.json["token"]
    for name in ("cpu-small", "cpu-labels"):
        data = (CORPUS / f"go-runtime/{name}.pb.gz").read_bytes()
        r = client.post(
            f"/c/{cid}?label=pod={name}", data=data, headers={"X-Collection-Token": token}
        )  # noqa: E501
        assert r.status_code == 201
    both = folded(client.get(f"/c/{cid}/folded?si=cpu").data.decode())
    one = folded(client.get(f"/c/{cid}/folded?si=cpu&match=pod%3D%22cpu-small%22").data.decode())
    assert sum(both.values()) > sum(one.values()) > 0
