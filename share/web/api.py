"""Upload endpoints, raw download, delete and the record as JSON. Thin: each calls the core.

An upload's body lands in a spool file as it arrives (share.compute.spool), never whole in
memory. A raw body (POST or PUT, with a Content-Length or chunked) is copied from the input
stream a piece at a time and refused with 413 as soon as it passes SHARE_MAX_UPLOAD_BYTES:
before a byte is read when its Content-Length says so, else the moment the bytes read pass
it; nothing past the limit is read (the connection closes after the answer: web.errors). A
form's file parts are written by werkzeug's form parser to spool files of ours instead of its
anonymous temporary files, so that the compute process opens them by name. A request's spool
files are removed when it ends (Flask closes it): answered, refused, failed, or abandoned.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any, cast
from urllib.parse import quote

from flask import Request, Response, current_app, jsonify, redirect, request
from werkzeug.datastructures import FileStorage
from werkzeug.exceptions import ClientDisconnected
from werkzeug.routing import BaseConverter

from .. import pprof
from ..analysis.model import kind
from ..analysis.views import options
from ..compute import spool
from ..core import Share, Upload
from ..errors import ShareError
from ..store.meta import Record
from . import limits
from .errors import accepts_json, stop_reading, wants_html, wants_json

TOKEN_COOKIE = "share_token_{}"
SPOOL_CHUNK = 64 * 1024  # an upload is read, and spooled, this much at a time


class ProfileIdConverter(BaseConverter):
    """`<pid:pid>` in a route: a profile id, so ids never shadow other paths."""

    regex = "[A-Za-z0-9_-]{16}"


def share() -> Share:
    return current_app.extensions["share"]


def base_url() -> str:
    """Where links point: SHARE_PUBLIC_URL when set (behind a proxy), else this request's
    host when SHARE_ALLOWED_HOSTS allows it (loopback names when unset): a forged Host must
    not make us hand out links to someone else's site."""
    public = current_app.config["SHARE"]["PUBLIC_URL"]
    if public:
        return public
    if not limits.link_host_allowed(request.host):
        raise ShareError(
            f"links for host {request.host!r} are not handed out here: the operator sets "
            "SHARE_PUBLIC_URL, or lists the host in SHARE_ALLOWED_HOSTS",
            400,
        )
    return request.host_url.rstrip("/")


