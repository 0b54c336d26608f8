"""SVG text for the report figures: numbers at limited precision, escaped text, shared
definitions (marker shapes, hatch patterns, clip boxes) and the look of a line (colour,
dash, marker) as SVG attributes.

Definitions are named after what they hold, not after a counter, so two figures on one page
that define the same marker name the same thing, and the same figure always gives the same
bytes.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from typing import Final

#: matplotlib's dash patterns, in line widths (what `--`, `:` and `-.` look like in files).
DASHES: Final[dict[str, tuple[float, ...]]] = {
    "--": (3.7, 1.6),
    ":": (1.0, 1.65),
    "-.": (6.4, 1.6, 1.0, 1.6),
}
#: Markers drawn as lines only (no inside to fill).
_OPEN: Final = frozenset("x+|_")
FONT: Final = "DejaVu Sans, Verdana, Arial, sans-serif"


def num(v: float) -> str:
    """A coordinate to 0.1 pt: enough for a screen, and short."""
    text = f"{v:.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return "0" if text == "-0" else text


def esc(text: str) -> str:
    return html.escape(text, quote=False)


def box(x: float, y: float, w: float, h: float) -> str:
    """A rectangle's position and size as SVG attributes."""
    return f'x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}"'


def dash_attr(dash: str, width: float) -> str:
    pattern = DASHES.get(dash)
    if not pattern:
        return ""
    return f' stroke-dasharray="{",".join(num(p * width) for p in pattern)}"'


def _polygon(points: Iterable[tuple[float, float]]) -> str:
    return "M" + "L".join(f"{num(x)} {num(y)}" for x, y in points) + "Z"


def marker_path(marker: str, size: float) -> str:
    """The outline of a marker `size` points across, centred on (0, 0), y down."""
    r = size / 2
    if marker == "o":
        return (
            f"M{num(-r)} 0A{num(r)} {num(r)} 0 1 0 {num(r)} 0A{num(r)} {num(r)} 0 1 0 {num(-r)} 0Z"
        )
    if marker == "s":
        return _polygon([(-r, -r), (r, -r), (r, r), (-r, r)])
    if marker in "^v<>":
        tip = {"^": (0, -r), "v": (0, r), "<": (-r, 0), ">": (r, 0)}[marker]
        base = [(-r, r), (r, r)] if marker == "^" else [(r, -r), (-r, -r)]
        if marker in "<>":
            base = [(-tip[0], -r), (-tip[0], r)]
        return _polygon([tip, *base])
    if marker == "D":
        d = r * 0.9
        return _polygon([(0, -d), (d, 0), (0, d), (-d, 0)])
    if marker == "*":
        outer, inner = r * 1.1, r * 1.1 * 0.382
        pts = []
        for k in range(10):
            a = math.pi * k / 5 - math.pi / 2
            rad = outer if k % 2 == 0 else inner
            pts.append((rad * math.cos(a), rad * math.sin(a)))
        return _polygon(pts)
    if marker in ("P", "X"):  # a filled plus, turned 45° for X
        t = r / 3
        arm = [(-t, -r), (t, -r), (t, -t), (r, -t), (r, t), (t, t),
               (t, r), (-t, r), (-t, t), (-r, t), (-r, -t), (-t, -t)]  # fmt: skip
        if marker == "X":
            c = math.sqrt(0.5)
            arm = [((x - y) * c, (x + y) * c) for x, y in arm]
        return _polygon(arm)
    if marker == "x":
        return f"M{num(-r)} {num(-r)}L{num(r)} {num(r)}M{num(-r)} {num(r)}L{num(r)} {num(-r)}"
    if marker == "+":
        return f"M{num(-r)} 0L{num(r)} 0M0 {num(-r)}L0 {num(r)}"
    if marker == "|":
        return f"M0 {num(-r)}L0 {num(r)}"
    if marker == "_":
        return f"M{num(-r)} 0L{num(r)} 0"
    return marker_path("o", size)  # any other matplotlib marker: a dot


_HATCH_TILE: Final = 6.0


