"""Metrics computed over a run's flows."""

from __future__ import annotations

from collections.abc import Sequence


def jain_index(values: Sequence[float]) -> float:
    """Jain's fairness index (Σx)² / (n·Σx²): 1 when all equal, 1/n when one takes all.
    All-zero input counts as perfectly fair (nobody got more than anybody else)."""
    squares = sum(v * v for v in values)
    if not values or squares == 0.0:
        return 1.0
    return sum(values) ** 2 / (len(values) * squares)
