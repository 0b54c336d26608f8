"""Mathis, Padhye and CUBIC formulas against hand-computed numbers (intermediate steps in
comments)."""

from __future__ import annotations

import math
from typing import Any

import pytest
from tcplab.results.theory import (
    aimd_window_pkts,
    cubic_bps,
    cubic_window_pkts,
    flow_bounds,
    flows_bounds,
    link_cap_bps,
    mathis_bps,
    packet_loss,
    padhye_bps,
    run_bounds,
    wire_bytes,
)


def test_mathis_textbook_example() -> None:
    # MSS 1448 B = 11,584 bit; / RTT 0.1 s = 115,840 bit/s
    # x C = sqrt(3/2) = 1.2247449 -> 141,874.45; / sqrt(p) = sqrt(0.01) = 0.1 -> 1,418,744.5
    assert mathis_bps(1448, 0.1, 1e-2) == pytest.approx(1_418_744.5, rel=1e-7)


def test_mathis_geo_demo_bound() -> None:
    # 11,584 bit / 0.5004 s = 23,149.48 bit/s; x 1.2247449 = 28,352.21; / sqrt(1e-4) = 0.01
    # -> 2,835,221 bit/s: the bound printed next to the GEO demo (PER 1e-4)
    assert mathis_bps(1448, 0.5004, 1e-4) == pytest.approx(2_835_220.7, rel=1e-7)


def test_mathis_delayed_ack_constant() -> None:
    # C = sqrt(3/4) = 0.8660254: 115,840 bit/s x 0.8660254 = 100,320.38; / 0.1 = 1,003,203.8
    got = mathis_bps(1448, 0.1, 1e-2, c=math.sqrt(0.75))
    assert got == pytest.approx(1_003_203.8, rel=1e-7)


def test_padhye_full_formula() -> None:
    # MSS 1448, RTT 0.1 s, p = 0.01, T0 = 1 s, b = 1:
    # RTT x sqrt(2bp/3) = 0.1 x sqrt(0.0066667) = 0.1 x 0.0816497 = 0.00816497
    # 3 x sqrt(3bp/8) = 3 x sqrt(0.00375) = 3 x 0.0612372 = 0.1837117 (< 1, so it is kept)
    # p x (1 + 32p^2) = 0.01 x 1.0032 = 0.010032
    # T0 term = 1 x 0.1837117 x 0.010032 = 0.00184300
    # denominator = 0.00816497 + 0.00184300 = 0.01000797 s -> 99.92044 packets/s
    # x 11,584 bit = 1,157,478 bit/s
    assert padhye_bps(1448, 0.1, 1e-2, rto_s=1.0) == pytest.approx(1_157_478.4, rel=1e-6)


def test_padhye_receiver_window_cap() -> None:
    # Wmax = 5 packets: 5 / 0.1 s = 50 packets/s < 99.92 -> 50 x 11,584 = 579,200 bit/s
    assert padhye_bps(1448, 0.1, 1e-2, rto_s=1.0, wmax_pkts=5) == pytest.approx(579_200.0)
    # Wmax = 20 packets allows 200 packets/s > 99.92: the loss term decides
    assert padhye_bps(1448, 0.1, 1e-2, rto_s=1.0, wmax_pkts=20) == pytest.approx(
        1_157_478.4, rel=1e-6
    )


def test_padhye_timeout_factor_saturates_at_one() -> None:
    # p = 0.5: 3 x sqrt(3 x 0.5 / 8) = 3 x 0.4330 = 1.299 -> min(1, .) = 1
    # MSS 1000 B, RTT 1 s, T0 1 s: RTT x sqrt(1/3) = 0.5773503; T0 term = 1 x 0.5 x (1 + 8) = 4.5
    # denominator 5.0773503 -> 0.1969531 packets/s x 8000 bit = 1,575.62 bit/s
    assert padhye_bps(1000, 1.0, 0.5, rto_s=1.0) == pytest.approx(1_575.625, rel=1e-6)


def test_padhye_delayed_acks() -> None:
    # b = 2, same path as above: RTT x sqrt(4p/3) = 0.1 x 0.1154701 = 0.01154701
    # 3 x sqrt(6p/8) = 3 x 0.0866025 = 0.2598076; x 0.010032 = 0.00260639
    # denominator 0.01415340 s -> 70.6544 packets/s x 11,584 = 818,461 bit/s
    assert padhye_bps(1448, 0.1, 1e-2, rto_s=1.0, b=2) == pytest.approx(818_460.8, rel=1e-6)


