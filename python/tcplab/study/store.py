"""The results database: an embedded DuckDB file plus per-run Parquet series beside it.

Identity (docs/results.md):
- A **run** is keyed by `run_id` = `<scenario_hash>-<seed>-m<model_version>`: the hash of the
  whole normalized scenario after overrides (`identity.scenario_hash`), the seed, and the
  simulator's `MODEL_VERSION`. A run is reused only when all three match, so after a change
  of the simulator's numbers nothing old counts as "already stored". Runs stored before
  model versions existed have `model_version` NULL (`...-unknown` ids) and are never reused.
- A **study revision** is a named, numbered, effective study definition (grid, variants,
  repetitions, base seed and the base scenario with every override, normalized; its hash is
  `definition_hash`) under one model version. `revision_runs` says which runs make up which
  revision; aggregates, reports, plots and exports are of one revision (by default the
  latest). A run can belong to many revisions and studies; it is simulated once.

Tables (schema version in `meta`): `runs` (one row per run: normalized scenario, provenance,
summary metrics — a run is never modified once stored), `study_revisions`, `revision_runs`,
`flows`, `links`, `legs` (PEP-split connections) and `pep_buffers`, all keyed by `run_id`.
`<db>.series/<run_id>.parquet` holds a run's per-interval series, written (atomically)
before its row is committed, so a stored run always has its series.

Concurrency: DuckDB lets one process write a file, or any number read it, never both at
once. So no `Store` keeps the file open: every read opens it read only for that query and
closes it (inside `reading()`, the block's reads share one such connection: a report's);
every write is one short transaction (connect, insert a batch, commit, close). A lock held
by another process is waited for (reads: `wait_s`, 5 s by default; writes: what the caller
asks) and then reported in one line (`StoreBusy`). Anyone who opens the file with
DuckDB directly and keeps it open blocks writers for that long.

Schema versions: 1 had TCP dumbbells only; 2 adds the CBR/PEP/link columns and tables; 3 the
connection-teardown times of file downloads; 4 the run identity with model versions, the
provenance columns, study revisions, and a run `goodput_bps` defined over the scenario's
duration (the flows' own goodput became `flows.flow_goodput_bps`). An older file is upgraded
in place when it is opened: its runs get model version NULL ("unknown"), its studies become
revision 1 of unknown definition, and run goodput is recomputed under today's definition from
the stored flow bytes (NULL where the file lacks them). A file from a newer tcplab is refused.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import duckdb
import pandas as pd  # type: ignore[import-untyped]

from ..database import connect, file_error, first_line
from ..errors import ScenarioError
from ..results.parse import FlowResult, RunResult, ns_to_ms, ns_to_s
from ..results.provenance import Build
from ..scenario.topology import base_rtt_ns, combined_loss, pep_mode, segments

SCHEMA_VERSION: Final = 4
#: How long a read waits for a writer to finish its commit before giving up.
DEFAULT_READ_WAIT_S: Final = 5.0

#: The version-1 tables, exactly as version 1 created them; versions 2 and 3 are migrations on
#: top. Only files of those versions go through them, on their way to version 4.
_SCHEMA_V1: Final = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE IF NOT EXISTS studies (
    name VARCHAR PRIMARY KEY, description VARCHAR, text VARCHAR, created TIMESTAMP);
CREATE TABLE IF NOT EXISTS runs (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL,
    scenario_json VARCHAR, tcplab_version VARCHAR, core_version VARCHAR, created TIMESTAMP,
    wall_s DOUBLE, events UBIGINT, duration_s DOUBLE, n_flows INTEGER,
    rate_bps DOUBLE, return_rate_bps DOUBLE, base_rtt_ms DOUBLE, per DOUBLE, mss_bytes INTEGER,
    goodput_bps DOUBLE, mean_flow_goodput_bps DOUBLE, throughput_bps DOUBLE,
    rtt_mean_ms DOUBLE, rtt_p95_ms DOUBLE, retransmits UBIGINT, rto_count UBIGINT,
    jain_fairness DOUBLE, minmax_ratio DOUBLE, utilization DOUBLE, goodput_utilization DOUBLE,
    queue_drops UBIGINT, error_drops UBIGINT, ecn_marks UBIGINT, queue_mean_pkts DOUBLE,
    completion_s DOUBLE, series_file VARCHAR,
    PRIMARY KEY (scenario_hash, seed));
CREATE TABLE IF NOT EXISTS study_runs (
    study VARCHAR NOT NULL, scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL,
    variant VARCHAR, params_json VARCHAR,
    PRIMARY KEY (study, scenario_hash, seed));
CREATE TABLE IF NOT EXISTS flows (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, flow_id INTEGER NOT NULL,
    cca VARCHAR, start_s DOUBLE, goodput_bps DOUBLE, throughput_bps DOUBLE,
    bytes_delivered UBIGINT, retransmits UBIGINT, rto_count UBIGINT,
    rtt_mean_ms DOUBLE, rtt_min_ms DOUBLE, rtt_p50_ms DOUBLE, rtt_p95_ms DOUBLE,
    completion_s DOUBLE,
    PRIMARY KEY (scenario_hash, seed, flow_id));
CREATE TABLE IF NOT EXISTS links (
    scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, name VARCHAR NOT NULL,
    rate_bps DOUBLE, utilization DOUBLE, queue_drops UBIGINT, error_drops UBIGINT,
    ecn_marks UBIGINT, queue_mean_pkts DOUBLE, queue_max_pkts UBIGINT,
    PRIMARY KEY (scenario_hash, seed, name));
"""

