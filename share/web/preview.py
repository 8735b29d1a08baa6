"""Link previews: the og:/twitter: tags of a profile page and GET /<id>/preview.png.

What unfurlers (Slack, Discord, ...) read: og:title, og:description, og:image (an absolute
URL), og:url and twitter:card=summary_large_image, placed first in <head> because some read
only the first 32 KB. The description names the kind, total, duration and the three heaviest
functions, never a label value. The image is the "preview" view, computed once and cached.
"""

from __future__ import annotations

import gzip
import hashlib
import re
from typing import Any

from flask import Response, request

from ..analysis.reports import summary as summaries
from ..errors import ShareError
from ..store.meta import Record
from .api import base_url, record_kind
from .reports import computed, summary_of

# The image may be re-drawn by a new release (views.VERSION), so it is not immutable.
IMAGE_MAX_AGE = 24 * 3600
# Crawlers that build link previews; all of them want the page and its og: tags.
UNFURLERS = re.compile(
    r"Slackbot|Slack-ImgProxy|Discordbot|Twitterbot|facebookexternalhit|LinkedInBot|"
    r"WhatsApp|TelegramBot|Mattermost|SkypeUriPreview|Teams|Iframely|Embedly|redditbot|"
    r"Mastodon|Googlebot|bingbot",
    re.IGNORECASE,
)
TITLE_LIMIT = 70  # Discord cuts titles at about 70 bytes, descriptions at about 350
DESCRIPTION_LIMIT = 300


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def link_preview(record: Record) -> dict[str, Any]:
    """The values of the page's og:/twitter: tags (the template escapes them)."""
    url = f"{base_url()}/{record.id}"
    # A preview bot waits for the analysis (it has no script to fill in later); a browser's
    # page renders at once, with the summary only if it is computed already.
    bot = UNFURLERS.search(request.headers.get("User-Agent", "")) is not None
    try:
        s: dict[str, Any] | None = summary_of(record.id, wait=bot)
    except ShareError:  # the page still renders; the preview says less
        s = None
    kind = s["kind"]["label"] if s else record_kind(record)["label"]
    title = record.title or f"{kind} profile {record.id}"
    description = summaries.one_line(s) if s else f"{kind} profile on pprof-share"
    return {
        "title": _cut(title, TITLE_LIMIT),
        "description": _cut(description, DESCRIPTION_LIMIT),
        "url": url,
        "image": f"{url}/preview.png",
        "image_alt": _cut(f"Flame graph of {title}", 200),
        "summary": s,
    }


def preview_png(pid: str) -> Response:
    """GET /<id>/preview.png[?si=TYPE]: the flame graph at 1200x630 (the "preview" view)."""
    gz = computed(pid, "preview", request.args)
    etag = hashlib.sha256(gz).hexdigest()[:32]
    if request.if_none_match.contains(etag):
        response = Response(status=304)
    else:
        # Sent inflated: a PNG does not compress, and image proxies take it as it is.
        response = Response(gzip.decompress(gz), mimetype="image/png")
    response.set_etag(etag)
    response.headers["Cache-Control"] = f"public, max-age={IMAGE_MAX_AGE}"
    response.headers["Access-Control-Allow-Origin"] = "*"
    return response
