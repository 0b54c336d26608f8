"""Figures from the results database. Plot kinds are data (`PLOTS`), drawn with matplotlib
(Agg backend, no display needed) to SVG for reports or to PNG/SVG/PDF files.

Axes are chosen from the study: x is `bottleneck.per` if swept (log scale), else another swept
error rate (`path.segments.1.per`, log scale too), else the first numeric swept key; one line
per value of the algorithm key (`flows.0.cca`, or the first text key); one panel per variant.
Error bars are 95 % confidence intervals across repetitions.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd  # type: ignore[import-untyped]
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from .aggregate import aggregate
from .errors import ScenarioError
from .store import Store, param_columns

Kind = Literal["metric", "bars", "series"]


@dataclass(frozen=True)
class PlotSpec:
    name: str
    title: str
    kind: Kind
    column: str
    ylabel: str
    scale: float = 1.0
    reference: str | None = None
    reference_label: str = ""


PLOTS: Final[dict[str, PlotSpec]] = {
    p.name: p
    for p in (
        PlotSpec(
            "goodput",
            "Goodput",
            "metric",
            "goodput_bps",
            "goodput (Mbit/s)",
            1e-6,
            "mathis_bps",
            "Mathis bound (capped at capacity)",
        ),
        PlotSpec(
            "rtt",
            "Mean RTT",
            "metric",
            "rtt_mean_ms",
            "mean RTT (ms)",
            1.0,
            "base_rtt_ms",
            "physical RTT",
        ),
        PlotSpec(
            "retransmits", "Retransmissions", "metric", "retransmits", "retransmitted segments"
        ),
        PlotSpec(
            "utilization",
            "Link utilization (goodput / capacity)",
            "bars",
            "goodput_utilization",
            "utilization",
        ),
        PlotSpec("fairness", "Jain's fairness index", "bars", "jain_fairness", "Jain index"),
        PlotSpec("cwnd", "Congestion window over time", "series", "cwnd_bytes", "cwnd (kB)", 1e-3),
        PlotSpec("rtt-series", "RTT over time", "series", "rtt_ms", "RTT (ms)"),
        PlotSpec(
            "goodput-series", "Goodput over time", "series", "goodput_bps", "goodput (Mbit/s)", 1e-6
        ),
    )
}


def axes_of(runs: pd.DataFrame) -> tuple[str | None, str | None]:
    """(x parameter, line parameter) for a study's runs."""
    params = param_columns(runs)
    numeric = [p for p in params if pd.api.types.is_numeric_dtype(runs[p])]
    text = [p for p in params if p not in numeric]
    per = sorted((p for p in numeric if _is_error_rate(p)), key=lambda p: p != "bottleneck.per")
    x = per[0] if per else (numeric[0] if numeric else None)
    line = next((p for p in text if p.endswith("cca")), text[0] if text else None)
    return x, line


def _panels(df: pd.DataFrame) -> list[str]:
    return sorted(df["variant"].dropna().unique().tolist()) or [""]


def _fig(n_panels: int, title: str) -> tuple[Figure, list[Axes]]:
    fig, axs = plt.subplots(1, n_panels, figsize=(5.2 * n_panels, 3.8), squeeze=False)
    fig.suptitle(title)
    return fig, list(axs[0])


def metric_figure(spec: PlotSpec, runs: pd.DataFrame) -> Figure:
    agg = aggregate(runs)
    x, line = axes_of(runs)
    panels = _panels(agg)
    fig, axs = _fig(len(panels), spec.title)
    for ax, variant in zip(axs, panels, strict=True):
        sub = agg[agg["variant"] == variant] if variant else agg
        groups = sub.groupby(line) if line else [("all", sub)]
        for label, g in groups:
            if x is None:
                continue
            g = g.sort_values(x)
            ax.errorbar(
                g[x],
                g[f"{spec.column}_mean"] * spec.scale,
                yerr=g[f"{spec.column}_ci95"].fillna(0) * spec.scale,
                marker="o",
                ms=3,
                capsize=2,
                label=str(label),
            )
        if x is not None and spec.reference and spec.reference in sub:
            ref = sub.groupby(x)[spec.reference].first().sort_index()
            ax.plot(ref.index, ref.to_numpy() * spec.scale, "k--", lw=1, label=spec.reference_label)
        if _logx(sub, x):
            ax.set_xscale("log")
        ax.set_ylim(bottom=0)  # every metric here is non-negative; CIs can dip below 0
        ax.set_xlabel(x or "")
        ax.set_ylabel(spec.ylabel)
        ax.set_title(variant or "")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _is_error_rate(key: str) -> bool:
    """A swept packet/bit error rate (`bottleneck.per`, `path.segments.1.per`, ...)."""
    return key.rsplit(".", 1)[-1] in ("per", "ber", "return_per", "return_ber")


