"""The core's binary series file (`crates/core/src/series_file.rs`, docs/interface.md "Series
file"): a run that streams its series writes them there in chunks, and this module turns the
file into the one series schema (`series.SERIES_COLUMNS`) — chunk by chunk, so neither the
core nor Python ever holds more than one chunk (at most 65,536 flow-intervals) of a run.

`frames` reads it as pandas frames; `convert` writes it on as Parquet (one row group per
chunk, the run's provenance in the file's metadata) or CSV (`# ` provenance lines, then the
rows), the same files `series.write_series` makes from a result held in memory.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import IO, Any, Final

import numpy as np
import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError, field_error

MAGIC: Final = b"TCPLABSR"
VERSION: Final = 1
_HEADER: Final = struct.Struct("<8sIIQ")


class SeriesFileError(ScenarioError):
    """A series file that is not one, or was cut short (its run did not finish)."""


def _read(f: IO[bytes], n: int, where: str) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise SeriesFileError(f"{where}: series file cut short (its run did not finish)")
    return data


def _array(f: IO[bytes], n: int, dtype: str, where: str) -> np.ndarray[Any, Any]:
    return np.frombuffer(_read(f, 8 * n, where), dtype=dtype)


def frames(
    source: str | os.PathLike[str] | IO[bytes], flows: Sequence[tuple[str, str]]
) -> Iterator[pd.DataFrame]:
    """The file's chunks as frames with `SERIES_COLUMNS`, in time then flow order.
    `flows[i]` is flow i's (kind, cca), as the run's result says (cca "" for CBR flows)."""
    for columns in _chunks(source, flows):
        yield pd.DataFrame(columns)


def _chunks(
    source: str | os.PathLike[str] | IO[bytes], flows: Sequence[tuple[str, str]]
) -> Iterator[dict[str, np.ndarray[Any, Any]]]:
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as f:
            yield from _columns(f, flows, str(source))
    else:
        yield from _columns(source, flows, "series")


def _columns(
    f: IO[bytes], flows: Sequence[tuple[str, str]], where: str
) -> Iterator[dict[str, np.ndarray[Any, Any]]]:
    """The file's chunks as columns (numpy arrays) named as `SERIES_COLUMNS`."""
    magic, version, n_flows, _interval_ns = _HEADER.unpack(_read(f, _HEADER.size, where))
    if magic != MAGIC or version != VERSION:
        raise SeriesFileError(f"{where}: not a tcplab series file (version {VERSION})")
    if n_flows != len(flows):
        raise SeriesFileError(f"{where}: {n_flows} flows, the run has {len(flows)}")
    ids = np.arange(n_flows, dtype=np.int64)
    kinds = np.array([k for k, _ in flows], dtype=object)
    ccas = np.array([c for _, c in flows], dtype=object)
    seen = 0
    while True:
        (n,) = struct.unpack("<I", _read(f, 4, where))
        if n == 0:
            (total,) = struct.unpack("<Q", _read(f, 8, where))
            if total != seen:
                raise SeriesFileError(f"{where}: {seen} intervals of {total}")
            return
        seen += n
        t_ns = _array(f, n, "<u8", where)
        queue = _array(f, n, "<f8", where)
        utilization = _array(f, n, "<f8", where)

        goodput, throughput, rtt_ns, cwnd, retransmits = (
            # stored flow after flow; the schema's rows go interval after interval
            _array(f, n * n_flows, dtype, where).reshape(n_flows, n).T.ravel()
            for dtype in ("<f8", "<f8", "<f8", "<u8", "<u8")
        )
        yield {
            "t_s": np.repeat(t_ns.astype(np.float64) / 1e9, n_flows),
            "flow_id": np.tile(ids, n),
            "kind": np.tile(kinds, n),
            "cca": np.tile(ccas, n),
            "goodput_bps": goodput,
            "throughput_bps": throughput,
            "rtt_ms": rtt_ns / 1e6,
            "cwnd_bytes": cwnd.astype(np.int64),
            "retransmits": retransmits.astype(np.int64),
            "bottleneck_queue_pkts": np.repeat(queue, n_flows),
            "bottleneck_utilization": np.repeat(utilization, n_flows),
        }


