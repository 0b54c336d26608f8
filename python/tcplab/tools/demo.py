"""`tcplab demo`: the built-in GEO scenario once per algorithm, next to Mathis and Padhye.

Results go to DIR/results.json (the `--json` object of every run), DIR/summary.csv and
DIR/summary.md (one row per algorithm). Then the same path is swept over five packet error
rates for every algorithm (`report_study`) into DIR/demo.duckdb, and DIR/report.html is its
self-contained report (goodput and RTT vs PER with the Mathis and physical-RTT lines).
"""

from __future__ import annotations

import csv
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..catalogue import CcaInfo, ccas
from ..errors import ScenarioError, field_error
from ..results.parse import RunResult
from ..results.theory import FlowBounds, flow_bounds
from ..runner import run_parallel
from ..scenario.load import load_scenario

DEMO_SCENARIO = "geo-sat.toml"
#: PER values of the demo report: from nearly clean to 1 % loss, one per decade.
REPORT_PERS = (1e-6, 1e-5, 1e-4, 1e-3, 1e-2)


def builtin_scenario(file_name: str) -> dict[str, Any]:
    """A scenario shipped in the package (`tcplab/data/`), as a raw TOML dict."""
    text = resources.files("tcplab").joinpath("data", file_name).read_text(encoding="utf-8")
    return tomllib.loads(text)


@dataclass(frozen=True)
class DemoRow:
    """One algorithm's run and the theory for its path."""

    cca: CcaInfo
    result: RunResult
    bounds: FlowBounds

    def as_dict(self) -> dict[str, Any]:
        flow = self.result.flows[0]
        mathis = self.bounds.mathis_bps
        return {
            "cca": self.cca.name,
            "feedback": self.cca.feedback,
            "goodput_bps": flow.goodput_bps,
            "throughput_bps": flow.throughput_bps,
            "goodput_over_cap": flow.goodput_bps / self.bounds.cap_bps,
            "goodput_over_mathis": None if mathis is None else flow.goodput_bps / mathis,
            "retransmits": flow.retransmits,
            "rto_count": flow.rto_count,
            "rtt_mean_ms": None if flow.rtt.mean_ns is None else flow.rtt.mean_ns / 1e6,
            "rtt_p95_ms": None if flow.rtt.p95_ns is None else flow.rtt.p95_ns / 1e6,
            "utilization": self.result.bottleneck.utilization,
            "mathis_bps": mathis,
            "padhye_bps": self.bounds.padhye_bps,
            "cubic_bps": self.bounds.cubic_bps,
            "wall_s": self.result.wall_s,
            "events": self.result.events,
        }


def run_demo(
    *, duration: str | None = None, per: float | None = None, max_workers: int | None = None
) -> list[DemoRow]:
    """Run the GEO scenario for every algorithm of the core's catalogue, in parallel."""
    catalogue = ccas()
    if not catalogue:
        raise ScenarioError(
            "the simulation core lists no algorithms (is the core built? run `make build`)"
        )
    base = builtin_scenario(DEMO_SCENARIO)
    common: list[tuple[str, Any]] = []
    if duration is not None:
        common.append(("duration", duration))
    if per is not None:
        common.append(("bottleneck.per", per))
    scenarios = [
        load_scenario(base, [*common, ("flows.0.cca", info.name)], catalogue=catalogue)
        for info in catalogue
    ]
    results = run_parallel(scenarios, max_workers)
    return [
        DemoRow(info, result, flow_bounds(dict(result.scenario), 0))
        for info, result in zip(catalogue, results, strict=True)
    ]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def write_outputs(rows: list[DemoRow], out_dir: Path) -> list[Path]:
    """results.json, summary.csv and summary.md in `out_dir` (created if needed)."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise field_error("--out", str(out_dir), f"cannot create: {exc.strerror}") from None
    results_path = out_dir / "results.json"
    results_path.write_text(
        json.dumps([row.result.to_json_dict() for row in rows], indent=2) + "\n", encoding="utf-8"
    )
    table = [row.as_dict() for row in rows]
    columns = list(table[0]) if table else []
    csv_path = out_dir / "summary.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(table)
    md_path = out_dir / "summary.md"
    md_path.write_text(_markdown(rows, columns, table), encoding="utf-8")
    return [results_path, csv_path, md_path]


def _markdown(rows: list[DemoRow], columns: list[str], table: list[dict[str, Any]]) -> str:
    lines = ["# tcplab demo: GEO satellite path", ""]
    if rows:
        first = rows[0]
        bounds = first.bounds
        scenario = first.result.scenario
        forward = scenario["bottleneck"]["forward"]
        lines += [
            f"Bottleneck {forward['rate_bps'] / 1e6:g} Mbit/s, base RTT "
            f"{bounds.base_rtt_s * 1e3:.1f} ms, packet loss p = {bounds.p:g}, "
            f"{scenario['duration_ns'] / 1e9:g} s simulated, seed {scenario['seed']}.",
            "",
        ]
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "---|" * len(columns))
    for entry in table:
        lines.append("| " + " | ".join(_cell(entry[c]) for c in columns) + " |")
    return "\n".join(lines) + "\n"


def report_study(duration: str | None, names: list[str]) -> dict[str, Any]:
    """The demo's sweep: the built-in GEO scenario, every algorithm x `REPORT_PERS`, one seed."""
    raw = builtin_scenario(DEMO_SCENARIO)
    if duration is not None:
        raw["duration"] = duration
    raw["study"] = {
        "name": "demo",
        "description": "GEO 4 Mbit/s / 250 ms, 2xBDP: every algorithm vs PER (demo)",
    }
    raw["sweep"] = {"bottleneck.per": list(REPORT_PERS), "flows.0.cca": names}
    return raw


def write_report_outputs(
    out_dir: Path, duration: str | None, jobs: int | None = None
) -> tuple[Path, Path]:
    """Run `report_study` into DIR/demo.duckdb (resumable) and write DIR/report.html."""
    from ..present.report import write_report
    from ..study.grid import study_from_dict
    from ..study.store import Store
    from ..study.sweep import run_study

    study = study_from_dict(report_study(duration, [c.name for c in ccas()]), default_name="demo")
    db = out_dir / "demo.duckdb"
    store = Store(db)
    # another --duration is another definition: a new revision, and the report shows it
    summary = run_study(study, store, jobs=jobs, progress=False, on_change="new")
    report = write_report(store, out_dir / "report.html", study.name, revision=summary.revision)
    return db, report