def _logx(df: pd.DataFrame, x: str | None) -> bool:
    if x is None:
        return False
    col = pd.to_numeric(df[x], errors="coerce").dropna()
    return _is_error_rate(x) or (
        len(col) > 0 and bool((col > 0).all()) and col.max() / col.min() > 100
    )


def bars_figure(spec: PlotSpec, runs: pd.DataFrame) -> Figure:
    """Grouped bars: one group per x value, one bar per line value (mean ± 95 % CI)."""
    agg = aggregate(runs)
    x, line = axes_of(runs)
    panels = _panels(agg)
    fig, axs = _fig(len(panels), spec.title)
    for ax, variant in zip(axs, panels, strict=True):
        sub = agg[agg["variant"] == variant] if variant else agg
        xs = sorted(sub[x].dropna().unique()) if x else [None]
        labels = sorted(sub[line].dropna().unique()) if line else [None]
        width = 0.8 / max(len(labels), 1)
        for j, label in enumerate(labels):
            g = sub[sub[line] == label] if line else sub
            means, errs = [], []
            for xv in xs:
                cell = g[g[x] == xv] if x else g
                means.append(float(cell[f"{spec.column}_mean"].mean()) * spec.scale)
                errs.append(float(cell[f"{spec.column}_ci95"].fillna(0).mean()) * spec.scale)
            pos = [i + (j - (len(labels) - 1) / 2) * width for i in range(len(xs))]
            ax.bar(pos, means, width=width, yerr=errs, capsize=2, label=str(label))
        ax.set_xticks(
            range(len(xs)),
            [f"{v:g}" if isinstance(v, float) else str(v) for v in xs],
            rotation=45,
            fontsize=7,
        )
        ax.set_xlabel(x or "")
        ax.set_ylabel(spec.ylabel)
        ax.set_ylim(bottom=0)
        ax.set_title(variant or "")
        ax.grid(alpha=0.3, axis="y")
        if line:
            ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def chosen_runs(runs: pd.DataFrame, max_runs: int = 8) -> pd.DataFrame:
    """Representative runs for time series: per (variant, line value), the lowest seed at the
    median value of the x parameter."""
    x, line = axes_of(runs)
    df = runs
    if x is not None:
        xs = sorted(df[x].dropna().unique())
        df = df[df[x] == xs[len(xs) // 2]]
    keys = ["variant"] + ([line] if line else [])
    return df.sort_values("seed").groupby(keys, dropna=False).head(1).head(max_runs)


def series_figure(spec: PlotSpec, runs: pd.DataFrame, store: Store) -> Figure:
    _, line = axes_of(runs)
    chosen = chosen_runs(runs)
    fig, axs = _fig(1, spec.title)
    ax = axs[0]
    for _, r in chosen.iterrows():
        s = store.series(str(r["scenario_hash"]), int(r["seed"]))
        s = s[s["flow"] == s["flow"].min()]
        label = " ".join(str(v) for v in (r["variant"], r[line] if line else "") if v)
        ax.plot(s["t_s"], s[spec.column] * spec.scale, lw=1, label=label or "run")
    ax.set_xlabel("time (s)")
    ax.set_ylabel(spec.ylabel)
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
    return series_figure(spec, runs, store)


def to_svg(fig: Figure) -> str:
    buf = io.StringIO()
    # No date/creator metadata: reports of the same results are identical.
    fig.savefig(
        buf, format="svg", metadata={"Date": None, "Creator": None, "Format": None, "Type": None}
    )
    plt.close(fig)
    text = re.sub(r"<metadata>.*?</metadata>", "", buf.getvalue(), flags=re.S)
    return text[text.index("<svg") :]


SAVE_FORMATS: Final = ("png", "svg", "pdf")


def save(fig: Figure, path: str) -> None:
    ext = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if ext not in SAVE_FORMATS:
        plt.close(fig)
        raise ScenarioError(f"-o = {path!r}: unknown figure format; allowed: .png, .svg, .pdf")
    fig.savefig(path, dpi=150)
    plt.close(fig)


def available(runs: pd.DataFrame) -> Sequence[str]:
    """Plots that make sense for this study."""
    x, _ = axes_of(runs)
    return [n for n, p in PLOTS.items() if p.kind != "metric" or x is not None]
