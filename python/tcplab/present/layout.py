"""What both figure writers agree on, without importing either: how many panels share a row,
the shared legend's entries and columns, where long entries wrap, how many markers a time
series gets and how a log axis writes its decades. `draw` (matplotlib, for saved files) and
`svg_figure` (report pages) read these, so a report's figure and a saved one match.
"""

from __future__ import annotations

import math
from typing import Final

from .chart import Chart, Panel
from .labels import format_number
from .style import Style

#: Legend entries longer than this wrap.
LEGEND_CHARS: Final = 34
#: Markers on a time series: about this many per line (enough to tell lines apart).
MARKS_PER_LINE: Final = 12


def grid(chart: Chart, style: Style) -> tuple[int, int]:
    """(columns, rows) of the panel grid: the chart's columns, else the style's."""
    cols = chart.columns or (style.series_columns if chart.kind == "series" else style.columns)
    cols = max(1, min(cols, len(chart.panels)))
    return cols, math.ceil(len(chart.panels) / cols)


def legend_entries(chart: Chart) -> list[str]:
    """Legend entries: the data series in order, then references and marked levels."""
    # dicts as ordered sets: a chart of thousands of flows has thousands of entries
    data: dict[str, None] = {}
    refs: dict[str, None] = {}
    for panel in chart.panels:
        for s in panel.series:
            if s.label:
                (refs if s.reference else data).setdefault(s.label)
        for _, label in panel.hlines:
            refs.setdefault(label)
    return [*data, *(r for r in refs if r not in data)]


def legend_columns(chart: Chart, style: Style) -> int:
    """Columns of a legend below the panels: as many as the widest data entry allows (a
    long reference entry just widens its column)."""
    entries = legend_entries(chart)
    if not entries:
        return 1
    data = [s.label for p in chart.panels for s in p.series if not s.reference] or entries
    longest = min(max(len(e) for e in data), LEGEND_CHARS)
    entry_pt = (longest * 0.55 + 4.0) * style.small_pt
    return max(1, min(len(entries), int(style.width_in * 72 * 0.95 // entry_pt)))


_SUPERSCRIPT: Final = str.maketrans(
    "-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079"
)


def decade_label(v: float, _pos: object = None) -> str:
    """A log axis' tick label: a power of ten as 10 with a superscript exponent (10⁻⁵) in
    plain text, where matplotlib's default writes mathtext, whose parser cost more than
    drawing the panel; any other value as a number."""
    if v > 0:
        k = round(math.log10(v))
        if math.isclose(v, 10.0**k, rel_tol=1e-9):
            return "10" + str(k).translate(_SUPERSCRIPT)
    return format_number(v, 2)


def zero_break_decades(panel: Panel) -> tuple[list[float], float, float]:
    """The decade ticks right of a log axis' zero break (from the smallest positive x on,
    within half a decade of the data), and the smallest and largest positive x."""
    xs = sorted({float(p.x) for s in panel.series for p in s.points if float(p.x) > 0})
    low, high = xs[0], xs[-1]
    first = math.floor(math.log10(low) + 1e-9)
    last = math.ceil(math.log10(high) - 1e-9)
    return (
        [10.0**k for k in range(first, last + 1) if low / 1.5 <= 10.0**k <= high * 1.5],
        low,
        high,
    )
