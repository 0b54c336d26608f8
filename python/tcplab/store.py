"""The results database: an embedded DuckDB file plus per-run Parquet series beside it.

Layout (schema version in `meta`):
- `runs`: one row per simulated run, keyed by (scenario_hash, seed): the normalized scenario,
  versions, wall time and the run's summary metrics. A run is never modified once stored.
- `study_runs`: which study (and variant, grid parameters) a run belongs to. The same run can
  belong to several studies sharing one database, and is simulated once.
- `studies`: each study's file text and description.
- `flows`, `links`: per-flow and per-bottleneck-direction summaries of every run.
- `<db>.series/<hash>-<seed>.parquet`: the per-interval series of a run, written (atomically)
  before the run's row is committed, so a stored run always has its series.

Each run is committed in its own transaction as soon as it finishes: killing a sweep loses at
most the runs that were still executing, and rerunning the study skips everything stored.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import duckdb
import pandas as pd  # type: ignore[import-untyped]

from . import __version__
from .errors import ScenarioError
from .result import RunResult

SCHEMA_VERSION: Final = 1

_SCHEMA: Final = """
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


class StoreError(ScenarioError):
    """A results file that cannot be used (one-line message, exit code 2 in the CLI)."""


def _finite(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else x


def _ms(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e6


def _extra(obj: Any, key: str) -> int:
    """Optional counters the result classes keep in an `extra` mapping (e.g. ECN marks)."""
    return int(getattr(obj, "extra", {}).get(key, 0))


def _base_rtt_ms(norm: Mapping[str, Any]) -> float:
    fwd, rev = norm["bottleneck"]["forward"], norm["bottleneck"]["reverse"]
    acc = norm["access"]["delay_ns"]
    return float(fwd["delay_ns"] + rev["delay_ns"] + 4 * acc) / 1e6


class Store:
    """A results database opened for reading and writing."""

    def __init__(self, path: str | os.PathLike[str], *, create: bool = True) -> None:
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoreError(f"{self.path}: no such results database")
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a directory, not a results database")
        try:
            self.con = duckdb.connect(str(self.path))
        except duckdb.Error as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise StoreError(f"{self.path}: not a tcplab results database ({first})") from None
        self._init_schema(create)
        self.series_dir = self.path.with_name(self.path.name + ".series")

    def _init_schema(self, create: bool) -> None:
        tables = {
            r[0]
            for r in self.con.execute("SELECT table_name FROM information_schema.tables").fetchall()
        }
        if "meta" not in tables:
            if tables or not create:
                self.con.close()
                raise StoreError(f"{self.path}: not a tcplab results database (no schema version)")
            self.con.execute(_SCHEMA)
            self.con.execute(
                "INSERT INTO meta VALUES ('schema_version', ?), ('created_by', ?)",
                [str(SCHEMA_VERSION), f"tcplab {__version__}"],
            )
            return
        row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else -1
        if version != SCHEMA_VERSION:
            self.con.close()
            raise StoreError(
                f"{self.path}: results schema version {version}; this tcplab "
                f"reads version {SCHEMA_VERSION}"
            )

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- writing --------------------------------------------------------------------------

    def add_study(self, name: str, description: str, text: str) -> None:
        self.con.execute(
            "INSERT INTO studies VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE "
            "SET description = excluded.description, text = excluded.text",
            [name, description, text, _dt.datetime.now(_dt.UTC).replace(tzinfo=None)],
        )

    def done_keys(self) -> set[tuple[str, int]]:
        return {
            (h, int(s))
            for h, s in self.con.execute("SELECT scenario_hash, seed FROM runs").fetchall()
        }

    def member_keys(self, study: str) -> set[tuple[str, int]]:
        rows = self.con.execute(
            "SELECT scenario_hash, seed FROM study_runs WHERE study = ?", [study]
        )
        return {(h, int(s)) for h, s in rows.fetchall()}

    def add_membership(
        self, study: str, key: tuple[str, int], variant: str, params: Mapping[str, Any]
    ) -> None:
        self.con.execute(
            "INSERT INTO study_runs VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
            [study, key[0], key[1], variant, json.dumps(params, sort_keys=True)],
        )

    def _write_series(self, key: tuple[str, int], result: RunResult) -> str:
        self.series_dir.mkdir(parents=True, exist_ok=True)
        name = f"{key[0]}-{key[1]}.parquet"
        frame = result.series_frame()
        s = result.series
        bn = pd.DataFrame(
            {
                "t_s": [t / 1e9 for t in s.t_ns],
                "bottleneck_queue_pkts": list(s.bottleneck_queue_pkts),
                "bottleneck_utilization": list(s.bottleneck_utilization),
            }
        )
        frame = frame.merge(bn, on="t_s", how="left")
        tmp = self.series_dir / (name + ".tmp")
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, self.series_dir / name)
        return name

    def add_run(
        self,
        study: str,
        variant: str,
        params: Mapping[str, Any],
        key: tuple[str, int],
        normalized: Mapping[str, Any],
        result: RunResult,
    ) -> None:
        """Store one finished run (and its study membership) in one transaction."""
        series_file = self._write_series(key, result)
        flows = result.flows
        goodputs = [f.goodput_bps for f in flows]
        fwd = result.bottleneck
        rev = result.link("bottleneck.reverse")
        n = len(flows)
        rtts = [f.rtt.mean_ns / 1e6 for f in flows if f.rtt.mean_ns is not None]
        p95 = [f.rtt.p95_ns / 1e6 for f in flows if f.rtt.p95_ns is not None]
        completions = [f.completion_ns / 1e9 for f in flows if f.completion_ns is not None]
        cap = fwd.rate_bps
        row = [
            key[0],
            key[1],
            json.dumps(normalized, sort_keys=True),
            __version__,
            result.core_version,
            _dt.datetime.now(_dt.UTC).replace(tzinfo=None),
            result.wall_s,
            result.events,
            result.duration_ns / 1e9,
            n,
            float(cap),
            float(rev.rate_bps),
            _base_rtt_ms(normalized),
            float(normalized["bottleneck"]["forward"]["per"]),
            int(normalized["flows"][0]["tcp"]["mss_bytes"]),
            sum(goodputs),
            sum(goodputs) / n,
            sum(f.throughput_bps for f in flows),
            _finite(sum(rtts) / len(rtts)) if rtts else None,
            max(p95) if p95 else None,
            sum(f.retransmits for f in flows),
            sum(f.rto_count for f in flows),
            result.jain_fairness,
            (min(goodputs) / max(goodputs)) if max(goodputs) > 0 else None,
            fwd.utilization,
            sum(goodputs) / cap,
            fwd.queue_drops,
            fwd.error_drops,
            _extra(fwd, "ecn_marks"),
            fwd.queue_mean_pkts,
            max(completions) if len(completions) == n else None,
            series_file,
        ]
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(f"INSERT INTO runs VALUES ({', '.join('?' * len(row))})", row)
            con.executemany(
                "INSERT INTO flows VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        key[0],
                        key[1],
                        f.id,
                        f.cca,
                        f.start_ns / 1e9,
                        f.goodput_bps,
                        f.throughput_bps,
                        f.bytes_delivered,
                        f.retransmits,
                        f.rto_count,
                        _ms(f.rtt.mean_ns),
                        _ms(f.rtt.min_ns),
                        _ms(f.rtt.p50_ns),
                        _ms(f.rtt.p95_ns),
                        None if f.completion_ns is None else f.completion_ns / 1e9,
                    ]
                    for f in flows
                ],
            )
            con.executemany(
                "INSERT INTO links VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    [
                        key[0],
                        key[1],
                        lk.name,
                        float(lk.rate_bps),
                        lk.utilization,
                        lk.queue_drops,
                        lk.error_drops,
                        _extra(lk, "ecn_marks"),
                        lk.queue_mean_pkts,
                        lk.queue_max_pkts,
                    ]
                    for lk in result.links
                ],
            )
            self.add_membership(study, key, variant, params)
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise

    # --- reading --------------------------------------------------------------------------

    def studies(self) -> pd.DataFrame:
        return self.con.execute(
            "SELECT s.name, s.description, count(r.seed) AS runs FROM studies s "
            "LEFT JOIN study_runs r ON r.study = s.name GROUP BY ALL ORDER BY s.name"
        ).df()

    def runs(self, study: str | None = None) -> pd.DataFrame:
        """One row per (study, run) with the swept parameters as columns."""
        where, args = ("WHERE m.study = ?", [study]) if study else ("", [])
        df = self.con.execute(
            f"SELECT m.study, m.variant, m.params_json, r.* EXCLUDE (scenario_json) "
            f"FROM study_runs m JOIN runs r USING (scenario_hash, seed) {where} "
            f"ORDER BY m.study, m.variant, r.scenario_hash, r.seed",
            args,
        ).df()
        return expand_params(df)

    def flows(self, study: str | None = None) -> pd.DataFrame:
        where, args = ("WHERE m.study = ?", [study]) if study else ("", [])
        df = self.con.execute(
            f"SELECT m.study, m.variant, m.params_json, f.* FROM study_runs m "
            f"JOIN flows f USING (scenario_hash, seed) {where} "
            f"ORDER BY m.study, m.variant, f.scenario_hash, f.seed, f.flow_id",
            args,
        ).df()
        return expand_params(df)

    def series(self, scenario_hash: str, seed: int) -> pd.DataFrame:
        row = self.con.execute(
            "SELECT series_file FROM runs WHERE scenario_hash = ? AND seed = ?",
            [scenario_hash, seed],
        ).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {scenario_hash} seed {seed}")
        return pd.read_parquet(self.series_dir / row[0])

    def study_text(self, study: str) -> str:
        row = self.con.execute("SELECT text FROM studies WHERE name = ?", [study]).fetchone()
        return str(row[0]) if row and row[0] else ""

    def study_names(self) -> list[str]:
        return [
            r[0]
            for r in self.con.execute(
                "SELECT DISTINCT study FROM study_runs ORDER BY study"
            ).fetchall()
        ]


def expand_params(df: pd.DataFrame) -> pd.DataFrame:
    """Turn the `params_json` column into one column per swept key (in first-seen order)."""
    if df.empty:
        return df.drop(columns=["params_json"], errors="ignore")
    parsed = [json.loads(p) if p else {} for p in df["params_json"]]
    keys: list[str] = []
    for p in parsed:
        keys.extend(k for k in p if k not in keys)
    out = df.drop(columns=["params_json"])
    for k in keys:
        out.insert(2 + keys.index(k), k, [p.get(k) for p in parsed])
    return out


def param_columns(df: pd.DataFrame) -> list[str]:
    """The swept-parameter columns of a `runs`/`flows` frame (they contain a dot)."""
    return [c for c in df.columns if "." in str(c)]


def iter_keys(frame: pd.DataFrame) -> Iterable[tuple[str, int]]:
    for h, s in zip(frame["scenario_hash"], frame["seed"], strict=True):
        yield str(h), int(s)
