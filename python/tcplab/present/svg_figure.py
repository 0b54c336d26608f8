"""Report figures as SVG text, written directly from a `Chart` (no plotting library): the
look of `draw` (panels in a grid, light grid lines, nice ticks, log axes with decades and a
zero left of a break, markers, dashes, error bars, grouped hatched bars, notes, a legend
below the panels) at a fraction of its cost, since a report draws a dozen figures and a
page only needs vector shapes and text.

Files written by `tcplab plot -o` still go through matplotlib (`draw.save`): PNG and PDF
need it, and their look is the reference this writer follows.

Each data series is a group `id="pts-PANEL-SERIES"` holding one `<use>` per marker (its
points at x = 0 of a log axis in `...-zero`), each bar a group `bar-PANEL-SERIES-K`, and the
minor marks of a log axis a path `minor-x`; text stays `<text>`. Lengths are points.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from .chart import Chart, Panel, Point, Series
from .labels import format_number
from .layout import MARKS_PER_LINE, grid, legend_columns, zero_break_decades
from .style import HATCHES, Style
from .svg_axes import (
    Scale,
    Ticks,
    linear_ticks,
    log_axis_ticks,
    padded,
    text_width,
)
from .svg_canvas import Canvas, box, dash_attr, num, path_of
from .svg_legend import draw_legend, legend_height, panel_legend

#: Tick marks and the gap between a tick and its label, in points (matplotlib's).
TICK_PT = 3.5
MINOR_PT = 2.0
GAP_PT = 3.5
#: Blank margin around each panel cell.
PAD_PT = 5.0
GRID = 'stroke="#b0b0b0" stroke-opacity="0.3" stroke-width="0.8"'
#: Horizontal reference lines: grey, dashed 4:2.
HLINE_COLOUR = "#595959"


def svg_figure(chart: Chart, style: Style) -> str:
    """`chart` as an SVG element with a viewBox and no fixed size (it scales to its
    container's width); no caption (the page writes it)."""
    width = style.width_in * 72
    cols, rows = grid(chart, style)
    canvas = Canvas()
    top = 0.0
    if style.title and chart.title:
        size = style.font_pt * 1.15
        canvas.text(width / 2, size * 1.3, chart.title, size, "middle")
        top = size * 1.9
    shared = chart.legend and chart.shared_legend
    ncol = legend_columns(chart, style)
    legend_pt = legend_height(chart, style, ncol) if shared else 0.0
    if style.height_in is not None:
        row_pt = max((style.height_in * 72 - top - legend_pt) / rows, 72.0)
    else:
        row_pt = style.row_height_in * 72
    cell_w = width / cols
    for i, panel in enumerate(chart.panels):
        r, c = divmod(i, cols)
        box = (c * cell_w, top + r * row_pt, cell_w, row_pt)
        _panel(canvas, chart, i, panel, style, box)
    height = top + rows * row_pt
    if shared:
        draw_legend(canvas, chart, style, ncol, height, width)
        height += legend_pt
    return canvas.svg(width, height)


@dataclass(frozen=True)
class _Frame:
    """A panel's plotting area and its two scales."""

    left: float
    top: float
    right: float
    bottom: float
    x: Scale
    y: Scale


def _y_range(panel: Panel) -> tuple[float, float]:
    if panel.ylim is not None:
        low, high = panel.ylim
    else:
        ys = [p.y for s in panel.series for p in s.points]
        ys += [v for s in panel.series for p in s.points for v in (p.low, p.high)]
        ys += [y for y, _ in panel.hlines]
        ys = [v for v in ys if math.isfinite(v)]
        # from 0, with 5 % of the span from 0 above the highest value (bars stand on 0,
        # so a margin of the values' own spread would let the tallest touch the frame)
        top = max(ys, default=1.0)
        least = min([*ys, 0.0])
        low, high = 0.0, (top + (top - least) * 0.05 if top > 0 else 1.0)
        if high <= 0:
            high = 1.0
    if not high > low:  # a range of one value: widen it, as matplotlib does
        low, high = padded(low, low)
    if panel.notes:  # head room, so a note sits above the data it describes
        high += (high - low) * 0.08 * (1 + len(panel.notes))
    return low, high


def _x_range(panel: Panel) -> tuple[float, float]:
    if panel.xscale == "category":
        return padded(-0.4, len(panel.categories) - 0.6)
    xs = [float(p.x) for s in panel.series for p in s.points]
    if panel.xscale == "log":
        positive = [x for x in xs if x > 0]
        if not positive:
            return 0.1, 10.0
        if panel.zero_at is not None:
            return panel.zero_at / 2.5, max(positive) * 2.0
        return padded(min(positive), max(positive), log=True)
    if not xs:
        return 0.0, 1.0
    return padded(min(xs), max(xs))


def _x_ticks(panel: Panel, low: float, high: float, length: float, size: float) -> Ticks:
    if panel.xscale == "category":
        return Ticks(list(range(len(panel.categories))), list(panel.categories))
    if panel.xscale == "log":
        if panel.zero_at is not None:
            return _zero_break_ticks(panel)
        return log_axis_ticks(low, high)
    most = max(1, min(9, int(length // (size * 3))))
    while True:  # fewer ticks until their labels fit side by side
        ticks = linear_ticks(low, high, most)
        room = length / max(len(ticks.at), 1)
        if most == 1 or max(text_width(t, size) for t in ticks.labels) + size <= room:
            return ticks
        most -= 1


def _zero_break_ticks(panel: Panel) -> Ticks:
    """ "0" at the zero position, then the decades from the smallest positive x on."""
    zero = panel.zero_at
    assert zero is not None
    decades, _, _ = zero_break_decades(panel)
    # written as numbers, as the saved figures write them
    labels = [format_number(d, 2) for d in decades]
    return Ticks([zero, *decades], ["0", *labels])


def _rotated(panel: Panel) -> bool:
    cats = panel.categories
    return panel.xscale == "category" and (
        len(cats) > 6 or max((len(c) for c in cats), default=0) > 8
    )


def _panel(
    canvas: Canvas,
    chart: Chart,
    index: int,
    panel: Panel,
    style: Style,
    box: tuple[float, float, float, float],
) -> None:
    bx, by, bw, bh = box
    font, tick = style.font_pt, style.tick_pt
    top = by + PAD_PT + (font * 1.6 if panel.title else font * 0.6)
    if _rotated(panel):
        longest = max(text_width(c, tick) for c in panel.categories)
        below = longest * math.sqrt(0.5) + tick
    else:
        below = tick * 1.2
    bottom = by + bh - PAD_PT - (font * 1.5 if panel.xlabel else 0) - below - TICK_PT - GAP_PT
    ylow, yhigh = _y_range(panel)
    ymost = max(1, min(9, int((bottom - top) // (tick * 2))))
    yticks = linear_ticks(ylow, yhigh, ymost)
    label_w = max((text_width(t, tick) for t in yticks.labels), default=0.0)
    left = bx + PAD_PT + (font * 1.4 if panel.ylabel else 0) + label_w + TICK_PT + GAP_PT
    xlow, xhigh = _x_range(panel)
    # room on the right for half the last tick label, which is centred on its tick
    right = bx + bw - PAD_PT - tick * 1.5
    xticks = _x_ticks(panel, xlow, xhigh, right - left, tick)
    log = panel.xscale == "log"
    f = _Frame(
        left,
        top,
        right,
        bottom,
        Scale(xlow, xhigh, left, right, log),
        Scale(ylow, yhigh, bottom, top),
    )
    _grid_lines(canvas, f, xticks, yticks, panel.xscale != "category")
    clip = canvas.clip(left, top, right - left, bottom - top)
    canvas.add(f'<g clip-path="url(#{clip})">')
    if panel.xscale == "category":
        _bars(canvas, panel, index, style, f)
    else:
        _lines(canvas, panel, index, style, f, chart.kind == "series")
    for y, _label in panel.hlines:
        py = num(f.y(y))
        w = max(style.line_width * 0.8, 0.8)
        canvas.add(
            f'<path d="M{num(left)} {py}L{num(right)} {py}" stroke="{HLINE_COLOUR}" '
            f'stroke-width="{num(w)}" stroke-dasharray="{num(4 * w)},{num(2 * w)}" fill="none"/>'
        )
    canvas.add("</g>")
    canvas.add(
        f'<rect x="{num(left)}" y="{num(top)}" width="{num(right - left)}" '
        f'height="{num(bottom - top)}" fill="none" stroke="#000" stroke-width="0.8"/>'
    )
    _axes_text(canvas, panel, style, f, xticks, yticks, below)
    if panel.notes:
        _notes(canvas, panel.notes, style, f)
    if chart.legend and not chart.shared_legend:
        panel_legend(canvas, chart, panel, style, (left, top, right, bottom), f.x, f.y)


def _grid_lines(canvas: Canvas, f: _Frame, xt: Ticks, yt: Ticks, x_grid: bool) -> None:
    d = []
    for v in yt.at:
        y = num(f.y(v))
        d.append(f"M{num(f.left)} {y}L{num(f.right)} {y}")
    if x_grid:
        for v in xt.at:
            x = num(f.x(v))
            d.append(f"M{x} {num(f.top)}L{x} {num(f.bottom)}")
    if d:
        canvas.add(f'<path d="{"".join(d)}" {GRID} fill="none"/>')


def _axes_text(
    canvas: Canvas, panel: Panel, style: Style, f: _Frame, xt: Ticks, yt: Ticks, below: float
) -> None:
    font, tick = style.font_pt, style.tick_pt
    marks = []
    for v in yt.at:
        y = f.y(v)
        marks.append(f"M{num(f.left)} {num(y)}h{num(-TICK_PT)}")
        canvas.text(
            f.left - TICK_PT - GAP_PT, y + tick * 0.35, yt.labels[yt.at.index(v)], tick, "end"
        )
    rotate = _rotated(panel)
    for v, label in zip(xt.at, xt.labels, strict=True):
        x = f.x(v)
        marks.append(f"M{num(x)} {num(f.bottom)}v{num(TICK_PT)}")
        y = f.bottom + TICK_PT + GAP_PT
        if rotate:
            canvas.text(x + tick * 0.3, y + tick * 0.3, label, tick, "end", rotate=-45)
        else:
            canvas.text(x, y + tick * 0.8, label, tick, "middle")
    canvas.add(f'<path d="{"".join(marks)}" stroke="#000" stroke-width="0.8" fill="none"/>')
    if xt.minor:
        d = "".join(f"M{num(f.x(v))} {num(f.bottom)}v{num(MINOR_PT)}" for v in xt.minor)
        canvas.add(f'<path id="minor-x" d="{d}" stroke="#000" stroke-width="0.6" fill="none"/>')
    if panel.xscale == "log" and panel.zero_at is not None:
        _break_mark(canvas, panel, style, f)
    if panel.xlabel:
        y = f.bottom + TICK_PT + GAP_PT + below + font * 1.1
        canvas.text((f.left + f.right) / 2, y, panel.xlabel, font, "middle")
    if panel.ylabel:
        label_w = max((text_width(t, tick) for t in yt.labels), default=0.0)
        x = f.left - TICK_PT - GAP_PT - label_w - font * 0.45
        canvas.text(x, (f.top + f.bottom) / 2, panel.ylabel, font, "middle", rotate=-90)
    if panel.title:
        canvas.text((f.left + f.right) / 2, f.top - font * 0.5, panel.title, font, "middle")


def _break_mark(canvas: Canvas, panel: Panel, style: Style, f: _Frame) -> None:
    """ "//" on the x axis between the zero and the first positive value, on white."""
    zero = panel.zero_at
    assert zero is not None
    low = min(float(p.x) for s in panel.series for p in s.points if float(p.x) > 0)
    x = f.x(math.sqrt(zero * low))
    size = style.font_pt
    w = text_width("//", size) * 1.1
    canvas.add(
        f'<rect x="{num(x - w / 2)}" y="{num(f.bottom - size * 0.55)}" width="{num(w)}" '
        f'height="{num(size * 1.1)}" fill="#fff"/>'
    )
    canvas.text(x, f.bottom + size * 0.35, "//", size, "middle", extra=' font-weight="bold"')


def _notes(canvas: Canvas, notes: Sequence[str], style: Style, f: _Frame) -> None:
    """The panel's notes in a white rounded box, top right inside the frame."""
    size = style.small_pt * 0.95
    line = size * 1.2
    w = max(text_width(n, size) for n in notes) + size * 0.6
    h = line * len(notes) + size * 0.5
    x1 = f.right - (f.right - f.left) * 0.015
    y0 = f.top + (f.bottom - f.top) * 0.025
    canvas.add(
        f'<rect {box(x1 - w, y0, w, h)} rx="{num(size * 0.3)}" '
        f'fill="#fff" fill-opacity="0.9" stroke="#b3b3b3" stroke-width="0.8"/>'
    )
    for k, note in enumerate(notes):
        canvas.text(x1 - size * 0.3, y0 + size * 0.25 + line * k + size * 0.95, note, size, "end")


def _x_of(p: Point, zero: float | None) -> float:
    v = float(p.x)
    return zero if (zero is not None and v == 0) else v


def _lines(
    canvas: Canvas, panel: Panel, index: int, style: Style, f: _Frame, over_time: bool
) -> None:
    zero = panel.zero_at if panel.xscale == "log" else None
    lw = style.line_width
    for j, s in enumerate(panel.series):
        at_zero = [p for p in s.points if zero is not None and float(p.x) == 0]
        rest = [p for p in s.points if not (zero is not None and float(p.x) == 0)]
        if panel.xscale == "log":  # nothing at x <= 0 has a place on a log axis
            rest = [p for p in rest if float(p.x) > 0]
        if s.reference:
            xy = [(f.x(float(p.x)), f.y(p.y)) for p in rest if math.isfinite(p.y)]
            canvas.add(
                f'<path d="{path_of(xy)}" fill="none" stroke="#000" stroke-width="1"'
                f"{dash_attr('--', 1.0)}/>"
            )
            continue
        gid = f"pts-{index}-{j}"
        if over_time:
            _over_time(canvas, s, rest, style, f, gid)
            continue
        for group, name, joined in ((rest, gid, s.joined), (at_zero, f"{gid}-zero", False)):
            if not group:
                continue
            canvas.add(f'<g id="{name}">')
            xy = [(f.x(_x_of(p, zero)), f.y(p.y)) for p in group]
            if joined and len(group) > 1:
                _polyline(canvas, xy, s, lw)
            _error_bars(canvas, group, xy, s.style.colour, lw, style.marker_size * 0.6, f)
            mark = canvas.marker(s.style.marker, style.marker_size, s.style.colour, 1.0)
            _uses(canvas, mark, xy)
            canvas.add("</g>")


def _polyline(canvas: Canvas, xy: Sequence[tuple[float, float]], s: Series, lw: float) -> None:
    for run in _finite_runs(xy):
        canvas.add(
            f'<path d="{path_of(run)}" fill="none" stroke="{s.style.colour}" '
            f'stroke-width="{num(lw)}" stroke-linejoin="round"{dash_attr(s.style.dash, lw)}/>'
        )


def _finite_runs(xy: Sequence[tuple[float, float]]) -> list[list[tuple[float, float]]]:
    """The stretches of a line between missing (NaN) values."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in xy:
        if math.isfinite(x) and math.isfinite(y):
            runs[-1].append((x, y))
        elif runs[-1]:
            runs.append([])
    return [r for r in runs if len(r) > 1]


def _uses(canvas: Canvas, mark: str, xy: Sequence[tuple[float, float]]) -> None:
    canvas.add(
        "".join(
            f'<use xlink:href="#{mark}" x="{num(x)}" y="{num(y)}"/>'
            for x, y in xy
            if math.isfinite(x) and math.isfinite(y)
        )
    )


def _error_bars(
    canvas: Canvas,
    points: Sequence[Point],
    xy: Sequence[tuple[float, float]],
    colour: str,
    lw: float,
    cap: float,
    f: _Frame,
) -> None:
    d = []
    for p, (x, _) in zip(points, xy, strict=True):
        low = p.low if p.low == p.low else p.y
        high = p.high if p.high == p.high else p.y
        if (low == p.y and high == p.y) or not math.isfinite(x):
            continue
        y0, y1 = f.y(min(low, p.y)), f.y(max(high, p.y))
        d.append(f"M{num(x)} {num(y0)}V{num(y1)}")
        for y in (y0, y1):
            d.append(f"M{num(x - cap)} {num(y)}h{num(2 * cap)}")
    if d:
        canvas.add(
            f'<path d="{"".join(d)}" fill="none" stroke="{colour}" stroke-width="{num(lw)}"/>'
        )


def _over_time(
    canvas: Canvas, s: Series, pts: Sequence[Point], style: Style, f: _Frame, gid: str
) -> None:
    """A time series drawn as `s.mark` says (see `chart.Mark`)."""
    colour, lw = s.style.colour, style.line_width
    canvas.add(f'<g id="{gid}">')
    xy = list(zip(f.x.many([float(p.x) for p in pts]), f.y.many([p.y for p in pts]), strict=True))
    if s.mark == "strokes":
        d = "".join(
            f"M{num(x)} {num(f.y(p.low))}V{num(f.y(p.high))}"
            for (x, _), p in zip(xy, pts, strict=True)
            if math.isfinite(p.low) and math.isfinite(p.high)
        )
        canvas.add(
            f'<path d="{d}" stroke="{colour}" stroke-width="{num(lw * 1.6)}" '
            'stroke-opacity="0.55" fill="none"/>'
        )
    elif s.mark == "points":
        _uses(canvas, canvas.marker(s.style.marker, style.marker_size * 0.55, colour, 1.0), xy)
    elif s.mark == "steps":
        stepped: list[tuple[float, float]] = []
        for k, (x, y) in enumerate(xy):
            if k:
                stepped.append((x, stepped[-1][1]))
            stepped.append((x, y))
        _polyline(canvas, stepped, s, lw)
    else:
        _polyline(canvas, xy, s, lw)
        every = max(1, len(xy) // MARKS_PER_LINE)
        mark = canvas.marker(s.style.marker, style.marker_size * 0.8, colour, 1.0)
        _uses(canvas, mark, xy[::every])
    canvas.add("</g>")


def _bars(canvas: Canvas, panel: Panel, index: int, style: Style, f: _Frame) -> None:
    """Bars grouped per category, side by side, a hatch per round of eight colours."""
    cats = panel.categories
    present = {
        c: [j for j, s in enumerate(panel.series) if any(p.x == c for p in s.points)] for c in cats
    }
    width = 0.8 / max((len(m) for m in present.values()), default=1)
    base = f.y(max(f.y.low, 0.0))
    cap = style.marker_size * 0.5
    for j, s in enumerate(panel.series):
        hatch = HATCHES[(j // 8) % len(HATCHES)]
        fill = s.style.colour
        errors: list[str] = []
        for k, p in enumerate(s.points):
            members = present[str(p.x)]
            share = 0.8 / max(len(members), 1)
            centre = cats.index(str(p.x)) + (members.index(j) - (len(members) - 1) / 2) * share
            x0, x1 = f.x(centre - width * 0.95 / 2), f.x(centre + width * 0.95 / 2)
            top = f.y(p.y)
            y0, h = min(top, base), abs(base - top)
            rect = f'x="{num(x0)}" y="{num(y0)}" width="{num(x1 - x0)}" height="{num(h)}"'
            shape = f'<rect {rect} fill="{fill}" stroke="#fff" stroke-width="1"/>'
            if hatch:
                shape += f'<rect {rect} fill="url(#{canvas.hatch(hatch, "#fff")})"/>'
            canvas.add(f'<g id="bar-{index}-{j}-{k}">{shape}</g>')
            low = p.low if p.low == p.low else p.y
            high = p.high if p.high == p.high else p.y
            if low != p.y or high != p.y:
                xc = num(f.x(centre))
                ya, yb = f.y(min(low, p.y)), f.y(max(high, p.y))
                errors.append(f"M{xc} {num(ya)}V{num(yb)}")
                errors += [f"M{num(f.x(centre) - cap)} {num(y)}h{num(2 * cap)}" for y in (ya, yb)]
        if errors:
            lw = num(style.line_width)
            canvas.add(
                f'<path d="{"".join(errors)}" stroke="#000" stroke-width="{lw}" fill="none"/>'
            )