_MIGRATIONS: Final[dict[int, tuple[str, ...]]] = {
    2: (
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS n_cbr_flows INTEGER",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS cbr_goodput_bps DOUBLE",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS cbr_loss_ratio DOUBLE",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS cbr_owd_mean_ms DOUBLE",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS cbr_owd_p95_ms DOUBLE",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS pep VARCHAR",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS bottleneck VARCHAR",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS outage_drops UBIGINT",
        "ALTER TABLE runs ADD COLUMN IF NOT EXISTS aqm_drops UBIGINT",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS kind VARCHAR",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS packets_sent UBIGINT",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS packets_received UBIGINT",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS loss_ratio DOUBLE",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS owd_mean_ms DOUBLE",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS owd_p95_ms DOUBLE",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS owd_max_ms DOUBLE",
        "ALTER TABLE links ADD COLUMN IF NOT EXISTS outage_drops UBIGINT",
        "ALTER TABLE links ADD COLUMN IF NOT EXISTS aqm_drops UBIGINT",
        """CREATE TABLE IF NOT EXISTS legs (
            scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, flow_id INTEGER NOT NULL,
            leg INTEGER NOT NULL, from_node VARCHAR, to_node VARCHAR, cca VARCHAR,
            goodput_bps DOUBLE, retransmits UBIGINT, bytes_delivered UBIGINT,
            rtt_mean_ms DOUBLE, rtt_p95_ms DOUBLE,
            PRIMARY KEY (scenario_hash, seed, flow_id, leg))""",
        """CREATE TABLE IF NOT EXISTS pep_buffers (
            scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, flow_id INTEGER NOT NULL,
            node VARCHAR NOT NULL, mean_bytes DOUBLE, max_bytes UBIGINT, limit_bytes UBIGINT,
            PRIMARY KEY (scenario_hash, seed, flow_id, node))""",
        # what version 1 implies for its runs: TCP flows only, dumbbells without PEPs
        "UPDATE flows SET kind = 'tcp' WHERE kind IS NULL",
        "UPDATE runs SET n_cbr_flows = 0 WHERE n_cbr_flows IS NULL",
        "UPDATE runs SET pep = 'none' WHERE pep IS NULL",
        "UPDATE runs SET bottleneck = 'bottleneck.forward' WHERE bottleneck IS NULL",
    ),
    3: (
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS server_done_s DOUBLE",
        "ALTER TABLE flows ADD COLUMN IF NOT EXISTS closed_s DOUBLE",
        "ALTER TABLE legs ADD COLUMN IF NOT EXISTS sender_done_s DOUBLE",
        "ALTER TABLE legs ADD COLUMN IF NOT EXISTS closed_s DOUBLE",
    ),
}

#: The tables of schema version 4 (a new file, and the target of the upgrade of an old one).
_TABLES: Final[dict[str, str]] = {
    "runs": """
        run_id VARCHAR PRIMARY KEY,
        scenario_hash VARCHAR NOT NULL, seed UBIGINT NOT NULL, model_version INTEGER,
        scenario_json VARCHAR, tcplab_version VARCHAR, core_version VARCHAR,
        git_commit VARCHAR, host VARCHAR, started_utc TIMESTAMP, created TIMESTAMP,
        wall_s DOUBLE, events UBIGINT, duration_s DOUBLE, n_flows INTEGER,
        rate_bps DOUBLE, return_rate_bps DOUBLE, base_rtt_ms DOUBLE, per DOUBLE,
        mss_bytes INTEGER, goodput_bps DOUBLE, mean_flow_goodput_bps DOUBLE,
        throughput_bps DOUBLE, rtt_mean_ms DOUBLE, rtt_p95_ms DOUBLE, retransmits UBIGINT,
        rto_count UBIGINT, jain_fairness DOUBLE, minmax_ratio DOUBLE, utilization DOUBLE,
        goodput_utilization DOUBLE, queue_drops UBIGINT, error_drops UBIGINT,
        ecn_marks UBIGINT, queue_mean_pkts DOUBLE, completion_s DOUBLE, series_file VARCHAR,
        n_cbr_flows INTEGER, cbr_goodput_bps DOUBLE, cbr_loss_ratio DOUBLE,
        cbr_owd_mean_ms DOUBLE, cbr_owd_p95_ms DOUBLE, pep VARCHAR, bottleneck VARCHAR,
        outage_drops UBIGINT, aqm_drops UBIGINT""",
    "study_revisions": """
        study VARCHAR NOT NULL, revision INTEGER NOT NULL,
        definition_hash VARCHAR, definition_json VARCHAR, model_version INTEGER,
        description VARCHAR, file_text VARCHAR, n_runs UBIGINT, created TIMESTAMP,
        tcplab_version VARCHAR, git_commit VARCHAR, host VARCHAR,
        PRIMARY KEY (study, revision)""",
    "revision_runs": """
        study VARCHAR NOT NULL, revision INTEGER NOT NULL, run_id VARCHAR NOT NULL,
        variant VARCHAR, params_json VARCHAR,
        PRIMARY KEY (study, revision, run_id)""",
    "flows": """
        run_id VARCHAR NOT NULL, flow_id INTEGER NOT NULL, kind VARCHAR, cca VARCHAR,
        start_s DOUBLE, flow_goodput_bps DOUBLE, throughput_bps DOUBLE,
        bytes_delivered UBIGINT, retransmits UBIGINT, rto_count UBIGINT,
        rtt_mean_ms DOUBLE, rtt_min_ms DOUBLE, rtt_p50_ms DOUBLE, rtt_p95_ms DOUBLE,
        completion_s DOUBLE, packets_sent UBIGINT, packets_received UBIGINT,
        loss_ratio DOUBLE, owd_mean_ms DOUBLE, owd_p95_ms DOUBLE, owd_max_ms DOUBLE,
        server_done_s DOUBLE, closed_s DOUBLE,
        PRIMARY KEY (run_id, flow_id)""",
    "links": """
        run_id VARCHAR NOT NULL, name VARCHAR NOT NULL, rate_bps DOUBLE,
        utilization DOUBLE, queue_drops UBIGINT, error_drops UBIGINT, ecn_marks UBIGINT,
        queue_mean_pkts DOUBLE, queue_max_pkts UBIGINT, outage_drops UBIGINT,
        aqm_drops UBIGINT,
        PRIMARY KEY (run_id, name)""",
    "legs": """
        run_id VARCHAR NOT NULL, flow_id INTEGER NOT NULL, leg INTEGER NOT NULL,
        from_node VARCHAR, to_node VARCHAR, cca VARCHAR, goodput_bps DOUBLE,
        retransmits UBIGINT, bytes_delivered UBIGINT, rtt_mean_ms DOUBLE,
        rtt_p95_ms DOUBLE, sender_done_s DOUBLE, closed_s DOUBLE,
        PRIMARY KEY (run_id, flow_id, leg)""",
    "pep_buffers": """
        run_id VARCHAR NOT NULL, flow_id INTEGER NOT NULL, node VARCHAR NOT NULL,
        mean_bytes DOUBLE, max_bytes UBIGINT, limit_bytes UBIGINT,
        PRIMARY KEY (run_id, flow_id, node)""",
}
#: The tables an old file of each schema version has (what its upgrade reads).
_OLD_TABLES: Final[dict[int, tuple[str, ...]]] = {
    1: ("meta", "studies", "runs", "study_runs", "flows", "links"),
    2: ("meta", "studies", "runs", "study_runs", "flows", "links", "legs", "pep_buffers"),
    3: ("meta", "studies", "runs", "study_runs", "flows", "links", "legs", "pep_buffers"),
}
#: Tables whose rows belong to one run (deleted with it).
_RUN_TABLES: Final = ("flows", "links", "legs", "pep_buffers", "runs")

#: run_id of a run stored before model versions (in SQL over a version-3 table).
_LEGACY_ID: Final = "scenario_hash || '-' || CAST(seed AS VARCHAR) || '-unknown'"

