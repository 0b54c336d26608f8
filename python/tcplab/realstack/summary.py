"""Summaries the conversions share: the simulator's quantile rule and its RTT statistics."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def quantile(values: Sequence[int], q: float) -> int | None:
    """The ⌈q·n⌉-th smallest value (the simulator's rank rule)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q * len(ordered)))) - 1]


def rtt_json(rtts_ns: Sequence[int]) -> dict[str, Any]:
    """The core's `rtt` object (count, mean, min, p50, p95, max) of the kernel's smoothed
    RTT sampled at regular instants (ns): their mean is also the smoothed RTT's time mean."""
    mean = sum(rtts_ns) / len(rtts_ns) if rtts_ns else None
    return {
        "count": len(rtts_ns),
        "mean_ns": mean,
        "min_ns": min(rtts_ns) if rtts_ns else None,
        "p50_ns": quantile(rtts_ns, 0.5),
        "p95_ns": quantile(rtts_ns, 0.95),
        "max_ns": max(rtts_ns) if rtts_ns else None,
        "srtt_time_mean_ns": mean,
    }
