"""The figures of a study revision as `Chart`s: summaries over the grid, time series of
chosen runs and per-flow shares. What is drawn is decided here; `draw` only draws it.

Summaries: one panel per variant. Over a numeric x (the swept error rate first) each line
is a combination of the other swept keys, a point the mean over the repetitions and its bar
the 95 % confidence interval of that mean, clipped to what the metric can be (Jain's index
and utilizations in [0, 1], rates from 0 to the bottleneck's rate). Zero on a log axis is
drawn left of a break instead of vanishing. With nothing numeric swept the panels are bars,
one group per value of the first line key (the algorithm). Captions say what was fixed,
how many repetitions each point has and what the bars are.

Time series: which run each line is from is chosen by `study_view.pick_runs` and stated in
the caption; multi-flow runs show every flow.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError
from ..results.metrics import METRIC_BY_NAME
from ..results.series import by_flow
from ..study.aggregate import t975
from ..study.store import Store, param_columns
from .chart import Chart, Panel, Point, Series
from .plotspecs import PlotSpec
from .study_view import (
    LINE,
    Selection,
    StudyView,
    log_x,
    n_text,
    natural_order,
    number,
    pick_runs,
    plain_number,
    zero_position,
)
from .style import LineStyle, assign_styles, line_style

#: Time-series panels in one figure when each run gets its own panel (multi-flow runs).
MAX_RUN_PANELS: Final = 12
#: A time series whose peak exceeds this multiple of its 99th percentile (Hybla's slow
#: start can open cwnd to 65,000 segments in one ACK) has its y axis cut at the percentile.
PEAK_OVER_P99: Final = 5.0


def _refuse(spec: PlotSpec, view: StudyView) -> None:
    if spec.needs_flows > 1 and not view.multi_flow:
        raise ScenarioError(
            f"--kind {spec.name}: every run of study {view.study!r} has one flow, and "
            f"{spec.per_flow_reason}; allowed: a study with several flows per run"
        )


def supported(spec: PlotSpec, view: StudyView) -> bool:
    try:
        _refuse(spec, view)
    except ScenarioError:
        return False
    return True


# ---------------------------------------------------------------- summaries over the grid


def _grid(view: StudyView, spec: PlotSpec) -> pd.DataFrame:
    """Aggregated grid points with the line label and the bottleneck rate of each."""
    agg = view.points
    keys = [c for c in ("variant", *param_columns(view.runs)) if c in view.runs]
    first = view.runs.groupby(keys, dropna=False, sort=False).first().reset_index()
    extra = [c for c in (LINE, "rate_bps", "n_flows") if c in first]
    agg = agg.merge(first[[*keys, *extra]], on=keys, how="left")
    return agg


def _bounds(spec: PlotSpec, row: Mapping[str, Any]) -> tuple[float, float]:
    """The values the plotted metric can take at one grid point, in axis units."""
    metric = METRIC_BY_NAME.get(spec.column)
    low, high = (metric.low, metric.high) if metric else (-math.inf, math.inf)
    if spec.link_bounded and row.get("rate_bps") == row.get("rate_bps"):
        high = min(high, float(row["rate_bps"]))
    return low * spec.scale, high * spec.scale


def _point_columns(spec: PlotSpec, agg: pd.DataFrame, *more: str) -> list[str]:
    """The columns `_point` reads, and `more`, that `agg` has."""
    col = spec.column
    wanted = [f"{col}_{s}" for s in ("mean", "ci_low", "ci_high", "ci95")] + ["n", "rate_bps"]
    return [c for c in dict.fromkeys([*wanted, *more]) if c in agg]


def _point(spec: PlotSpec, row: Mapping[str, Any], x: float | str) -> Point:
    col = spec.column
    mean = float(row[f"{col}_mean"]) * spec.scale
    low, high = _bounds(spec, row)
    lo, hi = float(row[f"{col}_ci_low"]), float(row[f"{col}_ci_high"])
    if lo == lo and hi == hi and row[f"{col}_ci95"] > 0:
        lo, hi = max(lo * spec.scale, low), min(hi * spec.scale, high)
    else:
        lo = hi = math.nan
    return Point(x, mean, lo, hi, int(row["n"]))


def _summary_caption(spec: PlotSpec, view: StudyView, agg: pd.DataFrame, zero: bool) -> str:
    col = spec.column
    ns = [int(n) for n in agg["n"]]
    seeds = view.seeds_text(view.runs["seed"].tolist())
    if max(ns) == 1:
        parts = [f"{spec.what}: one run per point ({seeds})"]
    else:
        parts = [f"{spec.what}: the mean over {n_text(ns)} repetitions ({seeds}) per point"]
    half = agg[f"{col}_ci95"]
    if bool((half.fillna(0) == 0).all()):
        parts.append(
            "no error bars: every repetition gave the same value (deterministic)"
            if max(ns) > 1
            else "no error bars"
        )
    else:
        metric = METRIC_BY_NAME.get(col)
        clip = ""
        if spec.link_bounded:
            clip = ", clipped to 0 … the bottleneck rate"
        elif metric and math.isfinite(metric.high):
            clip = f", clipped to [{number(metric.low)}, {number(metric.high)}]"
        elif metric:
            clip = ", clipped at 0"
        bars = f"error bars: 95 % confidence interval of the mean (Student t){clip}"
        if min(ns) <= 3:
            t = t975(min(ns) - 1)
            bars += (
                f"; with n = {min(ns)} the t factor is {t:.3g}, so an interval spans "
                f"±{t / math.sqrt(min(ns)):.2g} standard deviations of one run"
            )
        if bool((half == 0).any()):
            bars += "; points without a bar are deterministic (identical repetitions)"
        parts.append(bars)
    if zero and view.axes.x is not None:
        parts.append(
            f"{view.label(view.axes.x).name} = 0 is drawn left of the break (//) in the log axis"
        )
    if spec.reference_label and spec.reference and not view.multi_flow:
        parts.append(f"dashed black: {spec.reference_label}")
    fixed = view.fixed_text()
    if fixed:
        parts.append(f"fixed: {fixed}")
    variants = view.variants_text()
    if variants:
        parts.append(f"panels (variants, each changing only what it lists): {variants}")
    return ". ".join(p[0].upper() + p[1:] for p in parts) + "."


def _styles(labels: Sequence[str], view: StudyView) -> dict[str, LineStyle]:
    """One look per line label, the same in every figure of the study."""
    every = sorted(view.runs[LINE].dropna().unique().tolist())
    keyed = {lab: tuple(lab.split(", ")) for lab in every}
    looks = assign_styles([keyed[lab] for lab in every])
    return {lab: looks[keyed[lab]] for lab in labels if lab in keyed}


def summary_chart(spec: PlotSpec, view: StudyView) -> Chart:
    """The metric of `spec` over the grid (lines over a numeric x, else bars)."""
    _refuse(spec, view)
    agg = _grid(view, spec)
    if f"{spec.column}_mean" not in agg or agg[f"{spec.column}_mean"].isna().all():
        raise ScenarioError(
            f"--kind {spec.name}: study {view.study!r} has no {spec.what} values (its runs "
            f"have no flows of that kind); allowed: another --kind"
        )
    if view.x is not None:
        return _lines(spec, view, agg)
    return _bars(spec, view, agg)


def _lines(spec: PlotSpec, view: StudyView, agg: pd.DataFrame) -> Chart:
    x = view.x
    assert x is not None
    xlab = view.label(x)
    xs_all = [float(v) * xlab.factor for v in agg[x].dropna().unique()]
    logx = log_x(xs_all, x)
    zero_at = zero_position(xs_all) if logx else None
    looks = _styles(agg[LINE].unique().tolist(), view)
    # A grid point's row is wide: its points read these columns as arrays once.
    columns = {c: agg[c].to_numpy() for c in _point_columns(spec, agg, x)}
    factor = xlab.factor
    panels: list[Panel] = []
    for variant in view.variants:
        sub = agg[agg["variant"].fillna("") == variant] if variant else agg
        panel = Panel(
            title=variant,
            xlabel=xlab.text,
            ylabel=spec.ylabel,
            xscale="log" if logx else "linear",
            zero_at=zero_at,
        )
        for label, g in sub.groupby(LINE, sort=True):
            g = g.sort_values(x)
            points = [
                _point(spec, {c: columns[c][i] for c in columns}, float(columns[x][i]) * factor)
                for i in agg.index.get_indexer(g.index)
            ]
            look = looks.get(str(label)) or line_style(0)
            panel.series.append(Series(str(label), look, points))
        if spec.reference and spec.reference in sub and not view.multi_flow:
            ref = sub.groupby(x)[spec.reference].first().sort_index()
            ref = ref[ref.notna()]
            if not ref.empty:
                pts = [Point(float(k) * xlab.factor, float(v) * spec.scale) for k, v in ref.items()]
                panel.series.append(
                    Series(spec.reference_label, line_style(0), pts, reference=True)
                )
        bounded = METRIC_BY_NAME.get(spec.column)
        if bounded and bounded.high == 1.0:
            panel.ylim = (0.0, 1.05)
        panels.append(panel)
    caption = _summary_caption(spec, view, agg, zero_at is not None)
    return Chart(spec.name, spec.title, panels, view.legend_title, caption, "lines")


def _bars(spec: PlotSpec, view: StudyView, agg: pd.DataFrame) -> Chart:
    """Nothing numeric is swept: a bar per grid point, grouped by the first line key's
    value (the algorithm), each in that line's colour; the other line keys, if any, are the
    bars of a group."""
    lines = view.axes.lines
    first, rest = (lines[0], lines[1:]) if lines else (None, ())
    if first is None:
        cat_of = {i: (v or "all runs") for i, v in agg["variant"].fillna("").items()}
        variants = [""]
    else:
        cat_of = {i: view.value_text(r, first) for i, r in agg.iterrows()}
        variants = view.variants
    if rest:
        hue_of = {i: ", ".join(view.value_text(r, k) for k in rest) for i, r in agg.iterrows()}
        hues = sorted(set(hue_of.values()))
        looks = {h: line_style(i) for i, h in enumerate(hues)}
        legend = ", ".join(view.label(k).text for k in rest)
    else:  # one bar per category, coloured as that line is everywhere else
        hue_of = {i: str(agg.at[i, LINE]) if first else cat_of[i] for i in agg.index}
        hues = sorted(set(hue_of.values()))
        looks = _styles(hues, view) if first else {}
        looks = {h: looks.get(h) or line_style(j) for j, h in enumerate(hues)}
        legend = ""
    panels: list[Panel] = []
    for variant in variants:
        sub = agg[agg["variant"].fillna("") == variant] if variant else agg
        cats = sorted({cat_of[i] for i in sub.index}, key=natural_order)
        panel = Panel(
            title=variant,
            xlabel=view.label(first).text if first else "variant",
            ylabel=spec.ylabel,
            xscale="category",
            categories=cats,
        )
        for hue in hues:
            points = [_point(spec, r, cat_of[i]) for i, r in sub.iterrows() if hue_of[i] == hue]
            if points:
                panel.series.append(Series(hue, looks[hue], points, joined=False))
        metric = METRIC_BY_NAME.get(spec.column)
        if metric and metric.high == 1.0:
            panel.ylim = (0.0, 1.05)
        panels.append(panel)
    caption = _summary_caption(spec, view, agg, False)
    return Chart(spec.name, spec.title, panels, legend, caption, "bars", legend=bool(rest))


# ---------------------------------------------------------------- time series


def _clip_note(panel: Panel, values: Sequence[float], scale_unit: str) -> None:
    """Keep the bulk of a time series readable when a short spike dwarfs it; the cut is
    stated inside the panel."""
    finite = sorted(v for v in values if v == v)
    if not finite:
        return
    p99, peak = finite[int(0.99 * (len(finite) - 1))], finite[-1]
    if p99 > 0 and peak > PEAK_OVER_P99 * p99:
        panel.ylim = (0.0, 1.25 * p99)
        panel.notes.append(f"peak {plain_number(peak)} {scale_unit} off scale".replace("  ", " "))


def _above_link(panel: Panel, values: Sequence[float], rate: float) -> int:
    """Mark samples above the bottleneck rate; their count."""
    over = sum(1 for v in values if v > rate * 1.0001)
    if over:
        panel.notes.append(f"{over} sample{'s' if over > 1 else ''} above the bottleneck rate")
    return over


def _unit(ylabel: str) -> str:
    return ylabel[ylabel.rfind("(") + 1 : -1] if ylabel.endswith(")") else ""


def series_chart(
    spec: PlotSpec, view: StudyView, raw: pd.DataFrame, store: Store, sel: Selection
) -> Chart:
    """`spec.column` over time in the chosen runs: one panel per variant with a line per
    grid point's run (single-flow studies), or one panel per run with a line per flow."""
    picked = pick_runs(raw, view, sel)
    chosen = picked.runs
    per_run = view.multi_flow
    panels: list[Panel] = []
    shown = chosen
    if per_run and len(chosen) > MAX_RUN_PANELS:
        shown = chosen.head(MAX_RUN_PANELS)
    looks = _styles(shown[LINE].unique().tolist(), view)
    by_panel: dict[str, Panel] = {}
    for _, r in shown.iterrows():
        s = view.series(store, r)
        variant = str(r["variant"] or "")
        if per_run:
            key = f"{variant}: {_flows_title(s)}" if variant else _flows_title(s)
        else:
            key = variant
        panel = by_panel.get(key)
        if panel is None:
            panel = Panel(title=key, xlabel="time (s)", ylabel=spec.ylabel)
            by_panel[key] = panel
            panels.append(panel)
        for flow, f in by_flow(s, ("t_s", spec.column)):
            # one note for the line's points (reading the row per point cost more than
            # the points: 600 s runs have 600 each)
            note = f"{r['run_id']} flow {flow}"
            pts = [
                Point(float(t), float(y) * spec.scale, note=note)
                for t, y in zip(f["t_s"], f[spec.column], strict=True)
                if y == y
            ]
            if per_run:  # the panel's title names the algorithms, in flow order
                label = f"flow {flow}"
                look = line_style(int(flow))
            else:
                label = str(r[LINE])
                look = looks.get(label) or line_style(0)
            panel.series.append(Series(label, look, pts))
        if spec.link_bounded and r.get("rate_bps") == r.get("rate_bps"):
            rate = float(r["rate_bps"]) * spec.scale
            panel.hlines = [(rate, "bottleneck rate")]
    unit = _unit(spec.ylabel)
    above = 0
    for panel in panels:
        values = [p.y for s in panel.series for p in s.points]
        if panel.hlines:
            above += _above_link(panel, values, panel.hlines[0][0])
        _clip_note(panel, values, unit)
    caption = _series_caption(spec, view, picked.how, len(chosen), len(shown), per_run)
    if above:
        caption += (
            " Samples above the bottleneck rate (dashed) are not a measurement error: data "
            "received behind a hole is delivered to the application at once when the "
            "retransmission fills it, so one interval gets more than the link carried in it."
        )
    legend = "flow" if per_run else view.legend_title
    return Chart(
        spec.name,
        spec.title,
        panels,
        legend,
        caption,
        "series",
        shared_legend=not per_run or _same_flows(panels),
    )


