"""Figures from the results database. Plot kinds are data (`PLOTS`), drawn with matplotlib
(Agg backend, no display needed) to SVG for reports or to PNG/SVG/PDF files.

Axes are chosen from the study (`axes.study_axes`): x is the swept error rate (log scale) or
else the numeric key with most values; one line per combination of the other swept keys
(algorithm first); one panel per variant. Error bars are 95 % confidence intervals across
repetitions.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from typing import Final

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd  # type: ignore[import-untyped]
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ..errors import ScenarioError
from ..study.aggregate import aggregate
from ..study.axes import LINE, StudyAxes, is_error_rate, line_labels, study_axes
from ..study.store import Store
from .plotspecs import PLOTS, SAVE_FORMATS, PlotSpec, check_figure_path


def axes_of(runs: pd.DataFrame) -> StudyAxes:
    """The x key and the line keys of a study's runs."""
    return study_axes(runs)[1]


def _prepared(runs: pd.DataFrame) -> tuple[pd.DataFrame, StudyAxes]:
    """Aggregated grid points with numeric axes and a `line` label column."""
    df, axes = study_axes(runs)
    agg = aggregate(df)
    agg[LINE] = line_labels(agg, axes.lines)
    return agg, axes


def _panels(df: pd.DataFrame) -> list[str]:
    return sorted(df["variant"].dropna().unique().tolist()) or [""]


