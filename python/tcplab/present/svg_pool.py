"""The figures of an HTML page (a report, `tcplab compare`) as inline SVG, written by
`svg_figure` in this process.

Drawing a figure costs milliseconds here, so the page's figures are drawn one after the
other: a pool of worker processes would cost more to start than it saves. (They were drawn
by matplotlib in forked workers once, seconds per report.) Ctrl-C stops the drawing where it
is, like any other part of the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType

from .chart import Chart
from .style import Style
from .svg_figure import svg_figure


def svg_of(chart: Chart, style: Style) -> str:
    """One figure as page SVG (no caption in the figure: the page writes it)."""
    return svg_figure(chart, style)


class Drawer:
    """Charts in, SVGs out in the same order: `add` each chart as it is ready, then `svgs`.
    A context manager, so a page builder reads the same whether drawing is immediate or
    not."""

    def __init__(self, style: Style) -> None:
        self.style = style
        self._done: list[str] = []

    def add(self, chart: Chart) -> None:
        self._done.append(svg_of(chart, self.style))

    def svgs(self) -> list[str]:
        """The SVG of every chart added, in order."""
        out, self._done = self._done, []
        return out

    def __enter__(self) -> Drawer:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._done = []


def svgs_of(charts: Sequence[Chart], style: Style) -> list[str]:
    """The SVG of each chart, in order."""
    return [svg_of(c, style) for c in charts]
