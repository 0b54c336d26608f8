"""Kernel runs as a portable file: the agreement matrix's evidence, kept beside the code.

A kernel run takes two minutes of real time and root; the simulator side of the matrix takes
milliseconds anywhere. `export_records` writes cached kernel runs (`kernel_cache`) as gzipped
JSON lines — key, scenario, result (per-second series included), notes, producer, wall time,
creation time; not the raw recording, ~1 MB each — and `import_records` adds such a file to a
cache. tcplab ships the runs behind the README's matrix table (`RECORDED`), so
`tcplab validate --matrix --sim-only` regenerates that table on any machine, and a later
`tcplab validate --matrix --import-kernel FILE` continues an interrupted matrix where the
file ends instead of repeating it.

Each line is one run: `{"key": {...}, "created": ISO-8601, "scenario": {...},
"result": {...}, "notes": [...], "producer": "...", "wall_s": float}`; the first line is a
header `{"format": "tcplab-kernel-runs", "version": 1}`.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import os
import zlib
from pathlib import Path
from typing import Any, Final

from ..errors import ScenarioError
from .kernel_cache import CacheKey, Identity, KernelCache, parse_result

FORMAT: Final = "tcplab-kernel-runs"
VERSION: Final = 1
#: The kernel runs behind the README's agreement table, shipped with tcplab.
RECORDED: Final = Path(__file__).resolve().parent.parent / "data" / "kernel-matrix-runs.jsonl.gz"


def export_records(
    cache: KernelCache, path: str | os.PathLike[str], keys: set[CacheKey] | None = None
) -> int:
    """Write the cache's runs (those under `keys`, or all) to `path`; returns how many."""
    wanted = cache.keys() if keys is None else keys & cache.keys()
    lines = [json.dumps({"format": FORMAT, "version": VERSION})]
    for key in sorted(wanted, key=_order):
        stored = cache.get(key)
        if stored is None:
            continue
        lines.append(
            json.dumps(
                {
                    "key": {
                        "scenario_hash": key.scenario_hash,
                        "seed": key.seed,
                        **key.identity.to_json_dict(),
                    },
                    "created": stored.created.isoformat() if stored.created else None,
                    "scenario": dict(stored.result.scenario),
                    "result": dict(stored.result_data),
                    "notes": list(stored.notes),
                    "producer": stored.producer,
                    "wall_s": stored.wall_s,
                },
                sort_keys=True,
            )
        )
    text = "\n".join(lines) + "\n"
    try:
        # no name, mtime 0: the same runs give the same bytes, so the shipped file changes
        # only with them
        with (
            open(path, "wb") as raw,
            gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as out,
        ):
            out.write(text.encode())
    except OSError as exc:
        raise ScenarioError(
            f"--export-kernel = {str(path)!r}: cannot write: {exc.strerror}"
        ) from None
    return len(lines) - 1


def _order(key: CacheKey) -> tuple[str, int, str, str, str]:
    i = key.identity
    return (key.scenario_hash, key.seed, i.kernel_release, i.emulator, i.tcplab_version)


def read_records(
    path: str | os.PathLike[str], option: str = "--import-kernel"
) -> list[dict[str, Any]]:
    """The runs in a records file, checked line by line."""
    where = f"{option} = {str(path)!r}"
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        raise ScenarioError(f"{where}: no such file") from None
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise ScenarioError(f"{where}: not a gzipped kernel-runs file ({exc})") from None
    if not lines:
        raise ScenarioError(f"{where}: empty; allowed: a file written by --export-kernel")
    header = _json(lines[0], where, 1)
    if header.get("format") != FORMAT or header.get("version") != VERSION:
        raise ScenarioError(
            f"{where}: line 1: not a {FORMAT} file of version {VERSION}; allowed: a file "
            "written by --export-kernel"
        )
    runs = []
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        record = _json(line, where, number)
        missing = [f for f in ("key", "scenario", "result") if not isinstance(record.get(f), dict)]
        if missing:
            raise ScenarioError(f"{where}: line {number}: missing {', '.join(missing)}")
        runs.append(record)
    return runs


def _json(line: str, where: str, number: int) -> dict[str, Any]:
    try:
        value = json.loads(line)
    except ValueError as exc:
        raise ScenarioError(f"{where}: line {number}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ScenarioError(f"{where}: line {number}: not a JSON object")
    return value


def import_records(
    cache: KernelCache, path: str | os.PathLike[str], option: str = "--import-kernel"
) -> int:
    """Add the file's runs to `cache` (a run already there under the same key stays);
    returns how many were added."""
    from ..results.parse import ResultFormatError

    have = cache.keys()
    added = 0
    for number, record in enumerate(read_records(path, option), 2):
        k = record["key"]
        try:
            key = CacheKey(
                str(k["scenario_hash"]),
                int(k["seed"]),
                Identity(str(k["kernel_release"]), str(k["emulator"]), str(k["tcplab_version"])),
            )
            result = parse_result(
                record["result"], float(record.get("wall_s") or 0.0), record["scenario"]
            )
            created = (
                _dt.datetime.fromisoformat(record["created"]) if record.get("created") else None
            )
        except (KeyError, TypeError, ValueError, ResultFormatError) as exc:
            raise ScenarioError(
                f"{option} = {str(path)!r}: run {number - 1}: unreadable ({exc})"
            ) from None
        if key in have:
            continue
        cache.put(
            key,
            result,
            record["result"],
            {},
            tuple(str(n) for n in record.get("notes") or ()),
            str(record.get("producer") or ""),
            created=created,
        )
        have.add(key)
        added += 1
    return added