#: Version 3 → 4: tables re-keyed by run_id (model version NULL), studies become revision 1.
_UPGRADE_TO_4: Final = (
    *(f"CREATE TABLE {name}_v4 ({_TABLES[name]})" for name in _TABLES),
    f"INSERT INTO runs_v4 BY NAME SELECT {_LEGACY_ID} AS run_id, * FROM runs",
    f"""INSERT INTO flows_v4 BY NAME SELECT {_LEGACY_ID} AS run_id,
        * EXCLUDE (scenario_hash, seed, goodput_bps), goodput_bps AS flow_goodput_bps
        FROM flows""",
    *(
        f"INSERT INTO {t}_v4 BY NAME SELECT {_LEGACY_ID} AS run_id, "
        f"* EXCLUDE (scenario_hash, seed) FROM {t}"
        for t in ("links", "legs", "pep_buffers")
    ),
    """INSERT INTO study_revisions_v4 (study, revision, description, file_text, created)
        SELECT name, 1, description, text, created FROM studies""",
    """INSERT INTO study_revisions_v4 (study, revision)
        SELECT DISTINCT study, 1 FROM study_runs
        WHERE study NOT IN (SELECT name FROM studies)""",
    f"""INSERT INTO revision_runs_v4
        SELECT study, 1, {_LEGACY_ID}, variant, params_json FROM study_runs""",
    """UPDATE study_revisions_v4 SET n_runs = (
        SELECT count(*) FROM revision_runs_v4 m
        WHERE m.study = study_revisions_v4.study AND m.revision = 1)""",
    # Run goodput under today's definition (bytes of all flows / the scenario's duration),
    # from the flows' stored bytes; NULL where the old file does not have them.
    """UPDATE runs_v4 SET
        goodput_bps = (
            SELECT CASE WHEN count(*) > 0 AND count(*) = count(f.bytes_delivered)
                AND runs_v4.duration_s > 0
                THEN sum(f.bytes_delivered) * 8.0 / runs_v4.duration_s END
            FROM flows_v4 f WHERE f.run_id = runs_v4.run_id AND f.kind = 'tcp'),
        cbr_goodput_bps = (
            SELECT CASE WHEN count(*) > 0 AND count(*) = count(f.bytes_delivered)
                AND runs_v4.duration_s > 0
                THEN sum(f.bytes_delivered) * 8.0 / runs_v4.duration_s END
            FROM flows_v4 f WHERE f.run_id = runs_v4.run_id AND f.kind = 'cbr')""",
    "UPDATE runs_v4 SET goodput_utilization = goodput_bps / rate_bps WHERE rate_bps > 0",
    # The old run throughput summed each flow's rate over its own active time: the same
    # number as today's only when every TCP flow was active for the whole run.
    """UPDATE runs_v4 SET throughput_bps = NULL WHERE EXISTS (
        SELECT 1 FROM flows_v4 f WHERE f.run_id = runs_v4.run_id AND f.kind = 'tcp'
        AND (coalesce(f.start_s, 0) > 0 OR f.completion_s IS NOT NULL))""",
    *(f"DROP TABLE {name}" for name in ("runs", "flows", "links", "legs", "pep_buffers")),
    "DROP TABLE study_runs",
    "DROP TABLE studies",
    *(f"ALTER TABLE {name}_v4 RENAME TO {name}" for name in _TABLES),
)


class StoreError(ScenarioError):
    """A results file that cannot be used (one-line message, exit code 2 in the CLI)."""


class StoreBusy(StoreError):
    """Another process held the database for longer than this one would wait."""


@dataclass(frozen=True)
class RunKey:
    """What identifies a run: the scenario (hash), the seed and the simulator's model version
    (None: stored before model versions existed)."""

    scenario_hash: str
    seed: int
    model_version: int | None

    @property
    def run_id(self) -> str:
        model = "unknown" if self.model_version is None else f"m{self.model_version}"
        return f"{self.scenario_hash}-{self.seed}-{model}"


@dataclass(frozen=True)
class RunRecord:
    """A finished run on its way into the store, with its place in a study's grid.
    `series_file`: the name of its series file in the store's series folder when the worker
    that ran it wrote it already (None: `add_runs` writes it from `result`)."""

    key: RunKey
    variant: str
    params: Mapping[str, Any]
    normalized: Mapping[str, Any]
    result: RunResult
    series_file: str | None = None


@dataclass(frozen=True)
class Member:
    """One run of a study revision's grid (not necessarily stored yet)."""

    run_id: str
    variant: str
    params_json: str


@dataclass(frozen=True)
class RevisionPlan:
    """A study's effective definition, as `study.Study.revision_plan` makes it."""

    study: str
    description: str
    file_text: str
    definition_json: str
    definition_hash: str
    model_version: int
    n_runs: int


@dataclass(frozen=True)
class RevisionChoice:
    """Which revision a sweep runs into, and why (`status`: new, resumed, model, replaced)."""

    study: str
    revision: int
    status: str
    note: str
    #: runs of the revision's grid already in the database
    stored: frozenset[str]
    #: runs of the grid stored before (for other studies or revisions) and linked now
    linked: int = 0
    #: series files of runs that `--replace` deleted (removed after the commit)
    deleted_series: tuple[str, ...] = ()


def _finite(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _extra(obj: Any, key: str) -> int:
    """Optional counters the result classes keep in an `extra` mapping (e.g. ECN marks)."""
    return int(getattr(obj, "extra", {}).get(key, 0))


def _base_rtt_ms(norm: Mapping[str, Any]) -> float:
    return float(base_rtt_ns(norm)) / 1e6


def _forward_per(norm: Mapping[str, Any]) -> float:
    """Packet error rate of the whole forward path (one segment: its `per` exactly)."""
    return combined_loss([float(segment.forward["per"]) for segment in segments(norm)])


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC).replace(tzinfo=None)


def _utc(text: str | None) -> _dt.datetime | None:
    if not text:
        return None
    return _dt.datetime.fromisoformat(text.replace("Z", "+00:00")).replace(tzinfo=None)


def _is_lock_conflict(exc: BaseException) -> bool:
    text = str(exc)
    return "Could not set lock" in text or "Conflicting lock" in text


def _holder(exc: BaseException) -> str:
    """Who holds the lock, from DuckDB's message ("... held in /usr/bin/python3 (PID 42)")."""
    found = re.search(r"held in (\S+) \(PID (\d+)\)", str(exc))
    return f"{Path(found.group(1)).name} PID {found.group(2)}" if found else "another process"


