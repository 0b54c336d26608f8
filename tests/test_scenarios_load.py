"""Every shipped scenario (scenarios/*.toml and the package data) loads and normalizes
(Flent's "load every definition" test). With the real core, algorithm names are checked too."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest
from conftest import SCENARIOS
from tcplab import load_scenario
from tcplab.bench import BENCHMARKS
from tcplab.demo import builtin_scenario
from tcplab.normalize import normalize

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
    assert PACKAGE_DATA == ["geo-sat.toml"]


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
