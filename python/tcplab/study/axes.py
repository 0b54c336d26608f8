"""Which swept parameter goes on the x axis and which ones name the lines of a figure.

A study sweeps any number of keys. Figures and summary tables need one x axis and one label
per line: x is the swept error rate (`bottleneck.per`, else another `*.per`/`*.ber`, log
scale), else the numeric key with the most values; swept quantities written with units
(`"1Mbps"`, `"250ms"`, `"5MB"`) count as numbers. Every other key that varies names the
lines, the algorithm key first ("cubic, distributed"); a key that repeats another one row by
row (`"flows.0.pep.cca" = ["=flows.0.cca"]`) is left out of the label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd  # type: ignore[import-untyped]

from ..errors import Problem
from ..units import format_rate_bps, parse_duration_ns, parse_rate_bps, parse_size_bytes
from .store import param_columns

LINE = "line"

_QUANTITIES: tuple[tuple[Callable[[object], int], float, str], ...] = (
    (parse_rate_bps, 1.0, "bit/s"),
    (parse_duration_ns, 1e-6, "ms"),
    (parse_size_bytes, 1.0, "bytes"),
)


@dataclass(frozen=True)
class StudyAxes:
    x: str | None
    x_label: str
    lines: tuple[str, ...]
    x_unit: str = ""

    def format_x(self, v: object, digits: int = 6) -> str:
        """An x value as a user wrote it ("4Mbps", "250ms"), or as a number of `digits`
        significant digits (log-spaced error rates such as 2.0571e-06 need no more than 4)."""
        if not isinstance(v, float | int) or v != v:
            return str(v)
        if self.x_unit == "bit/s":
            return format_rate_bps(round(v))
        if self.x_unit:
            return f"{v:.{digits}g}{'B' if self.x_unit == 'bytes' else self.x_unit}"
        return f"{v:.{digits}g}"


def is_error_rate(key: str) -> bool:
    """A swept packet/bit error rate (`bottleneck.per`, `path.segments.1.per`, ...)."""
    return key.rsplit(".", 1)[-1] in ("per", "ber", "return_per", "return_ber")


def _as_quantity(col: pd.Series) -> tuple[pd.Series, str] | None:
    values = col.dropna()
    if values.empty or not all(isinstance(v, str) for v in values):
        return None
    for parse, scale, unit in _QUANTITIES:
        try:
            parsed = {v: parse(v) * scale for v in values.unique()}
        except Problem:
            continue
        return col.map(lambda v, p=parsed: p.get(v, float("nan"))).astype(float), unit
    return None


def study_axes(runs: pd.DataFrame) -> tuple[pd.DataFrame, StudyAxes]:
    """`runs` with unit strings of swept keys turned into numbers, and the chosen axes."""
    df = runs.copy()
    params = param_columns(df)
    quantities: dict[str, tuple[pd.Series, str]] = {}
    for p in params:
        if not pd.api.types.is_numeric_dtype(df[p]):
            q = _as_quantity(df[p])
            if q is not None:
                quantities[p] = q
    varying = [p for p in params if df[p].nunique(dropna=True) > 1]
    numeric = [p for p in varying if pd.api.types.is_numeric_dtype(df[p]) or p in quantities]
    rates = sorted((p for p in numeric if is_error_rate(p)), key=lambda p: p != "bottleneck.per")
    x = rates[0] if rates else max(numeric, key=lambda p: df[p].nunique(), default=None)
    if x is None:  # nothing numeric varies: a fixed numeric key still gives the points an x
        fixed = [p for p in params if pd.api.types.is_numeric_dtype(df[p])]
        x = next((p for p in fixed if is_error_rate(p)), fixed[0] if fixed else None)
    unit = ""
    if x in quantities:  # only the x axis becomes numbers; labels keep "4Mbps"
        df[x], unit = quantities[x]
    others = sorted((p for p in varying if p != x), key=lambda p: not p.endswith("cca"))
    lines: list[str] = []
    for p in others:
        text = df[p].astype(str)
        if not any(text.equals(df[q].astype(str)) for q in lines):
            lines.append(p)
    label = f"{x} ({unit})" if unit else (x or "")
    return df, StudyAxes(x, label, tuple(lines), unit)


def line_labels(df: pd.DataFrame, lines: Sequence[str]) -> pd.Series:
    """One label per row: the values of the line keys ("cubic, distributed, count=4")."""
    if not lines:
        return pd.Series(["all"] * len(df), index=df.index, dtype=object)

    def one(key: str, v: object) -> str:
        if isinstance(v, str):
            return v
        short = key.rsplit(".", 1)[-1]
        return f"{short}={v:g}" if isinstance(v, float) else f"{short}={v}"

    return (
        df[list(lines)]
        .apply(lambda r: ", ".join(one(k, r[k]) for k in lines), axis=1)
        .astype(object)
    )
