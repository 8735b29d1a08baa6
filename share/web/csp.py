"""The Content-Security-Policy of every response (embed.py relaxes frame-ancestors for one).

Inline script is forbidden: profile data is shown only as text, never run. Nothing may frame
a page ('none'), except /<id>/embed.
"""

from __future__ import annotations

CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; "
    "frame-ancestors 'none'; form-action 'self'"
)
