"""Legends of the report figures: one below the panels (a title, entries in columns filled
top to bottom, long entries wrapped) or one per panel in the corner with the fewest points.
Each entry shows what its series looks like: a line with its dash and one marker, a bar
swatch with its hatch, a black dashed reference or a grey dashed level."""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Sequence

from .chart import Chart, Panel, Series
from .layout import LEGEND_CHARS, legend_entries
from .style import HATCHES, Style
from .svg_axes import Scale, text_width
from .svg_canvas import Canvas, box, dash_attr, num

#: In units of the legend's font size (matplotlib's legend defaults).
_HANDLE = 2.0
_HANDLE_PAD = 0.8
_COLUMN_GAP = 2.0
_LINE = 1.25
_ROW_GAP = 0.5


def _lines(label: str) -> list[str]:
    return textwrap.wrap(label, LEGEND_CHARS) or [label]


def _rows(n: int, ncol: int) -> int:
    return math.ceil(n / ncol) if n else 0


def _row_heights(entries: Sequence[str], ncol: int, size: float) -> list[float]:
    rows = _rows(len(entries), ncol)
    heights = [0.0] * rows
    for i, e in enumerate(entries):
        r = i % rows
        heights[r] = max(heights[r], (len(_lines(e)) * _LINE + _ROW_GAP) * size)
    return heights


def _column_widths(entries: Sequence[str], ncol: int, size: float) -> list[float]:
    rows = _rows(len(entries), ncol)
    return [
        max(
            (
                max(text_width(t, size) for t in _lines(e))
                for e in entries[c * rows : (c + 1) * rows]
            ),
            default=0.0,
        )
        + (_HANDLE + _HANDLE_PAD) * size
        for c in range(math.ceil(len(entries) / rows))
    ]


def _fitting(entries: Sequence[str], ncol: int, size: float, width: float) -> int:
    """`ncol` (the saved figures' count, from a mean character width), or fewer if the
    entries' measured widths would not fit the figure's width; never more than needed."""
    ncol = max(1, math.ceil(len(entries) / _rows(len(entries), ncol)))
    while ncol > 1:
        widths = _column_widths(entries, ncol, size)
        if sum(widths) + _COLUMN_GAP * size * (len(widths) - 1) <= width * 0.98:
            break
        ncol -= 1
    return ncol


def legend_height(chart: Chart, style: Style, ncol: int) -> float:
    """The height of the shared legend below the panels (0 when it has no entries)."""
    entries = legend_entries(chart)
    if not entries:
        return 0.0
    size = style.small_pt
    ncol = _fitting(entries, ncol, size, style.width_in * 72)
    title = size * 1.6 if chart.legend_title else 0.0
    return title + sum(_row_heights(entries, ncol, size)) + size * 0.8


def draw_legend(
    canvas: Canvas, chart: Chart, style: Style, ncol: int, top: float, width: float
) -> None:
    entries = legend_entries(chart)
    if not entries:
        return
    size = style.small_pt
    ncol = _fitting(entries, ncol, size, width)
    rows = _rows(len(entries), ncol)
    heights = _row_heights(entries, ncol, size)
    widths = _column_widths(entries, ncol, size)
    total = sum(widths) + _COLUMN_GAP * size * (ncol - 1)
    x0 = max((width - total) / 2, 2.0)
    y = top + size * 0.4
    if chart.legend_title:
        canvas.text(width / 2, y + size, chart.legend_title, size, "middle")
        y += size * 1.6
    looks = _looks(chart)
    for c in range(ncol):
        x = x0 + sum(widths[:c]) + _COLUMN_GAP * size * c
        ry = y
        for r in range(rows):
            i = c * rows + r
            if i >= len(entries):
                break
            _entry(canvas, entries[i], looks[entries[i]], chart, style, x, ry, size)
            ry += heights[r]


def _looks(chart: Chart) -> dict[str, Series | str]:
    """Each legend entry's series (its first), or "level" for a marked level."""
    found: dict[str, Series | str] = {}
    for panel in chart.panels:
        for s in panel.series:
            found.setdefault(s.label, s)
        for _, label in panel.hlines:
            found.setdefault(label, "level")
    return found


def _entry(
    canvas: Canvas,
    label: str,
    look: Series | str,
    chart: Chart,
    style: Style,
    x: float,
    y: float,
    size: float,
) -> None:
    """One entry, its first line's baseline at `y + size`."""
    mid = y + size * 0.65
    _handle(canvas, look, chart, style, x, mid, _HANDLE * size)
    for k, line in enumerate(_lines(label)):
        canvas.text(x + (_HANDLE + _HANDLE_PAD) * size, y + size * (1 + _LINE * k), line, size)