@cache
def _parquet_schema() -> Any:
    """The Arrow schema (pandas' metadata included) that pandas gives a chunk's frame: the
    columns go to Arrow directly, and the files stay those a frame would have written."""
    import pyarrow as pa  # type: ignore[import-untyped]

    one = next(_columns_of_one())
    return pa.Table.from_pandas(pd.DataFrame(one), preserve_index=False).schema


def _columns_of_one() -> Iterator[dict[str, np.ndarray[Any, Any]]]:
    """One interval of one TCP flow, through the reader (for `_parquet_schema`)."""
    import io

    body = b"".join(
        (
            _HEADER.pack(MAGIC, VERSION, 1, 1),
            struct.pack("<I", 1),
            np.zeros(3, "<u8").tobytes(),
            np.zeros(5, "<u8").tobytes(),
            struct.pack("<IQ", 0, 1),
        )
    )
    return _columns(io.BytesIO(body), [("tcp", "cubic")], "schema")


def _arrow_chunks(
    source: str | os.PathLike[str] | IO[bytes], flows: Sequence[tuple[str, str]], schema: Any
) -> Iterator[Any]:
    """The file's chunks as Arrow tables of `schema`, without a pandas frame in between."""
    import pyarrow as pa

    text = {
        name: pa.array(values, type=schema.field(name).type)
        for name, values in (("kind", [k for k, _ in flows]), ("cca", [c for _, c in flows]))
    }
    for columns in _chunks(source, flows):
        # the flows' texts repeat interval after interval: taken from one array per flow
        which = pa.array(columns["flow_id"])
        arrays = [
            # NaN (no sample) is null, as pandas writes it
            text[name].take(which) if name in text else pa.array(columns[name], from_pandas=True)
            for name in schema.names
        ]
        yield pa.Table.from_arrays(arrays, schema=schema)


def convert(
    source: str | os.PathLike[str] | IO[bytes],
    target: str | os.PathLike[str],
    flows: Sequence[tuple[str, str]],
    provenance: dict[str, Any],
    option: str = "--series",
) -> Path:
    """Write the series file `source` to `target` (`.parquet` or `.csv`, by extension) with
    `provenance`, a chunk at a time. The file appears whole or not at all; a write that
    fails (a full disk) is a one-line error naming `option` and the file."""
    from .export import _atomic
    from .provenance import PARQUET_KEY
    from .series import empty_series

    path = Path(target)
    fmt = path.suffix.lower().lstrip(".")

    def write(tmp: Path) -> None:
        if fmt == "parquet":
            import json

            import pyarrow as pa
            import pyarrow.parquet as pq  # type: ignore[import-untyped]

            meta = dict(_parquet_schema().metadata or {})
            meta[PARQUET_KEY] = json.dumps(provenance, sort_keys=True, default=str).encode()
            schema = _parquet_schema().with_metadata(meta)
            # a file opened here, not a path: pyarrow's file-system lookup of a path costs
            # more than writing a short run's series
            sink = pa.OSFile(str(tmp), "wb")
            writer = None
            try:
                for table in _arrow_chunks(source, flows, schema):
                    if writer is None:
                        # dictionaries only where values repeat: the measurements' would
                        # cost memory per column for little (about 10 % of the file)
                        writer = pq.ParquetWriter(sink, schema, use_dictionary=["kind", "cca"])
                    writer.write_table(table)
                if writer is None:  # a run of zero intervals
                    from .export import write_table

                    sink.close()
                    write_table(empty_series(), tmp, "parquet", provenance)
            finally:
                if writer is not None:
                    writer.close()
                sink.close()
            return
        from .export import csv_text

        with open(tmp, "w", encoding="utf-8", newline="") as out:
            out.write(csv_text(empty_series(), provenance))
            for frame in frames(source, flows):
                frame.to_csv(out, index=False, header=False)

    try:
        _atomic(path, write)
    except OSError as exc:
        raise field_error(option, str(target), f"cannot write: {exc.strerror}") from None
    return path
