"""Every view of a collection's selection: the selection is resolved to a stored profile (its
members merged, from blocks where it can: share.collections), and that profile's view is
served as share.web.reports serves a profile's — the same options, cache and text."""

from __future__ import annotations

import gzip
import json
import threading
from typing import Any
from urllib.parse import quote

from flask import Response, jsonify, redirect, request

from ...analysis.reports import summary as summaries
from ...analysis.views import views
from ...collections import selection as sel
from ...collections import windows
from ...collections.service import SELECTION_TITLE, Resolved
from ...errors import NotFound, ShareError
from .. import reports
from ..api import base_url, share
from ..negotiate import choice
from . import api, page

# The only query parameters a flame graph or top table may carry and still be summed (then
# views.summed_viewable decides, on the parsed options); any other is one of pprof's options.
PLAIN_ARGS = frozenset({"si", "sample_index", "nf", "nodefraction", "budget", "n", "nodecount"})
# A view that gave up waiting for its merges: asked again after this, it may find them done.
RETRY_SECONDS = 5


def _resolved(cid: str, merge: bool = True) -> Resolved:
    # summed=1 (the page's /selection) is said by merge=False: it then joins the views' resolve.
    args = {k: v for k, v in request.args.items() if k != "summed"}
    found = _resolved_within(cid, args, merge)
    if not found.plan.parts:
        raise NotFound(f"collection {cid}: the selection holds no members")
    if sel.has_base(request.args) and found.base is None:
        raise NotFound(f"collection {cid}: the base selection holds no members")
    return found


# Resolves running in this process, by collection and query: a page that asks again, and the
# other views of the same selection, wait for the one running instead of starting their own.
_RUNNING: dict[tuple[str, ...], tuple[threading.Event, dict[str, Any]]] = {}
_RUNNING_LOCK = threading.Lock()


def _resolved_within(cid: str, args: dict[str, str], merge: bool = True) -> Resolved:
    """The selection resolved, waiting at most COLLECTION_VIEW_SECONDS for its merges. A first
    look that merges for longer (a label selection over hours: each member merged once into
    its blocks) answers 503 with Retry-After while its merges go on in this process, so that
    the next ask finds them. A balancer would cut the request off with a 504 and the client
    would not know the work was kept; the page asks again by itself. Requests for the same
    selection join the resolve running for it (_RUNNING): the work that goes on past its
    requests is one resolve per selection asked for, not one per ask. merge=False: the
    selection's parts may be left unmerged (service.Collections.resolve)."""
    service, seconds = api.collections(), float(share().settings["COLLECTION_VIEW_SECONDS"])
    key = (cid, str(merge), *sorted(f"{k}={v}" for k, v in args.items()))
    with _RUNNING_LOCK:
        running = _RUNNING.get(key)
        if running is None:
            running = _RUNNING[key] = (threading.Event(), {})

            def resolve() -> None:
                done, outcome = running
                try:
                    outcome["found"] = service.resolve(cid, args, merge)
                except BaseException as exc:  # noqa: BLE001 - raised again in the requests
                    outcome["error"] = exc
                finally:
                    with _RUNNING_LOCK:
                        _RUNNING.pop(key, None)
                    done.set()

            # Named apart: a resolve that may leave the parts unmerged ends at once.
            name = f"resolve {cid}" if merge else f"resolve {cid} (parts)"
            threading.Thread(target=resolve, name=name, daemon=True).start()
    done, outcome = running
    if not done.wait(seconds):
        raise ShareError(
            f"collection {cid}: the selection's members are still being merged (over "
            f"{seconds:g} s so far; what is merged is kept): ask again in a few seconds",
            503,
            retry_after=RETRY_SECONDS,
        )
    if "error" in outcome:
        raise outcome["error"]
    return outcome["found"]  # type: ignore[no-any-return]