def _handle(
    canvas: Canvas, look: Series | str, chart: Chart, style: Style, x: float, y: float, w: float
) -> None:
    lw = style.line_width
    if isinstance(look, str):  # a marked level: grey, dashed 4:2
        width = max(lw * 0.8, 0.8)
        canvas.add(
            f'<path d="M{num(x)} {num(y)}h{num(w)}" stroke="#595959" stroke-width="{num(width)}" '
            f'stroke-dasharray="{num(4 * width)},{num(2 * width)}"/>'
        )
        return
    if look.reference:
        dash = dash_attr("--", 1.0)
        canvas.add(f'<path d="M{num(x)} {num(y)}h{num(w)}" stroke="#000" stroke-width="1"{dash}/>')
        return
    colour = look.style.colour
    if chart.kind == "bars":
        j = _series_index(chart, look)
        h = style.small_pt * 0.7
        rect = f'x="{num(x)}" y="{num(y - h / 2)}" width="{num(w)}" height="{num(h)}"'
        canvas.add(f'<rect {rect} fill="{colour}"/>')
        hatch = HATCHES[(j // 8) % len(HATCHES)]
        if hatch:
            canvas.add(f'<rect {rect} fill="url(#{canvas.hatch(hatch, "#fff")})"/>')
        return
    if look.mark == "strokes":
        canvas.add(
            f'<path d="M{num(x)} {num(y)}h{num(w)}" stroke="{colour}" '
            f'stroke-width="{num(lw * 1.6)}" stroke-opacity="0.55"/>'
        )
        return
    if look.mark != "points" and (look.joined or chart.kind == "series"):
        canvas.add(
            f'<path d="M{num(x)} {num(y)}h{num(w)}" stroke="{colour}" stroke-width="{num(lw)}"'
            f"{dash_attr(look.style.dash, lw)}/>"
        )
    if look.mark != "steps":
        # the size the series is drawn with (time series: smaller markers)
        over_time = chart.kind == "series"
        size = style.marker_size * ((0.55 if look.mark == "points" else 0.8) if over_time else 1.0)
        mark = canvas.marker(look.style.marker, size, colour, 1.0)
        canvas.add(f'<use xlink:href="#{mark}" x="{num(x + w / 2)}" y="{num(y)}"/>')


def _series_index(chart: Chart, look: Series) -> int:
    for panel in chart.panels:
        for j, s in enumerate(panel.series):
            if s is look:
                return j
    return 0


def panel_legend(
    canvas: Canvas,
    chart: Chart,
    panel: Panel,
    style: Style,
    frame: tuple[float, float, float, float],
    xs: Scale,
    ys: Scale,
) -> None:
    """A legend inside one panel, in the corner that covers the fewest of its points (the
    top right is the notes' when there are any)."""
    labels: list[str] = []
    looks: dict[str, Series | str] = {}
    for s in panel.series:
        if s.label and s.label not in looks:
            labels.append(s.label)
            looks[s.label] = s
    for _, label in panel.hlines:
        if label not in looks:
            labels.append(label)
            looks[label] = "level"
    if not labels:
        return
    size = style.small_pt
    heights = _row_heights(labels, 1, size)
    title = size * 1.5 if chart.legend_title else 0.0
    w = (
        max(text_width(t, size) for e in labels for t in _lines(e))
        + (_HANDLE + _HANDLE_PAD + 1.0) * size
    )
    w = max(w, text_width(chart.legend_title, size) + size)
    h = title + sum(heights) + size * 0.5
    left, top, right, bottom = frame
    pad = size * 0.4
    middle = (left + right - w) / 2
    corners = [
        (right - w - pad, top + pad),
        (left + pad, top + pad),
        (right - w - pad, bottom - h - pad),
        (left + pad, bottom - h - pad),
        (middle, top + pad),
        (middle, bottom - h - pad),
    ]
    if panel.notes:
        corners = corners[1:]
    points = _samples(panel, xs, ys, (left, right))

    def covered(corner: tuple[float, float]) -> int:
        cx, cy = corner
        return sum(1 for px, py in points if cx <= px <= cx + w and cy <= py <= cy + h)

    x, y = min(corners, key=covered)
    canvas.add(
        f'<rect {box(x, y, w, h)} rx="{num(size * 0.3)}" '
        'fill="#fff" fill-opacity="0.85" stroke="#ccc" stroke-width="0.8"/>'
    )
    ry = y + size * 0.25
    if chart.legend_title:
        canvas.text(x + w / 2, ry + size, chart.legend_title, size, "middle")
        ry += title
    for label, height in zip(labels, heights, strict=True):
        _entry(canvas, label, looks[label], chart, style, x + size * 0.5, ry, size)
        ry += height


#: Spacing of the samples taken along a line to see what a legend would cover (points).
_SAMPLE_PT = 4.0


def _samples(
    panel: Panel, xs: Scale, ys: Scale, width: tuple[float, float]
) -> list[tuple[float, float]]:
    """Where a panel's lines run, in points: every plotted point and samples every few
    points along each line and level (a long flat stretch has few points but would be
    hidden as well)."""
    if panel.xscale == "category":
        return []
    out: list[tuple[float, float]] = []
    for s in panel.series:
        xy = [
            (xs(float(p.x)), ys(p.y))
            for p in s.points
            if math.isfinite(p.y) and (panel.xscale != "log" or float(p.x) > 0)
        ]
        out += xy
        if s.joined or s.reference:
            for (x0, y0), (x1, y1) in itertools.pairwise(xy):
                k = min(int(math.hypot(x1 - x0, y1 - y0) / _SAMPLE_PT), 200)
                out += [(x0 + (x1 - x0) * i / k, y0 + (y1 - y0) * i / k) for i in range(1, k)]
    for y, _ in panel.hlines:
        py = ys(y)
        n = int((width[1] - width[0]) / _SAMPLE_PT)
        out += [(width[0] + i * _SAMPLE_PT, py) for i in range(n)]
    return out
