"""Figures of a stored study revision: `chart` builds the data of a plot kind (`PLOTS`),
`figure` draws it. What each kind shows is decided in `charts`, how it looks in `draw` and
`style`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError
from ..study.store import Store
from .chart import Chart
from .charts import series_chart, shares_chart, summary_chart, supported
from .plotspecs import PLOTS, SAVE_FORMATS, PlotSpec
from .study_view import Selection, StudyView, view_of
from .style import Style, make_style

if TYPE_CHECKING:  # matplotlib only where a figure is drawn with it, not for reports
    from matplotlib.figure import Figure


def _info(runs: pd.DataFrame, store: Store) -> Mapping[str, Any]:
    study = str(runs["study"].iloc[0])
    revision = int(runs["revision"].iloc[0])
    info = dict(store.revision_info(study, revision))
    info.setdefault("study", study)
    info["revision"] = revision
    return info


def chart(
    name: str,
    runs: pd.DataFrame,
    store: Store,
    selection: Selection | None = None,
    view: StudyView | None = None,
    reruns: dict[str, Any] | None = None,
) -> Chart:
    """The data of plot kind `name` for one study revision's runs (`reruns`: stored runs
    simulated again for the packet-level kinds, kept between figures by the caller)."""
    spec = PLOTS.get(name)
    if spec is None:
        raise ScenarioError(f"--kind = {name!r}: unknown plot; allowed: {', '.join(PLOTS)}")
    if runs.empty:
        raise ScenarioError(f"{store.path}: no runs to plot")
    view = view or view_of(runs, _info(runs, store))
    sel = selection or Selection()
    check_selection(spec, sel)
    if spec.kind == "summary":
        return summary_chart(spec, view)
    if spec.kind == "shares":
        return shares_chart(spec, view, runs, store, sel)
    if spec.kind == "trace":
        from .trace_plot import chart_from_run

        return chart_from_run(name, store, view, runs, sel, reruns=reruns)
    return series_chart(spec, view, runs, store, sel)


def check_selection(spec: PlotSpec, sel: Selection) -> None:
    """A choice of runs only means something to a time-series kind."""
    if spec.kind == "summary" and not sel.empty:
        series = ", ".join(n for n, p in PLOTS.items() if p.kind != "summary")
        raise ScenarioError(
            f"--run/--seed/--point: --kind {spec.name} summarizes every run of the grid; "
            f"allowed: with a time-series kind ({series})"
        )


def figure(
    name: str,
    runs: pd.DataFrame,
    store: Store,
    style: Style | None = None,
    selection: Selection | None = None,
    *,
    caption: bool | None = None,
) -> Figure:
    from .draw import render

    return render(chart(name, runs, store, selection), style or make_style(), caption=caption)


def available(runs: pd.DataFrame, store: Store | None = None) -> Sequence[str]:
    """The plot kinds this study supports (fairness and shares need several flows)."""
    info: Mapping[str, Any] = _info(runs, store) if store is not None else {}
    view = view_of(runs, info)
    return [n for n, spec in PLOTS.items() if supported(spec, view)]


__all__ = [
    "PLOTS",
    "SAVE_FORMATS",
    "PlotSpec",
    "available",
    "chart",
    "figure",
]
