"""ECN step marking: `[bottleneck] ecn_threshold` parsing and checks, and end to end through
the real core (Reno with ECN keeps a big buffer nearly empty without a single drop)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import tcplab
from conftest import run_cli
from tcplab import ScenarioError, load_scenario
from tcplab.scenario.load import raw_scenario
from tcplab.scenario.normalize import normalize


def bottleneck_of(**bottleneck: Any) -> dict[str, Any]:
    raw = {
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "delay": "25ms", "queue": "1000pkts", **bottleneck},
        "flows": [{"cca": "reno", "tcp": {"ecn": True}}],
    }
    out: dict[str, Any] = normalize(load_scenario(raw, catalogue=()))["bottleneck"]
    return out


@pytest.mark.parametrize(
    ("value", "expected"),
    [("20pkts", 20), (20, 20), ("20 pkts", 20), ("1pkt", 1), ("999pkts", 999)],
)
def test_threshold_forms(value: Any, expected: int) -> None:
    out = bottleneck_of(ecn_threshold=value)
    assert out["forward"]["ecn_threshold_pkts"] == expected
    assert out["reverse"]["ecn_threshold_pkts"] is None  # ACK direction: no marking unless set


def test_return_threshold() -> None:
    out = bottleneck_of(return_ecn_threshold="5pkts")
    assert (out["forward"]["ecn_threshold_pkts"], out["reverse"]["ecn_threshold_pkts"]) == (
        None,
        5,
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "bottleneck.ecn_threshold = 0: must be at least 1 packet"),
        ("0pkts", 'bottleneck.ecn_threshold = "0pkts": must be at least 1 packet'),
        ("20", 'bottleneck.ecn_threshold = "20": not a packet count; allowed: a packet count'),
        ("20KB", 'bottleneck.ecn_threshold = "20KB": not a packet count'),
        ("1.5pkts", 'bottleneck.ecn_threshold = "1.5pkts": not a packet count'),
        ("-3pkts", 'bottleneck.ecn_threshold = "-3pkts": not a packet count'),
        (20.5, "bottleneck.ecn_threshold = 20.5: not a packet count"),
        (True, "bottleneck.ecn_threshold = true: not a packet count"),
        # a packet finding 1000 waiting is dropped, so K = 1000 would never mark
        ("1000pkts", 'bottleneck.ecn_threshold = "1000pkts": never marks: the queue holds at'),
    ],
)
def test_bad_thresholds(value: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        bottleneck_of(ecn_threshold=value)
    assert str(info.value).startswith(message), str(info.value)


def test_threshold_against_a_bdp_queue() -> None:
    # 1bdp at 10 Mbit/s, base RTT 2 x (25 + 0.2) ms = 50.4 ms: 10e6 x 0.0504 / 12000 = 42
    # packets, so K = 41 is the largest threshold that can mark
    assert bottleneck_of(queue="1bdp", ecn_threshold=41)["forward"]["ecn_threshold_pkts"] == 41
    with pytest.raises(ScenarioError, match=r"holds at most 42 packets; allowed: 1 to 41"):
        bottleneck_of(queue="1bdp", ecn_threshold=42)


def test_threshold_survives_the_dump_round_trip() -> None:
    raw = {
        "duration": "10s",
        "bottleneck": {"rate": "10Mbps", "delay": "25ms", "ecn_threshold": 20},
        "flows": [{}],
    }
    first = load_scenario(raw, catalogue=())
    assert raw_scenario(first)["bottleneck"]["ecn_threshold"] == "20pkts"
    assert load_scenario(raw_scenario(first), catalogue=()) == first


ECN_TOML = """\
name = "ecn-e2e"
duration = "60s"
seed = 1

[bottleneck]
rate = "10Mbps"
delay = "25ms"
queue = "1000pkts"
ecn_threshold = "20pkts"

[[flows]]
cca = "reno"

[flows.tcp]
ecn = {ecn}
"""


@pytest.fixture
def ecn_toml(write_toml: Callable[[str], Path]) -> Callable[[bool], Path]:
    def make(ecn: bool) -> Path:
        return write_toml(ECN_TOML.replace("{ecn}", "true" if ecn else "false"))

    return make


def test_reno_with_ecn_is_marked_and_never_dropped(ecn_toml: Callable[[bool], Path]) -> None:
    proc = run_cli("run", str(ecn_toml(True)), "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    bottleneck = out["bottleneck"]
    assert bottleneck["ecn_marks"] > 0
    assert bottleneck["queue_drops"] == 0
    assert out["flows"][0]["retransmits"] == 0  # marks, not losses, slowed it down
    # Marking starts when 20 packets wait, at cwnd ~ BDP + 20 = 42 + 20 = 62 packets; slow
    # start can at most double that before the echo arrives one RTT later, so the queue
    # peaks near 124 - 42 = 82 packets: far below the 1000-packet buffer.
    assert bottleneck["queue_max_pkts"] < 200
    assert out["links"][0]["ecn_marks"] == bottleneck["ecn_marks"]


def test_reno_without_ecn_fills_the_same_buffer(ecn_toml: Callable[[bool], Path]) -> None:
    # the control: the queue marks only ECN-capable packets, so a non-ECN Reno is never
    # marked and grows the queue until DropTail drops
    result = tcplab.run(ecn_toml(False))
    assert result.bottleneck.ecn_marks == 0
    assert result.bottleneck.queue_drops > 0
    assert result.bottleneck.queue_max_pkts == 1000


def test_summary_line_shows_ecn_marks(ecn_toml: Callable[[bool], Path]) -> None:
    proc = run_cli("run", str(ecn_toml(True)), "--duration", "10s")
    assert proc.returncode == 0, proc.stderr
    line = next(text for text in proc.stdout.splitlines() if text.startswith("bottleneck "))
    assert "queue drops 0" in line and "ECN marks " in line
    assert "ECN marks 0" not in line


def test_summary_line_without_ecn_has_no_marks(write_toml: Callable[[str], Path]) -> None:
    text = ECN_TOML.replace('ecn_threshold = "20pkts"\n', "").replace("{ecn}", "false")
    proc = run_cli("run", str(write_toml(text)), "--duration", "5s")
    assert proc.returncode == 0, proc.stderr
    assert "ECN" not in proc.stdout
