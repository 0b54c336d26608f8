"""Per-interval series as a pandas frame, written to Parquet or CSV by file extension."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from .errors import field_error
from .result import Series

SERIES_FORMATS: Final = (".parquet", ".csv")
COLUMNS: Final = (
    "t_s",
    "flow",
    "goodput_bps",
    "throughput_bps",
    "rtt_ms",
    "cwnd_bytes",
    "retransmits",
)


def series_frame(series: Series) -> pd.DataFrame:
    """Long format: one row per (interval end, flow), sorted by time then flow id."""
    n_points = len(series.t_ns)
    t_s = np.asarray(series.t_ns, dtype=np.float64) / 1e9
    parts = []
    for flow in series.flows:
        rtt_ns = np.array([np.nan if v is None else v for v in flow.rtt_mean_ns], dtype=np.float64)
        parts.append(
            pd.DataFrame(
                {
                    "t_s": t_s,
                    "flow": np.full(n_points, flow.id, dtype=np.int64),
                    "goodput_bps": np.asarray(flow.goodput_bps, dtype=np.float64),
                    "throughput_bps": np.asarray(flow.throughput_bps, dtype=np.float64),
                    "rtt_ms": rtt_ns / 1e6,
                    "cwnd_bytes": np.asarray(flow.cwnd_bytes, dtype=np.int64),
                    "retransmits": np.asarray(flow.retransmits, dtype=np.int64),
                }
            )
        )
    if not parts:
        return pd.DataFrame({column: [] for column in COLUMNS})
    frame = pd.concat(parts, ignore_index=True)
    return frame.sort_values(["t_s", "flow"], kind="stable", ignore_index=True)


def check_series_path(path: str | os.PathLike[str]) -> Path:
    """Refuse an unsupported extension before the (possibly long) run, not after it."""
    target = Path(path)
    if target.suffix.lower() not in SERIES_FORMATS:
        raise field_error(
            "--series", str(path), "unknown file extension", ", ".join(SERIES_FORMATS)
        )
    if not target.parent.is_dir():
        raise field_error("--series", str(path), "directory does not exist")
    return target


def write_series(series: Series, path: str | os.PathLike[str]) -> Path:
    """Write `series_frame(series)` to `.parquet` (pyarrow) or `.csv`; returns the path."""
    target = check_series_path(path)
    frame = series_frame(series)
    try:
        if target.suffix.lower() == ".parquet":
            frame.to_parquet(target, engine="pyarrow", index=False)
        else:
            frame.to_csv(target, index=False)
    except OSError as exc:
        raise field_error("--series", str(path), f"cannot write: {exc.strerror}") from None
    return target
