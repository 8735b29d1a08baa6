"""The collection page: the timeline on top, the profile viewer of the selection under it."""

from __future__ import annotations

from flask import Response, current_app, make_response, render_template

from ...collections import selection as sel
from ..api import base_url
from . import api


def collection_page(cid: str) -> Response:
    """The page of a collection; its script reads the selection from the URL and asks the
    collection's JSON API for the timeline and every view of the selection."""
    c = api.collections().load(cid)
    base = f"{base_url()}/api/v1/collections/{cid}"
    record = api.record_doc(c, api.collections().members(c, sel.Selection()))
    html = render_template(
        "collection.html",
        collection=c,
        record=record,
        collection_url=api.link(cid),
        api_url=base,
        selection_params=" ".join((*sel.SELECTION_PARAMS, *sel.BASE_PARAMS)),
        speedscope_url=current_app.config["SHARE"]["SPEEDSCOPE_URL"],
    )
    response = make_response(html)
    response.headers["Cache-Control"] = "no-cache"
    return response
