"""Drawing a `Chart` with matplotlib (Agg backend, no display): panels in rows, one legend
with a title below them (or one per panel when panels differ), notes inside the frames, a
zero on a log axis left of a break, and every data series in an SVG group of its own
(`id="pts-PANEL-SERIES"`) so a test can count what was drawn.

Sizes and fonts come from a `Style` (`style.STYLES`: web, paper, slides). SVGs for reports
carry no fixed size (only a viewBox), so they fill the page's width.
"""

from __future__ import annotations

import io
import math
import re
import textwrap
from collections.abc import Sequence
from typing import Any, Final

from matplotlib import rc_context
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.layout_engine import ConstrainedLayoutEngine
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

from ..errors import ScenarioError
from .chart import Chart, Panel, Point, Series
from .labels import format_number
from .layout import (
    LEGEND_CHARS,
    MARKS_PER_LINE,
    decade_label,
    grid,
    legend_columns,
    legend_entries,
    zero_break_decades,
)
from .plotspecs import check_figure_path
from .style import HATCHES, Style

#: Read when an SVG is written: text stays text (searchable, and a test can read the
#: labels) and the same figure gives the same ids.
_SVG_RC: Final = {"svg.fonttype": "none", "svg.hashsalt": "tcplab"}


def _rc(style: Style) -> dict[str, Any]:
    return {
        "font.size": style.font_pt,
        "axes.titlesize": style.font_pt,
        "axes.labelsize": style.font_pt,
        "xtick.labelsize": style.tick_pt,
        "ytick.labelsize": style.tick_pt,
        "legend.fontsize": style.small_pt,
        "legend.title_fontsize": style.small_pt,
        "figure.titlesize": style.font_pt * 1.15,
        "lines.linewidth": style.line_width,
        "lines.markersize": style.marker_size,
        "axes.grid": True,
        "grid.alpha": 0.3,
    }


def _legend_rows(chart: Chart, style: Style, ncol: int) -> int:
    entries = len(legend_entries(chart))
    return math.ceil(entries / ncol) if entries else 0


def render(chart: Chart, style: Style, *, caption: bool | None = None) -> Figure:
    """The figure of `chart`. `caption`: write the caption under the panels (default: the
    style says; reports put it in the page instead)."""
    with rc_context(_rc(style)):  # type: ignore[arg-type]
        return _render(chart, style, style.caption if caption is None else caption)


def _render(chart: Chart, style: Style, with_caption: bool) -> Figure:
    """Panels on top; below them the shared legend, then the caption: both in a strip the
    layout engine keeps the panels out of."""
    cols, rows = grid(chart, style)
    ncol = legend_columns(chart, style)
    shared = chart.legend and chart.shared_legend
    legend_rows = _legend_rows(chart, style, ncol) if shared else 0
    line_in = style.small_pt * 1.7 / 72
    caption_lines = _caption_lines(chart, style) if with_caption else []
    legend_in = (legend_rows + (1.2 if chart.legend_title else 0.4)) * line_in if legend_rows else 0
    caption_in = (len(caption_lines) + 0.6) * line_in * 0.85 if caption_lines else 0.0
    panels_in = rows * style.row_height_in + (0.4 if style.title else 0.0)
    height = style.height_in or panels_in + legend_in + caption_in
    strip = min((legend_in + caption_in) / height, 0.7)
    caption_top = min(caption_in / height, 0.7)
    # A Figure of its own, not pyplot's: nothing global to register or close.
    fig = Figure(
        figsize=(style.width_in, height),
        layout=ConstrainedLayoutEngine(rect=(0.0, strip, 1.0, 1.0 - strip)),
    )
    axs = fig.subplots(rows, cols, squeeze=False)
    for i, ax in enumerate(axs.flat):
        if i >= len(chart.panels):
            ax.set_visible(False)
            continue
        _panel(ax, chart, i, style)
    if style.title:
        fig.suptitle(chart.title)
    if shared:
        handles, labels = _unique_handles(fig.axes, legend_entries(chart))
        if handles:
            fig.legend(
                handles,
                labels,
                loc="upper center",
                bbox_to_anchor=(0.5, strip),
                bbox_transform=fig.transFigure,
                ncol=ncol,
                title=chart.legend_title or None,
                frameon=False,
            )
    elif chart.legend:
        for ax in fig.axes:
            if ax.get_visible() and ax.get_legend_handles_labels()[0]:
                ax.legend(title=chart.legend_title or None, loc="best", framealpha=0.85)
    if caption_lines:
        fig.text(
            0.01,
            caption_top,
            "\n".join(caption_lines),
            ha="left",
            va="top",
            fontsize=style.small_pt,
            transform=fig.transFigure,
        )
    return fig


