"""The figures of an HTML page (a report, `tcplab compare`) as inline SVG, written by
`svg_figure` in this process.

Drawing a figure costs milliseconds here, so the page's figures are drawn one after the
other: a pool of worker processes would cost more to start than it saves. (They were drawn
by matplotlib in forked workers once, seconds per report.) Ctrl-C stops the drawing where it
is, like any other part of the command.
"""

from __future__ import annotations

from collections.abc import Sequence

from .chart import Chart
from .style import Style
from .svg_figure import svg_figure


def svg_of(chart: Chart, style: Style) -> str:
    """One figure as page SVG (no caption in the figure: the page writes it)."""
    return svg_figure(chart, style)


def svgs_of(charts: Sequence[Chart], style: Style) -> list[str]:
    """The SVG of each chart, in order."""
    return [svg_of(c, style) for c in charts]
