"""End-to-end through the real Rust core: result shape, CLI output, series files,
determinism, demo and bench; physics checks live in the core's own tests."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pytest
import tcplab
from conftest import SCENARIOS, SERIES_COLUMNS, run_cli
from tcplab import _core
from tcplab.scenario.load import load_scenario, raw_scenario
from tcplab.scenario.normalize import normalized_json
from tcplab.units import format_duration_ns

SHORT_TOML = """\
name = "short"
duration = "20s"
seed = 1

[bottleneck]
rate = "10Mbps"
delay = "20ms"
per = 1e-3
queue = "1bdp"

[[flows]]
cca = "{cca}"
"""

FLOW_KEYS = {
    "id",
    "cca",
    "goodput_bps",
    "throughput_bps",
    "bytes_delivered",
    "retransmits",
    "rtt_mean_ms",
    "rtt_min_ms",
    "rtt_p95_ms",
    "completion_s",
}
BOTTLENECK_KEYS = {"utilization", "queue_drops", "error_drops", "queue_mean_pkts"}
TOP_KEYS = {"name", "seed", "duration_s", "wall_s", "events", "flows", "bottleneck"}


@pytest.fixture
def cca() -> str:
    # the first algorithm of the catalogue: the tests must not assume which ones exist
    return tcplab.ccas()[0].name


@pytest.fixture
def short(write_toml: Callable[[str], Path], cca: str) -> Path:
    return write_toml(SHORT_TOML.replace("{cca}", cca))


def _without_wall_time(out: dict[str, Any]) -> dict[str, Any]:
    """The result without what differs between identical runs: wall time, and provenance
    (start time, wall time)."""
    volatile = ("wall_s", "events_per_wall_s", "provenance")
    return {k: v for k, v in out.items() if k not in volatile}


def test_result_shape(short: Path, cca: str) -> None:
    result = tcplab.run(short)
    assert (result.name, result.seed, result.duration_ns) == ("short", 1, 20 * 10**9)
    assert result.events > 0 and result.wall_s > 0
    assert [f.id for f in result.flows] == [0]
    flow = result.flows[0]
    assert flow.cca == cca and flow.app == "bulk"
    assert {link.name for link in result.links} == {"bottleneck.forward", "bottleneck.reverse"}
    # contract: goodput = delivered payload x 8 / active time (20 s for a bulk flow from 0 s)
    assert flow.active_ns == 20 * 10**9
    assert flow.goodput_bps == pytest.approx(flow.bytes_delivered * 8 / 20.0, rel=1e-9)
    assert flow.throughput_bps == pytest.approx(flow.bytes_sent * 8 / 20.0, rel=1e-9)
    assert 0 < flow.goodput_bps <= flow.throughput_bps
    assert flow.bytes_delivered <= flow.bytes_sent
    assert 0.0 <= result.bottleneck.utilization <= 1.0
    # series: 20 intervals of 1 s, ending at 1 s .. 20 s
    series = result.series
    assert series.interval_ns == 10**9
    assert series.t_ns == tuple(k * 10**9 for k in range(1, 21))
    assert [s.id for s in series.flows] == [0]
    assert all(len(getattr(series.flows[0], name)) == 20 for name in ("goodput_bps", "cwnd_bytes"))
    assert len(series.bottleneck_queue_pkts) == 20
    # the per-interval goodput adds up to the delivered bytes (to within one segment per interval)
    delivered_from_series = sum(series.flows[0].goodput_bps) * 1.0 / 8
    assert delivered_from_series == pytest.approx(flow.bytes_delivered, abs=20 * 1448)


def test_api_accepts_path_dict_and_scenario(short: Path) -> None:
    scenario = load_scenario(short)
    from_path = tcplab.run(short, duration="5s").to_json_dict()
    from_model = tcplab.run(scenario, duration="5s").to_json_dict()
    from_dict = tcplab.run(raw_scenario(scenario), overrides=["duration=5s"]).to_json_dict()
    assert _without_wall_time(from_path) == _without_wall_time(from_model)
    assert _without_wall_time(from_path) == _without_wall_time(from_dict)


def test_cli_json(short: Path) -> None:
    proc = run_cli("run", str(short), "--json", "--duration", "10s", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)  # exactly one JSON document on stdout
    assert TOP_KEYS <= set(out)
    assert "jain_fairness" in out and out["jain_fairness"] == 1.0
    assert (out["duration_s"], out["seed"], out["name"]) == (10.0, 3, "short")
    assert len(out["flows"]) == 1 and FLOW_KEYS <= set(out["flows"][0])
    assert BOTTLENECK_KEYS <= set(out["bottleneck"])
    assert out["flows"][0]["mathis_bps"] > 0  # per = 1e-3 > 0


def test_cli_table(short: Path) -> None:
    proc = run_cli("run", str(short), "--duration", "5s")
    assert proc.returncode == 0, proc.stderr
    for text in ("goodput", "RTT", "bottleneck 10 Mbit/s: utilization", "Mathis"):
        assert text in proc.stdout


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_cli_series_file(short: Path, tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"series{suffix}"
    proc = run_cli("run", str(short), "--duration", "10s", "--series", str(target), "--json")
    assert proc.returncode == 0, proc.stderr
    # the CSV file starts with its provenance in "#" lines
    frame = pd.read_parquet(target) if suffix == ".parquet" else pd.read_csv(target, comment="#")
    assert list(frame.columns) == SERIES_COLUMNS
    assert len(frame) == 10  # 10 one-second intervals x 1 flow
    assert list(frame["t_s"]) == [float(k) for k in range(1, 11)]
    total_bytes = json.loads(proc.stdout)["flows"][0]["bytes_delivered"]
    assert frame["goodput_bps"].sum() / 8 == pytest.approx(total_bytes, abs=10 * 1448)


def test_same_seed_same_result(short: Path) -> None:
    text = normalized_json(load_scenario(short, ["duration=10s"]))
    assert _core.run_json(text) == _core.run_json(text)  # byte-identical core output
    first = run_cli("run", str(short), "--json", "--duration", "10s")
    second = run_cli("run", str(short), "--json", "--duration", "10s")
    assert _without_wall_time(json.loads(first.stdout)) == _without_wall_time(
        json.loads(second.stdout)
    )


def test_different_seeds_differ_with_random_loss(short: Path) -> None:
    # per = 1e-3 over ~17,000 packets: the two seeds lose different packets
    one = tcplab.run(short, seed=1)
    two = tcplab.run(short, seed=2)
    assert one.series.flows[0] != two.series.flows[0] or one.flows[0] != two.flows[0]
    assert one.bottleneck.error_drops > 0 and two.bottleneck.error_drops > 0


def test_file_download_completes(write_toml: Callable[[str], Path], cca: str) -> None:
    text = SHORT_TOML.replace("{cca}", cca).replace("per = 1e-3", "per = 0")
    path = write_toml(text + 'app = "file"\nsize = "1MB"\n')
    flow = tcplab.run(path).flows[0]
    assert flow.completion_ns is not None
    assert flow.bytes_delivered == 1_000_000
    # 1 MB of payload at 10 Mbit/s alone takes 1e6 x 8 / 1e7 = 0.8 s, and the last byte still
    # needs the one-way propagation delay (20 ms + 2 x 0.1 ms): more than 0.82 s in total.
    # Goodput is computed over that completion time.
    assert flow.completion_ns > 820_000_000
    assert flow.goodput_bps == pytest.approx(8e6 / (flow.completion_ns / 1e9), rel=1e-9)


def test_count_expansion_and_fairness(write_toml: Callable[[str], Path], cca: str) -> None:
    path = write_toml(SHORT_TOML.replace("{cca}", cca) + "count = 3\n")
    result = tcplab.run(path, duration="5s")
    assert [f.id for f in result.flows] == [0, 1, 2]
    assert 1 / 3 <= result.jain_fairness <= 1.0


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.toml")), ids=lambda p: p.name)
def test_shipped_scenarios_run(path: Path) -> None:
    scenario = load_scenario(path)
    # keep it short, but long enough for every flow to start (two-flows starts one at 30 s)
    short_ns = min(scenario.duration_ns, max(f.start_ns for f in scenario.flows) + 2 * 10**9)
    result = tcplab.run(scenario, duration=format_duration_ns(short_ns))
    assert len(result.flows) == sum(f.count for f in scenario.flows)
    assert all(flow.bytes_delivered > 0 for flow in result.tcp_flows)
    for flow in result.cbr_flows:
        assert flow.cbr is not None and flow.cbr.packets_received > 0


def test_ccas_command() -> None:
    table = run_cli("ccas")
    assert table.returncode == 0, table.stderr
    proc = run_cli("ccas", "--json")
    assert proc.returncode == 0, proc.stderr
    entries = json.loads(proc.stdout)
    assert entries and [e["name"] for e in entries] == [c.name for c in tcplab.ccas()]
    for entry in entries:
        assert {"name", "summary", "feedback", "params"} <= set(entry)
        assert entry["feedback"] in {"loss", "delay", "hybrid", "rate"}
        assert entry["name"] in table.stdout


def test_demo(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    proc = run_cli("demo", "--out", str(out), "--duration", "20s")
    assert proc.returncode == 0, proc.stderr
    names = [c.name for c in tcplab.ccas()]
    results = json.loads((out / "results.json").read_text())
    assert [r["flows"][0]["cca"] for r in results] == names
    assert all(r["duration_s"] == 20.0 for r in results)
    with (out / "summary.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [row["cca"] for row in rows] == names
    # Mathis for p = 1e-4, RTT 500.4 ms, MSS 1448: 2,835,221 bit/s (see test_theory)
    assert float(rows[0]["mathis_bps"]) == pytest.approx(2_835_220.7, rel=1e-7)
    # CUBIC's response function, for the cubic row only: 1.0538289 x 0.5004^0.75 / 1e-4^0.75
    # = 1.0538289 x 0.5949603 / 0.001 = 626.986 segments x 11,584 bit / 0.5004 s
    # = 14,514,408 bit/s (far above the 4 Mbit/s link: CUBIC is not loss-limited here)
    by_cca = {row["cca"]: row for row in rows}
    assert float(by_cca["cubic"]["cubic_bps"]) == pytest.approx(14_514_408, rel=1e-6)
    assert all(row["cubic_bps"] == "" for row in rows if row["cca"] != "cubic")
    assert "CUBIC model (RFC 9438 §5.1" in proc.stdout
    markdown = (out / "summary.md").read_text()
    assert all(f"| {name} |" in markdown for name in names)
    assert "Mathis" in proc.stdout
    # The report: every algorithm at five error rates, in the database and the HTML file.
    from tcplab.study.store import Store

    with Store(out / "demo.duckdb", create=False) as store:
        runs = store.runs("demo")
    assert len(runs) == 5 * len(names)
    assert sorted(runs["bottleneck.per"].unique()) == [1e-6, 1e-5, 1e-4, 1e-3, 1e-2]
    html = (out / "report.html").read_text()
    assert html.count("<svg") >= 5 and "tcplab study: demo" in html


def test_bench_smoke(tmp_path: Path) -> None:
    import subprocess

    proc = subprocess.run(
        [
            *(sys.executable, "-m", "tcplab.tools.bench", "--duration", "5s", "--repeat", "1"),
            "--short-study",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads((tmp_path / "bench-out" / "bench.json").read_text())
    assert [b["name"] for b in report["benchmarks"]] == ["geo-4mbps", "geo-50-20", "pep-geo-bulk"]
    for bench in report["benchmarks"]:
        assert bench["best_wall_s"] > 0 and bench["events_per_s"] > 0
        assert bench["simulated_s"] == 5.0
    # geo-leaky with one seed, end to end: 3 variants x 6 algorithms x 16 error rates
    (study,) = report["studies"]
    assert study["runs"] == 288 and study["runs_per_s"] > 0
    assert 0 < study["core_cpu_s"] < study["sweep_cpu_s"] <= study["cpu_s"]
    assert 0 < study["report_cpu_s"] < study["cpu_s"]
    # shortened runs are not judged against the study's targets
    assert report["study_targets"] == []
