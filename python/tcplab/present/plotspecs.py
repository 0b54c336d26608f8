"""The figures `tcplab plot` and reports draw, as data (no plotting library imported here,
so the CLI can list them without loading matplotlib)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from ..errors import ScenarioError

Kind = Literal["metric", "bars", "series", "shares"]


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
        PlotSpec(
            "shares",
            "Per-flow share of the goodput over time (convergence)",
            "shares",
            "goodput_bps",
            "share of the goodput",
        ),
    )
}

SAVE_FORMATS: Final = ("png", "svg", "pdf")


def check_figure_path(path: str) -> None:
    """Refuse a figure file name whose extension matplotlib is not asked to write."""
    ext = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if ext not in SAVE_FORMATS:
        raise ScenarioError(f"-o = {path!r}: unknown figure format; allowed: .png, .svg, .pdf")
