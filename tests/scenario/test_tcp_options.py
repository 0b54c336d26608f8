"""`[flows.tcp]` options → the core's `TcpConfig`: each key round-trips, the SACK-based options
follow `sack`, the ns-2 stack profile fills what the user left out, explicit values win.

Expected values are the documented defaults (scenarios/README.md), written out by hand.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from tcplab import ScenarioError, load_scenario
from tcplab.scenario.load import raw_scenario
from tcplab.scenario.normalize import normalize

LINUX_TCP = {
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
    "rwnd_bytes": 6_291_456,  # 6 MiB
    "window_scaling": True,
    "pacing": False,
    "tso": True,
    "ecn": False,
    "slow_start_after_idle": True,
}

NS2_RENO_TCP = {
    "stack": "ns2",
    "mss_bytes": 1000,  # packetSize_
    "sack": False,  # Agent/TCP/Reno has no SACK
    "dsack": False,
    "fack": False,
    "rack": False,
    "tlp": False,
    "frto": False,
    "prr": False,
    "timestamps": False,
    "delayed_ack": False,  # TCPSink ACKs every segment
    "initial_window_pkts": 2,  # windowInit_
    "rwnd_bytes": 20_000,  # window_ 20 packets x 1000 B
    "window_scaling": False,
    "pacing": False,
    "tso": False,  # ns-2 sends segment by segment
    "ecn": False,
    "slow_start_after_idle": True,  # slow_start_restart_ true
}


def tcp_of(tcp: dict[str, Any], cca: str = "reno") -> dict[str, Any]:
    raw = {
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "delay": "20ms"},
        "flows": [{"cca": cca, "tcp": tcp}],
    }
    # catalogue=(): ns-2 agent names ("sack", "fack") need not be in the core's catalogue yet
    out: dict[str, Any] = normalize(load_scenario(raw, catalogue=()))["flows"][0]["tcp"]
    return out


def test_linux_defaults_are_explicit_in_the_normalized_json() -> None:
    assert tcp_of({}) == LINUX_TCP


# (TOML key, value opposite to the Linux default, core key, normalized value)
ROUND_TRIP = [
    ("sack", False, "sack", False),
    ("dsack", False, "dsack", False),
    ("fack", True, "fack", True),
    ("rack", False, "rack", False),
    ("tlp", False, "tlp", False),
    ("frto", False, "frto", False),
    ("prr", False, "prr", False),
    ("timestamps", False, "timestamps", False),
    ("delayed_ack", False, "delayed_ack", False),
    ("initial_window", 4, "initial_window_pkts", 4),
    ("window_scaling", False, "window_scaling", False),
    ("pacing", True, "pacing", True),
    ("tso", False, "tso", False),
    ("ecn", True, "ecn", True),
    ("slow_start_after_idle", False, "slow_start_after_idle", False),
    ("mss", 1000, "mss_bytes", 1000),
    ("rwnd", "1MB", "rwnd_bytes", 1_000_000),
    ("stack", "ns2", "stack", "ns2"),
]


@pytest.mark.parametrize(("key", "value", "core_key", "expected"), ROUND_TRIP)
def test_option_reaches_the_core(key: str, value: Any, core_key: str, expected: Any) -> None:
    assert tcp_of({key: value})[core_key] == expected


@pytest.mark.parametrize(("key", "value", "core_key", "expected"), ROUND_TRIP)
def test_option_survives_the_dump_round_trip(
    key: str, value: Any, core_key: str, expected: Any
) -> None:
    # `--set` on a validated Scenario goes through model_dump: a given key must stay given
    # and an absent one absent (else a profile default would turn into an explicit value)
    raw = {
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "delay": "20ms"},
        "flows": [{"cca": "reno", "tcp": {key: value}}],
    }
    first = load_scenario(raw, catalogue=())
    dumped = raw_scenario(first)["flows"][0]["tcp"]
    assert set(dumped) == {key, "stack"}
    again = load_scenario(raw_scenario(first), catalogue=())
    assert normalize(again) == normalize(first)
    assert normalize(again)["flows"][0]["tcp"][core_key] == expected


def test_sack_off_turns_the_sack_based_options_off() -> None:
    tcp = tcp_of({"sack": False})
    assert (tcp["dsack"], tcp["fack"], tcp["rack"], tcp["tlp"]) == (False, False, False, False)
    # the others do not depend on SACK
    assert (tcp["frto"], tcp["prr"], tcp["timestamps"]) == (True, True, True)


def test_sack_based_options_may_be_turned_off_explicitly_with_sack_off() -> None:
    tcp = tcp_of({"sack": False, "rack": False, "tlp": False, "dsack": False, "fack": False})
    assert (tcp["sack"], tcp["rack"], tcp["tlp"]) == (False, False, False)


def test_fack_on_with_sack() -> None:
    tcp = tcp_of({"fack": True, "rack": False})
    assert (tcp["sack"], tcp["fack"], tcp["rack"], tcp["tlp"]) == (True, True, False, True)


def test_ns2_profile_for_reno() -> None:
    assert tcp_of({"stack": "ns2"}) == NS2_RENO_TCP


@pytest.mark.parametrize("cca", ["sack", "fack"])
def test_ns2_sack_agents_use_sack_but_nothing_newer(cca: str) -> None:
    tcp = tcp_of({"stack": "ns2"}, cca=cca)
    assert tcp["sack"] is True
    assert (tcp["dsack"], tcp["rack"], tcp["tlp"], tcp["fack"]) == (False, False, False, False)


@pytest.mark.parametrize("cca", ["tahoe", "newreno", "cubic"])
def test_ns2_other_agents_have_no_sack(cca: str) -> None:
    assert tcp_of({"stack": "ns2"}, cca=cca)["sack"] is False


def test_ns2_user_values_win() -> None:
    tcp = tcp_of(
        {
            "stack": "ns2",
            "mss": 1460,
            "timestamps": True,
            "delayed_ack": True,
            "initial_window": 10,
            "sack": True,
            "rack": True,
            "ecn": True,
            "prr": True,
        }
    )
    assert tcp["mss_bytes"] == 1460
    assert tcp["rwnd_bytes"] == 29_200  # still the profile's 20 packets, of the user's MSS
    assert (tcp["timestamps"], tcp["delayed_ack"], tcp["initial_window_pkts"]) == (True, True, 10)
    assert (tcp["sack"], tcp["rack"], tcp["ecn"], tcp["prr"]) == (True, True, True, True)
    # what the user did not write still comes from ns-2
    assert (tcp["tlp"], tcp["dsack"], tcp["frto"], tcp["window_scaling"]) == (
        False,
        False,
        False,
        False,
    )


def test_ns2_explicit_rwnd_wins_over_20_packets() -> None:
    assert tcp_of({"stack": "ns2", "rwnd": 50_000})["rwnd_bytes"] == 50_000


def test_ns2_large_window_with_window_scaling() -> None:
    # 128 packets x 1460 B = 186,880 B: needs the window scale option
    tcp = tcp_of({"stack": "ns2", "mss": 1460, "rwnd": 186_880, "window_scaling": True})
    assert (tcp["rwnd_bytes"], tcp["window_scaling"]) == (186_880, True)


def test_ns2_rwnd_follows_an_mss_set_later() -> None:
    raw = {
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "delay": "20ms"},
        "flows": [{"cca": "reno", "tcp": {"stack": "ns2"}}],
    }
    first = load_scenario(raw, catalogue=())
    again = load_scenario(first, ["flows.0.tcp.mss=1200"], catalogue=())
    assert normalize(again)["flows"][0]["tcp"]["rwnd_bytes"] == 24_000  # 20 x 1200


@pytest.mark.parametrize(
    ("tcp", "message"),
    [
        (
            {"sack": False, "rack": True},
            "flows[0].tcp.rack = true: needs SACK, but sack = false; "
            "allowed: rack = false, or sack = true",
        ),
        ({"sack": False, "tlp": True}, "flows[0].tcp.tlp = true: needs SACK, but sack = false"),
        (
            {"sack": False, "dsack": True},
            "flows[0].tcp.dsack = true: needs SACK, but sack = false",
        ),
        ({"sack": False, "fack": True}, "flows[0].tcp.fack = true: needs SACK, but sack = false"),
        (
            {"stack": "ns2", "rack": True},
            'flows[0].tcp.rack = true: needs SACK, which stack = "ns2" turns off for cca "reno"',
        ),
        (
            {"stack": "ns2", "mss": 1460, "rwnd": 186_880},
            'flows[0].tcp.rwnd = 186880: above 65535 bytes, but stack = "ns2" turns '
            "window_scaling off",
        ),
        (
            {"stack": "ns2", "mss": 4000},
            "flows[0].tcp.rwnd = 80000: above 65535 bytes (20 x mss)",
        ),
        (
            {"stack": "ns3"},
            'flows[0].tcp.stack = "ns3": not an allowed value; allowed: linux or ns2',
        ),
    ],
)
def test_conflicts(tcp: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        tcp_of(tcp)
    assert str(info.value).startswith(message), str(info.value)


CLI_TOML = """\
name = "cli"
duration = "10s"

