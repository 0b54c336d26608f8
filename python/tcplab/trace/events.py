"""The event log as Parquet: the core's fixed-size raw records (layout from
`_core.trace_format_json`, so no offset is written down twice) converted in chunks of
`CHUNK_RECORDS`, so memory stays bounded whatever the run's length, with the run's
provenance in the file's metadata (as every tcplab export, docs/results.md).

Columns (docs/results.md "Event log"): `t_ns`, `flow`, `leg`, `event`, the sender's state
after the event — `cwnd_bytes`, `ssthresh_bytes` (null before the first reduction),
`ca_state`, `pacing_rate_bps` (null when it does not pace), `cc_phase` (BBR's mode) — and
for counted events `segments` (segments marked lost, RTOs, ...), for a retransmission the
segment's `seq_bytes` (stream offset of its first byte) and `len_bytes`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from ..errors import ScenarioError
from .request import trace_format

#: Records converted at a time (64 bytes each: 16 MiB).
CHUNK_RECORDS: Final = 1 << 18
#: Parquet key-value metadata: the flows' algorithms and what the run was.
FLOWS_KEY: Final = b"tcplab.events.flows"
#: The columns of the log, in order.
COLUMNS: Final = (
    "t_ns",
    "flow",
    "leg",
    "event",
    "cwnd_bytes",
    "ssthresh_bytes",
    "ca_state",
    "pacing_rate_bps",
    "cc_phase",
    "segments",
    "seq_bytes",
    "len_bytes",
)
_NP_TYPES: Final = {"u64": "<u8", "u32": "<u4", "u8": "u1"}


def _dtype() -> Any:
    import numpy as np

    fmt = trace_format()["events"]
    fields = fmt["fields"]
    return np.dtype(
        {
            "names": [f["name"] for f in fields],
            "formats": [_NP_TYPES[f["type"]] for f in fields],
            "offsets": [f["offset"] for f in fields],
            "itemsize": fmt["record_bytes"],
        }
    )


def _column(values: Any, arrow: Any, nulls: Any = None) -> Any:
    """A numpy array as an Arrow array of type `arrow` (of the same width), null where
    `nulls`. Built from its buffers: `pyarrow.array` imports pandas (0.2 s) to inspect what
    it is given, and a traced `tcplab run` has no other use for it."""
    import numpy as np
    import pyarrow as pa  # type: ignore[import-untyped]

    values = np.ascontiguousarray(values)
    validity, null_count = None, 0
    if nulls is not None and nulls.any():
        validity = pa.py_buffer(np.packbits(~nulls, bitorder="little"))
        null_count = int(nulls.sum())
    return pa.Array.from_buffers(
        arrow, len(values), [validity, pa.py_buffer(values)], null_count=null_count
    )


def _strings(texts: list[str]) -> Any:
    """A list of texts as an Arrow string array (from its buffers, as `_column`)."""
    import numpy as np
    import pyarrow as pa

    encoded = [t.encode() for t in texts]
    offsets = np.zeros(len(encoded) + 1, np.int32)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(encoded), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(encoded))]
    )


def _table(chunk: Any) -> Any:
    """One chunk of raw records as an Arrow table in `COLUMNS`."""
    import numpy as np
    import pyarrow as pa

    fmt = trace_format()["events"]
    none = {f["name"]: f["none"] for f in fmt["fields"]}

    def nullable(name: str, arrow: Any) -> Any:
        values = chunk[name]
        mask = values == none[name] if none[name] is not None else None
        return _column(values.astype(np.int64), arrow, mask)

    def names(name: str, table: list[str]) -> Any:
        codes = chunk[name].astype(np.int32)
        mask = codes == none[name] if none[name] is not None else None
        indices = _column(codes if mask is None else np.where(mask, 0, codes), pa.int32(), mask)
        return pa.DictionaryArray.from_arrays(indices, _strings(table))

    retrans = chunk["event"] == fmt["kinds"].index("retransmission")
    return pa.table(
        {
            "t_ns": _column(chunk["t_ns"].astype(np.int64), pa.int64()),
            "flow": _column(chunk["flow"].astype(np.int32), pa.int32()),
            "leg": _column(chunk["leg"].astype(np.int8), pa.int8()),
            "event": names("event", fmt["kinds"]),
            "cwnd_bytes": _column(chunk["cwnd_bytes"].astype(np.int64), pa.int64()),
            "ssthresh_bytes": nullable("ssthresh_bytes", pa.int64()),
            "ca_state": names("ca_state", fmt["ca_states"]),
            "pacing_rate_bps": nullable("pacing_rate_bps", pa.int64()),
            "cc_phase": names("cc_phase", fmt["phases"]),
            "segments": _column(chunk["segments"].astype(np.int32), pa.int32()),
            "seq_bytes": nullable("seq_bytes", pa.int64()),
            "len_bytes": _column(chunk["len_bytes"].astype(np.int32), pa.int32(), ~retrans),
        }
    )


def to_parquet(
    raw: Path, out: Path, provenance: Mapping[str, Any], flows: list[dict[str, Any]]
) -> int:
    """Convert the raw log `raw` into `out` (written beside it, then renamed), delete the raw
    file and return the number of events."""
    import numpy as np
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    from ..results.provenance import PARQUET_KEY

    dtype = _dtype()
    size = raw.stat().st_size
    if size % dtype.itemsize:
        raise ScenarioError(f"{raw}: not a whole number of event records ({size} bytes)")
    total = size // dtype.itemsize
    records = np.memmap(raw, dtype=dtype, mode="r", shape=(total,)) if total else None
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    meta = {
        PARQUET_KEY: json.dumps(dict(provenance), sort_keys=True, default=str).encode(),
        FLOWS_KEY: json.dumps(flows).encode(),
    }
    try:
        schema = _table(np.zeros(0, dtype=dtype)).schema.with_metadata(meta)
        with pq.ParquetWriter(tmp, schema) as writer:
            for start in range(0, total, CHUNK_RECORDS):
                assert records is not None
                chunk = np.asarray(records[start : start + CHUNK_RECORDS])
                writer.write_table(_table(chunk).replace_schema_metadata(meta))
        os.replace(tmp, out)
    except OSError as exc:
        raise ScenarioError(f"--events = {str(out)!r}: cannot write ({exc.strerror})") from None
    finally:
        tmp.unlink(missing_ok=True)
        del records
        raw.unlink(missing_ok=True)
    return int(total)


def read_events(path: str | os.PathLike[str]) -> tuple[Any, dict[str, Any], list[dict[str, Any]]]:
    """An event log: its rows (pandas), provenance and flows (id, cca, kind)."""
    import pyarrow.parquet as pq

    from ..results.provenance import PARQUET_KEY

    p = Path(path)
    try:
        table = pq.read_table(p)
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read ({exc.strerror or exc})") from None
    except Exception as exc:  # pyarrow's own errors: a damaged or foreign file
        raise ScenarioError(f"{p}: not a readable Parquet file ({type(exc).__name__})") from None
    meta = table.schema.metadata or {}
    if FLOWS_KEY not in meta or tuple(table.column_names) != COLUMNS:
        raise ScenarioError(f"{p}: not a tcplab event log; allowed: a file of tcplab run --events")
    frame = table.to_pandas()
    return frame, json.loads(meta.get(PARQUET_KEY, b"{}")), json.loads(meta[FLOWS_KEY])
