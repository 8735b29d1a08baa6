"""HTML pages: the index (upload + manual) and the profile page. Thin: data from the core."""

from __future__ import annotations

from flask import Response, current_app, make_response, render_template, request

from ..config import parse_duration
from ..core import human_bytes
from ..errors import StoreUnavailable
from .api import TOKEN_COOKIE, base_url, record_json, share
from .preview import link_preview

EXPIRY_CHOICES = ["1h", "1d", "7d", "30d", "90d", "1y", "never"]
PAGE_CACHE_SIZE = 512  # rendered profile pages kept per worker


def expiry_choices() -> list[str]:
    """The expiry choices within the operator's maximum."""
    longest = parse_duration(current_app.config["SHARE"]["MAX_EXPIRY"])
    if longest is None:
        return EXPIRY_CHOICES
    return [c for c in EXPIRY_CHOICES if (s := parse_duration(c)) is not None and s <= longest]


def index() -> str:
    settings = current_app.config["SHARE"]
    return render_template(
        "index.html",
        public_url=base_url(),
        max_upload_bytes=settings["MAX_UPLOAD_BYTES"],
        max_profile_bytes=settings["MAX_PROFILE_BYTES"],
        max_upload_human=human_bytes(settings["MAX_UPLOAD_BYTES"]),
        max_profile_human=human_bytes(settings["MAX_PROFILE_BYTES"]),
        expiry_choices=expiry_choices(),
        default_expiry=settings["DEFAULT_EXPIRY"],
        cli_url=f"{base_url()}/pprof-share",
    )


def member_of(pid: str) -> list[dict[str, str]]:
    """The collections the profile is a member of ({id, title, url}), for its page; none when
    the collection index does not answer (the page is the profile's, not the collections')."""
    collections = current_app.extensions["collections"]
    try:
        found, now = [], collections.share.clock()
        for cid in sorted(collections.index.holders(pid)):
            c = collections.index.load(cid)
            if c is not None and (c.expires_at is None or c.expires_at > now):
                found.append({"id": cid, "title": c.title, "url": f"{base_url()}/c/{cid}"})
        return found
    except StoreUnavailable:
        return []


def profile_page(pid: str) -> Response:
    """The read-only view of one profile; shows the delete token once, right after upload."""
    record = share().available(pid)  # 410 when the blob was lost, as every view
    cookie = TOKEN_COOKIE.format(pid)
    token = request.cookies.get(cookie)
    profile = record_json(record)
    og = link_preview(record)
    holders = member_of(pid)
    # A record changes only in its expiry, so the page without a token is cached by what it
    # shows: rendering it (templates, url_for) cost 3x a whole hello-world request. The link
    # preview is part of it (a summary computed since changes the description).
    key = (pid, profile["url"], record.expires_at, request.script_root, og["description"])
    key += tuple(c["id"] + c["title"] for c in holders)
    cache: dict[tuple[object, ...], str] = current_app.extensions.setdefault("share_pages", {})
    html = None if token else cache.get(key)
    if html is None:
        html = render_template(
            "profile.html",
            record=record,
            profile=profile,
            profile_url=profile["url"],
            raw_url=profile["raw_url"],
            upload_token=token,
            og=og,
            summary=og["summary"],
            speedscope_url=current_app.config["SHARE"]["SPEEDSCOPE_URL"],
            collections=holders,
        )
        if not token:
            if len(cache) >= PAGE_CACHE_SIZE:
                cache.clear()
            cache[key] = html
    response = make_response(html)
    if token:
        response.delete_cookie(cookie, path=f"/{pid}")
    response.headers["Cache-Control"] = "no-store" if token else "no-cache"
    return response
