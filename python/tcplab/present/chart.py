"""A figure as data: what each panel shows, in the units shown, before anything is drawn.

Building a figure (`summary`, `series`, `shares` in `charts`) and drawing it (`draw`) are
separate, so the numbers of a figure can be written out exactly as plotted (`--data`, a CSV
of `rows()`), tests can check that every point of a table is in its figure, and `compare`
can lay runs of different sources over each other with the same drawing code.

A `Chart` has panels; a panel has series (one legend entry each); a series has points
(x, y and optionally the ends of an error bar, all in the axis units). X values are numbers
(a numeric axis) or category names (bars). Nothing here imports pandas or matplotlib.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

from .style import LineStyle

XScale = Literal["linear", "log", "category"]
#: How a time series is drawn: a line through its points (with a few markers), a step
#: function holding each value until the next point, markers at every point, or a vertical
#: stroke from `low` to `high` at each point's x (a range such as a SACK block).
Mark = Literal["line", "steps", "points", "strokes"]


@dataclass(frozen=True)
class Point:
    """One plotted value. `low`/`high` are the error bar's ends (NaN: no bar); `n` the runs
    behind it; `note` where it comes from (a run and flow), exported with it. An x of 0 on a
    log axis is drawn at `Panel.zero_at`, left of an axis break."""

    x: float | str
    y: float
    low: float = math.nan
    high: float = math.nan
    n: int = 1
    note: str = ""  # where the value comes from (a run id, a seed), exported with it


@dataclass
class Series:
    label: str
    style: LineStyle
    points: list[Point] = field(default_factory=list)
    #: drawn as a line through its points (summaries over a numeric x, time series) or as
    #: markers only (the zero of a log axis is never joined to the rest)
    joined: bool = True
    #: a reference curve (theory, link rate): thin, black, not a data series
    reference: bool = False
    #: time series only: how the points are drawn
    mark: Mark = "line"


@dataclass
class Panel:
    title: str
    xlabel: str
    ylabel: str
    series: list[Series] = field(default_factory=list)
    xscale: XScale = "linear"
    #: where x = 0 is drawn on a log axis (left of the break), None when no point is at 0
    zero_at: float | None = None
    #: category order of a bar panel
    categories: list[str] = field(default_factory=list)
    #: y range of the panel (None: from the data, from 0)
    ylim: tuple[float, float] | None = None
    #: short notes drawn inside the frame, top left ("peak 94.9 off scale")
    notes: list[str] = field(default_factory=list)
    #: horizontal reference lines: (y, label)
    hlines: list[tuple[float, str]] = field(default_factory=list)


@dataclass
class Chart:
    name: str
    title: str
    panels: list[Panel]
    legend_title: str
    caption: str
    kind: Literal["lines", "bars", "series"] = "lines"
    #: the legend is per figure (every panel has the same entries) unless False
    shared_legend: bool = True
    #: False when the axis already names every series (one bar per category)
    legend: bool = True
    columns: int | None = None  # panels per row (None: the style's)

    def rows(self) -> Iterator[dict[str, object]]:
        """Every plotted value, one row each, in the axis units."""
        for panel in self.panels:
            for s in panel.series:
                for p in s.points:
                    yield {
                        "panel": panel.title,
                        "series": s.label,
                        "reference": s.reference,
                        "x_label": panel.xlabel,
                        "x": p.x,
                        "y_label": panel.ylabel,
                        "y": p.y,
                        "ci_low": p.low,
                        "ci_high": p.high,
                        "n": p.n,
                        "source": p.note,
                    }

    def to_csv(self) -> str:
        """The plotted numbers, with the caption as a leading comment line."""
        buf = io.StringIO()
        buf.write(f"# {self.title}: {self.caption}\n")
        fields = (
            "panel",
            "series",
            "reference",
            "x_label",
            "x",
            "y_label",
            "y",
            "ci_low",
            "ci_high",
            "n",
            "source",
        )
        writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        writer.writeheader()
        for row in self.rows():
            writer.writerow({k: _csv_value(v) for k, v in row.items()})
        return buf.getvalue()


def _csv_value(v: object) -> object:
    if isinstance(v, float):
        return "" if math.isnan(v) else repr(v)
    return v


def data_points(chart: Chart) -> Sequence[tuple[str, str, Point]]:
    """(panel, series, point) of every data point (references left out)."""
    return [
        (panel.title, s.label, p)
        for panel in chart.panels
        for s in panel.series
        if not s.reference
        for p in s.points
    ]
