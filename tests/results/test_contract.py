"""The result JSON between the core and Python: `RunResult.from_json` reads exactly the fields
the core's result structs serialize (crates/core/src/api.rs), and the real stack's converter
builds the same shape. Every shipped scenario is run on the core (briefly); every recorded
emulation (tests/data/realstack) is converted; all must parse strictly, and the fields they
show together must be exactly the ones `results.parse` declares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import REALSTACK_FIXTURES, SCENARIOS, recorded
from tcplab import _core
from tcplab.limits import LIMITS, Limits
from tcplab.results import parse
from tcplab.results.parse import ResultFormatError, RunResult
from tcplab.scenario.load import load_scenario
from tcplab.scenario.normalize import normalize


def _core_result(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    scenario = load_scenario(path)
    normalized = normalize(scenario)
    # long enough for every flow to start and a download to finish its handshake
    last_start = max(int(f["start_ns"]) for f in normalized["flows"])
    duration = min(int(normalized["duration_ns"]), last_start + 3 * 10**9)
    normalized["duration_ns"] = duration
    normalized["interval_ns"] = min(int(normalized["interval_ns"]), duration)
    return normalized, json.loads(_core.run_json(json.dumps(normalized)))


def _seen(results: list[dict[str, Any]]) -> dict[str, set[str]]:
    """The keys of each kind of object over all the results."""
    seen: dict[str, set[str]] = {
        k: set()
        for k in (
            *("result", "flow", "leg", "link", "rtt", "series", "series_flow"),
            *("cross", "wifi", "wifi_station"),
        )
    }
    for data in results:
        seen["result"] |= data.keys()
        seen["series"] |= data["series"].keys()
        for flow in data["flows"]:
            seen["flow"] |= flow.keys()
            seen["rtt"] |= flow["rtt"].keys()
            for leg in flow.get("legs", []):
                seen["leg"] |= leg.keys()
        for link in data["links"]:
            seen["link"] |= link.keys()
        for series in data["series"]["flows"]:
            seen["series_flow"] |= series.keys()
        for cross in data.get("cross", []):
            seen["cross"] |= cross.keys()
        for medium in data.get("wifi", []):
            seen["wifi"] |= medium.keys()
            for station in medium["stations"]:
                seen["wifi_station"] |= station.keys()
    return seen


DECLARED = {
    "result": {*parse.RESULT_KEYS, *parse.RESULT_OPTIONAL_KEYS},
    "flow": {*parse.FLOW_KEYS, *parse.CBR_KEYS, *parse.PEP_KEYS},
    "leg": set(parse.LEG_KEYS),
    "link": set(parse.LINK_KEYS),
    "rtt": set(parse.RTT_KEYS),
    "series": set(parse.SERIES_KEYS),
    "series_flow": set(parse.SERIES_FLOW_KEYS),
    "cross": set(parse.CROSS_KEYS),
    "wifi": set(parse.WIFI_KEYS),
    "wifi_station": set(parse.WIFI_STATION_KEYS),
}


def test_the_core_result_of_every_scenario_parses_strictly_and_uses_every_declared_key() -> None:
    results = []
    for path in sorted(SCENARIOS.glob("*.toml")):
        normalized, data = _core_result(path)
        RunResult.from_json(data, wall_s=0.0, scenario=normalized)  # raises on any mismatch
        results.append(data)
    assert _seen(results) == DECLARED


def test_an_unknown_or_missing_field_is_an_error() -> None:
    normalized, data = _core_result(SCENARIOS / "lan.toml")
    extra = {**data, "flows": [{**data["flows"][0], "new_counter": 1}]}
    with pytest.raises(ResultFormatError, match="unknown field 'new_counter'"):
        RunResult.from_json(extra, wall_s=0.0, scenario=normalized)
    missing = {**data, "links": [{k: v for k, v in data["links"][0].items() if k != "aqm_drops"}]}
    with pytest.raises(ResultFormatError, match="has no 'aqm_drops'"):
        RunResult.from_json(missing, wall_s=0.0, scenario=normalized)


def test_every_recorded_emulation_converts_to_the_core_shape() -> None:
    from tcplab.realstack.convert import result_json

    results = []
    for path in sorted(REALSTACK_FIXTURES.glob("*.json")):
        normalized, plan, runs, emu = recorded(path.stem)
        data = result_json(normalized, runs, emu, plan.interval_ns, "test")
        RunResult.from_json(data, wall_s=0.0, scenario=normalized)
        results.append(data)
    seen = _seen(results)
    for kind, keys in seen.items():
        assert keys <= DECLARED[kind], kind
    assert seen["flow"] >= set(parse.FLOW_KEYS) and seen["link"] == DECLARED["link"]


def test_limits_are_the_cores_own() -> None:
    # constructing `Limits` from the core's JSON fails on a key either side lacks
    assert Limits.from_json(_core.limits_json()) == LIMITS
    # the model's defaults are the core's TcpConfig::default()
    from tcplab.scenario.tcp_profile import LINUX

    for name, value in vars(LINUX).items():
        assert LIMITS.tcp_defaults[name] == value, name