def _fig(n_panels: int, title: str, n_lines: int = 0) -> tuple[Figure, list[Axes]]:
    # Room beside each panel for a legend of many lines (see `_legend`).
    width = 5.2 + (0.0 if n_lines <= 8 else 1.6 * (1 + n_lines // 16))
    fig, axs = plt.subplots(1, n_panels, figsize=(width * n_panels, 3.8), squeeze=False)
    fig.suptitle(title)
    return fig, list(axs[0])


_STYLES: Final = ("-", "--", ":", "-.")


def _legend(ax: Axes) -> None:
    """Inside the axes for a few lines; beside them (in columns) when there are many."""
    n = len(ax.get_legend_handles_labels()[1])
    if n <= 8:
        ax.legend(fontsize=7)
    else:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), ncol=1 + n // 16)


def metric_figure(spec: PlotSpec, runs: pd.DataFrame) -> Figure:
    agg, axes = _prepared(runs)
    x = axes.x
    panels = _panels(agg)
    fig, axs = _fig(len(panels), spec.title, agg[LINE].nunique() + 1)
    for ax, variant in zip(axs, panels, strict=True):
        sub = agg[agg["variant"] == variant] if variant else agg
        for i, (label, g) in enumerate(sub.groupby(LINE, sort=True)):
            if x is None:
                continue
            g = g.sort_values(x)
            ax.errorbar(
                g[x],
                g[f"{spec.column}_mean"] * spec.scale,
                yerr=_errors(g, spec),
                marker="o",
                ms=3,
                capsize=2,
                label=str(label),
                # Ten colours repeat: the line style tells the 11th line from the 1st.
                ls=_STYLES[(i // 10) % len(_STYLES)],
            )
        if x is not None and spec.reference and spec.reference in sub:
            ref = sub.groupby(x)[spec.reference].first().sort_index()
            ax.plot(ref.index, ref.to_numpy() * spec.scale, "k--", lw=1, label=spec.reference_label)
        if _logx(sub, x):
            ax.set_xscale("log")
        ax.set_ylim(bottom=0)  # every metric here is non-negative; CIs can dip below 0
        ax.set_xlabel(axes.x_label)
        ax.set_ylabel(spec.ylabel)
        ax.set_title(variant or "")
        ax.grid(alpha=0.3)
        _legend(ax)
    fig.tight_layout()
    return fig


def _errors(g: pd.DataFrame, spec: PlotSpec) -> list[list[float]]:
    """Error bars below and above the mean: the 95 % interval clipped to the metric's range
    (aggregate.summarize), none where it is undefined."""
    mean = g[f"{spec.column}_mean"]
    low = (mean - g[f"{spec.column}_ci_low"]).fillna(0).clip(lower=0) * spec.scale
    high = (g[f"{spec.column}_ci_high"] - mean).fillna(0).clip(lower=0) * spec.scale
    return [low.tolist(), high.tolist()]


def _logx(df: pd.DataFrame, x: str | None) -> bool:
    if x is None:
        return False
    col = pd.to_numeric(df[x], errors="coerce").dropna()
    return is_error_rate(x) or (
        len(col) > 0 and bool((col > 0).all()) and col.max() / col.min() > 100
    )


def bars_figure(spec: PlotSpec, runs: pd.DataFrame) -> Figure:
    """Grouped bars: one group per x value, one bar per line value (mean ± 95 % CI)."""
    agg, axes = _prepared(runs)
    x = axes.x
    panels = _panels(agg)
    fig, axs = _fig(len(panels), spec.title, agg[LINE].nunique())
    for ax, variant in zip(axs, panels, strict=True):
        sub = agg[agg["variant"] == variant] if variant else agg
        xs = sorted(sub[x].dropna().unique()) if x else [None]
        labels = sorted(sub[LINE].unique())
        width = 0.8 / max(len(labels), 1)
        for j, label in enumerate(labels):
            g = sub[sub[LINE] == label]
            means, below, above = [], [], []
            for xv in xs:
                cell = g[g[x] == xv] if x else g
                means.append(float(cell[f"{spec.column}_mean"].mean()) * spec.scale)
                low, high = _errors(cell, spec)
                below.append(sum(low) / len(low) if low else 0.0)
                above.append(sum(high) / len(high) if high else 0.0)
            pos = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(xs))]
            ax.bar(pos, means, width=width, yerr=[below, above], capsize=2, label=str(label))
        ax.set_xticks(
            range(len(xs)),
            [axes.format_x(v, digits=3) for v in xs],
            rotation=45,
            fontsize=7,
        )
        ax.set_xlabel(axes.x_label)
        ax.set_ylabel(spec.ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(variant or "")
        ax.grid(alpha=0.3, axis="y")
        if axes.lines:
            _legend(ax)
    fig.tight_layout()
    return fig


def chosen_runs(runs: pd.DataFrame, max_per_variant: int = 8) -> pd.DataFrame:
    """Representative runs for time series: per (variant, line value), the lowest seed at the
    median value of the x parameter; at most `max_per_variant` lines per variant."""
    df, axes = study_axes(runs)
    df[LINE] = line_labels(df, axes.lines)
    if axes.x is not None:
        xs = sorted(df[axes.x].dropna().unique())
        df = df[df[axes.x] == xs[len(xs) // 2]]
    chosen = df.sort_values("seed").groupby(["variant", LINE], dropna=False).head(1)
    # Lines in label order, as in the metric figures, so an algorithm keeps its colour.
    chosen = chosen.sort_values(["variant", LINE], na_position="first")
    return chosen.groupby("variant", dropna=False, sort=False).head(max_per_variant)


#: Variants shown side by side in a time-series figure.
_MAX_SERIES_PANELS: Final = 4
#: A time series whose peak exceeds this multiple of its 99th percentile (Hybla's slow
#: start can open cwnd to 65,000 segments in one ACK) has its y axis cut at the percentile.
_PEAK_OVER_P99: Final = 5.0


def _clip_peaks(ax: Axes, values: list[float]) -> None:
    """Keep the bulk of a time series readable when a short spike dwarfs it; the cut is
    stated in the panel."""
    finite = sorted(v for v in values if v == v)
    if not finite:
        return
    p99, peak = finite[int(0.99 * (len(finite) - 1))], finite[-1]
    if p99 > 0 and peak > _PEAK_OVER_P99 * p99:
        ax.set_ylim(0, 1.25 * p99)
        ax.text(
            0.01, 0.98, f"peak {peak:.4g} off scale", transform=ax.transAxes, fontsize=7, va="top"
        )


def series_figure(spec: PlotSpec, runs: pd.DataFrame, store: Store) -> Figure:
    """One panel per variant (their rates and RTTs differ too much to share axes), one line
    per algorithm/setting: the first flow of a representative run."""
    chosen = chosen_runs(runs)
    variants = _panels(chosen)[:_MAX_SERIES_PANELS]
    n_lines = int(chosen.groupby("variant", dropna=False).size().max())
    fig, axs = _fig(len(variants), spec.title, n_lines)
    for ax, variant in zip(axs, variants, strict=True):
        plotted: list[float] = []
        for _, r in chosen[chosen["variant"].fillna("") == variant].iterrows():
            s = store.series(str(r["run_id"]))
            s = s[s["flow_id"] == s["flow_id"].min()]
            label = str(r[LINE]) if r[LINE] and r[LINE] != "all" else "run"
            ys = s[spec.column] * spec.scale
            ax.plot(s["t_s"], ys, lw=1, label=label)
            plotted += ys.astype(float).tolist()
        _clip_peaks(ax, plotted)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(spec.ylabel)
        ax.set_title(variant)
        ax.grid(alpha=0.3)
        _legend(ax)
    fig.tight_layout()
    return fig


def shares_figure(spec: PlotSpec, runs: pd.DataFrame, store: Store) -> Figure:
    """Each flow's share of the interval goodput in one representative multi-flow run per
    variant: the curves meet at 1/N when the flows converge to a fair share."""
    multi = runs[runs["n_flows"] > 1]
    chosen = chosen_runs(multi if not multi.empty else runs)
    chosen = chosen.drop_duplicates("variant").head(4)
    fig, axs = _fig(len(chosen), spec.title)
    for ax, (_, r) in zip(axs, chosen.iterrows(), strict=True):
        s = store.series(str(r["run_id"]))
        wide = s.pivot_table(index="t_s", columns="flow_id", values=spec.column, aggfunc="sum")
        total = wide.sum(axis=1).replace(0.0, float("nan"))
        for flow in wide.columns:
            ax.plot(wide.index, wide[flow] / total, lw=1, label=f"flow {flow}")
        n = len(wide.columns)
        ax.axhline(1.0 / n, color="k", ls="--", lw=1, label=f"fair share 1/{n}")
        ax.set_ylim(0, 1)
        ax.set_xlabel("time (s)")
        ax.set_ylabel(spec.ylabel)
        ax.set_title(" ".join(str(v) for v in (r["variant"], r[LINE]) if v and v != "all"))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def figure(name: str, runs: pd.DataFrame, store: Store) -> Figure:
    spec = PLOTS.get(name)
    if spec is None:
        raise ScenarioError(f"plot = {name!r}: unknown plot; allowed: {', '.join(PLOTS)}")
    if runs.empty:
        raise ScenarioError(f"{store.path}: no runs to plot")
    if spec.kind == "metric":
        return metric_figure(spec, runs)
    if spec.kind == "bars":
        return bars_figure(spec, runs)
    if spec.kind == "shares":
        return shares_figure(spec, runs, store)
    return series_figure(spec, runs, store)


def to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    # No date/creator metadata: reports of the same results are identical.
    fig.savefig(
        buf,
        format="svg",
        bbox_inches="tight",
        metadata={"Date": None, "Creator": None, "Format": None, "Type": None},
    )
    plt.close(fig)
    text = re.sub(r"<metadata>.*?</metadata>", "", buf.getvalue(), flags=re.S)
    return text[text.index("<svg") :]


def save(fig: Figure, path: str) -> None:
    try:
        check_figure_path(path)
    except ScenarioError:
        plt.close(fig)
        raise
    fig.savefig(path, dpi=150, bbox_inches="tight")  # keeps a legend beside the axes
    plt.close(fig)


__all__ = ["PLOTS", "SAVE_FORMATS", "PlotSpec", "available", "figure", "save", "to_svg"]


def available(runs: pd.DataFrame) -> Sequence[str]:
    """Plots that make sense for this study."""
    x = axes_of(runs).x
    multi = bool((runs["n_flows"] > 1).any()) if "n_flows" in runs else False
    # Shares and Jain's index say nothing about one flow alone (its index is always 1).
    per_flows = ("shares", "fairness")
    return [
        n
        for n, p in PLOTS.items()
        if (p.kind != "metric" or x is not None) and (multi or n not in per_flows)
    ]
