"""Every DuckDB connection tcplab opens: the results store, the kernel cache and the
in-memory aggregation all call `connect` here, and nowhere else calls `duckdb.connect`.

A results file may come from anywhere (a colleague, a download), so opening it must never
fetch or run code. DuckDB, by default, recognizes a foreign file (SQLite, for one) and
installs and loads the extension that reads it from the internet. Every connection is
therefore opened with extension auto-install and auto-load off, community extensions off,
and external access off (no extensions, no file or network access from SQL: tcplab never
needs them, it hands DuckDB its data as registered frames and writes Parquet itself), with
the configuration locked so no statement can turn these back on.

`problem` turns what DuckDB raises about a file into one line saying what is wrong with it
(damaged, unreadable, disk full) for the callers' one-line errors.
"""

from __future__ import annotations

import os
from typing import Any, Final

from .files import is_disk_full

#: The settings every connection is opened with (see the module note).
SAFE_CONFIG: Final[dict[str, Any]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "enable_external_access": False,
    "lock_configuration": True,
}

#: What DuckDB says of a file that is not (or no longer) a sound database.
_DAMAGE: Final = (
    "Corrupt database file",
    "Could not read enough bytes",
    "checksum",
    "database has been invalidated",
    "Failed to deserialize",
)


def connect(path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> Any:
    """A DuckDB connection to the file `path` (None: an in-memory database) with
    `SAFE_CONFIG`. Raises what `duckdb.connect` raises."""
    import duckdb

    target = ":memory:" if path is None else str(path)
    return duckdb.connect(target, read_only=read_only, config=dict(SAFE_CONFIG))


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def file_error(path: str | os.PathLike[str], exc: BaseException) -> str | None:
    """One line saying what a DuckDB error says about the file `path` it was reading or
    writing ("no space left on device: PATH", "PATH: damaged database file (...)"), or None
    when the error is about something else (a query: a bug, to be reported as one)."""
    import duckdb

    if is_disk_full(exc):
        return f"no space left on device: {path}"
    text = str(exc)
    if "Read-only file system" in text:
        return f"{path}: on a read-only file system ({first_line(exc)})"
    if "Permission denied" in text:
        return f"{path}: permission denied ({first_line(exc)})"
    if "not a valid DuckDB database" in text:
        return f"{path}: not a tcplab results database ({first_line(exc)})"
    if isinstance(exc, duckdb.IOException | duckdb.SerializationException | duckdb.FatalException):
        return f"{path}: damaged or unreadable database file ({first_line(exc)})"
    if isinstance(exc, duckdb.InternalException) or any(mark in text for mark in _DAMAGE):
        return f"{path}: damaged database file ({first_line(exc)})"
    if isinstance(exc, duckdb.PermissionException):
        # a file that needs an extension (a SQLite file, say): never fetched or loaded
        return f"{path}: not a DuckDB database file ({first_line(exc)})"
    return None