def _flows_title(s: pd.DataFrame) -> str:
    """ "flow 0 bbr, flow 1 cubic"; "flows 0-3 reno" when they run the same algorithm."""
    if "cca" not in s:
        return ""
    ccas = s.groupby("flow_id")["cca"].first().sort_index()
    if ccas.nunique() == 1 and len(ccas) > 1:
        return f"flows {ccas.index[0]}-{ccas.index[-1]} {ccas.iloc[0]}"
    return ", ".join(f"flow {f} {c}" for f, c in ccas.items())


def _same_flows(panels: Sequence[Panel]) -> bool:
    names = {tuple(s.label for s in p.series) for p in panels}
    return len(names) == 1


def _series_caption(
    spec: PlotSpec, view: StudyView, how: str, n_runs: int, n_shown: int, per_run: bool
) -> str:
    layout = (
        "one panel per run, a line per flow"
        if per_run
        else "one panel per variant, a line per grid point's run"
    )
    parts = [f"{spec.what}; {layout}", f"runs at {how}" if how else ""]
    if n_shown < n_runs:
        parts.append(
            f"the first {n_shown} of {n_runs} runs are shown; choose others with --point "
            "KEY=VALUE (e.g. --point variant=NAME) or --run ID"
        )
    fixed = view.fixed_text()
    if fixed:
        parts.append(f"fixed: {fixed}")
    return ". ".join(p[0].upper() + p[1:] for p in parts if p) + "."


