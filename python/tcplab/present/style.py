"""Figure styles (paper, slides, web) and a palette that keeps 24+ lines apart.

A style is data: the figure width, the height of a row of panels, the base font size, line
widths and how many panels share a row. `web` fills a 1200 px report page (12 in at 100 dpi;
the SVG is scaled to the page's width), `paper` a two-column article's text width (7 in,
8 pt), `slides` a 16:9 slide (13.3 in, 16 pt). `--size` and `--font-size` override them.

Lines are told apart by colour, marker and dash together: eight colours that stay distinct
for colour-blind readers (Okabe and Ito's set, yellow replaced by brown, which reads on
white) times eight markers times four dashes, assigned so that no two of the first 64 lines
look alike and lines next to each other in a legend differ in colour. When a figure's lines
are named by two keys (an algorithm and a PEP set-up), colour follows the first key and
marker + dash the second, so each algorithm keeps one colour.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final

from ..errors import ScenarioError

COLOURS: Final = (
    "#0072B2",  # blue
    "#D55E00",  # vermillion
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#E69F00",  # orange
    "#56B4E9",  # sky blue
    "#000000",  # black
    "#8C510A",  # brown
)
MARKERS: Final = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES: Final = ("-", "--", ":", "-.")
#: Bars have no marker or dash: after eight colours, a hatch tells them apart.
HATCHES: Final = ("", "//", "..", "xx")


@dataclass(frozen=True)
class LineStyle:
    colour: str
    marker: str
    dash: str


def line_style(i: int) -> LineStyle:
    """The `i`-th line's look: colour `i mod 8`, a marker shifted by the round (`i // 8`) so
    (colour, marker) pairs never repeat within 64 lines, and a dash per round of 8."""
    c, k = i % len(COLOURS), i // len(COLOURS)
    return LineStyle(
        COLOURS[c], MARKERS[(c + k) % len(MARKERS)], DASHES[(k // 2 + k) % len(DASHES)]
    )


def two_key_style(first: int, second: int) -> LineStyle:
    """Colour by the first key's value, marker and dash by the second's."""
    return LineStyle(
        COLOURS[first % len(COLOURS)],
        MARKERS[second % len(MARKERS)],
        DASHES[second % len(DASHES)],
    )


def assign_styles(labels: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], LineStyle]:
    """A look for each line, named by its key values. Two-part names with at most 8 first
    values and 4 second values get colour = first, marker + dash = second; otherwise lines
    are numbered in order."""
    firsts = sorted({lab[0] for lab in labels if lab})
    seconds = sorted({" · ".join(lab[1:]) for lab in labels if len(lab) > 1})
    if len(seconds) > 1 and len(firsts) <= len(COLOURS) and len(seconds) <= len(DASHES):
        return {
            lab: two_key_style(firsts.index(lab[0]), seconds.index(" · ".join(lab[1:])))
            for lab in labels
        }
    return {lab: line_style(i) for i, lab in enumerate(labels)}


@dataclass(frozen=True)
class Style:
    """How big a figure is and how its text and lines are drawn."""

    name: str
    width_in: float
    row_height_in: float
    font_pt: float
    line_width: float
    marker_size: float
    columns: int  # summary panels per row
    series_columns: int  # time-series panels per row
    dpi: int
    title: bool  # a title above the panels (papers put it in the caption instead)
    caption: bool  # the caption under the panels in saved files
    height_in: float | None = None  # a fixed height (--size); else rows x row height

    @property
    def tick_pt(self) -> float:
        return self.font_pt * 0.9

    @property
    def small_pt(self) -> float:
        """The smallest text drawn (notes in a panel, legend entries)."""
        return self.font_pt * 0.85


STYLES: Final[dict[str, Style]] = {
    "web": Style("web", 12.0, 3.6, 11.0, 1.5, 4.5, 3, 4, 100, True, True),
    "paper": Style("paper", 7.0, 2.3, 8.0, 1.0, 3.0, 3, 3, 300, False, False),
    "slides": Style("slides", 13.33, 4.6, 16.0, 2.2, 7.0, 2, 3, 150, True, False),
}

_SIZE: Final = re.compile(r"^\s*([\d.]+)\s*[x\u00d7]\s*([\d.]+)\s*(in|cm|mm|px)?\s*$")


def parse_size(text: str, dpi: int) -> tuple[float, float]:
    """`"7x3"` or `"7x3in"`, `"17x8cm"`, `"1200x600px"` (at `dpi`) → inches."""
    m = _SIZE.match(text)
    if m is None:
        raise ScenarioError(
            f"--size = {text!r}: not WIDTHxHEIGHT; allowed: e.g. 7x3 (inches), 7x3in, "
            "17x8cm, 1200x600px"
        )
    try:
        w, h = float(m.group(1)), float(m.group(2))
    except ValueError:
        raise ScenarioError(f"--size = {text!r}: not a number; allowed: e.g. 7x3in") from None
    per_in = {"in": 1.0, None: 1.0, "cm": 2.54, "mm": 25.4, "px": float(dpi)}[m.group(3)]
    w, h = w / per_in, h / per_in
    if not (1.0 <= w <= 50.0 and 1.0 <= h <= 50.0):
        raise ScenarioError(f"--size = {text!r}: out of range; allowed: 1 to 50 inches each way")
    return w, h


def make_style(name: str = "web", size: str | None = None, font_size: float | None = None) -> Style:
    """A style by name with `--size` and `--font-size` applied."""
    base = STYLES.get(name)
    if base is None:
        raise ScenarioError(f"--style = {name!r}: unknown style; allowed: {', '.join(STYLES)}")
    style = base
    if size is not None:
        w, h = parse_size(size, base.dpi)
        style = replace(style, width_in=w, height_in=h)
    if font_size is not None:
        if not 4.0 <= font_size <= 40.0:
            raise ScenarioError(f"--font-size = {font_size:g}: out of range; allowed: 4 to 40")
        style = replace(style, font_pt=font_size)
    return style
