"""The cache of kernel runs behind `tcplab validate --matrix`: one DuckDB file (default
`validate-matrix.duckdb`), tables of its own, separate from the results store (`store.py`).

A kernel run takes real time (120 s per case) while the simulator takes milliseconds, so each
emulated case is kept and a rerun of the matrix only simulates again. A run is keyed by
what produced it: the effective normalized scenario (`study.scenario_hash`, without seed or
name) and seed, the kernel release, the emulator (`tcplab-emu version`: its version and a
fingerprint of the sources it emulates with, so simulator-only changes keep the cache) and
tcplab's version. Stored per run: the scenario, the result JSON (`RunResult.from_json` reads
it), the raw recording it was converted from (`emulate.recording`: iperf3's JSON every
100 ms, ~1 MB per 120 s run, zlib-compressed), the emulation's notes, what produced it
(kernel, iperf3 and link emulation: the result's version string), wall time, and the
per-second series as rows of `kernel_series`.

Each run is written in one transaction as soon as it finishes, so Ctrl-C or a kill between
or during runs loses at most the run in progress; DuckDB's write-ahead log makes a committed
run survive a killed process. `duckdb` is imported only when a cache is opened.

Tables (schema version in `kernel_cache_meta`): `kernel_runs` (key, `created`,
`scenario_json`, `result_json`, `recording_json_zlib`, `notes_json`, `producer` (the result's
version string: kernel, iperf3, link emulation), `wall_s`),
`kernel_series` (key, `flow`, `t_s`, `goodput_bps`, `rtt_ms`, `cwnd_bytes`, `retransmits`).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .. import __version__
from ..database import connect, first_line
from ..errors import ScenarioError
from ..results.parse import ResultFormatError, RunResult
from .bins import find_binary

SCHEMA_VERSION: Final = 1
DEFAULT_PATH: Final = "validate-matrix.duckdb"

_KEY_COLUMNS: Final = "scenario_hash, seed, kernel_release, emulator, tcplab_version"
_SCHEMA: Final = f"""
CREATE TABLE IF NOT EXISTS kernel_cache_meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS kernel_runs (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, kernel_release VARCHAR NOT NULL,
    emulator VARCHAR NOT NULL, tcplab_version VARCHAR NOT NULL, created TIMESTAMP,
    scenario_json VARCHAR, result_json VARCHAR, recording_json_zlib BLOB, notes_json VARCHAR,
    producer VARCHAR, wall_s DOUBLE,
    PRIMARY KEY ({_KEY_COLUMNS}));
CREATE TABLE IF NOT EXISTS kernel_series (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, kernel_release VARCHAR NOT NULL,
    emulator VARCHAR NOT NULL, tcplab_version VARCHAR NOT NULL, flow INTEGER NOT NULL,
    t_s DOUBLE NOT NULL, goodput_bps DOUBLE, rtt_ms DOUBLE, cwnd_bytes BIGINT,
    retransmits BIGINT,
    PRIMARY KEY ({_KEY_COLUMNS}, flow, t_s));
"""


@dataclass(frozen=True)
class Identity:
    """What a kernel run was produced with, besides its scenario and seed."""

    kernel_release: str
    emulator: str
    tcplab_version: str

    def to_json_dict(self) -> dict[str, str]:
        return {
            "kernel_release": self.kernel_release,
            "emulator": self.emulator,
            "tcplab_version": self.tcplab_version,
        }


def emulator_version() -> str:
    """`tcplab-emu version` (e.g. `tcplab-emu 0.1.0 model 83f4…`), or `missing` when the
    binary is not there (nothing can be emulated then, and no cached run matches)."""
    binary = find_binary("tcplab-emu")
    if binary is None:
        return "missing"
    done = subprocess.run(
        [str(binary), "version"], capture_output=True, text=True, timeout=10, check=False
    )
    text = done.stdout.strip()
    if done.returncode != 0 or not text.startswith("tcplab-emu "):
        raise ScenarioError(
            f"{binary}: does not report its version (built before `tcplab-emu version`): "
            "rebuild it with `make build`"
        )
    return text


def current_identity() -> Identity:
    """This machine's kernel, emulator build and tcplab."""
    return Identity(platform.release(), emulator_version(), __version__)


@dataclass(frozen=True)
class CacheKey:
    scenario_hash: str
    seed: int
    identity: Identity

    def values(self) -> list[Any]:
        i = self.identity
        return [self.scenario_hash, self.seed, i.kernel_release, i.emulator, i.tcplab_version]


@dataclass(frozen=True)
class StoredRun:
    """A cached kernel run; `result` is rebuilt from the stored result JSON."""

    key: CacheKey
    created: _dt.datetime
    result: RunResult
    result_data: Mapping[str, Any]
    recording: Mapping[str, Any]
    notes: tuple[str, ...]
    producer: str
    wall_s: float


def _where() -> str:
    return " AND ".join(f"{column.strip()} = ?" for column in _KEY_COLUMNS.split(","))