def _caption_lines(chart: Chart, style: Style) -> list[str]:
    chars = int(style.width_in * 72 / (style.small_pt * 0.5))
    return textwrap.wrap(chart.caption, chars)


def _unique_handles(axes: Sequence[Axes], order: Sequence[str]) -> tuple[list[Any], list[str]]:
    found: dict[str, Any] = {}
    for ax in axes:
        for h, label in zip(*ax.get_legend_handles_labels(), strict=True):
            if label not in found and not label.startswith("_"):
                found[label] = h
    labels = [lab for lab in order if lab in found]
    # a long entry (a theory reference) wraps instead of widening the legend past the figure
    return [found[lab] for lab in labels], [textwrap.fill(lab, LEGEND_CHARS) for lab in labels]


def _panel(ax: Axes, chart: Chart, index: int, style: Style) -> None:
    panel = chart.panels[index]
    if panel.xscale == "category":
        _bars(ax, panel, index, style)
    else:
        _lines(ax, panel, index, style, chart.kind == "series")
    for y, label in panel.hlines:
        width = max(style.line_width * 0.8, 0.8)
        ax.axhline(y, color="0.35", ls=(0, (4, 2)), lw=width, label=label)
    if panel.ylim is not None:
        ax.set_ylim(*panel.ylim)
    else:
        ax.set_ylim(bottom=0)
    if panel.notes:  # head room, so the note sits above the data it describes
        low, high = ax.get_ylim()
        ax.set_ylim(low, high + (high - low) * 0.08 * (1 + len(panel.notes)))
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    if panel.title:
        ax.set_title(panel.title)
    for axis in (ax.xaxis, ax.yaxis):
        _minor_marks(ax, axis)
    if panel.notes:
        ax.text(
            0.985,
            0.975,
            "\n".join(panel.notes),
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=style.small_pt * 0.95,
            bbox={"boxstyle": "round,pad=0.25", "fc": "white", "ec": "0.7", "alpha": 0.9},
            zorder=10,
        )


def _lines(ax: Axes, panel: Panel, index: int, style: Style, over_time: bool) -> None:
    zero = panel.zero_at
    for j, s in enumerate(panel.series):
        if s.reference:  # not across the break: the distance to zero means nothing
            ref = [p for p in s.points if not (zero is not None and p.x == 0)]
            xs = [float(p.x) for p in ref]
            ax.plot(xs, [p.y for p in ref], color="k", ls="--", lw=1.0, label=s.label)
            continue
        pts = [p for p in s.points if not (zero is not None and p.x == 0)]
        zeros = [p for p in s.points if zero is not None and p.x == 0]
        kw: dict[str, Any] = {
            "color": s.style.colour,
            "marker": s.style.marker,
            "ls": s.style.dash if s.joined else "none",
        }
        gid = f"pts-{index}-{j}"
        if over_time:
            _over_time(ax, s, pts, kw, style, gid)
            continue
        for group, label, joined in ((pts, s.label, s.joined), (zeros, "_zero", False)):
            if not group:
                continue
            yerr = _yerr(group)
            drawn = ax.errorbar(
                [_x(p.x, zero) for p in group],
                [p.y for p in group],
                yerr=yerr,
                capsize=style.marker_size * 0.6,
                label=label if group is pts or not pts else "_zero",
                **{**kw, "ls": kw["ls"] if joined else "none"},
            )
            # the data line (one SVG <use> per point) in a group a test can find
            drawn.lines[0].set_gid(gid if group is pts else f"{gid}-zero")
    if panel.xscale == "log":
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(decade_label))
        if zero is not None:
            _zero_break(ax, panel, style)