def test_cubic_response_function_on_a_geo_path() -> None:
    """RTT 0.5 s, p = 1e-3, MSS 1448 B, C = 0.4, beta = 0.7 (RFC 9438 §5.1):

    C(3 + beta) / (4(1 - beta)) = 0.4 x 3.7 / 1.2 = 1.2333333; fourth root 1.0538289
    RTT^0.75 = 0.5^0.75 = 0.5946036; p^0.75 = 10^-2.25 = 0.0056234133; ratio 105.73713
    concave window = 1.0538289 x 105.73713 = 111.42884 segments
    Reno-friendly window = sqrt(3 / (2p)) = sqrt(1500) = 38.729833 (smaller: not used)
    rate = 111.42884 x 1448 x 8 bit / 0.5 s = 111.42884 x 23,168 = 2,581,583 bit/s

    The issue's 2.48 Mbit/s for this path is what MSS 1460 B (no timestamp option) and
    "Mbit" = 2^20 bit give: 111.42884 x 1460 x 8 / 0.5 / 1,048,576 = 2.4824. With 1448-byte
    segments and 10^6 bit/Mbit it is 2.58 Mbit/s.
    """
    assert cubic_window_pkts(0.5, 1e-3) == pytest.approx(111.42884, rel=1e-6)
    assert cubic_bps(1448, 0.5, 1e-3) == pytest.approx(2_581_583, rel=1e-6)
    assert cubic_bps(1460, 0.5, 1e-3) / 2**20 == pytest.approx(2.4824, rel=1e-4)


def test_cubic_falls_back_to_its_reno_friendly_window_on_short_paths() -> None:
    # RTT 20 ms, p = 1e-2: concave 1.0538289 x (0.02 / 0.01)^0.75 = 1.0538289 x 1.6817928
    # = 1.7723 segments; Reno-friendly: alpha = 3 x 0.3 / 1.7 = 0.5294118, average window
    # sqrt(alpha x 1.7 / (2 x 0.3 x 0.01)) = sqrt(150) = 12.247449 -> 12.247449 x 11,584 bit
    # / 0.02 s = 7,093,722 bit/s, Mathis's rate with C = sqrt(3/2) for the same path.
    assert aimd_window_pkts(1e-2, 3 * 0.3 / 1.7, 0.7) == pytest.approx(12.247449, rel=1e-7)
    assert cubic_window_pkts(0.02, 1e-2) == pytest.approx(12.247449, rel=1e-7)
    assert cubic_bps(1448, 0.02, 1e-2) == pytest.approx(7_093_722.3, rel=1e-7)
    # Reno itself (alpha = 1, beta = 0.5): sqrt(1 x 1.5 / (2 x 0.5 x p)) = sqrt(1.5 / p)
    assert aimd_window_pkts(1e-2, 1.0, 0.5) == pytest.approx(12.247449, rel=1e-7)


def test_cubic_rate_is_capped_by_the_receiver_window() -> None:
    # 64 KB = 65,535 B / 1448 = 45.258978 segments < 111.43: 45.258978 x 11,584 / 0.5
    # = 1,048,560 bit/s
    assert cubic_bps(1448, 0.5, 1e-3, wmax_pkts=65535 / 1448) == pytest.approx(1_048_560)


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1])
def test_loss_probability_must_be_in_open_interval(p: float) -> None:
    with pytest.raises(ValueError, match="p must be in"):
        mathis_bps(1448, 0.1, p)
    with pytest.raises(ValueError, match="p must be in"):
        padhye_bps(1448, 0.1, p, rto_s=1.0)
    with pytest.raises(ValueError, match="p must be in"):
        cubic_bps(1448, 0.1, p)


def test_link_cap_and_wire_size() -> None:
    # 1448 B payload + 20 B IPv4 + 20 B TCP + 12 B timestamp option = 1500 B on the wire
    assert wire_bytes(1448) == 1500
    assert wire_bytes(1448, timestamps=False) == 1488
    # 4 Mbit/s x 1448 / 1500 = 3,861,333.3 bit/s of payload at best
    assert link_cap_bps(4e6, 1448, 1500) == pytest.approx(3_861_333.33, rel=1e-9)


def test_packet_loss_from_ber() -> None:
    assert packet_loss(1e-4, 0.0, 1500) == 1e-4
    # 1 - (1 - 1e-7)^12000 ~ 12000e-7 - (12000 x 11999 / 2) x 1e-14 = 1.2e-3 - 7.1994e-7
    assert packet_loss(0.0, 1e-7, 1500) == pytest.approx(1.19928e-3, rel=1e-5)
    # independent causes: 1 - (1 - 0.1)(1 - 0.1) = 0.19 with ber chosen so (1-ber)^8 = 0.9
    assert packet_loss(0.1, 1 - 0.9 ** (1 / 8), 1) == pytest.approx(0.19)


