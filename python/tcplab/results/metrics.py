"""Metrics computed over a run's flows, and the table of run metrics the store, aggregation,
report and plots share. Their definitions are written once, in docs/results.md; the formulas
are here (or in the core, for per-flow values) and nowhere else.

Two goodputs, never mixed up:
- a run's `goodput_bps` is the payload bytes delivered by all its TCP flows x 8 / the
  scenario's duration (`aggregate_rate_bps`): it cannot exceed the bottleneck's payload
  capacity, whenever the flows start or stop;
- a flow's `flow_goodput_bps` (the core's per-flow `goodput_bps`) is its bytes x 8 / its own
  active time (start to completion, or to the end of the run): how fast that flow went while
  it was there. Their sum is not a link rate: two flows that each had the link alone for half
  of the run sum to twice its capacity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes all.
    All-zero input counts as perfectly fair (nobody got more than anybody else)."""
    squares = sum(v * v for v in values)
    if not values or squares == 0.0:
        return 1.0
    return sum(values) ** 2 / (len(values) * squares)


def aggregate_rate_bps(total_bytes: int, duration_ns: int) -> float:
    """Bytes over the whole run as a rate: `total_bytes` x 8 / the scenario's duration."""
    return total_bytes * 8e9 / duration_ns if duration_ns > 0 else 0.0


@dataclass(frozen=True)
class Metric:
    """A per-run metric (a column of the `runs` table) as aggregation and reports see it."""

    name: str
    label: str
    #: multiply by this to show the value in `label`'s unit
    scale: float
    #: the values it can take: confidence intervals are clipped to [low, high]
    low: float
    high: float
    #: a per-run column that is a further upper bound (a rate delivered through the
    #: bottleneck cannot exceed its payload capacity); None: `high` alone
    high_column: str | None = None


_INF: Final = math.inf

#: Run metrics, in the order tables show them. docs/results.md defines each one.
METRICS: Final[tuple[Metric, ...]] = (
    Metric("goodput_bps", "goodput Mbit/s", 1e-6, 0.0, _INF, "capacity_bps"),
    Metric("mean_flow_goodput_bps", "mean flow goodput Mbit/s", 1e-6, 0.0, _INF, "capacity_bps"),
    Metric("throughput_bps", "throughput Mbit/s", 1e-6, 0.0, _INF),
    Metric("rtt_mean_ms", "RTT ms", 1.0, 0.0, _INF),
    Metric("rtt_p95_ms", "RTT p95 ms", 1.0, 0.0, _INF),
    Metric("retransmits", "retransmits", 1.0, 0.0, _INF),
    Metric("rto_count", "RTOs", 1.0, 0.0, _INF),
    Metric("jain_fairness", "Jain", 1.0, 0.0, 1.0),
    Metric("minmax_ratio", "min/max", 1.0, 0.0, 1.0),
    Metric("utilization", "link utilization", 1.0, 0.0, 1.0),
    Metric("goodput_utilization", "utilization", 1.0, 0.0, 1.0),
    Metric("queue_mean_pkts", "queue pkts", 1.0, 0.0, _INF),
    Metric("completion_s", "completion s", 1.0, 0.0, _INF),
    Metric("cbr_goodput_bps", "CBR goodput Mbit/s", 1e-6, 0.0, _INF),
    Metric("cbr_loss_ratio", "CBR loss", 1.0, 0.0, 1.0),
)

METRIC_BY_NAME: Final[dict[str, Metric]] = {m.name: m for m in METRICS}
