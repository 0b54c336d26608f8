"""The figures `tcplab plot` and reports draw, as data (no plotting library imported here,
so the CLI can list them without loading matplotlib).

`summary` kinds show a run metric over the study's grid, `series` kinds a sampled quantity
over time in chosen runs, `shares` each flow's share of the goodput over time, `trace`
kinds one run packet by packet (simulated again with tracing, `present.trace_plot`). A kind that
says something only about several flows (`needs_flows = 2`) is refused on a study whose runs
have one flow, with `per_flow_reason` as the reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from ..errors import ScenarioError

Kind = Literal["summary", "series", "shares", "trace"]


@dataclass(frozen=True)
class PlotSpec:
    name: str
    title: str
    kind: Kind
    #: a column of the runs table (summaries) or of the series (time series)
    column: str
    ylabel: str
    #: what the figure shows, as the start of its caption
    what: str
    scale: float = 1.0
    reference: str | None = None
    reference_label: str = ""
    #: a bit rate: it cannot exceed the bottleneck's rate (intervals are clipped there; a
    #: time series marks the rate and says when a sample is above it)
    link_bounded: bool = False
    needs_flows: int = 1
    per_flow_reason: str = ""


_JAIN_ONE = "Jain's index of one flow is 1 by definition"

PLOTS: Final[dict[str, PlotSpec]] = {
    p.name: p
    for p in (
        PlotSpec(
            "goodput",
            "Goodput",
            "summary",
            "goodput_bps",
            "goodput (Mbit/s)",
            "goodput of all TCP flows of a run (payload bytes delivered in order x 8 / run time)",
            1e-6,
            "mathis_bps",
            "Mathis et al. bound, capped at the path's payload capacity",
            link_bounded=True,
        ),
        PlotSpec(
            "rtt",
            "Mean RTT",
            "summary",
            "rtt_mean_ms",
            "mean RTT (ms)",
            "mean RTT of the TCP flows' samples",
            1.0,
            "base_rtt_ms",
            "propagation (physical) RTT of the path",
        ),
        PlotSpec(
            "retransmits",
            "Retransmissions",
            "summary",
            "retransmits",
            "retransmitted segments",
            "retransmitted segments of all TCP flows of a run",
        ),
        PlotSpec(
            "utilization",
            "Link utilization (goodput / capacity)",
            "summary",
            "goodput_utilization",
            "utilization (goodput / capacity)",
            "goodput over the bottleneck's payload capacity",
        ),
        PlotSpec(
            "fairness",
            "Jain's fairness index",
            "summary",
            "jain_fairness",
            "Jain's index",
            "Jain's fairness index of the TCP flows' goodputs (1 = equal shares, 1/N = one "
            "flow takes all)",
            needs_flows=2,
            per_flow_reason=_JAIN_ONE,
        ),
        PlotSpec(
            "cwnd",
            "Congestion window over time",
            "series",
            "cwnd_bytes",
            "cwnd (kB)",
            "congestion window at the end of each sampling interval",
            1e-3,
        ),
        PlotSpec(
            "rtt-series",
            "RTT over time",
            "series",
            "rtt_ms",
            "RTT (ms)",
            "mean RTT of the samples in each interval",
        ),
        PlotSpec(
            "goodput-series",
            "Goodput over time",
            "series",
            "goodput_bps",
            "goodput (Mbit/s)",
            "goodput (payload delivered in order) in each interval",
            1e-6,
            link_bounded=True,
        ),
        PlotSpec(
            "tseq",
            "Time-sequence graph",
            "trace",
            "seq_bytes",
            "relative sequence number",
            "Stevens time-sequence graph of one connection at the sender side of the bottleneck",
        ),
        PlotSpec(
            "cwnd-events",
            "Congestion window at every change",
            "trace",
            "cwnd_bytes",
            "window (kB)",
            "cwnd and ssthresh at every change, from the event log",
        ),
        PlotSpec(
            "shares",
            "Per-flow share of the goodput over time (convergence)",
            "shares",
            "goodput_bps",
            "share of the goodput",
            "per-flow share of the goodput",
            needs_flows=2,
            per_flow_reason="one flow's share of the goodput is always 1",
        ),
    )
}

SAVE_FORMATS: Final = ("png", "svg", "pdf")


def check_figure_path(path: str) -> None:
    """Refuse a figure file name whose extension matplotlib is not asked to write."""
    ext = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if ext not in SAVE_FORMATS:
        raise ScenarioError(f"-o = {path!r}: unknown figure format; allowed: .png, .svg, .pdf")
