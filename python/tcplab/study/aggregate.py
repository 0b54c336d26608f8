"""Aggregation across repetitions, with theory references.

Per grid point (study, revision, variant, swept parameters): mean, standard deviation and the
95 % confidence interval of the mean (Student t) for each metric; plus the Mathis bound
capped at the link's payload capacity, the Padhye (PFTK) model and the physical (propagation)
RTT of the path.

Runs of different study revisions are never pooled: the revision is part of the grid point.
The per-point statistics are one SQL query in DuckDB over the runs (count, mean, sample
standard deviation, min and max of every metric, grouped by grid point); only the interval
ends are computed here, for every point at once.
`<m>_ci95` is the interval's half-width; `<m>_ci_low` and `<m>_ci_high` are its ends, clipped
to the values the metric can take (`metrics.METRICS`: e.g. [0, 1] for Jain's index and the
utilizations, >= 0 for rates), so a bounded metric's interval never leaves its range. A
metric whose repetitions are all identical (a deterministic scenario) has a standard
deviation and interval of exactly 0, not a rounding residue.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
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


def ceiling_of(runs: pd.DataFrame, metric: str) -> float | None:
    """The `high_column` bound shared by all of `runs` (None: none, or they differ)."""
    spec = METRIC_BY_NAME.get(metric)
    if spec is None or spec.high_column is None or spec.high_column not in runs:
        return None
    values = pd.to_numeric(runs[spec.high_column], errors="coerce").dropna().unique()
    return float(values[0]) if len(values) == 1 else None


def _bounding(ceiling: Any, high_v: Any, high: float) -> Any:
    """The upper end of a metric's range given a per-point ceiling (`high_column`): the
    capacity is the first TCP flow's path's, so where a run went above it the flows did not
    all share that bottleneck and it bounds nothing."""
    ceiling = np.asarray(ceiling, dtype=float)
    bounds = np.isfinite(ceiling) & (np.asarray(high_v, dtype=float) <= ceiling)
    return np.where(bounds, np.minimum(ceiling, high), high)


def summarize(values: pd.Series, metric: str, ceiling: float | None = None) -> dict[str, float]:
    """Mean, standard deviation, 95 % CI half-width and its ends (clipped to the metric's
    range, and to `ceiling` for a metric with a `high_column`) of one metric's repetitions;
    NaN where undefined."""
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
    if ceiling is not None and spec is not None and spec.high_column:
        high = float(_bounding(ceiling, col.max(), high))
    return {
        "mean": mean,
        "std": std,
        "ci95": half,
        "ci_low": max(mean - half, low) if not math.isnan(half) else math.nan,
        "ci_high": min(mean + half, high) if not math.isnan(half) else math.nan,
    }


def aggregate(runs: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS) -> pd.DataFrame:
    """One row per grid point: `n`, `model_version`, and for each metric `<m>_mean`, `<m>_std`,
    `<m>_ci95`, `<m>_ci_low`, `<m>_ci_high`; plus theory columns (of the point's first run)."""
    keys = group_columns(runs)
    present = [m for m in metrics if m in runs.columns]
    if runs.empty:
        return pd.DataFrame()
    point = runs.groupby(keys, dropna=False, sort=True).ngroup().to_numpy()
    stats = _point_stats(runs, point, present)
    # the first run of each point, in point order
    first = runs.iloc[pd.Series(np.arange(len(runs))).groupby(point, sort=True).first()]
    out: dict[str, Any] = {k: first[k].to_numpy() for k in keys}
    out["n"] = stats["n"].to_numpy()
    if "model_version" in runs:
        out["model_version"] = [
            int(v) if v == v and v is not None else None for v in stats["model_version"]
        ]
    for name in ("base_rtt_ms", *THEORY_COLUMNS):
        out[name] = (
            pd.to_numeric(first[name], errors="coerce").astype(float).to_numpy()
            if name in first
            else np.full(len(first), math.nan)
        )
    for m in present:
        out.update(_intervals(stats, m, out))
    return pd.DataFrame(out)


def _point_stats(runs: pd.DataFrame, point: np.ndarray[Any, Any], metrics: list[str]) -> Any:
    """count, mean, sample standard deviation, min and max of each metric per grid point
    (NULL and NaN values left out), in DuckDB; one row per point, in point order."""
    from ..database import connect

    data = pd.DataFrame({"point": point})
    for i, m in enumerate(metrics):
        data[f"m{i}"] = pd.to_numeric(runs[m], errors="coerce").astype(float).to_numpy()
    if "model_version" in runs:
        data["model"] = pd.to_numeric(runs["model_version"], errors="coerce").to_numpy()
    # the standard deviation in two passes (deviations from the point's mean), as pandas
    # computes it: a one-pass (Welford) one differs in the 11th digit
    values = [f"CASE WHEN isnan(m{i}) THEN NULL ELSE m{i} END" for i in range(len(metrics))]
    means = ", ".join(f"avg({v}) AS mean{i}" for i, v in enumerate(values))
    selects = ["count(*) AS n"]
    for i, v in enumerate(values):
        selects += [
            f"count({v}) AS c{i}",
            f"any_value(mean{i}) AS a{i}",
            f"sqrt(sum(({v} - mean{i}) ** 2) / (count({v}) - 1)) AS s{i}",
            f"min({v}) AS lo{i}",
            f"max({v}) AS hi{i}",
        ]
    if "model_version" in runs:
        selects.append("CASE WHEN count(DISTINCT model) = 1 THEN min(model) END AS model_version")
    con = connect()
    try:
        con.register("data", data)
        stats = con.execute(
            f"WITH m AS (SELECT point, {means} FROM data GROUP BY point) "
            f"SELECT point, {', '.join(selects)} FROM data JOIN m USING (point) "
            "GROUP BY point ORDER BY point"
        ).df()
    finally:
        con.close()
    stats.columns = ["point", "n", *stats.columns[2:]]
    renamed: dict[str, str] = {}
    for i, m in enumerate(metrics):
        for short, stat in (("c", "count"), ("a", "mean"), ("s", "std"), ("lo", "min")):
            renamed[f"{short}{i}"] = f"{m}\t{stat}"
        renamed[f"hi{i}"] = f"{m}\tmax"
    return stats.rename(columns=renamed)


def _intervals(
    stats: pd.DataFrame, metric: str, points: dict[str, Any]
) -> dict[str, np.ndarray[Any, Any]]:
    """`summarize` for every grid point at once, from its count, mean, std, min and max;
    `points` holds the points' other columns (a metric's `high_column` among them)."""
    n = stats[f"{metric}\tcount"].to_numpy(dtype=float)
    low_v = stats[f"{metric}\tmin"].to_numpy(dtype=float)
    high_v = stats[f"{metric}\tmax"].to_numpy(dtype=float)
    same = (n > 0) & (low_v == high_v)
    # identical repetitions: exact, whatever the float rounding of a mean or a deviation
    mean = np.where(same, low_v, stats[f"{metric}\tmean"].to_numpy(dtype=float))
    several = np.where(n > 1, 0.0, math.nan)
    std = np.where(same, several, stats[f"{metric}\tstd"].to_numpy(dtype=float))
    t = np.array([t975(int(k) - 1) if k > 1 else math.nan for k in n])
    with np.errstate(invalid="ignore", divide="ignore"):
        half = np.where(same, several, t * std / np.sqrt(n))
    mean = np.where(n == 0, math.nan, mean)
    spec = METRIC_BY_NAME.get(metric)
    low, high = (spec.low, spec.high) if spec else (-math.inf, math.inf)
    if spec and spec.high_column and spec.high_column in points:
        high = _bounding(points[spec.high_column], high_v, high)
    return {
        f"{metric}_mean": mean,
        f"{metric}_std": std,
        f"{metric}_ci95": half,
        f"{metric}_ci_low": np.maximum(mean - half, low),
        f"{metric}_ci_high": np.minimum(mean + half, high),
    }


def theory_columns(run: pd.Series) -> dict[str, float]:
    """References for one run's path: physical RTT, payload capacity, Mathis and Padhye
    (both capped at the capacity), as the store computes them from the run's scenario with
    `theory.run_bounds` (NaN for a run without them)."""
    return {
        name: float(run[name]) if name in run and run[name] is not None else math.nan
        for name in ("base_rtt_ms", *THEORY_COLUMNS)
    }