def rfc3339(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def record_json(record: Record) -> dict[str, Any]:
    """The public view of a record (never the token hash)."""
    url = f"{base_url()}/{record.id}"
    return {
        "id": record.id,
        "url": url,
        "raw_url": f"{url}/raw",
        "title": record.title,
        "created_at": rfc3339(record.created_at),
        "expires_at": rfc3339(record.expires_at),
        "size_bytes": record.size_bytes,
        "stored_bytes": record.stored_bytes,
        "sha256": record.sha256,
        "sample_types": [{"type": t, "unit": u} for t, u in record.sample_types],
        "default_sample_type": record.default_sample_type,
        "n_samples": record.n_samples,
        "n_locations": record.n_locations,
        "n_functions": record.n_functions,
        "metadata": record.metadata,
        "kind": record_kind(record),
        # what the upload was before it became this protobuf ("perf script"); null: a protobuf
        "converted_from": record.metadata.get("converted_from"),
    }


def record_kind(record: Record) -> dict[str, str]:
    """{name, label, meaning}: as found at upload, else (older records) from the types alone."""
    name = record.metadata.get("kind")
    if not name:
        period = record.metadata.get("period_type") or {}
        period_type = (period.get("type", ""), period.get("unit", "")) if period else None
        name = kind.detect(record.sample_types, period_type, record.default_sample_type)
    return kind.describe(name)


def _expiry_choice() -> str | None:
    """Expiry from the form, the Expires-In header or ?expires=, in that order."""
    form_value = request.form.get("expires") if request.mimetype == "multipart/form-data" else None
    return form_value or request.headers.get("Expires-In") or request.args.get("expires")


def _strip_choice() -> pprof.StripSpec:
    """What to remove before storing: strip= of the form, X-Strip headers and ?strip=, together."""
    values = request.args.getlist("strip") + request.headers.getlist("X-Strip")
    if request.mimetype == "multipart/form-data":
        values += request.form.getlist("strip")
    return pprof.parse_spec(*values)


def _reply(
    upload: Upload,
    title: str = "",
    spec: pprof.StripSpec | None = None,
    as_json: bool | None = None,
) -> Response:
    """The link as text for curl, JSON on request, a redirect for a browser's form post."""
    record = upload.record
    body = record_json(record)
    body["deduplicated"] = not upload.created
    body["stripped"] = spec.items() if spec else []
    # A profile stored before keeps its first title: say which, when this upload asked another.
    asked = title.strip()[:200]
    ignored = not upload.created and bool(asked) and asked != record.title
    body["title_kept"] = record.title if ignored else None
    if upload.delete_token:
        body["delete_token"] = upload.delete_token
    status = 201 if upload.created else 200
    if wants_json() if as_json is None else as_json:
        response = jsonify(body)
        response.status_code = status
    elif wants_html() and request.mimetype == "multipart/form-data":
        response = redirect(body["url"], code=303)
    else:
        response = Response(body["url"] + "\n", status=status, mimetype="text/plain")
    response.headers["Location"] = body["url"]
    if body["title_kept"] is not None:
        response.headers["X-Title-Kept"] = quote(record.title, safe=" !#$&'()*+,/:;=?@[]~")
    if body["stripped"]:
        response.headers["X-Stripped"] = "; ".join(body["stripped"])
    if body["expires_at"]:
        response.headers["X-Expires"] = body["expires_at"]
    if upload.delete_token:
        response.headers["X-Delete-Token"] = upload.delete_token
        # Lets the page the uploader lands on show the token once (no JavaScript needed).
        response.set_cookie(
            TOKEN_COOKIE.format(record.id),
            upload.delete_token,
            max_age=600,
            path=f"/{record.id}",
            httponly=True,
            samesite="Lax",
        )
    return response


class UploadRequest(Request):
    """Flask's request, whose uploads are in spool files that go when it is closed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.spooled: list[IO[bytes]] = []

    def new_spool_file(self) -> IO[bytes]:
        """A spool file open for writing and reading, removed when the request is closed."""
        file = tempfile.NamedTemporaryFile(prefix=spool.PREFIX)  # noqa: SIM115 - see close()
        self.spooled.append(file)
        return file

    def _get_file_stream(
        self,
        total_content_length: int | None,
        content_type: str | None,
        filename: str | None = None,
        content_length: int | None = None,
    ) -> IO[bytes]:
        """Where werkzeug's form parser writes each file part of a form."""
        return self.new_spool_file()

    def close(self) -> None:
        try:
            super().close()
        finally:
            for file in self.spooled:  # closing a NamedTemporaryFile removes it
                with contextlib.suppress(OSError):
                    file.close()
            self.spooled.clear()


def _spooling() -> UploadRequest:
    return cast(UploadRequest, request._get_current_object())  # type: ignore[attr-defined]


def body_file() -> Path:
    """The request's raw body in a spool file: 413 past SHARE_MAX_UPLOAD_BYTES, and
    ClientDisconnected (a 400) when it ends before its Content-Length."""
    limit = current_app.config["SHARE"]["MAX_UPLOAD_BYTES"]
    declared = request.content_length
    if declared is not None and declared > limit:
        stop_reading()
        raise spool.too_large(declared, limit)
    file, size, stream = _spooling().new_spool_file(), 0, request.stream
    while chunk := stream.read(SPOOL_CHUNK):
        size += len(chunk)
        if size > limit:
            stop_reading()
            raise spool.too_large(None, limit)
        file.write(chunk)
    if declared is not None and size < declared:
        raise ClientDisconnected()
    file.flush()
    return Path(file.name)


def form_file(part: FileStorage) -> Path:
    """Where a form's file part is: the spool file werkzeug's parser wrote it to."""
    current = _spooling()
    if not any(part.stream is file for file in current.spooled):  # not parsed by us: copy it
        file = current.new_spool_file()
        shutil.copyfileobj(part.stream, file, SPOOL_CHUNK)
        part = FileStorage(file)
    part.stream.flush()
    return Path(part.stream.name)  # type: ignore[union-attr]


def _admit_upload() -> None:
    """Before reading the body: the upload token, the Host links are built for, and the
    bytes-per-hour limit when Content-Length tells the size."""
    limits.require_upload_token()
    base_url()
    limits.charge_upload_bytes(request.content_length or 0)


def upload_post() -> Response:
    """curl -F file=@p.pb.gz, curl --data-binary @p.pb.gz, a browser form or drop;
    with ?merge=1, the form's files merged into one profile."""
    _admit_upload()
    if request.args.get("merge", "") not in ("", "0"):
        return _merge_files()
    if request.mimetype == "multipart/form-data":
        files = [f for f in request.files.getlist("file") if f.filename or f.content_length]
        if not files:
            files = [f for f in request.files.values() if f.filename]
        if not files:
            raise ShareError("no file in the form: send it as the field 'file' (-F file=@p.pb.gz)")
        body = form_file(files[0])
        title = request.form.get("title", "") or files[0].filename or ""
    else:
        body = body_file()
        title = request.headers.get("X-Title", "") or request.args.get("title", "")
    limits.charge_upload_bytes(body.stat().st_size)  # a chunked body, counted once read
    spec = _strip_choice()
    upload = share().upload(body, title=title, expires=_expiry_choice(), strip=spec)
    return _reply(upload, title, spec)


def _merge_files() -> Response:
    """curl -F file=@a.pb.gz -F file=@b.pb.gz 'HOST/?merge=1': one new profile of them all."""
    files = request.files.getlist("file") if request.mimetype == "multipart/form-data" else []
    if not files:
        raise ShareError(
            "a merge takes the files as a form, each in a field 'file': "
            "curl -F file=@a.pb.gz -F file=@b.pb.gz 'HOST/?merge=1'"
        )
    sources = [(f.filename or "", form_file(f)) for f in files]
    limits.charge_upload_bytes(sum(path.stat().st_size for _, path in sources))
    title = request.form.get("title", "")
    return _reply(share().merge(sources, title=title, expires=_expiry_choice()), title)


def merge() -> Response:
    """POST /api/v1/merge {"profiles": ["ID or link", ...], "title"?, "expires"?}: the stored
    profiles merged into a new one, answered as an upload (the link; JSON on request)."""
    _admit_upload()
    body = request.get_json(silent=True)
    refs = body.get("profiles") if isinstance(body, dict) else None
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise ShareError('send JSON {"profiles": ["<id or link>", ...]} to merge stored profiles')
    try:
        ids = [options.profile_ref(r) for r in refs]
    except options.OptionError as exc:
        raise ShareError(f"profiles: {exc}") from None
    title = body.get("title") if isinstance(body.get("title"), str) else ""
    expires = body.get("expires") if isinstance(body.get("expires"), str) else None
    upload = share().merge(ids, title=title, expires=expires or _expiry_choice())
    return _reply(upload, title, as_json=accepts_json())


def upload_put(filename: str) -> Response:
    """curl -T p.pb.gz HOST/ sends PUT /p.pb.gz."""
    _admit_upload()
    body = body_file()
    limits.charge_upload_bytes(body.stat().st_size)
    title = request.headers.get("X-Title", "") or request.args.get("title", "") or filename
    spec = _strip_choice()
    return _reply(
        share().upload(body, title=title, expires=_expiry_choice(), strip=spec), title, spec
    )


def raw(pid: str) -> Response:
    """The profile as stored (gzip): what `go tool pprof <link>/raw` reads."""
    record = share().available(pid)
    etag = record.sha256[:32]
    if request.if_none_match.contains(etag):
        response = Response(status=304)
    else:
        response = Response(share().raw_gzip(pid), mimetype="application/octet-stream")
        name = quote(_download_name(record))
        response.headers["Content-Disposition"] = f"attachment; filename*=UTF-8''{name}"
    response.set_etag(etag)
    response.headers["Cache-Control"] = "public, max-age=31536000, immutable"
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response


def _download_name(record: Record) -> str:
    title = record.title.rsplit("/", 1)[-1]
    if title.endswith((".pb.gz", ".pprof", ".gz")):
        return title
    return f"{title or record.id}.pb.gz"


def symbolz(pid: str | None = None) -> Response:
    """pprof asks for symbols of unsymbolized profiles (Go 1.19's pprof at /symbolz, newer
    ones beside the profile); we hold none, so say so and pprof shows addresses."""
    if pid is not None:
        share().record(pid)
    if request.method == "GET":
        return Response("num_symbols: 0\n", mimetype="text/plain")
    return Response("", mimetype="text/plain")


def delete(pid: str) -> Response:
    """curl -X DELETE -H 'X-Delete-Token: TOKEN' HOST/ID"""
    share().delete(pid, request.headers.get("X-Delete-Token"))
    current_app.extensions["collections"].forget_profile(pid)  # a member no longer
    return Response(status=204)


def progress(pid: str) -> Response:
    """What a slow first view of the profile is doing, for the page's spinner."""
    response = jsonify(share().progress(pid))
    response.headers["Cache-Control"] = "no-store"
    return response
