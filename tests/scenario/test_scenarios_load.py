"""Every shipped scenario (scenarios/*.toml and the package data) loads and normalizes
(Flent's "load every definition" test). With the real core, algorithm names are checked too."""

from __future__ import annotations

import json
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from conftest import SCENARIOS, run_cli
from tcplab import load_scenario
from tcplab.scenario.normalize import normalize
from tcplab.tools.bench import BENCHMARKS
from tcplab.tools.demo import builtin_scenario

SCENARIO_FILES = sorted(SCENARIOS.glob("*.toml"))
PACKAGE_DATA = sorted(
    entry.name
    for entry in resources.files("tcplab").joinpath("data").iterdir()
    if entry.name.endswith(".toml")
)


def test_there_are_scenarios() -> None:
    names = {path.name for path in SCENARIO_FILES}
    expected = {"geo-sat.toml", "geo-asym.toml", "terrestrial-40ms.toml", "lan.toml"}
    assert expected | {"two-flows.toml", "file-download.toml"} <= names
    assert {"ecn-reno.toml", "ns2-goodput.toml"} <= names
    assert PACKAGE_DATA == ["geo-sat.toml", "matrix-geo.toml", "matrix-terrestrial.toml"]


@pytest.mark.parametrize("path", SCENARIO_FILES, ids=lambda p: p.name)
def test_scenario_file_loads(path: Path) -> None:
    scenario = load_scenario(path)  # the core's catalogue, when the core is built
    normalized = normalize(scenario)
    assert normalized["flows"]
    assert scenario.name == path.stem  # file name and scenario name agree


@pytest.mark.parametrize("name", PACKAGE_DATA)
def test_package_scenario_loads(name: str) -> None:
    assert normalize(load_scenario(builtin_scenario(name)))["flows"]


def test_demo_scenario_matches_the_repository_copy() -> None:
    shipped = normalize(load_scenario(builtin_scenario("geo-sat.toml")))
    in_repo = normalize(load_scenario(SCENARIOS / "geo-sat.toml"))
    assert shipped == in_repo
    # the demo's path as specified: 4 Mbit/s both ways, 250 ms, PER 1e-4, 600 s, seed 1
    forward = shipped["bottleneck"]["forward"]
    assert (forward["rate_bps"], forward["delay_ns"], forward["per"]) == (4e6, 250e6, 1e-4)
    assert shipped["bottleneck"]["reverse"]["rate_bps"] == 4_000_000
    assert (shipped["duration_ns"], shipped["seed"]) == (600 * 10**9, 1)
    assert forward["queue"]["limit_pkts"] == 334


def test_asymmetric_benchmark_is_the_geo_asym_scenario() -> None:
    bench = load_scenario(builtin_scenario("geo-sat.toml"), BENCHMARKS["geo-50-20"])
    file_copy = load_scenario(SCENARIOS / "geo-asym.toml", [("name", "geo-50-20")])
    assert normalize(bench) == normalize(file_copy)


def test_scenario_files_are_plain_toml() -> None:
    # guards against a scenario that only loads thanks to an override or default name
    for path in SCENARIO_FILES:
        assert "name" in tomllib.loads(path.read_text(encoding="utf-8")), path


@pytest.mark.parametrize("name", ["ecn-reno.toml", "ns2-goodput.toml"])
def test_new_scenario_runs(name: str) -> None:
    proc = run_cli("run", str(SCENARIOS / name), "--duration", "5s", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["duration_s"] == 5.0
    assert all(flow["goodput_bps"] > 0 for flow in out["flows"])


def test_ns2_goodput_is_the_study_setup() -> None:
    out = normalize(load_scenario(SCENARIOS / "ns2-goodput.toml"))
    assert len(out["flows"]) == 4
    assert out["access"]["rate_bps"] == 10_000_000
    forward = out["bottleneck"]["forward"]
    assert (forward["rate_bps"], forward["delay_ns"]) == (100_000_000, 3_000_000)
    assert forward["queue"] == {"kind": "droptail", "limit_pkts": 64}
    assert out["duration_ns"] == 11 * 10**9
    for flow in out["flows"]:
        tcp = flow["tcp"]
        assert flow["cca"] == "reno" and tcp["stack"] == "ns2"
        assert (tcp["mss_bytes"], tcp["rwnd_bytes"]) == (1460, 128 * 1460)
        assert (tcp["sack"], tcp["timestamps"], tcp["delayed_ack"]) == (False, False, False)


def test_ecn_reno_marks() -> None:
    out = normalize(load_scenario(SCENARIOS / "ecn-reno.toml"))
    assert out["bottleneck"]["forward"]["ecn_threshold_pkts"] == 20
    assert out["flows"][0]["tcp"]["ecn"] is True