def test_flow_bounds_for_the_geo_scenario() -> None:
    forward: dict[str, Any] = {"rate_bps": 4_000_000, "delay_ns": 250_000_000, "per": 1e-4}
    forward["ber"] = 0.0
    normalized: dict[str, Any] = {
        "bottleneck": {
            "forward": forward,
            "reverse": {"rate_bps": 4_000_000, "delay_ns": 250_000_000, "per": 0.0, "ber": 0.0},
        },
        "access": {"rate_bps": 10**9, "delay_ns": 100_000},
        "flows": [
            {
                "access": None,
                "tcp": {"mss_bytes": 1448, "timestamps": True, "rwnd_bytes": 6 * 2**20},
            }
        ],
    }
    bounds = flow_bounds(normalized, 0)
    assert bounds.cubic_bps is None  # the flow names no algorithm: not a CUBIC flow
    assert bounds.base_rtt_s == pytest.approx(0.5004)  # 250 + 250 + 4 x 0.1 ms
    assert bounds.p == 1e-4
    assert bounds.mathis_bps == pytest.approx(2_835_220.7, rel=1e-7)
    assert bounds.cap_bps == pytest.approx(3_861_333.33, rel=1e-9)
    # Padhye with T0 = 0.5004 + 0.2 = 0.7004 s, b = 1, p = 1e-4:
    # RTT x sqrt(2p/3) = 0.5004 x 0.00816497 = 0.00408575
    # 3 x sqrt(3p/8) = 0.0183712; x p(1 + 32p^2) = 1.0000003e-4 -> 1.83712e-6; x T0 = 1.28672e-6
    # denominator 0.00408704 s -> 244.676 packets/s x 11,584 bit = 2,834,328 bit/s
    assert bounds.padhye_bps == pytest.approx(2_834_328, rel=2e-6)
    # As a CUBIC flow at p = 1e-3: 1.0538289 x 0.5004^0.75 (0.5949603) / 0.0056234133
    # = 111.49569 segments x 11,584 bit / 0.5004 s = 2,581,067 bit/s
    normalized["flows"][0]["cca"] = "cubic"
    forward["per"] = 1e-3
    assert flow_bounds(normalized, 0).cubic_bps == pytest.approx(2_581_067.4, rel=1e-6)
    forward["per"] = 0.0
    assert flow_bounds(normalized, 0).mathis_bps is None
    assert flow_bounds(normalized, 0).cubic_bps is None


def test_bounds_of_many_flows_resolve_the_path_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's result asks for every TCP flow's bounds; resolving the path (a skeleton of
    all the flows, through the core) once per flow made that quadratic: 10,000 flows took
    230 s beside a 3 s simulation. Each flow still gets its own path's RTT."""
    import tcplab.scenario.topology as topology

    calls: list[int] = []
    resolve = topology.path_info_of

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return resolve(*args, **kwargs)

    monkeypatch.setattr(topology, "path_info_of", counted)
    forward: dict[str, Any] = {"rate_bps": 4_000_000, "delay_ns": 250_000_000, "per": 1e-4}
    forward["ber"] = 0.0
    tcp = {"mss_bytes": 1448, "timestamps": True, "rwnd_bytes": 6 * 2**20}
    flows: list[dict[str, Any]] = [
        {"access": None, "tcp": tcp, "app": {"kind": "bulk"}} for _ in range(300)
    ]
    # flow 7 has its own access links: 5 ms each way at both ends
    flows[7] = {**flows[7], "access": {"rate_bps": 10**9, "delay_ns": 5_000_000}}
    normalized: dict[str, Any] = {
        "bottleneck": {
            "forward": forward,
            "reverse": {"rate_bps": 4_000_000, "delay_ns": 250_000_000, "per": 0.0, "ber": 0.0},
        },
        "access": {"rate_bps": 10**9, "delay_ns": 100_000},
        "flows": flows,
    }
    bounds = flows_bounds(normalized, range(300))
    assert len(calls) == 1
    assert bounds[0].base_rtt_s == pytest.approx(0.5004)  # 250 + 250 + 4 x 0.1 ms
    assert bounds[7].base_rtt_s == pytest.approx(0.520)  # 250 + 250 + 4 x 5 ms
    assert bounds[299].mathis_bps == pytest.approx(2_835_220.7, rel=1e-7)
    calls.clear()
    run = run_bounds(normalized)
    assert len(calls) == 1
    assert run is not None
    # every flow's Mathis rate summed (299 x 2.84 Mbit/s and flow 7's) is capped at the link
    assert run.mathis_bps == run.capacity_bps == pytest.approx(3_861_333.33, rel=1e-9)