def _args(found: Resolved) -> dict[str, str]:
    """The view's pprof options: the request's, less the selection, with the base as
    -diff_base (stored profile ids, as a profile's diff names them)."""
    args = sel.view_args(request.args)
    if found.base is not None:
        args["diff_base"] = found.base
    return args


def _headers(response: Response, found: Resolved) -> Response:
    if found.pid is not None:  # else summed from its parts, never merged (_summed)
        response.headers["X-Collection-Profile"] = f"{base_url()}/{found.pid}"
    else:
        response.headers["X-Collection-Summed"] = str(len(found.plan.parts))
    response.headers["X-Collection-Members"] = str(found.plan.members)
    response.headers["X-Collection-Blocks"] = str(found.plan.blocks)
    if found.plan.windows:  # summed: the time windows it was summed from
        response.headers["X-Collection-Windows"] = str(found.plan.windows)
    if found.plan.pending:  # members not merged in yet (recent times of a collection a fleet feeds)
        response.headers["X-Collection-Pending"] = str(found.plan.pending)
    if found.kind:
        response.headers["X-Collection-Kind"] = found.kind
    if found.base is not None:
        response.headers["X-Collection-Base"] = f"{base_url()}/{found.base}"
        if found.base_plan and found.base_plan.pending:
            response.headers["X-Collection-Base-Pending"] = str(found.base_plan.pending)
    return response


def _summed(cid: str, name: str) -> tuple[Resolved, bytes] | None:
    """The flame graph or top table of a selection of several parts from their stack
    summaries summed (share.analysis.combine.summed), without merging them into a stored
    profile (no selection profile stored for every range a viewer drags; about the merge's
    CPU on the fleet bench: README "Running at scale"). None when it is merged
    (views.summed_viewable: pprof's options, a base) or its parts are gone (the merge drops
    gone members)."""
    if name not in views.SUMMED_VIEWS or sel.has_base(request.args):
        return None
    if not set(sel.view_args(request.args)) <= PLAIN_ARGS:  # pprof's options: it is merged
        return None
    found = _resolved(cid, merge=False)
    if found.pid is not None:
        return found, reports.computed(found.pid, name, _args(found))
    parts = found.plan.parts
    opts = reports.view_options(next(windows.leaves(parts)), name, _args(found))
    if not views.summed_viewable(name, opts):
        return None
    title = SELECTION_TITLE.format(cid=cid, n=found.plan.members)
    try:
        return found, api.collections().summed_view(parts, name, opts, title, route=cid)
    except ShareError as exc:
        if exc.code not in (404, 410):
            raise
        return None


def view(cid: str, name: str, warnings: bool = False) -> Response:
    summed = _summed(cid, name)
    if summed is not None:
        found, gz = summed
    else:
        found = _resolved(cid)
        gz = reports.computed(found.pid, name, _args(found))  # type: ignore[arg-type]
    args = _args(found)
    response = reports.send(gz, views.mimetype(name))
    for header, value in reports.HEADERS.get(name, {}).items():
        response.headers[header] = value
    if warnings:
        extra = {**args, "labels": "t"} if name == "tagstext" else args
        lines = json.loads(gzip.decompress(reports.computed(found.pid, "warnings", extra)))  # type: ignore[arg-type]
        for line in lines["warnings"]:
            response.headers.add("X-Pprof-Warning", json.dumps(line)[1:-1])
    return _headers(response, found)


