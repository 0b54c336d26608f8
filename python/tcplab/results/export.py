"""Tables written to files with their provenance, and read back with it.

One convention per format (docs/results.md "Exported files"):
- Parquet: the key-value metadata `tcplab.results.provenance` holds the provenance as JSON;
- JSON: one object `{"provenance": {...}, "rows": [...]}`;
- CSV: the file starts with `# key: <JSON value>` lines, one per provenance key, then the
  header row. `read_table` (and `tcplab results FILE.csv`) reads both parts;
  `pandas.read_csv(path, comment="#")` reads the rows alone when no value contains a `#`.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any, Final

import pandas as pd  # type: ignore[import-untyped]

from ..errors import ScenarioError
from ..files import check_regular, disk_full, is_disk_full
from .provenance import PARQUET_KEY

EXPORT_FORMATS: Final = ("csv", "parquet", "json")


def format_of(path: str | os.PathLike[str]) -> str | None:
    """The export format a file name says (`.csv`, `.parquet`, `.json`), else None."""
    suffix = Path(path).suffix.lower().lstrip(".")
    return suffix if suffix in EXPORT_FORMATS else None


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = json.loads(
        frame.to_json(orient="records", date_format="iso", date_unit="ms")
    )
    return rows


def csv_text(frame: pd.DataFrame, provenance: dict[str, Any]) -> str:
    head = "".join(
        f"# {key}: {json.dumps(value, sort_keys=True, default=str)}\n"
        for key, value in provenance.items()
    )
    return head + str(frame.to_csv(index=False))


def json_text(frame: pd.DataFrame, provenance: dict[str, Any]) -> str:
    doc = {"provenance": provenance, "rows": _records(frame)}
    return json.dumps(doc, indent=1, default=str, allow_nan=False) + "\n"


def write_table(
    frame: pd.DataFrame,
    path: str | os.PathLike[str] | None,
    fmt: str,
    provenance: dict[str, Any],
) -> None:
    """Write `frame` and its provenance as `fmt` to `path` (None: stdout, text formats only).
    The file appears whole or not at all (written beside, then renamed)."""
    if fmt == "parquet":
        if path is None:
            raise ScenarioError("-o: parquet is binary and needs an output file; allowed: -o FILE")
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]

        table = pa.Table.from_pandas(frame, preserve_index=False)
        meta = dict(table.schema.metadata or {})
        meta[PARQUET_KEY] = json.dumps(provenance, sort_keys=True, default=str).encode()
        _atomic(Path(path), lambda tmp: pq.write_table(table.replace_schema_metadata(meta), tmp))
        return
    if fmt == "csv":
        text = csv_text(frame, provenance)
    elif fmt == "json":
        text = json_text(frame, provenance)
    else:
        raise ScenarioError(f"--format = {fmt!r}: unknown format; allowed: csv, parquet, json")
    if path is None:
        sys.stdout.write(text)
    else:
        _atomic(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def _atomic(target: Path, write: Any) -> None:
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        if is_disk_full(exc):
            raise disk_full(target) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)


def read_table(path: str | os.PathLike[str]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A file `write_table` wrote: its rows and its provenance ({} when it has none)."""
    p = Path(path)
    fmt = format_of(p)
    if fmt is None:
        raise ScenarioError(
            f"{p}: not an exported table; allowed: *.csv, *.parquet, *.json, *.duckdb"
        )
    check_regular(p)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            table = pq.read_table(p)
            raw = (table.schema.metadata or {}).get(PARQUET_KEY)
            return table.to_pandas(), json.loads(raw) if raw else {}
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read ({exc.strerror or type(exc).__name__})") from None
    except Exception as exc:  # pyarrow's errors: a damaged or foreign file
        raise ScenarioError(f"{p}: not a readable {fmt} file ({type(exc).__name__})") from None
    if fmt == "json":
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from None
        if isinstance(doc, list):  # written before exports carried provenance
            return pd.DataFrame(doc), {}
        if not isinstance(doc, dict) or "rows" not in doc:
            raise ScenarioError(f"{p}: not a tcplab export; allowed: {{provenance, rows}}")
        return pd.DataFrame(doc["rows"]), dict(doc.get("provenance") or {})
    provenance: dict[str, Any] = {}
    lines = text.splitlines(keepends=True)
    n_head = 0
    for line in lines:
        if not line.startswith("# "):
            break
        key, _, value = line[2:].rstrip("\n").partition(": ")
        try:
            provenance[key] = json.loads(value)
        except json.JSONDecodeError:
            provenance[key] = value
        n_head += 1
    body = "".join(lines[n_head:])
    frame = pd.read_csv(io.StringIO(body)) if body.strip() else pd.DataFrame()
    return frame, provenance
