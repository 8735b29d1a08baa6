"""A collection's writes and JSON: create, add (every upload idiom of /), delete, record,
members and timeline."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import orjson
from flask import Response, current_app, jsonify, request
from werkzeug.routing import BaseConverter

from ...collections import Collections
from ...collections import selection as sel
from ...collections.timeline import sample_type_of, timeline
from ...errors import ShareError
from ...store.collections.index import Collection, Member
from .. import limits
from ..api import _admit_upload, _reply, _strip_choice, base_url, body_file, form_file, rfc3339
from ..errors import accepts_json, wants_json

MEMBERS_LIMIT = 1000  # members listed by default (?limit= up to MEMBERS_MAX)
MEMBERS_MAX = 100_000
LABEL_VALUES = 100  # values listed per label key in the record


class CollectionIdConverter(BaseConverter):
    """`<cid:cid>` in a route: a collection id."""

    regex = "[A-Za-z0-9_-]{12}"


def collections() -> Collections:
    return current_app.extensions["collections"]


def link(cid: str) -> str:
    return f"{base_url()}/c/{cid}"


def _field(name: str) -> str | None:
    form = request.form.get(name) if request.mimetype == "multipart/form-data" else None
    return form or request.args.get(name) or None


def _token() -> str | None:
    return request.headers.get("X-Collection-Token") or _field("token")


def create() -> Response:
    """POST /api/v1/collections (JSON or form: title, expires, retention, all optional)."""
    limits.require_upload_token()
    body = request.get_json(silent=True) if request.is_json else None
    source: Any = body if isinstance(body, dict) else {**request.args, **request.form}

    def text(name: str) -> str | None:
        value = source.get(name)
        return value if isinstance(value, str) else None

    c, token = collections().create(text("title") or "", text("expires"), text("retention"))
    doc = {**record_doc(c, []), "token": token}
    text_reply = Response(doc["url"] + "\n", mimetype="text/plain")
    response = jsonify(doc) if accepts_json() else text_reply  # curl gets the link, as /
    response.status_code = 201
    response.headers["Location"] = doc["url"]
    response.headers["X-Collection-Token"] = token
    return response


def _labels() -> dict[str, str]:
    items = request.args.getlist("label")
    if request.mimetype == "multipart/form-data":
        items += request.form.getlist("label")
    for header in request.headers.getlist("X-Labels"):
        items += [part for part in header.split(",") if part.strip()]
    return sel.parse_label_pairs(items)


def _add(file: Path, title: str) -> Response:
    cid = request.view_args["cid"]  # type: ignore[index]
    spec = _strip_choice()
    time_text = _field("time") or request.headers.get("X-Time")
    upload, member, added = collections().add(cid, _token(), file, _labels(), time_text, strip=spec)
    response = _reply(upload, title, spec)
    if response.is_json:
        body = response.get_json()
        body.update(collection=link(cid), member=member_doc(member), added=added)
        response.set_data(jsonify(body).get_data())
    response.headers["X-Collection"] = link(cid)
    response.headers["X-Member-Added"] = "1" if added else "0"
    return response


def add_post(cid: str) -> Response:
    """curl -F file=@p.pb.gz -F label=pod=api-1 -H 'X-Collection-Token: T' HOST/c/ID"""
    _admit_upload()
    collections().load(cid)
    if request.mimetype == "multipart/form-data":
        files = [f for f in request.files.getlist("file") if f.filename or f.content_length]
        if not files:
            raise ShareError("no file in the form: send it as the field 'file' (-F file=@p.pb.gz)")
        body = form_file(files[0])
    else:
        body = body_file()
    limits.charge_upload_bytes(body.stat().st_size)
    return _add(body, "")


def add_put(cid: str, filename: str) -> Response:
    """curl -T p.pb.gz -H 'X-Collection-Token: T' HOST/c/ID/"""
    _admit_upload()
    collections().load(cid)
    body = body_file()
    limits.charge_upload_bytes(body.stat().st_size)
    return _add(body, filename)


def add_put_bare(cid: str) -> Response:
    """curl -T p.pb.gz -H 'X-Collection-Token: T' HOST/c/ID (no slash): an add too, not the
    plain upload titled ID that PUT /<name> makes, which never joined the collection."""
    return add_put(cid, "")


def delete(cid: str) -> Response:
    """curl -X DELETE -H 'X-Collection-Token: T' HOST/c/ID"""
    removed = collections().delete(cid, _token())
    if wants_json():
        return jsonify({"deleted": cid, "profiles_removed": removed})
    return Response(f"deleted collection {cid} and {removed} profiles\n", mimetype="text/plain")


# --- JSON ---------------------------------------------------------------------------------
def member_doc(m: Member) -> dict[str, Any]:
    url = f"{base_url()}/{m.pid}"
    return {
        "id": m.pid, "url": url, "time": rfc3339(m.time), "time_unix": m.time,
        "labels": m.labels, "kind": m.kind, "duration_nanos": m.duration_nanos,
        "totals": [
            {"type": t, "unit": u, "total": m.totals[i] if i < len(m.totals) else None}
            for i, (t, u) in enumerate(m.sample_types)
        ],
    }  # fmt: skip


def by_count(counts: Counter[str]) -> dict[str, int]:
    """Counts, the largest first, ties by name."""
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def record_doc(c: Collection, members: list[Member]) -> dict[str, Any]:
    """The collection as JSON: its record, and what its members hold."""
    url = link(c.id)
    labels: dict[str, Counter[str]] = defaultdict(Counter)
    for m in members:
        for k, v in m.labels.items():
            labels[k][v] += 1
    return {
        "id": c.id, "url": url, "title": c.title,
        "created_at": rfc3339(c.created_at), "expires_at": rfc3339(c.expires_at),
        "last_add_at": rfc3339(c.last_add_at), "retention_seconds": c.retention_seconds,
        "members": len(members),
        "from": rfc3339(members[0].time) if members else None,
        "to": rfc3339(members[-1].time) if members else None,
        # The first kind is the one views show without kind= (Collections.kind_of).
        "kinds": by_count(Counter(m.kind for m in members)),
        "labels": {
            k: dict(list(by_count(v).items())[:LABEL_VALUES])
            for k, v in sorted(labels.items())
        },
        "links": {
            "page": url, "raw": f"{url}/raw", "top": f"{url}/top",
            "members": f"{base_url()}/api/v1/collections/{c.id}/members",
            "timeline": f"{base_url()}/api/v1/collections/{c.id}/timeline",
        },
    }  # fmt: skip


def record(cid: str) -> Response:
    """The record; kinds by count and label values by count, in that order (orjson keeps
    it: Flask's jsonify sorts keys)."""
    c = collections().load(cid)
    doc = record_doc(c, collections().members(c, sel.Selection()))
    return Response(orjson.dumps(doc), mimetype="application/json")


def members(cid: str) -> Response:
    """The selection's members (any kind unless kind=), oldest first, up to ?limit=."""
    c = collections().load(cid)
    s = sel.selection(request.args, collections().share.clock())
    found = [m for m in collections().members(c, s) if s.kind is None or m.kind == s.kind]
    try:
        limit = min(int(request.args.get("limit", MEMBERS_LIMIT)), MEMBERS_MAX)
    except ValueError:
        raise ShareError("limit: give a number of members") from None
    return jsonify(
        {
            "count": len(found),
            "truncated": len(found) > limit,
            "members": [member_doc(m) for m in found[:limit]],
        }
    )


def timeline_json(cid: str) -> Response:
    """GET /api/v1/collections/ID/timeline?kind=&si=&group_by=&step=&from=&to=&match="""
    c = collections().load(cid)
    s = sel.selection(request.args, collections().share.clock())
    found = collections().members(c, s)
    kind = s.kind or collections().default_kind(c)
    step_text = request.args.get("step")
    step = None
    if step_text:
        try:
            step = sel.parse_duration_seconds(step_text)
        except ValueError as exc:
            raise ShareError(f"step: {exc}") from None
    group = request.args.get("group_by") or None
    of_kind = [m for m in found if m.kind == kind]
    stype = sample_type_of(of_kind, request.args.get("si") or request.args.get("sample_index"))
    doc = timeline(of_kind, kind or "", stype, group, step)
    return Response(orjson.dumps(doc), mimetype="application/json")