[bottleneck]
rate = "10Mbps"
delay = "20ms"

[[flows]]
cca = "reno"

[flows.tcp]
{tcp}
"""


@pytest.mark.parametrize(
    ("tcp", "expected"),
    [
        (
            "sack = false\nrack = true",
            "error: flows[0].tcp.rack = true: needs SACK, but sack = false; "
            "allowed: rack = false, or sack = true",
        ),
        ("tlp = true\nsack = false", "error: flows[0].tcp.tlp = true: needs SACK"),
        ("sack = false\ndsack = true", "error: flows[0].tcp.dsack = true: needs SACK"),
        ("sack = false\nfack = true", "error: flows[0].tcp.fack = true: needs SACK"),
        (
            'stack = "bsd"',
            'error: flows[0].tcp.stack = "bsd": not an allowed value; allowed: linux or ns2',
        ),
    ],
)
def test_conflict_through_the_cli(
    tcp: str, expected: str, write_toml: Callable[[str], Path]
) -> None:
    proc = run_cli("run", str(write_toml(CLI_TOML.replace("{tcp}", tcp))))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == "" and "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(expected), lines[0]


def test_validate_scenario_shows_the_ns2_profile(write_toml: Callable[[str], Path]) -> None:
    proc = run_cli("check", str(write_toml(CLI_TOML.replace("{tcp}", 'stack = "ns2"'))))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["flows"][0]["tcp"] == NS2_RENO_TCP


def test_set_switches_the_stack(write_toml: Callable[[str], Path]) -> None:
    path = write_toml(CLI_TOML.replace("{tcp}", "mss = 1448"))
    proc = run_cli("check", str(path), "--set", "flows.0.tcp.stack=ns2")
    assert proc.returncode == 0, proc.stderr
    tcp = json.loads(proc.stdout)["flows"][0]["tcp"]
    # the written mss stays; the rest is ns-2's: 20 x 1448 = 28,960 B window, IW 2
    assert (tcp["mss_bytes"], tcp["rwnd_bytes"], tcp["initial_window_pkts"]) == (1448, 28_960, 2)
