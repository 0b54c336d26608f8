"""The results database: an embedded DuckDB file plus per-run Parquet series beside it.

Layout (schema version in `meta`):
- `runs`: one row per simulated run, keyed by (scenario_hash, seed): the normalized scenario,
  versions, wall time and the run's summary metrics. A run is never modified once stored.
  Flow metrics (goodput, RTT, fairness, ...) are over the TCP flows; CBR (UDP) flows have
  their own `cbr_*` columns, and `bottleneck` names the link whose figures the link columns
  hold (the path segment with the lowest forward rate).
- `study_runs`: which study (and variant, grid parameters) a run belongs to. The same run can
  belong to several studies sharing one database, and is simulated once.
- `studies`: each study's file text and description.
- `flows`, `links`: per-flow and per-link-direction summaries of every run; `legs` and
  `pep_buffers`: the PEP-split connections of a flow and the PEPs' relay buffers.
- `<db>.series/<hash>-<seed>.parquet`: the per-interval series of a run, written (atomically)
  before the run's row is committed, so a stored run always has its series.

Each run is committed in its own transaction as soon as it finishes: killing a sweep loses at
most the runs that were still executing, and rerunning the study skips everything stored.

Schema versions: 1 had TCP dumbbells only; 2 adds the CBR/PEP/link columns and tables
(`_MIGRATIONS[2]`); 3 adds the connection-teardown times of file downloads (`server_done_s`,
`closed_s`; NULL for runs stored before). An older file is upgraded in place when it is opened
(new columns only, filled with what the old version implies: every flow of version 1 was TCP,
no run had a PEP), so it keeps its runs and can take new ones; a file from a newer tcplab is
refused.
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
from .paths import base_rtt_ns, combined_loss, pep_mode, segments
from .result import FlowResult, RunResult, ns_to_ms, ns_to_s

SCHEMA_VERSION: Final = 3

#: The version-1 tables, exactly as version 1 created them; later versions are migrations on
#: top, so a new file and an upgraded one have the same columns in the same order.
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


class StoreError(ScenarioError):
    """A results file that cannot be used (one-line message, exit code 2 in the CLI)."""


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


def _insert(con: Any, table: str, rows: list[dict[str, Any]]) -> None:
    """Insert rows by column name (upgraded and new files agree on names, not positions)."""
    if not rows:
        return
    columns = list(rows[0])
    sql = f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    con.executemany(sql, [[row[c] for c in columns] for row in rows])


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
            self.con.execute(_SCHEMA_V1)
            self.con.execute(
                "INSERT INTO meta VALUES ('schema_version', '1'), ('created_by', ?)",
                [f"tcplab {__version__}"],
            )
            self._migrate(1)
            return
        row = self.con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row and str(row[0]).isdigit() else -1
        if not 1 <= version <= SCHEMA_VERSION:
            self.con.close()
            raise StoreError(
                f"{self.path}: results schema version {version}; this tcplab "
                f"reads versions 1 to {SCHEMA_VERSION}"
            )
        if version < SCHEMA_VERSION:
            self._migrate(version)

    def _migrate(self, version: int) -> None:
        """Upgrade the file from `version` to `SCHEMA_VERSION` in one transaction."""
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            for target in range(version + 1, SCHEMA_VERSION + 1):
                for statement in _MIGRATIONS[target]:
                    con.execute(statement)
            con.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)]
            )
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            self.con.close()
            raise

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
        run = _run_row(key, normalized, result, series_file)
        flows = [_flow_row(key, f) for f in result.flows]
        links = [
            {
                "scenario_hash": key[0],
                "seed": key[1],
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
            }
            for lk in result.links
        ]
        legs = [
            {
                "scenario_hash": key[0],
                "seed": key[1],
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
            }
            for f in result.flows
            for index, leg in enumerate(f.legs)
        ]
        buffers = [
            {
                "scenario_hash": key[0],
                "seed": key[1],
                "flow_id": f.id,
                "node": b.node,
                "mean_bytes": b.mean_bytes,
                "max_bytes": b.max_bytes,
                "limit_bytes": b.limit_bytes,
            }
            for f in result.flows
            for b in f.pep_buffer
        ]
        con = self.con
        con.execute("BEGIN TRANSACTION")
        try:
            _insert(con, "runs", [run])
            _insert(con, "flows", flows)
            _insert(con, "links", links)
            _insert(con, "legs", legs)
            _insert(con, "pep_buffers", buffers)
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

    def legs(self, study: str | None = None) -> pd.DataFrame:
        """The PEP-split connections of every flow (one row per leg)."""
        where, args = ("WHERE m.study = ?", [study]) if study else ("", [])
        df = self.con.execute(
            f"SELECT m.study, m.variant, m.params_json, g.* FROM study_runs m "
            f"JOIN legs g USING (scenario_hash, seed) {where} "
            f"ORDER BY m.study, m.variant, g.scenario_hash, g.seed, g.flow_id, g.leg",
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


def _run_row(
    key: tuple[str, int], normalized: Mapping[str, Any], result: RunResult, series_file: str
) -> dict[str, Any]:
    """The `runs` row: flow metrics over the TCP flows, `cbr_*` over the CBR flows."""
    tcp = result.tcp_flows
    cbr = [f for f in result.cbr_flows if f.cbr is not None]
    goodputs = [f.goodput_bps for f in tcp]
    n = len(tcp)
    fwd = result.bottleneck
    rev = result.bottleneck_reverse
    rtts = [f.rtt.mean_ns / 1e6 for f in tcp if f.rtt.mean_ns is not None]
    p95 = [f.rtt.p95_ns / 1e6 for f in tcp if f.rtt.p95_ns is not None]
    completions = [f.completion_ns / 1e9 for f in tcp if f.completion_ns is not None]
    flows = normalized["flows"]
    first_tcp = next((i for i, f in enumerate(result.flows) if f.is_tcp), 0)
    cap = fwd.rate_bps
    # the core's loss ratio leaves out datagrams still in flight at the end: weight it by
    # datagrams sent rather than recounting from sent - received
    sent = sum(f.cbr.packets_sent for f in cbr if f.cbr is not None)
    lost = sum(f.cbr.loss_ratio * f.cbr.packets_sent for f in cbr if f.cbr is not None)
    owd_means = [f.cbr.owd.mean_ns / 1e6 for f in cbr if f.cbr and f.cbr.owd.mean_ns is not None]
    owd_p95 = [f.cbr.owd.p95_ns / 1e6 for f in cbr if f.cbr and f.cbr.owd.p95_ns is not None]
    outages = [lk.outage_drops for lk in result.links if lk.outage_drops is not None]
    aqm = [lk.aqm_drops for lk in result.links if lk.aqm_drops is not None]
    return {
        "scenario_hash": key[0],
        "seed": key[1],
        "scenario_json": json.dumps(normalized, sort_keys=True),
        "tcplab_version": __version__,
        "core_version": result.core_version,
        "created": _dt.datetime.now(_dt.UTC).replace(tzinfo=None),
        "wall_s": result.wall_s,
        "events": result.events,
        "duration_s": result.duration_ns / 1e9,
        "n_flows": n,
        "rate_bps": float(cap),
        "return_rate_bps": float(rev.rate_bps),
        "base_rtt_ms": _base_rtt_ms(normalized),
        "per": _forward_per(normalized),
        "mss_bytes": int(flows[first_tcp]["tcp"]["mss_bytes"]),
        "goodput_bps": sum(goodputs),
        "mean_flow_goodput_bps": sum(goodputs) / n if n else None,
        "throughput_bps": sum(f.throughput_bps for f in tcp),
        "rtt_mean_ms": _finite(sum(rtts) / len(rtts)) if rtts else None,
        "rtt_p95_ms": max(p95) if p95 else None,
        "retransmits": sum(f.retransmits for f in tcp),
        "rto_count": sum(f.rto_count for f in tcp),
        "jain_fairness": result.jain_fairness,
        "minmax_ratio": (min(goodputs) / max(goodputs)) if goodputs and max(goodputs) > 0 else None,
        "utilization": fwd.utilization,
        "goodput_utilization": sum(goodputs) / cap,
        "queue_drops": fwd.queue_drops,
        "error_drops": fwd.error_drops,
        "ecn_marks": _extra(fwd, "ecn_marks"),
        "queue_mean_pkts": fwd.queue_mean_pkts,
        "completion_s": max(completions) if n and len(completions) == n else None,
        "series_file": series_file,
        "n_cbr_flows": len(result.cbr_flows),
        "cbr_goodput_bps": sum(f.goodput_bps for f in cbr) if cbr else None,
        "cbr_loss_ratio": lost / sent if sent else None,
        "cbr_owd_mean_ms": sum(owd_means) / len(owd_means) if owd_means else None,
        "cbr_owd_p95_ms": max(owd_p95) if owd_p95 else None,
        "pep": pep_mode(normalized),
        "bottleneck": fwd.name,
        "outage_drops": sum(outages) if outages else None,
        "aqm_drops": sum(aqm) if aqm else None,
    }


def _flow_row(key: tuple[str, int], f: FlowResult) -> dict[str, Any]:
    cbr = f.cbr
    return {
        "scenario_hash": key[0],
        "seed": key[1],
        "flow_id": f.id,
        "cca": f.cca if f.is_tcp else None,
        "start_s": f.start_ns / 1e9,
        "goodput_bps": f.goodput_bps,
        "throughput_bps": f.throughput_bps,
        "bytes_delivered": f.bytes_delivered,
        "retransmits": f.retransmits,
        "rto_count": f.rto_count,
        "rtt_mean_ms": ns_to_ms(f.rtt.mean_ns),
        "rtt_min_ms": ns_to_ms(f.rtt.min_ns),
        "rtt_p50_ms": ns_to_ms(f.rtt.p50_ns),
        "rtt_p95_ms": ns_to_ms(f.rtt.p95_ns),
        "completion_s": None if f.completion_ns is None else f.completion_ns / 1e9,
        "kind": f.kind,
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
