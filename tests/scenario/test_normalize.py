"""TOML scenario → normalized interface JSON: queue sizing, defaults, expansion, overrides.

Expected numbers are worked out by hand in the comments, not recomputed with the code's
formulas.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import GEO_TOML, run_cli
from tcplab import ScenarioError, load_scenario
from tcplab.scenario.load import raw_scenario
from tcplab.scenario.normalize import normalize


def norm(raw: dict[str, Any], overrides: list[str] | None = None) -> dict[str, Any]:
    # catalogue=(): these tests are about normalization, not about which algorithms exist
    return normalize(load_scenario(raw, overrides or [], catalogue=()))


def geo(**bottleneck: Any) -> dict[str, Any]:
    return {
        "name": "geo",
        "duration": "600s",
        "bottleneck": {"rate": "4Mbps", "delay": "250ms", "queue": "2bdp", **bottleneck},
        "access": {"rate": "1Gbps", "delay": "0.1ms"},
        "flows": [{"cca": "cubic"}],
    }


def test_geo_2bdp_queue_is_334_packets() -> None:
    # base RTT = 2 x (250 ms + 2 x 0.1 ms) = 500.4 ms
    # BDP = 4e6 bit/s x 0.5004 s / 8 = 250,200 B = 166.8 packets of 1500 B
    # 2 x 166.8 = 333.6 -> ceil -> 334 packets, in both directions (same rate and delay)
    out = norm(geo())
    assert out["bottleneck"]["forward"]["queue"] == {"kind": "droptail", "limit_pkts": 334}
    assert out["bottleneck"]["reverse"]["queue"] == {"kind": "droptail", "limit_pkts": 334}


def test_asymmetric_bdp_is_exact() -> None:
    # forward: 2 x 50e6 x 0.5004 / 12000 = 2 x 2085 = 4170 exactly
    # return:  2 x 20e6 x 0.5004 / 12000 = 2 x 834 = 1668 exactly -- a float computation can
    # land on 1668.0000000000002 and round up to 1669; the normalizer must not.
    out = norm(geo(rate="50Mbps", return_rate="20Mbps"))
    assert out["bottleneck"]["forward"]["queue"]["limit_pkts"] == 4170
    assert out["bottleneck"]["reverse"]["queue"]["limit_pkts"] == 1668


def test_fractional_bdp_and_return_delay() -> None:
    # return delay 50 ms: RTT = 250 + 50 + 4 x 0.1 = 300.4 ms
    # 0.5 x 4e6 x 0.3004 / 12000 = 0.5 x 100.1333 = 50.07 -> 51
    out = norm(geo(queue="0.5bdp", return_delay="50ms"))
    assert out["bottleneck"]["forward"]["queue"]["limit_pkts"] == 51
    assert out["bottleneck"]["reverse"]["delay_ns"] == 50_000_000


def test_return_queue_defaults_to_the_queue_spec_at_the_return_rate() -> None:
    # 2 x 1e6 x 0.5004 / 12000 = 83.4 -> 84 packets on the 1 Mbit/s return link
    out = norm(geo(return_rate="1Mbps"))
    assert out["bottleneck"]["reverse"]["queue"]["limit_pkts"] == 84
    assert out["bottleneck"]["reverse"]["rate_bps"] == 1_000_000


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("200pkts", {"kind": "droptail", "limit_pkts": 200}),
        ("1pkt", {"kind": "droptail", "limit_pkts": 1}),
        ("64KB", {"kind": "droptail", "limit_bytes": 64_000}),
        ("64KiB", {"kind": "droptail", "limit_bytes": 65_536}),
        ("1600", None),  # a bare number is ambiguous (packets? bytes?) -> error
    ],
)
def test_queue_specs(spec: str, expected: dict[str, Any] | None) -> None:
    if expected is None:
        with pytest.raises(ScenarioError, match=r"queue limit needs a unit"):
            norm(geo(queue=int(spec)))
        return
    out = norm(geo(queue=spec, return_queue="1000pkts"))
    assert out["bottleneck"]["forward"]["queue"] == expected
    assert out["bottleneck"]["reverse"]["queue"] == {"kind": "droptail", "limit_pkts": 1000}


def test_defaults() -> None:
    raw = {
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "delay": "20ms"},
        "flows": [{}],
    }
    out = norm(raw)
    assert out["name"] == "scenario"
    assert out["seed"] == 1
    assert out["interval_ns"] == 1_000_000_000
    assert out["access"] == {"rate_bps": 1_000_000_000, "delay_ns": 100_000}
    forward, reverse = out["bottleneck"]["forward"], out["bottleneck"]["reverse"]
    assert (forward["per"], forward["ber"], reverse["per"], reverse["ber"]) == (0, 0, 0, 0)
    assert forward["ecn_threshold_pkts"] is None and reverse["ecn_threshold_pkts"] is None
    assert reverse["rate_bps"] == 10_000_000 and reverse["delay_ns"] == 20_000_000
    # default 1bdp: 10e6 x (2 x (20 + 0.2) ms) / 12000 = 10e6 x 0.0404 / 12000 = 33.67 -> 34
    assert forward["queue"]["limit_pkts"] == 34
    assert out["flows"] == [
        {
            "cca": "cubic",
            "cca_params": {},
            "start_ns": 0,
            "app": {"kind": "bulk"},
            # every option explicit, Linux defaults (docs/interface.md)
            "tcp": {
                "stack": "linux",
                "mss_bytes": 1448,
                "sack": True,
                "dsack": True,
                "fack": False,
                "rack": True,
                "tlp": True,
                "frto": True,
                "prr": True,
                "timestamps": True,
                "delayed_ack": True,
                "initial_window_pkts": 10,
                "rwnd_bytes": 6 * 1024 * 1024,
                "window_scaling": True,
                "pacing": False,
                "tso": True,
                "ecn": False,
                "slow_start_after_idle": True,
            },
            "access": None,
        }
    ]


def test_count_expands_in_file_order() -> None:
    raw = geo()
    raw["flows"] = [
        {"cca": "reno", "count": 2, "start": "1s"},
        {"cca": "cubic", "app": "file", "size": "5MB"},
    ]
    flows = norm(raw)["flows"]
    assert [f["cca"] for f in flows] == ["reno", "reno", "cubic"]
    assert [f["start_ns"] for f in flows] == [10**9, 10**9, 0]
    assert flows[2]["app"] == {"kind": "file", "size_bytes": 5_000_000}


def test_one_flow_table_holds_ten_thousand_flows() -> None:
    # A data-centre or ISP aggregate in one table: 10,000 identical flows.
    raw = geo()
    raw["flows"] = [{"cca": "reno", "count": 10_000}]
    assert len(norm(raw)["flows"]) == 10_000


@pytest.mark.parametrize(
    ("tables", "message"),
    [
        ([100_001], "flows[0].count = 100001: out of range; allowed: 1 to 100000"),
        ([60_000, 40_001], 'flows = "100001 flows": too many flows; allowed: at most 100000'),
    ],
)
def test_more_than_a_hundred_thousand_flows_are_refused(tables: list[int], message: str) -> None:
    raw = geo()
    raw["flows"] = [{"cca": "reno", "count": n} for n in tables]
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        norm(raw)


@pytest.mark.parametrize(
    ("rwnd", "scaling", "expected"),
    [
        ("4MB", False, 65_535),  # capped: no window scale option
        ("4MB", True, 4_000_000),
        ("32KB", False, 32_000),  # already below the cap
        (65_535, False, 65_535),
        ("64KiB", False, 65_535),  # 65,536 does not fit in 16 bits
    ],
)
def test_rwnd_without_window_scaling(rwnd: Any, scaling: bool, expected: int) -> None:
    raw = geo()
    raw["flows"] = [{"tcp": {"rwnd": rwnd, "window_scaling": scaling}}]
    assert norm(raw)["flows"][0]["tcp"]["rwnd_bytes"] == expected


def test_cca_params_units_become_suffixes() -> None:
    raw = geo()
    raw["flows"] = [
        {"cca_params": {"rtt0": "25ms", "max_rate": "10Mbps", "beta": 717, "c": 0.4, "on": True}}
    ]
    params = norm(raw)["flows"][0]["cca_params"]
    assert params == {
        "rtt0_ns": 25_000_000,
        "max_rate_bps": 10_000_000,
        "beta": 717,
        "c": 0.4,
        "on": 1,
    }


def test_cca_param_clash_after_suffixing() -> None:
    raw = geo()
    raw["flows"] = [{"cca_params": {"rtt0": "25ms", "rtt0_ns": 1}}]
    with pytest.raises(ScenarioError, match=r"^flows\[0\]\.cca_params\.rtt0_ns = 1: same param"):
        norm(raw)


def test_cca_param_text_needs_a_unit() -> None:
    raw = geo()
    raw["flows"] = [{"cca_params": {"mode": "fast"}}]
    with pytest.raises(ScenarioError, match=r'cca_params\.mode = "fast": a text parameter needs'):
        norm(raw)


def test_per_flow_access_inherits_missing_fields() -> None:
    raw = geo()
    raw["flows"] = [{"access": {"delay": "10ms"}}, {}]
    flows = norm(raw)["flows"]
    assert flows[0]["access"] == {"rate_bps": 1_000_000_000, "delay_ns": 10_000_000}
    assert flows[1]["access"] is None


def test_overrides() -> None:
    out = norm(
        geo(),
        [
            "bottleneck.per=1e-4",
            "flows.0.cca=reno",
            "duration=60s",
            "flows[0].tcp.mss=1400",
            "seed=7",
            'name="over"',
            "flows.0.access.delay=1ms",  # creates the optional [flows.access] table
        ],
    )
    assert out["bottleneck"]["forward"]["per"] == 1e-4
    assert out["flows"][0]["cca"] == "reno"
    assert out["duration_ns"] == 60 * 10**9
    assert out["flows"][0]["tcp"]["mss_bytes"] == 1400
    assert out["seed"] == 7
    assert out["name"] == "over"
    assert out["flows"][0]["access"]["delay_ns"] == 1_000_000


def test_overrides_as_mapping_keep_python_values() -> None:
    out = normalize(load_scenario(geo(), {"bottleneck.per": 0.5, "name": "1e-4"}, catalogue=()))
    assert out["bottleneck"]["forward"]["per"] == 0.5
    assert out["name"] == "1e-4"  # not parsed as a TOML number


def test_overrides_do_not_touch_the_input() -> None:
    raw = geo()
    norm(raw, ["bottleneck.per=0.1"])
    assert "per" not in raw["bottleneck"]


def test_scenario_round_trips_through_its_dump() -> None:
    raw = geo(return_rate="1Mbps", queue="1.5bdp", per=1e-3)
    raw["flows"] = [{"cca": "reno", "count": 3, "tcp": {"rwnd": "64KiB"}, "access": {}}]
    first = load_scenario(raw, catalogue=())
    again = load_scenario(raw_scenario(first), catalogue=())
    assert again == first
    assert normalize(again) == normalize(first)


def test_name_defaults_to_the_file_stem(write_toml: Callable[[str], Path]) -> None:
    path = write_toml(GEO_TOML.replace('name = "geo-sat"\n', ""))
    assert load_scenario(path, catalogue=()).name == path.stem


def test_validate_scenario_prints_the_normalized_json(write_toml: Callable[[str], Path]) -> None:
    proc = run_cli("check", str(write_toml(GEO_TOML)), "--set", "bottleneck.per=0")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["bottleneck"]["forward"]["queue"]["limit_pkts"] == 334
    assert out["bottleneck"]["forward"]["per"] == 0.0
    assert out["duration_ns"] == 600 * 10**9
