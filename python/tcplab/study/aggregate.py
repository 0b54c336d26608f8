"""Aggregation across repetitions, with theory references.

Per grid point (study, revision, variant, swept parameters): mean, standard deviation and the
95 % confidence interval of the mean (Student t) for each metric; plus the Mathis bound
capped at the link's payload capacity, the Padhye (PFTK) model and the physical (propagation)
RTT of the path.

Runs of different study revisions are never pooled: the revision is part of the grid point.
`<m>_ci95` is the interval's half-width; `<m>_ci_low` and `<m>_ci_high` are its ends, clipped
to the values the metric can take (`metrics.METRICS`: e.g. [0, 1] for Jain's index and the
utilizations, >= 0 for rates), so a bounded metric's interval never leaves its range. A
metric whose repetitions are all identical (a deterministic scenario) has a standard
deviation and interval of exactly 0, not a rounding residue.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

import pandas as pd  # type: ignore[import-untyped]

from ..results.metrics import METRIC_BY_NAME, METRICS
from ..results.theory import THEORY_COLUMNS
from .store import param_columns

#: Two-sided 97.5 % quantiles of Student's t for 1..30 degrees of freedom.
_T975: Final = (
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
)
_Z975: Final = 1.959964

DEFAULT_METRICS: Final = tuple(m.name for m in METRICS)


def t975(df: int) -> float:
    """97.5 % quantile of Student's t with `df` degrees of freedom (Cornish-Fisher beyond
    the table; error < 1e-3 for df > 30)."""
    if df < 1:
        return math.nan
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def ci95(std: float, n: int) -> float:
    """Half-width of the 95 % confidence interval of a mean of `n` samples."""
    return t975(n - 1) * std / math.sqrt(n) if n > 1 else math.nan


def group_columns(runs: pd.DataFrame) -> list[str]:
    return [c for c in ("study", "revision", "variant") if c in runs.columns] + param_columns(runs)


def summarize(values: pd.Series, metric: str) -> dict[str, float]:
    """Mean, standard deviation, 95 % CI half-width and its ends (clipped to the metric's
    range) of one metric's repetitions; NaN where undefined."""
    col = pd.to_numeric(values, errors="coerce").dropna()
    n = len(col)
    if n == 0:
        return dict.fromkeys(("mean", "std", "ci95", "ci_low", "ci_high"), math.nan)
    if col.min() == col.max():  # identical repetitions: exact, whatever the float rounding
        mean = float(col.iloc[0])
        std = 0.0 if n > 1 else math.nan
        half = 0.0 if n > 1 else math.nan
    else:
        mean = float(col.mean())
        std = float(col.std(ddof=1))
        half = ci95(std, n)
    spec = METRIC_BY_NAME.get(metric)
    low, high = (spec.low, spec.high) if spec else (-math.inf, math.inf)
    return {
        "mean": mean,
        "std": std,
        "ci95": half,
        "ci_low": max(mean - half, low) if not math.isnan(half) else math.nan,
        "ci_high": min(mean + half, high) if not math.isnan(half) else math.nan,
    }


def aggregate(runs: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS) -> pd.DataFrame:
    """One row per grid point: `n`, `model_version`, and for each metric `<m>_mean`, `<m>_std`,
    `<m>_ci95`, `<m>_ci_low`, `<m>_ci_high`; plus theory columns."""
    keys = group_columns(runs)
    present = [m for m in metrics if m in runs.columns]
    rows = []
    for group, df in runs.groupby(keys, dropna=False, sort=True):
        values = group if isinstance(group, tuple) else (group,)
        row: dict[str, object] = dict(zip(keys, values, strict=True))
        row["n"] = len(df)
        if "model_version" in df:
            models = df["model_version"].dropna().unique()
            row["model_version"] = int(models[0]) if len(models) == 1 else None
        for m in present:
            for stat, value in summarize(df[m], m).items():
                row[f"{m}_{stat}"] = value
        first = df.iloc[0]
        row.update(theory_columns(first))
        rows.append(row)
    return pd.DataFrame(rows)


def theory_columns(run: pd.Series) -> dict[str, float]:
    """References for one run's path: physical RTT, payload capacity, Mathis and Padhye
    (both capped at the capacity), as the store computes them from the run's scenario with
    `theory.run_bounds` (NaN for a run without them)."""
    return {
        name: float(run[name]) if name in run and run[name] is not None else math.nan
        for name in ("base_rtt_ms", *THEORY_COLUMNS)
    }