# ---------------------------------------------------------------- per-flow shares


def shares_chart(
    spec: PlotSpec, view: StudyView, raw: pd.DataFrame, store: Store, sel: Selection
) -> Chart:
    """Each flow's share of the interval goodput in one run per variant (or the chosen
    runs): the curves meet at 1/N when the flows converge to a fair share."""
    _refuse(spec, view)
    picked = pick_runs(raw, view, sel)
    multi = picked.runs[picked.runs["n_flows"] > 1]
    chosen = multi.drop_duplicates("variant").head(MAX_RUN_PANELS) if sel.empty else multi
    chosen = chosen.head(MAX_RUN_PANELS)
    panels: list[Panel] = []
    for _, r in chosen.iterrows():
        s = view.series(store, r)
        wide = s.pivot_table(index="t_s", columns="flow_id", values=spec.column, aggfunc="sum")
        total = wide.sum(axis=1).replace(0.0, float("nan"))
        title = " — ".join(str(v) for v in (r["variant"], r[LINE]) if v)
        panel = Panel(title=title, xlabel="time (s)", ylabel=spec.ylabel, ylim=(0.0, 1.0))
        ccas = s.groupby("flow_id")["cca"].first() if "cca" in s else {}
        for flow in wide.columns:
            share = wide[flow] / total
            pts = [
                Point(float(t), float(v), note=f"{r['run_id']} flow {flow}")
                for t, v in share.items()
                if v == v
            ]
            cca = ccas.get(flow, "") if len(ccas) else ""
            label = f"flow {flow}" + (f" ({cca})" if cca else "")
            panel.series.append(Series(label, line_style(int(flow)), pts))
        n = len(wide.columns)
        panel.hlines = [(1.0 / n, f"fair share 1/{n}")]
        panels.append(panel)
    if not panels:
        raise ScenarioError(
            f"--kind {spec.name}: the chosen runs of study {view.study!r} have one flow each; "
            "allowed: --point/--seed choosing a run with several flows"
        )
    parts = [
        f"{spec.what}: each flow's goodput in an interval over all flows' (1/N = fair)",
        f"one panel per variant, runs at {picked.how}" if picked.how else "one panel per run",
    ]
    fixed = view.fixed_text()
    if fixed:
        parts.append(f"fixed: {fixed}")
    caption = ". ".join(p[0].upper() + p[1:] for p in parts) + "."
    return Chart(
        spec.name,
        spec.title,
        panels,
        "flow (algorithm)",
        caption,
        "series",
        shared_legend=_same_flows(panels),
    )
