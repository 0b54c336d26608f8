"""`[[cross]]` tables: what the core receives (units converted by hand), their one-line
errors, and a run that keeps the cross traffic out of the flows' numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tcplab import ScenarioError, load_scenario, run
from tcplab.scenario.normalize import normalize

REPO = Path(__file__).resolve().parents[2]


def scenario(*cross: dict[str, Any], duration: str = "60s") -> dict[str, Any]:
    return {
        "duration": duration,
        "bottleneck": {"rate": "10Mbps", "delay": "20ms", "queue": "100pkts"},
        "flows": [{"cca": "cubic"}],
        "cross": list(cross),
    }


FLOWS: dict[str, Any] = {
    "kind": "flows",
    "rate": "3Mbps",
    "peak_rate": "5Mbps",
    "size": {"dist": "pareto", "mean": "30KB", "shape": 1.5},
}
ON_OFF: dict[str, Any] = {
    "kind": "on-off",
    "peak_rate": "1Mbps",
    "packet_size": "1000B",
    "direction": "reverse",
    "on": {"dist": "exponential", "mean": "200ms"},
    "off": {"dist": "lognormal", "mean": "300ms", "sigma": 0.5},
}


def test_cross_tables_become_the_core_config_and_none_leaves_the_json_unchanged() -> None:
    out = normalize(load_scenario(scenario(FLOWS, ON_OFF), catalogue=()))
    assert out["cross"] == [
        {
            "kind": "flows",
            "segment": None,
            "reverse": False,
            "peak_bps": 5_000_000,
            "packet_bytes": 1500,
            "offered_bps": 3_000_000,
            "size": {"dist": "pareto", "mean": 30_000.0, "shape": 1.5},
        },
        {
            "kind": "on_off",
            "segment": None,
            "reverse": True,
            "peak_bps": 1_000_000,
            "packet_bytes": 1000,
            "on": {"dist": "exponential", "mean": 2e8},
            "off": {"dist": "lognormal", "mean": 3e8, "sigma": 0.5},
        },
    ]
    assert "cross" not in normalize(load_scenario(scenario(), catalogue=()))
    spec = load_scenario(scenario(ON_OFF), catalogue=()).cross[0]
    assert spec.offered_bps == pytest.approx(400_000)  # 1 Mbit/s x 200 / (200 + 300)


@pytest.mark.parametrize(
    ("cross", "fragments"),
    [
        ({**FLOWS, "on": ON_OFF["on"]}, ("cross[0]", "'on' does not apply")),
        ({k: v for k, v in FLOWS.items() if k != "size"}, ("cross[0]", "needs 'size'")),
        (
            {**FLOWS, "size": {"dist": "pareto", "mean": "30KB", "shape": 0.9}},
            ("cross[0].size.shape", "> 1 ..= 100"),
        ),
        ({**FLOWS, "size": {"dist": "lognormal", "mean": "30KB"}}, ("needs 'sigma'",)),
        ({**FLOWS, "packet_size": "20B"}, ("cross[0].packet_size", "40B to 65535B")),
        ({**FLOWS, "segment": "satellite"}, ("cross[0].segment", '"bottleneck"')),
        ({**FLOWS, "kind": "burst"}, ("cross[0].kind",)),
    ],
)
def test_bad_cross_tables_are_one_line_errors(cross: dict[str, Any], fragments: tuple[str]) -> None:
    assert_refused_in_one_line(scenario(cross), fragments)


def assert_refused_in_one_line(table: dict[str, Any], fragments: tuple[str, ...]) -> None:
    """Loading `table` fails with a one-line error that holds every fragment."""
    with pytest.raises(ScenarioError) as err:
        load_scenario(table, catalogue=None)
    message = str(err.value)
    assert "\n" not in message
    for fragment in fragments:
        assert fragment in message, message


def test_cross_traffic_is_reported_apart_from_the_flows() -> None:
    result = run(load_scenario(scenario(FLOWS, duration="20s")))
    assert len(result.flows) == 1
    (cross,) = result.cross
    assert cross.link == "bottleneck.forward"
    assert cross.bytes_sent == cross.bytes_offered or cross.bytes_sent < cross.bytes_offered
    # the TCP flow's goodput is what the link had left: at most (10 Mbit/s - delivered
    # cross load) x 1448/1500 of payload
    left = (10e6 - cross.delivered_bps) * 1448 / 1500
    assert result.aggregate_goodput_bps <= left * 1.002
    assert result.to_json_dict()["cross"][0]["packets_dropped"] == cross.packets_dropped


def test_emulate_refuses_cross_traffic_instead_of_ignoring_it() -> None:
    from tcplab.realstack.plan import plan_topology

    normalized = normalize(load_scenario(scenario(FLOWS), catalogue=()))
    with pytest.raises(ScenarioError, match=r"^cross: emulate has no cross-traffic generator"):
        plan_topology(normalized, "c1")


def test_cross_traffic_with_a_wifi_segment_is_refused_in_one_line(tmp_path: Path) -> None:
    # a cross source has no station on the medium; the Wi-Fi link's background stations are
    # the way to put other traffic on it
    text = (REPO / "scenarios" / "wifi.toml").read_text()
    text += '\n[[cross]]\nkind = "on-off"\npeak_rate = "1Mbps"\n'
    text += 'on = { dist = "constant", mean = "1s" }\noff = { dist = "constant", mean = "1s" }\n'
    scenario = tmp_path / "wifi-cross.toml"
    scenario.write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "tcplab", "run", str(scenario)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and "cross[0]" in lines[0] and "background" in lines[0], done.stderr