def _over_time(
    ax: Axes, s: Series, pts: Sequence[Point], kw: dict[str, Any], style: Style, gid: str
) -> None:
    """A time series drawn as `s.mark` says (see `chart.Mark`)."""
    xs, ys = [float(p.x) for p in pts], [p.y for p in pts]
    if s.mark == "strokes":
        drawn = ax.vlines(
            xs,
            [p.low for p in pts],
            [p.high for p in pts],
            colors=s.style.colour,
            linewidth=style.line_width * 1.6,
            alpha=0.55,
            label=s.label,
        )
        drawn.set_gid(gid)
        return
    if s.mark == "points":
        kw = {**kw, "ls": "none", "ms": style.marker_size * 0.55}
    elif s.mark == "steps":
        kw = {**kw, "drawstyle": "steps-post", "marker": "none"}
    else:
        kw = {**kw, "markevery": max(1, len(pts) // MARKS_PER_LINE)}
        kw["ms"] = style.marker_size * 0.8
    (line,) = ax.plot(xs, ys, label=s.label, **kw)
    line.set_gid(gid)


def _minor_marks(ax: Axes, axis: Any) -> None:
    """A log axis' unlabelled minor ticks as one line of tick-shaped markers instead of one
    tick object each (the same marks; dozens of tick objects per panel cost more to lay out
    and draw than the panel's data). Minor ticks with a label stay ticks."""
    if axis.get_scale() != "log" or isinstance(axis.get_minor_locator(), NullLocator):
        return
    low, high = sorted(axis.get_view_interval())
    locs = [v for v in axis.get_minorticklocs() if low <= v <= high]
    if not locs or any(axis.minor.formatter.format_ticks(locs)):
        return
    tick = axis.get_minor_ticks(1)[0]
    if tick.tick2line.get_visible() or tick.gridline.get_visible():
        return
    mark = tick.tick1line
    if axis is ax.xaxis:
        transform, xs, ys = ax.get_xaxis_transform(which="tick1"), locs, [0.0] * len(locs)
    else:
        transform, xs, ys = ax.get_yaxis_transform(which="tick1"), [0.0] * len(locs), locs
    # an artist, not a data line: the marks must not widen the data limits
    ax.add_artist(
        Line2D(
            xs,
            ys,
            ls="none",
            marker=mark.get_marker(),
            ms=mark.get_markersize(),
            mew=mark.get_markeredgewidth(),
            color=mark.get_markeredgecolor(),
            transform=transform,
            clip_on=False,
            zorder=axis.get_zorder(),
            gid=f"minor-{axis.axis_name}",
            visible=mark.get_visible(),
        )
    )
    axis.set_minor_locator(NullLocator())


def _x(x: float | str, zero: float | None) -> float:
    v = float(x)
    return zero if (zero is not None and v == 0) else v


def _yerr(points: Sequence[Any]) -> list[list[float]] | None:
    below = [p.y - p.low if p.low == p.low else 0.0 for p in points]
    above = [p.high - p.y if p.high == p.high else 0.0 for p in points]
    if not any(below) and not any(above):
        return None
    return [[max(b, 0.0) for b in below], [max(a, 0.0) for a in above]]


def _zero_break(ax: Axes, panel: Panel, style: Style) -> None:
    """Ticks "0" at the zero position and decades from the smallest positive x on; a break
    mark (//) on the x axis between them."""
    zero = panel.zero_at
    assert zero is not None
    decades, low, high = zero_break_decades(panel)
    ticks = [zero, *decades]
    ax.set_xlim(zero / 2.5, high * 2.0)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(
        FuncFormatter(lambda v, _pos: "0" if math.isclose(v, zero) else format_number(v, 2))
    )
    gap = math.sqrt(zero * low)
    ax.text(
        gap,
        0.0,
        "//",
        transform=ax.get_xaxis_transform(),
        ha="center",
        va="center",
        fontsize=style.font_pt,
        fontweight="bold",
        bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none"},
        clip_on=False,
        zorder=11,
    )


def _bars(ax: Axes, panel: Panel, index: int, style: Style) -> None:
    cats = panel.categories
    present = {
        c: [j for j, s in enumerate(panel.series) if any(p.x == c for p in s.points)] for c in cats
    }
    for j, s in enumerate(panel.series):
        pos, ys, below, above = [], [], [], []
        for p in s.points:
            members = present[str(p.x)]
            width = 0.8 / max(len(members), 1)
            k = members.index(j)
            pos.append(cats.index(str(p.x)) + (k - (len(members) - 1) / 2) * width)
            ys.append(p.y)
            below.append(max(p.y - p.low, 0.0) if p.low == p.low else 0.0)
            above.append(max(p.high - p.y, 0.0) if p.high == p.high else 0.0)
        width = 0.8 / max((len(m) for m in present.values()), default=1)
        bars = ax.bar(
            pos,
            ys,
            width=width * 0.95,
            yerr=[below, above] if any(below) or any(above) else None,
            capsize=style.marker_size * 0.5,
            color=s.style.colour,
            hatch=HATCHES[(j // 8) % len(HATCHES)],
            edgecolor="white",
            label=s.label,
        )
        for k, bar in enumerate(bars.patches):
            bar.set_gid(f"bar-{index}-{j}-{k}")
    rotate = len(cats) > 6 or max((len(c) for c in cats), default=0) > 8
    ax.set_xticks(
        range(len(cats)),
        cats,
        rotation=45 if rotate else 0,
        ha="right" if rotate else "center",
    )
    ax.grid(axis="x", visible=False)


def to_svg(fig: Figure) -> str:
    """The figure as an SVG element that scales to its container's width: no metadata (the
    same results give the same report) and no fixed width/height (the viewBox remains)."""
    buf = io.StringIO()
    with rc_context(_SVG_RC):  # type: ignore[arg-type]
        fig.savefig(
            buf,
            format="svg",
            metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
        )
    _release(fig)
    text = re.sub(r"<metadata>.*?</metadata>", "", buf.getvalue(), flags=re.S)
    text = text[text.index("<svg") :]
    head, rest = text.split(">", 1)
    head = re.sub(r'\s(width|height)="[^"]*"', "", head)
    return f'{head} preserveAspectRatio="xMidYMin meet">{rest}'


def _release(fig: Figure) -> None:
    """Close a figure pyplot made (the agreement matrix's); ours are not registered."""
    if fig.canvas.manager is not None:
        import matplotlib.pyplot as plt

        plt.close(fig)


def save(fig: Figure, path: str, style: Style) -> None:
    check_figure_path(path)
    # The caption is written in a strip of the figure; "tight" trims the margins, unless
    # --size fixed the size.
    tight = "tight" if style.height_in is None else None
    try:
        with rc_context(_SVG_RC):  # type: ignore[arg-type]
            fig.savefig(path, dpi=style.dpi, metadata=_file_metadata(path), bbox_inches=tight)
    except OSError as exc:
        raise ScenarioError(f"-o = {path!r}: cannot write ({exc.strerror})") from None


def _file_metadata(path: str) -> dict[str, Any] | None:
    ext = path.rsplit(".", 1)[-1].lower()
    if ext == "svg":
        return {"Date": None, "Creator": None}
    if ext == "pdf":
        return {"CreationDate": None, "Creator": None, "Producer": None}
    return None
