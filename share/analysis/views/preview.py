"""The link preview image: the flame graph drawn at 1200x630 with the total and top functions.

Chat unfurlers (Slack, Discord, ...) show og:image at 1.91:1; 1200x630 is the common size. The
icicle is the flame graph view's tree (flame.py) under a small node budget, frames narrower
than a pixel left out, as many levels as fit; colours are the page's (one hue per package, the
same hash as static/viewer.flame.js). Names are drawn as glyphs with Pillow and never read as
markup. Fonts come from Debian's fonts-dejavu-core; without it, Pillow's own font is used.
"""

from __future__ import annotations

import colorsys
import functools
import io
import re
import unicodedata
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from ...pprof import ParsedProfile
from ..flame import flame
from ..model.graph import graph
from ..model.tables import tables
from ..reports import summary

WIDTH, HEIGHT = 1200, 630
MARGIN = 32
FLAME_TOP, FLAME_BOTTOM = 124, 500  # the flame area; tests look for frames in it
ROW = 19
BUDGET = 4000  # nodes of the tree considered; few hundred are ever wider than a pixel
BACKGROUND = (255, 255, 255)
INK = (29, 35, 48)
MUTED = (91, 100, 117)
FONT_DIRS = ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/dejavu")

Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


@functools.lru_cache(maxsize=16)
def font(name: str, size: int) -> Font:
    """A DejaVu face (DejaVuSans, DejaVuSans-Bold, DejaVuSansMono) or Pillow's default."""
    for folder in FONT_DIRS:
        try:
            return ImageFont.truetype(f"{folder}/{name}.ttf", size)
        except OSError:
            continue
    try:
        return ImageFont.load_default(size)
    except (TypeError, OSError):  # a Pillow built without FreeType: the bitmap font
        return ImageFont.load_default()


def _printable(text: str) -> str:
    """Control and format characters (newlines, bidi overrides) shown as '?'."""
    return "".join("?" if unicodedata.category(c) in ("Cc", "Cf") else c for c in text)


def package_of(name: str) -> str:
    """The package part of a function name, as packageOf in static/viewer.flame.js."""
    if "::" in name:
        return name[: name.index("::")]
    paren = name.find("(")
    slash = name.rfind("/", 0, paren) if paren >= 0 else name.rfind("/")
    rest = name[slash + 1 :]
    match = re.search(r"[.(]", rest)
    return name[: slash + 1 + match.start()] if match and match.start() > 0 else name


def colour_of(name: str) -> tuple[int, int, int]:
    """The page's colour of a frame: FNV-1a of its package picks a warm hue and lightness."""
    h = 0x811C9DC5
    for unit in _utf16_units(name):
        h = ((h ^ unit) * 0x01000193) & 0xFFFFFFFF
    hue = (h % 55) + 5
    sat = 65 + ((h >> 8) % 20)
    light = 62 + ((h >> 16) % 14)
    r, g, b = colorsys.hls_to_rgb(hue / 360, light / 100, sat / 100)
    return round(r * 255), round(g * 255), round(b * 255)


def _utf16_units(text: str) -> list[int]:
    """The UTF-16 code units JavaScript's charCodeAt walks."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "little") for i in range(0, len(data), 2)]


def _fit(text: str, room: int) -> str:
    return text if len(text) <= room else text[: max(room - 1, 0)] + "…"


def _flame(draw: ImageDraw.ImageDraw, fg: dict[str, Any]) -> None:
    """The icicle, root on top, in the flame area."""
    nodes = fg["nodes"]
    names, depth, value = fg["names"], nodes["depth"], nodes["value"]
    if not value:
        return
    left, width = MARGIN, WIDTH - 2 * MARGIN
    rows = (FLAME_BOTTOM - FLAME_TOP) // ROW
    scale = abs(value[0]) or 1
    mono = font("DejaVuSansMono", 12)
    char = mono.getlength("m") or 7.0
    x = [0.0] * len(value)
    cursor: dict[int, float] = {}
    parent_at: list[int] = []
    skip_below = -1  # depth of a frame left out: its subtree goes too
    for i, d in enumerate(depth):
        if skip_below >= 0:
            if d > skip_below:
                continue
            skip_below = -1
        del parent_at[d:]
        parent = parent_at[-1] if parent_at else -1
        x[i] = cursor.get(parent, 0.0) if parent >= 0 else 0.0
        w = abs(value[i]) / scale * width
        if parent >= 0:
            cursor[parent] = x[i] + w
        if w < 1 or d >= rows:
            skip_below = d
            continue
        cursor[i] = x[i]
        parent_at.append(i)
        x0, y0 = left + x[i], FLAME_TOP + d * ROW
        label = "all" if i == 0 else _printable(names[nodes["name"][i]])
        draw.rectangle(
            (x0, y0, x0 + max(w - (1 if w > 2 else 0), 1) - 1, y0 + ROW - 2),
            fill=colour_of(package_of(label) if i else "root"),
        )
        room = int((w - 6) // char)
        if room >= 3:
            draw.text(
                (x0 + 3, y0 + ROW / 2 - 1), _fit(label, room), font=mono, fill=INK, anchor="lm"
            )


def render(parsed: ParsedProfile, index: int | None) -> bytes:
    """The preview PNG of one sample type."""
    s = summary.summary(parsed, index)
    image = Image.new("RGB", (WIDTH, HEIGHT), BACKGROUND)
    draw = ImageDraw.Draw(image)
    draw.text((MARGIN, 22), f"{s['kind']['label']} profile", font=font("DejaVuSans-Bold", 36),
              fill=INK)  # fmt: skip
    facts = [s["sample_type"]["type"] or "samples"]
    facts.append("no samples" if s["no_samples"] else f"{s['total_label']} total")
    if s["duration_label"]:
        facts.append(f"over {s['duration_label']}")
    facts.append(f"{s['n_samples']:,} samples")
    draw.text((MARGIN, 76), _printable(" · ".join(facts)), font=font("DejaVuSans", 22), fill=MUTED)
    if s["no_samples"]:
        draw.text((MARGIN, FLAME_TOP + 40), "Nothing to draw: this profile has no samples.",
                  font=font("DejaVuSans", 24), fill=MUTED)  # fmt: skip
    else:
        g = graph(tables(parsed), index)
        _flame(draw, flame.flamegraph(g, 0.0, BUDGET))
    body = font("DejaVuSans", 19)
    rows = s["top"]
    y = FLAME_BOTTOM + 14
    draw.text(
        (MARGIN, y), "Heaviest functions (flat)", font=font("DejaVuSans-Bold", 16), fill=MUTED
    )
    for name, pct, flat in list(
        zip(rows["name"], rows["flat_pct"], rows["flat_label"], strict=True)
    )[:3]:
        y += 26
        draw.text((MARGIN, y), f"{pct:>7}", font=font("DejaVuSansMono", 19), fill=INK)
        draw.text((MARGIN + 100, y), _fit(_printable(f"{name}  ({flat})"), 90), font=body, fill=INK)
    draw.text((WIDTH - MARGIN, HEIGHT - 18), "pprof-share", font=font("DejaVuSans-Bold", 16),
              fill=MUTED, anchor="rs")  # fmt: skip
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()
