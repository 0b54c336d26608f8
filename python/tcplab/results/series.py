"""Per-interval series as a pandas frame in the one series schema, written to Parquet or CSV by
file extension.

`tcplab run --series`, `RunResult.series_frame()` and the results store's series files all
have exactly `SERIES_COLUMNS` (docs/results.md "Series"), and carry the run's provenance:
`frame.attrs["provenance"]`, the Parquet key-value metadata `tcplab.results.provenance`, or the `# `
comment lines heading a CSV file (see `export.py`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError, field_error

if TYPE_CHECKING:
    from .parse import RunResult

SERIES_FORMATS: Final = (".parquet", ".csv")
#: The series schema: one row per (interval end, flow). `kind` is "tcp" or "cbr"; `cca` is
#: the flow's congestion control (empty for CBR); the bottleneck columns repeat the link's
#: value of the interval on every flow's row.
SERIES_COLUMNS: Final = (
    "t_s",
    "flow_id",
    "kind",
    "cca",
    "goodput_bps",
    "throughput_bps",
    "rtt_ms",
    "cwnd_bytes",
    "retransmits",
    "bottleneck_queue_pkts",
    "bottleneck_utilization",
)
_DTYPES: Final[dict[str, str]] = {
    "t_s": "float64",
    "flow_id": "int64",
    "kind": "object",
    "cca": "object",
    "goodput_bps": "float64",
    "throughput_bps": "float64",
    "rtt_ms": "float64",
    "cwnd_bytes": "int64",
    "retransmits": "int64",
    "bottleneck_queue_pkts": "float64",
    "bottleneck_utilization": "float64",
}


def _per_interval(values: tuple[float, ...], n_points: int) -> np.ndarray[Any, Any]:
    """A bottleneck series as long as the time axis (NaN where the core reported none)."""
    out = np.full(n_points, np.nan, dtype=np.float64)
    out[: min(n_points, len(values))] = np.asarray(values[:n_points], dtype=np.float64)
    return out


def series_frame(result: RunResult) -> pd.DataFrame:
    """Long format, sorted by time then flow id, with `SERIES_COLUMNS` exactly."""
    series = result.series
    if series.streamed:
        return _streamed_frame(result)
    n_points = len(series.t_ns)
    t_s = np.asarray(series.t_ns, dtype=np.float64) / 1e9
    queue = _per_interval(series.bottleneck_queue_pkts, n_points)
    utilization = _per_interval(series.bottleneck_utilization, n_points)
    by_id = {flow.id: flow for flow in result.flows}
    parts = []
    for flow in series.flows:
        info = by_id.get(flow.id)
        kind = info.kind if info is not None else "tcp"
        cca = info.cca if info is not None and info.is_tcp else ""
        rtt_ns = np.array([np.nan if v is None else v for v in flow.rtt_mean_ns], dtype=np.float64)
        parts.append(
            pd.DataFrame(
                {
                    "t_s": t_s,
                    "flow_id": np.full(n_points, flow.id, dtype=np.int64),
                    "kind": [kind] * n_points,
                    "cca": [cca] * n_points,
                    "goodput_bps": np.asarray(flow.goodput_bps, dtype=np.float64),
                    "throughput_bps": np.asarray(flow.throughput_bps, dtype=np.float64),
                    "rtt_ms": rtt_ns / 1e6,
                    "cwnd_bytes": np.asarray(flow.cwnd_bytes, dtype=np.int64),
                    "retransmits": np.asarray(flow.retransmits, dtype=np.int64),
                    "bottleneck_queue_pkts": queue,
                    "bottleneck_utilization": utilization,
                }
            )
        )
    if parts:
        frame = pd.concat(parts, ignore_index=True)
        frame = frame.sort_values(["t_s", "flow_id"], kind="stable", ignore_index=True)
    else:
        frame = empty_series()
    frame.attrs["provenance"] = result.provenance()
    return frame


def _streamed_frame(result: RunResult) -> pd.DataFrame:
    """The frame of a run that streamed its series to a file (read back whole)."""
    from .export import read_table

    file = result.series.file
    if file is None:
        raise ScenarioError(
            "series: this run did not keep its series; allowed: run it with series kept "
            "(tcplab run --series FILE, or tcplab.run(..., series=FILE or 'memory'))"
        )
    frame, provenance = read_table(file)
    out = conform(frame)
    out.attrs["provenance"] = provenance or result.provenance()
    return out


def empty_series() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series([], dtype=_DTYPES[c]) for c in SERIES_COLUMNS})


def conform(frame: pd.DataFrame) -> pd.DataFrame:
    """A series frame read from a file written by an older tcplab, in today's schema: `flow`
    is `flow_id`; what the file did not record (`kind`, `cca`, the bottleneck columns of
    `tcplab run --series` files) is NA."""
    out = frame.rename(columns={"flow": "flow_id"})
    for column in SERIES_COLUMNS:
        if column not in out:
            out[column] = np.nan if _DTYPES[column] == "float64" else None
    conformed = out[list(SERIES_COLUMNS)]
    conformed.attrs = dict(frame.attrs)
    return conformed


def check_series_path(path: str | os.PathLike[str]) -> Path:
    """Refuse an unsupported extension before the (possibly long) run, not after it."""
    target = Path(path)
    if target.suffix.lower() not in SERIES_FORMATS:
        raise field_error(
            "--series", str(path), "unknown file extension", ", ".join(SERIES_FORMATS)
        )
    from ..files import check_output_file

    return check_output_file("--series", target)


def write_series(result: RunResult, path: str | os.PathLike[str]) -> Path:
    """Write `series_frame(result)` with its provenance to `.parquet` or `.csv`."""
    from .export import write_table

    target = check_series_path(path)
    frame = series_frame(result)
    try:
        write_table(frame, target, target.suffix.lower().lstrip("."), frame.attrs["provenance"])
    except OSError as exc:
        from ..files import disk_full, is_disk_full

        if is_disk_full(exc):
            raise disk_full(target) from None
        raise field_error("--series", str(path), f"cannot write: {exc.strerror}") from None
    return target


def by_flow(
    frame: pd.DataFrame, columns: tuple[str, ...]
) -> list[tuple[int, dict[str, list[Any]]]]:
    """A run's series split by flow: each flow's id (in flow order) and its rows' `columns`
    in time order, as lists. One sort of the whole frame: selecting each flow's rows in turn
    cost a pass over the frame per flow, which with thousands of flows made a figure
    quadratic in them."""
    ids = frame["flow_id"].to_numpy()
    if not len(ids):
        return []
    # time within flow; a flow has one row per interval, so the order is the only one
    order = np.lexsort((frame["t_s"].to_numpy(), ids))
    ids = ids[order]
    values = {c: frame[c].to_numpy()[order] for c in columns}
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    bounds = zip(starts, [*starts[1:], len(ids)], strict=True)
    return [(int(ids[a]), {c: v[a:b].tolist() for c, v in values.items()}) for a, b in bounds]