def _hatch(kind: str, colour: str) -> str:
    t = num(_HATCH_TILE)
    stroke = f'stroke="{colour}" stroke-width="0.8"'
    if kind == "//":
        # the diagonal and the ends of its neighbours, so the lines meet across tiles
        a, b = num(_HATCH_TILE - 1), num(_HATCH_TILE + 1)
        body = f'<path d="M0 {t}L{t} 0M-1 1L1 -1M{a} {b}L{b} {a}" {stroke}/>'
    elif kind == "xx":
        body = f'<path d="M0 {t}L{t} 0M0 0L{t} {t}" {stroke}/>'
    else:  # ".." and anything else: dots
        body = "".join(
            f'<circle cx="{num(c)}" cy="{num(c)}" r="0.9" fill="{colour}"/>'
            for c in (_HATCH_TILE / 4, _HATCH_TILE * 3 / 4)
        )
    return f'<pattern patternUnits="userSpaceOnUse" width="{t}" height="{t}">{body}</pattern>'


class Canvas:
    """The elements of one figure, in drawing order, and the definitions they use."""

    def __init__(self) -> None:
        self.body: list[str] = []
        self._defs: dict[str, str] = {}

    def add(self, element: str) -> None:
        self.body.append(element)

    def _define(self, name: str, element: str) -> str:
        if name not in self._defs:
            # the id goes in first: `<path id=...`, `<pattern id=...`
            tag, rest = element.split(" ", 1)
            self._defs[name] = f'{tag} id="{name}" {rest}'
        return name

    def marker(self, marker: str, size: float, colour: str, edge: float) -> str:
        """The id of a marker shape in `colour` (filled, edged `edge` points wide)."""
        fill = "none" if marker in _OPEN else colour
        shape = "ox^v<>sD*PX+|_".find(marker) + 1
        name = f"m{shape}-{num(size).replace('.', '_')}-{colour.lstrip('#')}"
        return self._define(
            name,
            f'<path d="{marker_path(marker, size)}" fill="{fill}" stroke="{colour}" '
            f'stroke-width="{num(edge)}"/>',
        )

    def hatch(self, kind: str, colour: str) -> str:
        name = f"h{ {'//': 1, '..': 2, 'xx': 3}.get(kind, 4) }-{colour.lstrip('#')}"
        return self._define(name, _hatch(kind, colour))

    def clip(self, x: float, y: float, w: float, h: float) -> str:
        name = f"c{num(x)}_{num(y)}_{num(w)}_{num(h)}".replace(".", "d").replace("-", "n")
        return self._define(
            name,
            f"<clipPath ><rect {box(x, y, w, h)}/></clipPath>",
        )

    def text(
        self,
        x: float,
        y: float,
        text: str,
        size: float,
        anchor: str = "start",
        rotate: float = 0.0,
        extra: str = "",
    ) -> None:
        """`text` with its baseline at `y` (callers place the baseline themselves)."""
        where = (
            f'transform="translate({num(x)} {num(y)}) rotate({num(rotate)})"'
            if rotate
            else f'x="{num(x)}" y="{num(y)}"'
        )
        anchor_attr = "" if anchor == "start" else f' text-anchor="{anchor}"'
        self.add(f'<text {where} font-size="{num(size)}"{anchor_attr}{extra}>{esc(text)}</text>')

    def svg(self, width: float, height: float) -> str:
        defs = "".join(self._defs[k] for k in sorted(self._defs))
        head = (
            '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" '
            f'viewBox="0 0 {num(width)} {num(height)}" preserveAspectRatio="xMidYMin meet" '
            f'font-family="{FONT}" fill="#222">'
        )
        background = f'<rect width="{num(width)}" height="{num(height)}" fill="#fff"/>'
        return f"{head}<defs>{defs}</defs>{background}{''.join(self.body)}</svg>"


def path_of(points: Sequence[tuple[float, float]]) -> str:
    """An open polyline; a point that rounds to the previous one is left out. (Each
    coordinate as `num` writes it, inlined: a 600 s series panel has tens of thousands.)"""
    out: list[str] = []
    last = ""
    for x, y in points:
        a = f"{x:.1f}"
        if a[-2:] == ".0":
            a = "0" if a == "-0.0" else a[:-2]
        b = f"{y:.1f}"
        if b[-2:] == ".0":
            b = "0" if b == "-0.0" else b[:-2]
        here = f"{a} {b}"
        if here != last:
            out.append(here)
            last = here
    return ("M" + "L".join(out)) if out else ""
