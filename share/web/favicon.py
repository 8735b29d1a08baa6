"""GET /favicon.ico: a small flame graph icon, drawn once with Pillow and sent as a real ICO.

Browsers ask for /favicon.ico on their own (and before the page's <link rel=icon> is read);
an icon file needs no copy in the repository when three bars can be drawn.
"""

from __future__ import annotations

import functools
import io

from flask import Response
from PIL import Image, ImageDraw

# (x0, x1, y0, y1) on a 32 px grid: an icicle, widest on top, as the profile page draws it.
BARS = [
    ((2, 30, 4, 11), (232, 125, 62)),
    ((2, 20, 12, 19), (240, 160, 70)),
    ((21, 30, 12, 19), (226, 98, 60)),
    ((2, 12, 20, 27), (246, 190, 90)),
]


@functools.lru_cache(maxsize=1)
def icon() -> bytes:
    """The ICO bytes, at 16, 32 and 48 px."""
    image = Image.new("RGBA", (48, 48), (0, 0, 0, 0))
    draw = ImageDraw.Draw(image)
    for (x0, x1, y0, y1), colour in BARS:
        draw.rectangle((x0 * 1.5, y0 * 1.5, x1 * 1.5 - 1, y1 * 1.5 - 1), fill=colour)
    out = io.BytesIO()
    image.save(out, "ICO", sizes=[(16, 16), (32, 32), (48, 48)])
    return out.getvalue()


def favicon() -> Response:
    response = Response(icon(), mimetype="image/x-icon")
    response.headers["Cache-Control"] = "public, max-age=604800"
    return response