def selection_doc(cid: str) -> Response:
    """What the request selects: the stored profiles, how many members, blocks and windows. With
    summed=1 (the collection page asks so), a selection of several parts is not merged for
    this (profile null), as its flame graph and top table are summed (_summed), unless the
    query has pprof's options, which its views merge for; its snapshot link merges it."""
    plain = set(sel.view_args(request.args)) <= PLAIN_ARGS  # else its views merge it
    found = _resolved(cid, merge=not (request.args.get("summed") in ("1", "true") and plain))
    url = f"{base_url()}/{found.pid}" if found.pid else None
    doc: dict[str, Any] = {
        "profile": found.pid, "profile_url": url, "summed": len(found.plan.parts) if not url else 0,
        "base": found.base, "base_url": f"{base_url()}/{found.base}" if found.base else None,
        "kind": found.kind, "members": found.plan.members, "parts": len(found.plan.parts),
        "blocks": found.plan.blocks, "windows": found.plan.windows, "built": found.plan.built,
        "extended": found.plan.extended, "pending": found.plan.pending,
        "base_members": found.base_plan.members if found.base_plan else None,
        "base_pending": found.base_plan.pending if found.base_plan else None,
    }  # fmt: skip
    return jsonify(doc)


SNAPSHOTS = ("", "embed", "preview.png")


def snapshot(cid: str, what: str = "") -> Response:
    """GET /c/ID/snapshot[/embed|/preview.png]?SELECTION&OPTIONS: the selection merged (now, if
    it was not: its flame graph and top table were summed), then a redirect to the merged
    profile's own page (embed, preview) with the view's options; a link that stays as it is
    when the collection grows. The collection page's snapshot links lead here."""
    if what not in SNAPSHOTS:
        raise NotFound(f"no snapshot view {what!r}: ask for the page, embed or preview.png")
    found = _resolved(cid)
    args = _args(found)
    query = "&".join(f"{quote(k)}={quote(v)}" for k, v in args.items())
    target = f"{base_url()}/{found.pid}" + (f"/{what}" if what else "")
    response = redirect(target + (f"?{query}" if query else ""), 303)
    return _headers(response, found)


def raw(cid: str) -> Response:
    """The selection merged, gzip: what `go tool pprof <collection link>` reads."""
    found = _resolved(cid)
    response = Response(share().raw_gzip(found.pid), mimetype="application/octet-stream")  # type: ignore[arg-type]
    response.headers["Content-Disposition"] = f"attachment; filename=collection-{cid}.pb.gz"
    response.headers["Access-Control-Allow-Origin"] = "*"
    return _headers(response, found)


def collection(cid: str) -> Response:
    """GET /c/ID: the page, the merged selection, the record or a text summary, by Accept."""
    chosen = choice()
    if chosen == "raw":
        response = raw(cid)
    elif chosen == "page":
        response = page.collection_page(cid)
    elif chosen == "json":
        response = api.record(cid)
    else:
        response = Response(summary_text(cid), mimetype="text/plain")
    response.vary.update(("Accept", "User-Agent"))
    return response


def summary_text(cid: str) -> str:
    c = api.collections().load(cid)
    found = _resolved(cid)
    summary = reports.summary_of(found.pid, _args(found))  # type: ignore[arg-type]
    link = api.link(cid)
    head = f"{c.title}\n" if c.title else ""
    head += f"collection: {found.plan.members} members of kind {found.kind}\n"
    text = summaries.text(
        summary, {"page": link, "raw": f"{link}/raw", "pprof": f"go tool pprof -http=: {link}"}
    )
    return head + text


def flamegraph(cid: str) -> Response:
    return view(cid, "flamegraph")


def top(cid: str) -> Response:
    return view(cid, "top")


def top_plain(cid: str) -> Response:
    return view(cid, "toptext", warnings=True)


def peek(cid: str) -> Response:
    return view(cid, "peek")


def peek_plain(cid: str) -> Response:
    return view(cid, "peektext", warnings=True)


def tags(cid: str) -> Response:
    return view(cid, "tags")


def tags_plain(cid: str) -> Response:
    return view(cid, "tagstext", warnings=True)


def dot_plain(cid: str) -> Response:
    return view(cid, "dot", warnings=True)


def folded_plain(cid: str) -> Response:
    return view(cid, "folded", warnings=True)


def graph_svg(cid: str) -> Response:
    return view(cid, "svg")


def search(cid: str) -> Response:
    return view(cid, "search")


def summary(cid: str) -> Response:
    return view(cid, "summary")