class Store:
    """A results database. Holds no connection between calls (see the module note), so any
    number of `Store`s in any number of processes can exist beside a running sweep."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        create: bool = True,
        wait_s: float = DEFAULT_READ_WAIT_S,
    ) -> None:
        self.path = Path(path)
        self.wait_s = wait_s
        self._held: Any = None  # the read connection of a `reading()` block
        self.series_dir = self.path.with_name(self.path.name + ".series")
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, not a results database")
        if not self.path.exists():
            if not create:
                raise StoreError(f"{self.path}: no such results database")
            self._create()
            return
        version = self._schema_version(create)
        if version is None:
            self._create()
        elif version < SCHEMA_VERSION:
            self._upgrade()

    # --- connections ----------------------------------------------------------------------

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Reads inside the block share one read-only connection instead of opening the
        file for each query (a report makes dozens, each open costing tens of ms). Writers
        in other processes wait while it is held, so keep the block to the reading."""
        if self._held is not None:
            yield
            return
        with self._connect(write=False) as con:
            self._held = con
            try:
                yield
            finally:
                self._held = None

    @contextmanager
    def _connect(self, *, write: bool, wait_s: float | None = None) -> Iterator[Any]:
        """A connection for one query or one transaction; waits (with back-off) while another
        process holds a conflicting lock, then gives up in one line. What DuckDB says of a
        damaged, foreign or unwritable file, there or in a query, becomes a `StoreError`.
        Inside `reading()`, a read uses the block's connection."""
        if self._held is not None and not write:
            with self._file_errors():
                yield self._held
            return
        wait = self.wait_s if wait_s is None else wait_s
        deadline = time.monotonic() + wait
        delay_s = 0.005
        while True:
            try:
                con = connect(self.path, read_only=not write)
                break
            except duckdb.Error as exc:
                if not _is_lock_conflict(exc):
                    raise StoreError(
                        file_error(self.path, exc)
                        or f"{self.path}: not a tcplab results database ({first_line(exc)})"
                    ) from None
                left = deadline - time.monotonic()
                if left <= 0:
                    raise StoreBusy(
                        f"{self.path}: the database is busy (held by {_holder(exc)}); "
                        f"waited {wait:g} s — try again when it is done"
                    ) from None
                time.sleep(min(delay_s, left))
                delay_s = min(delay_s * 2, 0.2)
        try:
            with self._file_errors():
                yield con
        finally:
            con.close()

    @contextmanager
    def _file_errors(self) -> Iterator[None]:
        """What DuckDB says of the file inside the block, as a `StoreError`."""
        try:
            yield
        except duckdb.Error as exc:
            message = file_error(self.path, exc)
            if message is None:
                raise
            raise StoreError(message) from None

    @contextmanager
    def _transaction(self, wait_s: float | None = None) -> Iterator[Any]:
        with self._connect(write=True, wait_s=wait_s) as con:
            con.execute("BEGIN TRANSACTION")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                # A failed COMMIT (a full disk) has ended the transaction already: its own
                # error is the one to report, not that there is nothing left to roll back.
                with suppress(duckdb.Error):
                    con.execute("ROLLBACK")
                raise

    def _read(self, sql: str, args: Sequence[Any] = ()) -> pd.DataFrame:
        with self._connect(write=False) as con:
            return con.execute(sql, list(args)).df()

    def query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of a read-only SQL query (for notebooks and tests)."""
        with self._connect(write=False) as con:
            rows: list[tuple[Any, ...]] = con.execute(sql, list(args)).fetchall()
            return rows

    # --- schema ---------------------------------------------------------------------------

    def _schema_version(self, create: bool) -> int | None:
        """The file's schema version; None for an empty database file (a new one)."""
        with self._connect(write=False) as con:
            tables = {
                r[0]
                for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
            }
            if "meta" not in tables:
                if tables or not create:
                    raise StoreError(
                        f"{self.path}: not a tcplab results database (no schema version)"
                    )
                return None
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0]) if row and str(row[0]).isdigit() else -1
            if not 1 <= version <= SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: results schema version {version}; this tcplab "
                    f"reads versions 1 to {SCHEMA_VERSION}"
                )
            columns: dict[str, set[str]] = {}
            for table, column in con.execute(
                "SELECT table_name, column_name FROM information_schema.columns"
            ).fetchall():
                columns.setdefault(str(table), set()).add(str(column))
        self._check_tables(version, columns)
        return version

    def _check_tables(self, version: int, columns: Mapping[str, set[str]]) -> None:
        """Refuse a file that lacks a table or column of its schema version (a partial copy,
        a table dropped by hand) before a query would stumble on it."""
        if version == SCHEMA_VERSION:
            expected = {name: set(_COLUMN_TYPES[name]) for name in _TABLES}
        else:  # an old file: the tables the upgrade starts from
            expected = {name: set() for name in _OLD_TABLES[version]}
        for name, wanted in expected.items():
            if name not in columns:
                raise StoreError(
                    f"{self.path}: damaged results database (schema version {version} "
                    f"without its table {name})"
                )
            missing = sorted(wanted - columns[name])
            if missing:
                raise StoreError(
                    f"{self.path}: damaged results database (table {name} without column "
                    f"{missing[0]})"
                )

    def _create(self) -> None:
        from .. import __version__

        with self._transaction() as con:
            tables = {
                r[0]
                for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()
            }
            if "meta" in tables:  # another process created it first
                return
            if tables:
                raise StoreError(f"{self.path}: not a tcplab results database (no schema version)")
            con.execute("CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
            for name, columns in _TABLES.items():
                con.execute(f"CREATE TABLE {name} ({columns})")
            con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('created_by', ?)",
                [str(SCHEMA_VERSION), f"tcplab {__version__}"],
            )

    def _upgrade(self) -> None:
        """Upgrade the file to `SCHEMA_VERSION` in one transaction (a process that gets the
        lock after another one upgraded it finds nothing to do)."""
        with self._transaction(wait_s=max(self.wait_s, 30.0)) as con:
            row = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = int(row[0])
            if version >= SCHEMA_VERSION:
                return
            for target in range(version + 1, 4):
                for statement in _MIGRATIONS[target]:
                    con.execute(statement)
            for statement in _UPGRADE_TO_4:
                con.execute(statement)
            con.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)]
            )

    def close(self) -> None:
        """Nothing to release: the store holds no connection between calls."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------

    def open_revision(
        self,
        plan: RevisionPlan,
        members: Sequence[Member],
        build: Build,
        *,
        on_change: str = "refuse",
        wait_s: float = 60.0,
        keep_runs: bool = False,
    ) -> RevisionChoice:
        """Find or make the revision of `plan` (one transaction) and link the runs of its grid
        that are already stored. `keep_runs`: a replaced revision's runs stay stored (not
        linked) for the rest of a grid `members` holds only the start of, until
        `drop_unused_runs`.

        The revision of the same definition and model version is resumed. Otherwise, when the
        study has revisions: if the latest one has the same definition (or an unknown one,
        from before revisions) under another model version, a new revision is made; a changed
        definition is refused unless `on_change` is "new" (a new revision beside the old) or
        "replace" (the latest revision is discarded with the runs no other revision uses, and
        the new definition takes its number)."""
        if on_change not in ("refuse", "new", "replace"):
            raise ValueError(f"on_change = {on_change!r}")
        frame = pd.DataFrame(
            {
                "run_id": [m.run_id for m in members],
                "variant": [m.variant for m in members],
                "params_json": [m.params_json for m in members],
            }
        ).drop_duplicates("run_id")
        with self._transaction(wait_s) as con:
            rows = con.execute(
                "SELECT revision, definition_hash, model_version, definition_json "
                "FROM study_revisions WHERE study = ? ORDER BY revision",
                [plan.study],
            ).fetchall()
            same = [r for r in rows if r[1] == plan.definition_hash and r[2] == plan.model_version]
            deleted: list[str] = []
            if same:
                revision, status = int(same[-1][0]), "resumed"
                latest = int(rows[-1][0])
                note = f"revision {revision} (same definition and model version)"
                if revision != latest:
                    note += f"; revision {latest} is the latest, and the default elsewhere"
            elif not rows:
                revision, status, note = 1, "new", "revision 1 (new study)"
            else:
                latest, latest_hash, latest_model, latest_json = rows[-1]
                definition_kept = latest_hash in (None, plan.definition_hash)
                if on_change == "replace":
                    revision, status = int(latest), "replaced"
                    note = f"revision {revision} replaced"
                    self._unlink_revision(con, plan.study, revision)
                    if not keep_runs:
                        deleted = self._drop_unused(con, frame)
                elif definition_kept and latest_model != plan.model_version:
                    revision, status = int(latest) + 1, "model"
                    note = (
                        f"revision {revision}: model version {plan.model_version} "
                        f"(revision {latest}: {_model_text(latest_model)})"
                    )
                elif on_change == "new":
                    revision, status = int(latest) + 1, "new"
                    note = f"revision {revision} (new definition)"
                else:
                    changed = _differences(latest_json, plan.definition_json)
                    raise StoreError(
                        f"study {plan.study!r}: the definition differs from revision {latest} "
                        f"in {changed}; allowed: --new-revision (keep both) or --replace "
                        f"(discard revision {latest})"
                    )
            if status != "resumed":
                con.execute(
                    "INSERT INTO study_revisions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        plan.study,
                        revision,
                        plan.definition_hash,
                        plan.definition_json,
                        plan.model_version,
                        plan.description,
                        plan.file_text,
                        plan.n_runs,
                        _now(),
                        build.tcplab_version,
                        build.git_commit,
                        _hostname(),
                    ],
                )
            con.register("grid", frame)
            count = "SELECT count(*) FROM revision_runs WHERE study = ? AND revision = ?"
            before = con.execute(count, [plan.study, revision]).fetchone()[0]
            con.execute(
                "INSERT INTO revision_runs SELECT ?, ?, g.run_id, g.variant, g.params_json "
                "FROM grid g JOIN runs r USING (run_id) ON CONFLICT DO NOTHING",
                [plan.study, revision],
            )
            linked = con.execute(count, [plan.study, revision]).fetchone()[0] - before
            stored = frozenset(
                r[0]
                for r in con.execute(
                    "SELECT g.run_id FROM grid g JOIN runs USING (run_id)"
                ).fetchall()
            )
            con.unregister("grid")
        for name in deleted:
            (self.series_dir / name).unlink(missing_ok=True)
        return RevisionChoice(
            plan.study, revision, status, note, stored, int(linked), tuple(deleted)
        )

    @staticmethod
    def _unlink_revision(con: Any, study: str, revision: int) -> None:
        """Delete a revision and its membership (its runs stay)."""
        con.execute("DELETE FROM revision_runs WHERE study = ? AND revision = ?", [study, revision])
        con.execute(
            "DELETE FROM study_revisions WHERE study = ? AND revision = ?", [study, revision]
        )

    @staticmethod
    def _drop_unused(con: Any, keep: pd.DataFrame | None) -> list[str]:
        """Delete the runs that neither a revision nor `keep` (a grid's `run_id`s) uses;
        returns the series files of the deleted runs."""
        kept = ""
        if keep is not None:
            con.register("keep_grid", keep)
            kept = "AND run_id NOT IN (SELECT run_id FROM keep_grid)"
        con.execute(
            "CREATE TEMP TABLE orphans AS SELECT run_id, series_file FROM runs "
            f"WHERE run_id NOT IN (SELECT run_id FROM revision_runs) {kept}"
        )
        files = [str(r[0]) for r in con.execute("SELECT series_file FROM orphans").fetchall()]
        for table in _RUN_TABLES:
            con.execute(f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM orphans)")
        con.execute("DROP TABLE orphans")
        if keep is not None:
            con.unregister("keep_grid")
        return [f for f in files if f and f != "None"]

    def drop_unused_runs(self, wait_s: float = 60.0) -> int:
        """Delete the runs no revision uses, with their series files (what a replaced
        revision left for a grid planned chunk by chunk); returns how many."""
        with self._transaction(wait_s) as con:
            deleted = self._drop_unused(con, None)
        for name in deleted:
            (self.series_dir / name).unlink(missing_ok=True)
        return len(deleted)

    def _write_series(self, record: RunRecord) -> str:
        from ..results.export import write_table
        from ..results.series import series_frame

        self.series_dir.mkdir(parents=True, exist_ok=True)
        name = f"{record.key.run_id}.parquet"
        frame = series_frame(record.result)
        write_table(frame, self.series_dir / name, "parquet", frame.attrs["provenance"])
        return name

    def add_runs(
        self, study: str, revision: int, records: Sequence[RunRecord], *, wait_s: float = 60.0
    ) -> int:
        """Store finished runs and their membership of a revision in one transaction; a run
        another process stored meanwhile is only linked. Returns how many were new. Series
        files are written first (outside the lock) unless the workers did. Each table gets
        the batch's rows in one columnar append."""
        if not records:
            return 0
        series = {r.key.run_id: r.series_file or self._write_series(r) for r in records}
        members: dict[str, list[Any]] = {
            "study": [study] * len(records),
            "revision": [revision] * len(records),
            "run_id": [r.key.run_id for r in records],
            "variant": [r.variant for r in records],
            "params_json": [json.dumps(dict(r.params), sort_keys=True) for r in records],
        }
        with self._transaction(wait_s) as con:
            ids = [r.key.run_id for r in records]
            present = {
                row[0]
                for row in con.execute(
                    "SELECT run_id FROM runs WHERE list_contains(?, run_id)", [ids]
                ).fetchall()
            }
            fresh: dict[str, RunRecord] = {}
            for record in records:
                if record.key.run_id not in present:
                    fresh.setdefault(record.key.run_id, record)
            batch = _Batch()
            for run_id, record in fresh.items():
                batch.add_run(record, series[run_id])
            for table in ("runs", "flows", "links", "legs", "pep_buffers"):
                _append(con, table, batch.tables[table])
            _append(con, "revision_runs", members, on_conflict="DO NOTHING")
        return len(fresh)

    # --- reading --------------------------------------------------------------------------

    def stored_run_ids(self, run_ids: Sequence[str]) -> set[str]:
        """Which of `run_ids` are stored."""
        frame = pd.DataFrame({"run_id": list(run_ids)})
        with self._connect(write=False) as con:
            con.register("wanted", frame)
            rows = con.execute("SELECT run_id FROM wanted JOIN runs USING (run_id)").fetchall()
        return {str(r[0]) for r in rows}

    def revisions(self, study: str | None = None) -> pd.DataFrame:
        """One row per study revision: its definition hash, model version, how many of its
        runs are stored (`runs`) out of its grid (`n_runs`), and whether it is the latest."""
        where, args = ("WHERE s.study = ?", [study]) if study else ("", [])
        return self._read(
            "WITH counted AS (SELECT s.study, s.revision, s.model_version, s.definition_hash, "
            "count(m.run_id) AS runs, s.n_runs, s.created, s.description "
            "FROM study_revisions s LEFT JOIN revision_runs m "
            "ON m.study = s.study AND m.revision = s.revision "
            f"{where} GROUP BY ALL) "
            "SELECT *, revision = max(revision) OVER (PARTITION BY study) AS latest "
            "FROM counted ORDER BY study, revision",
            args,
        )

    def studies(self) -> pd.DataFrame:
        """The latest revision of every study (see `revisions`)."""
        df = self.revisions()
        return df[df["latest"]].drop(columns=["latest"]).reset_index(drop=True)

    def study_names(self) -> list[str]:
        return [
            str(r[0])
            for r in self.query("SELECT DISTINCT study FROM study_revisions ORDER BY study")
        ]

    def resolve(self, study: str, revision: int | None = None) -> int:
        """The revision number `revision` names (None: the latest), checked to exist."""
        known = [
            int(r[0])
            for r in self.query(
                "SELECT revision FROM study_revisions WHERE study = ? ORDER BY revision", [study]
            )
        ]
        if not known:
            names = ", ".join(self.study_names()) or "none"
            raise StoreError(f"--study = {study!r}: not in {self.path}; allowed: {names}")
        if revision is None:
            return known[-1]
        if revision not in known:
            raise StoreError(
                f"--revision = {revision}: study {study!r} has no such revision; allowed: "
                + ", ".join(map(str, known))
            )
        return revision

    def _selection(self, study: str | None, revision: int | None) -> tuple[str, list[Any]]:
        """SQL (a `sel(study, revision)` relation) for one study revision, or the latest
        revision of every study."""
        if study is None:
            if revision is not None:
                raise StoreError("--revision: needs --study; allowed: --study NAME --revision N")
            return (
                "sel AS (SELECT study, max(revision) AS revision FROM study_revisions "
                "GROUP BY study)",
                [],
            )
        return "sel AS (SELECT ? AS study, ? AS revision)", [study, self.resolve(study, revision)]

    def _members_of(
        self, table: str, study: str | None, revision: int | None, order: str
    ) -> pd.DataFrame:
        sel, args = self._selection(study, revision)
        if table == "runs":
            body = "r.* FROM rev JOIN runs r USING (run_id)"
        else:
            body = (
                "r.scenario_hash, r.seed, r.model_version, t.* FROM rev "
                f"JOIN runs r USING (run_id) JOIN {table} t USING (run_id)"
            )
        df = self._read(
            f"WITH {sel}, rev AS (SELECT m.* FROM revision_runs m JOIN sel USING (study, "
            f"revision)) SELECT rev.study, rev.revision, rev.variant, rev.params_json, {body} "
            f"ORDER BY rev.study, rev.variant, {order}",
            args,
        )
        if table == "runs":
            df = _with_theory(df)
        return expand_params(df)

    def runs(self, study: str | None = None, revision: int | None = None) -> pd.DataFrame:
        """One row per run of a study revision (default: the latest; no study: the latest
        revision of every study), with the swept parameters as columns."""
        return self._members_of("runs", study, revision, "r.scenario_hash, r.seed")

    def flows(self, study: str | None = None, revision: int | None = None) -> pd.DataFrame:
        """One row per flow of every run of a study revision (see `runs`)."""
        return self._members_of("flows", study, revision, "r.scenario_hash, r.seed, t.flow_id")

    def legs(self, study: str | None = None, revision: int | None = None) -> pd.DataFrame:
        """The PEP-split connections of every flow (one row per leg)."""
        return self._members_of(
            "legs", study, revision, "r.scenario_hash, r.seed, t.flow_id, t.leg"
        )

    def series(self, run_id: str, series_file: str | None = None) -> pd.DataFrame:
        """A run's series in the one series schema (`series.SERIES_COLUMNS`), with its
        provenance in `attrs["provenance"]`. `series_file`: the run's `series_file` column,
        when the caller has read it already."""
        from ..results.export import read_table
        from ..results.series import conform

        if not series_file:
            rows = self.query("SELECT series_file FROM runs WHERE run_id = ?", [run_id])
            if not rows or not rows[0][0]:
                raise StoreError(f"{self.path}: no run {run_id}")
            series_file = str(rows[0][0])
        if not self.series_dir.is_dir():
            raise StoreError(
                f"{self.path}: its series folder {self.series_dir.name} is missing (a results "
                "database is the file and this folder beside it: copy both)"
            )
        frame, provenance = read_table(self.series_dir / series_file)
        out = conform(frame)
        out.attrs["provenance"] = provenance
        return out

    def check_series(self, study: str, revision: int | None = None) -> None:
        """Refuse a study revision whose runs' series files are not all there (a database
        copied without its series folder, files deleted by hand)."""
        files = [
            str(row[0])
            for row in self.query(
                "SELECT r.series_file FROM revision_runs m JOIN runs r USING (run_id) "
                "WHERE m.study = ? AND m.revision = ?",
                [study, self.resolve(study, revision)],
            )
            if row[0]
        ]
        if files and not self.series_dir.is_dir():
            raise StoreError(
                f"{self.path}: its series folder {self.series_dir.name} is missing (a results "
                "database is the file and this folder beside it: copy both)"
            )
        missing = [name for name in files if not (self.series_dir / name).is_file()]
        if missing:
            raise StoreError(
                f"{self.path}: {len(missing)} of the {len(files)} series files of study "
                f"{study!r} are missing from {self.series_dir.name} (first: {missing[0]})"
            )

    def scenario_of(self, run_id: str) -> dict[str, Any] | None:
        """The normalized scenario a run was simulated from (None: not stored)."""
        rows = self.query("SELECT scenario_json FROM runs WHERE run_id = ?", [run_id])
        if not rows or not rows[0][0]:
            return None
        scenario: dict[str, Any] = json.loads(str(rows[0][0]))
        return scenario

    def revision_info(self, study: str, revision: int | None = None) -> dict[str, Any]:
        """A revision's record: its effective definition (parsed), file text, model version,
        definition hash, description and creation time."""
        number = self.resolve(study, revision)
        df = self._read(
            "SELECT * FROM study_revisions WHERE study = ? AND revision = ?", [study, number]
        )
        row = {k: (None if _isna(v) else v) for k, v in df.iloc[0].to_dict().items()}
        text = row.pop("definition_json", None)
        row["definition"] = json.loads(text) if text else None
        return row

    def study_text(self, study: str, revision: int | None = None) -> str:
        return str(self.revision_info(study, revision).get("file_text") or "")


def _with_theory(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs with their theory references (`theory.run_bounds` of each run's scenario)
    instead of the scenario JSON they are computed from."""
    from ..results.theory import THEORY_COLUMNS, run_bounds

    values: dict[str, list[float | None]] = {name: [] for name in THEORY_COLUMNS}
    # the references depend on the scenario, not on the seed: once per scenario hash
    known: dict[Any, Any] = {}
    for scenario, text in zip(runs["scenario_hash"], runs["scenario_json"], strict=True):
        if scenario not in known:
            known[scenario] = run_bounds(json.loads(text)) if isinstance(text, str) else None
        bounds = known[scenario]
        for name in THEORY_COLUMNS:
            values[name].append(None if bounds is None else getattr(bounds, name))
    out = runs.drop(columns=["scenario_json"])
    for name in THEORY_COLUMNS:
        out[name] = pd.array(values[name], dtype="Float64").astype(float)
    return out


def _isna(value: Any) -> bool:
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):
        return False


def _hostname() -> str:
    import socket

    return socket.gethostname()


def _model_text(model: int | None) -> str:
    return "unknown model version" if model is None else f"model version {model}"


def _differences(old_json: str | None, new_json: str, limit: int = 3) -> str:
    """The dotted paths where two definitions differ (at most `limit`), for the refusal."""
    if not old_json:
        return "an unknown way (stored before definitions were recorded)"
    paths: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(paths) > limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key), b.get(key), f"{where}.{key}" if where else str(key))
        elif a != b:
            paths.append(where or "(everything)")

    walk(json.loads(old_json), json.loads(new_json), "")
    shown = ", ".join(paths[:limit])
    return shown + (", ..." if len(paths) > limit else "")


class _Batch:
    """The rows of a batch of runs, table by table and column by column."""

    def __init__(self) -> None:
        self.tables: dict[str, dict[str, list[Any]]] = {
            name: {} for name in ("runs", "flows", "links", "legs", "pep_buffers")
        }

    def _add(self, table: str, row: Mapping[str, Any]) -> None:
        columns = self.tables[table]
        if not columns:
            columns.update({name: [] for name in row})
        for name, value in row.items():
            columns[name].append(value)

    def add_run(self, record: RunRecord, series_file: str) -> None:
        """The rows of one run, in every table."""
        run_id = record.key.run_id
        result = record.result
        self._add("runs", _run_row(record, series_file))
        for f in result.flows:
            self._add("flows", _flow_row(run_id, f))
        for lk in result.links:
            self._add(
                "links",
                {
                    "run_id": run_id,
                    "name": lk.name,
                    "rate_bps": float(lk.rate_bps),
                    "utilization": lk.utilization,
                    "queue_drops": lk.queue_drops,
                    "error_drops": lk.error_drops,
                    "ecn_marks": _extra(lk, "ecn_marks"),
                    "queue_mean_pkts": lk.queue_mean_pkts,
                    "queue_max_pkts": lk.queue_max_pkts,
                    "outage_drops": lk.outage_drops,
                    "aqm_drops": lk.aqm_drops,
                },
            )
        for f in result.flows:
            for index, leg in enumerate(f.legs):
                self._add(
                    "legs",
                    {
                        "run_id": run_id,
                        "flow_id": f.id,
                        "leg": index,
                        "from_node": leg.src,
                        "to_node": leg.dst,
                        "cca": leg.cca,
                        "goodput_bps": leg.goodput_bps,
                        "retransmits": leg.retransmits,
                        "bytes_delivered": leg.bytes_delivered,
                        "rtt_mean_ms": ns_to_ms(leg.rtt.mean_ns),
                        "rtt_p95_ms": ns_to_ms(leg.rtt.p95_ns),
                        "sender_done_s": ns_to_s(leg.sender_done_ns),
                        "closed_s": ns_to_s(leg.closed_ns),
                    },
                )
            for b in f.pep_buffer:
                self._add(
                    "pep_buffers",
                    {
                        "run_id": run_id,
                        "flow_id": f.id,
                        "node": b.node,
                        "mean_bytes": b.mean_bytes,
                        "max_bytes": b.max_bytes,
                        "limit_bytes": b.limit_bytes,
                    },
                )


#: DuckDB column types as Arrow types, for the columnar appends (an exact type per column,
#: so a seed above 2^63 or a column of NULLs needs no guessing).
_ARROW_TYPES: Final = {
    "VARCHAR": "string",
    "UBIGINT": "uint64",
    "BIGINT": "int64",
    "INTEGER": "int32",
    "DOUBLE": "float64",
    "BOOLEAN": "bool_",
    "TIMESTAMP": "timestamp_us",
}


def _columns_of(definition: str) -> dict[str, str]:
    """Column name -> type of a `_TABLES` definition (its key clauses left out)."""
    items, depth, item = [], 0, ""
    for ch in definition:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            items.append(item)
            item = ""
        else:
            item += ch
    items.append(item)
    words = [i.split() for i in items if i.strip()]
    return {w[0]: w[1] for w in words if w[0] != "PRIMARY"}


#: The column types of the tables of `SCHEMA_VERSION`, from their definitions.
_COLUMN_TYPES: Final = {name: _columns_of(columns) for name, columns in _TABLES.items()}


def _append(
    con: Any, table: str, columns: Mapping[str, list[Any]], on_conflict: str | None = None
) -> None:
    """Append rows given column by column to `table`, by column name, in one statement."""
    if not columns or not next(iter(columns.values())):
        return
    import pyarrow as pa  # type: ignore[import-untyped]

    types = _COLUMN_TYPES[table]

    def arrow_type(name: str) -> Any:
        kind = _ARROW_TYPES[types[name]]
        return pa.timestamp("us") if kind == "timestamp_us" else getattr(pa, kind)()

    batch = pa.table(
        {name: pa.array(values, type=arrow_type(name)) for name, values in columns.items()}
    )
    con.register("_batch", batch)
    try:
        conflict = f" ON CONFLICT {on_conflict}" if on_conflict else ""
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM _batch{conflict}")
    finally:
        con.unregister("_batch")


def _run_row(record: RunRecord, series_file: str) -> dict[str, Any]:
    """The `runs` row: flow metrics over the TCP flows, `cbr_*` over the CBR flows; rates of
    the run are bytes over the scenario's duration (metrics.aggregate_rate_bps)."""
    from .. import __version__

    key, normalized, result = record.key, record.normalized, record.result
    tcp = result.tcp_flows
    cbr = [f for f in result.cbr_flows if f.cbr is not None]
    flow_goodputs = [f.goodput_bps for f in tcp]
    n = len(tcp)
    fwd = result.bottleneck
    rev = result.bottleneck_reverse
    rtts = [f.rtt.mean_ns / 1e6 for f in tcp if f.rtt.mean_ns is not None]
    p95 = [f.rtt.p95_ns / 1e6 for f in tcp if f.rtt.p95_ns is not None]
    completions = [f.completion_ns / 1e9 for f in tcp if f.completion_ns is not None]
    flows = normalized["flows"]
    first_tcp = next((i for i, f in enumerate(result.flows) if f.is_tcp), 0)
    cap = fwd.rate_bps
    goodput = result.aggregate_goodput_bps
    # the core's loss ratio leaves out datagrams still in flight at the end: weight it by
    # datagrams sent rather than recounting from sent - received
    sent = sum(f.cbr.packets_sent for f in cbr if f.cbr is not None)
    lost = sum(f.cbr.loss_ratio * f.cbr.packets_sent for f in cbr if f.cbr is not None)
    owd_means = [f.cbr.owd.mean_ns / 1e6 for f in cbr if f.cbr and f.cbr.owd.mean_ns is not None]
    owd_p95 = [f.cbr.owd.p95_ns / 1e6 for f in cbr if f.cbr and f.cbr.owd.p95_ns is not None]
    outages = [lk.outage_drops for lk in result.links if lk.outage_drops is not None]
    aqm = [lk.aqm_drops for lk in result.links if lk.aqm_drops is not None]
    info = result.run_info
    return {
        "run_id": key.run_id,
        "scenario_hash": key.scenario_hash,
        "seed": key.seed,
        "model_version": key.model_version,
        "scenario_json": json.dumps(normalized, sort_keys=True),
        "tcplab_version": __version__,
        "core_version": result.core_version,
        "git_commit": result.git_commit,
        "host": None if info is None else info.host,
        "started_utc": None if info is None else _utc(info.started_utc),
        "created": _now(),
        "wall_s": result.wall_s,
        "events": result.events,
        "duration_s": result.duration_ns / 1e9,
        "n_flows": n,
        "rate_bps": float(cap),
        "return_rate_bps": float(rev.rate_bps),
        "base_rtt_ms": _base_rtt_ms(normalized),
        "per": _forward_per(normalized),
        "mss_bytes": int(flows[first_tcp]["tcp"]["mss_bytes"]),
        "goodput_bps": goodput,
        "mean_flow_goodput_bps": sum(flow_goodputs) / n if n else None,
        "throughput_bps": result.aggregate_throughput_bps,
        "rtt_mean_ms": _finite(sum(rtts) / len(rtts)) if rtts else None,
        "rtt_p95_ms": max(p95) if p95 else None,
        "retransmits": sum(f.retransmits for f in tcp),
        "rto_count": sum(f.rto_count for f in tcp),
        "jain_fairness": result.jain_fairness,
        "minmax_ratio": (
            (min(flow_goodputs) / max(flow_goodputs))
            if flow_goodputs and max(flow_goodputs) > 0
            else None
        ),
        "utilization": fwd.utilization,
        "goodput_utilization": goodput / cap if cap else None,
        "queue_drops": fwd.queue_drops,
        "error_drops": fwd.error_drops,
        "ecn_marks": _extra(fwd, "ecn_marks"),
        "queue_mean_pkts": fwd.queue_mean_pkts,
        "completion_s": max(completions) if n and len(completions) == n else None,
        "series_file": series_file,
        "n_cbr_flows": len(result.cbr_flows),
        "cbr_goodput_bps": result.cbr_goodput_bps if cbr else None,
        "cbr_loss_ratio": lost / sent if sent else None,
        "cbr_owd_mean_ms": sum(owd_means) / len(owd_means) if owd_means else None,
        "cbr_owd_p95_ms": max(owd_p95) if owd_p95 else None,
        "pep": pep_mode(normalized),
        "bottleneck": fwd.name,
        "outage_drops": sum(outages) if outages else None,
        "aqm_drops": sum(aqm) if aqm else None,
    }


def _flow_row(run_id: str, f: FlowResult) -> dict[str, Any]:
    cbr = f.cbr
    return {
        "run_id": run_id,
        "flow_id": f.id,
        "kind": f.kind,
        "cca": f.cca if f.is_tcp else None,
        "start_s": f.start_ns / 1e9,
        # over the flow's own active time (start to completion or to the end of the run)
        "flow_goodput_bps": f.goodput_bps,
        "throughput_bps": f.throughput_bps,
        "bytes_delivered": f.bytes_delivered,
        "retransmits": f.retransmits,
        "rto_count": f.rto_count,
        "rtt_mean_ms": ns_to_ms(f.rtt.mean_ns),
        "rtt_min_ms": ns_to_ms(f.rtt.min_ns),
        "rtt_p50_ms": ns_to_ms(f.rtt.p50_ns),
        "rtt_p95_ms": ns_to_ms(f.rtt.p95_ns),
        "completion_s": None if f.completion_ns is None else f.completion_ns / 1e9,
        "packets_sent": None if cbr is None else cbr.packets_sent,
        "packets_received": None if cbr is None else cbr.packets_received,
        "loss_ratio": None if cbr is None else cbr.loss_ratio,
        "owd_mean_ms": None if cbr is None else ns_to_ms(cbr.owd.mean_ns),
        "owd_p95_ms": None if cbr is None else ns_to_ms(cbr.owd.p95_ns),
        "owd_max_ms": None if cbr is None else ns_to_ms(cbr.owd.max_ns),
        "server_done_s": ns_to_s(f.server_done_ns),
        "closed_s": ns_to_s(f.closed_ns),
    }


def expand_params(df: pd.DataFrame) -> pd.DataFrame:
    """Turn the `params_json` column into one column per swept key (in first-seen order),
    placed after `variant`."""
    if df.empty:
        return df.drop(columns=["params_json"], errors="ignore")
    parsed = [json.loads(p) if p else {} for p in df["params_json"]]
    keys: list[str] = []
    for p in parsed:
        keys.extend(k for k in p if k not in keys)
    out = df.drop(columns=["params_json"])
    at = list(out.columns).index("variant") + 1 if "variant" in out.columns else 0
    for k in keys:
        out.insert(at + keys.index(k), k, [p.get(k) for p in parsed])
    return out


def param_columns(df: pd.DataFrame) -> list[str]:
    """The swept-parameter columns of a `runs`/`flows` frame (they contain a dot)."""
    return [c for c in df.columns if "." in str(c)]


def iter_run_ids(frame: pd.DataFrame) -> Iterable[str]:
    for run_id in frame["run_id"]:
        yield str(run_id)