class KernelCache:
    """The cache file; `read_only` opens an existing file without taking the write lock
    (`--plan`, `--sim-only`). Use as a context manager."""

    def __init__(self, path: str | os.PathLike[str], *, read_only: bool = False) -> None:
        import duckdb

        self.path = Path(path)
        if read_only and not self.path.exists():
            raise ScenarioError(f"--db = {str(path)!r}: no such file")
        try:
            if not read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            self.con = connect(self.path, read_only=read_only)
        except (duckdb.Error, OSError) as exc:
            raise ScenarioError(f"--db = {str(path)!r}: cannot open: {first_line(exc)}") from None
        try:
            self._check_schema(read_only)
        except BaseException:
            self.con.close()
            raise

    def _check_schema(self, read_only: bool) -> None:
        tables = {row[0] for row in self.con.execute("SHOW TABLES").fetchall()}
        if "kernel_runs" not in tables:
            if read_only:
                raise ScenarioError(f"--db = {str(self.path)!r}: holds no kernel runs")
            self.con.execute(_SCHEMA)
            self.con.execute(
                "INSERT INTO kernel_cache_meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)]
            )
            return
        row = self.con.execute(
            "SELECT value FROM kernel_cache_meta WHERE key = 'schema_version'"
        ).fetchone()
        version = int(row[0]) if row else 0
        if version != SCHEMA_VERSION:
            raise ScenarioError(
                f"--db = {str(self.path)!r}: kernel cache schema {version}; this tcplab reads "
                f"schema {SCHEMA_VERSION}: use another --db file"
            )

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> KernelCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    def get(self, key: CacheKey) -> StoredRun | None:
        """The run stored under exactly `key`."""
        row = self.con.execute(
            f"SELECT {_KEY_COLUMNS}, created, scenario_json, result_json, recording_json_zlib, "
            f"notes_json, producer, wall_s FROM kernel_runs WHERE {_where()}",
            key.values(),
        ).fetchone()
        return None if row is None else _stored(row)

    def latest(self, scenario_hash: str, seed: int) -> StoredRun | None:
        """The newest run of a scenario and seed, whatever kernel, emulator or tcplab made
        it (for `--sim-only` on a machine or build whose own runs are not cached)."""
        row = self.con.execute(
            f"SELECT {_KEY_COLUMNS}, created, scenario_json, result_json, recording_json_zlib, "
            "notes_json, producer, wall_s FROM kernel_runs "
            "WHERE scenario_hash = ? AND seed = ? ORDER BY created DESC LIMIT 1",
            [scenario_hash, seed],
        ).fetchone()
        return None if row is None else _stored(row)

    def keys(self) -> set[CacheKey]:
        rows = self.con.execute(f"SELECT {_KEY_COLUMNS} FROM kernel_runs").fetchall()
        return {CacheKey(h, int(s), Identity(k, e, t)) for h, s, k, e, t in rows}

    def put(
        self,
        key: CacheKey,
        result: RunResult,
        result_data: Mapping[str, Any],
        recording: Mapping[str, Any],
        notes: tuple[str, ...] = (),
        producer: str = "",
        *,
        created: _dt.datetime | None = None,
    ) -> None:
        """Store a kernel run (replacing one under the same key) and its per-second series,
        in one transaction; `created` (default: now) for a run recorded elsewhere."""
        series = [
            [*key.values(), flow.id, t_ns / 1e9, goodput, _ms(rtt), cwnd, retrans]
            for flow in result.series.flows
            for t_ns, goodput, rtt, cwnd, retrans in zip(
                result.series.t_ns,
                flow.goodput_bps,
                flow.rtt_mean_ns,
                flow.cwnd_bytes,
                flow.retransmits,
                strict=True,
            )
        ]
        with self._transaction():
            for table in ("kernel_runs", "kernel_series"):
                self.con.execute(f"DELETE FROM {table} WHERE {_where()}", key.values())
            self.con.execute(
                "INSERT INTO kernel_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    *key.values(),
                    created or _dt.datetime.now(_dt.UTC).replace(tzinfo=None),
                    json.dumps(dict(result.scenario)),
                    json.dumps(dict(result_data)),
                    zlib.compress(json.dumps(dict(recording)).encode(), 6),
                    json.dumps(list(notes)),
                    producer,
                    result.wall_s,
                ],
            )
            if series:
                self.con.executemany(
                    "INSERT INTO kernel_series VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", series
                )


def _ms(value_ns: float | None) -> float | None:
    return None if value_ns is None else value_ns / 1e6


def parse_result(data: Mapping[str, Any], wall_s: float, scenario: Mapping[str, Any]) -> RunResult:
    """A stored kernel result as a `RunResult` (raises `ResultFormatError`)."""
    try:
        return RunResult.from_json(data, wall_s=wall_s, scenario=scenario)
    except ResultFormatError:
        # a result stored by an earlier converter: the same numbers in today's shape
        from .convert import upgrade_result

        return RunResult.from_json(upgrade_result(data), wall_s=wall_s, scenario=scenario)


def _stored(row: tuple[Any, ...]) -> StoredRun:
    (
        h,
        seed,
        kernel,
        emulator,
        version,
        created,
        scenario,
        result,
        recording,
        notes,
        producer,
        wall,
    ) = row
    key = CacheKey(str(h), int(seed), Identity(str(kernel), str(emulator), str(version)))
    data = json.loads(result)
    raw = json.loads(zlib.decompress(recording)) if recording else {}
    parsed = parse_result(data, float(wall or 0.0), json.loads(scenario))
    return StoredRun(
        key=key,
        created=created,
        result=parsed,
        result_data=data,
        recording=raw,
        notes=tuple(json.loads(notes) if notes else ()),
        producer=str(producer or ""),
        wall_s=float(wall or 0.0),
    )
