"""The scaling table of `make bench`: its points are what they say, and its figures obey
the physical bounds of the path (the speed itself is measured by `make bench`, not here)."""

from __future__ import annotations

from tcplab.tools.scaling import ScalePoint, dumbbell, held_load, measure, scaling_targets


def test_a_dumbbell_has_the_asked_flows_rate_and_length() -> None:
    scenario = dumbbell(2_500, "10Gbps", "5s")
    assert len(scenario["flows"]) == 2_500
    assert {f["cca"] for f in scenario["flows"]} == {"cubic"}
    assert scenario["bottleneck"]["forward"]["rate_bps"] == 10_000_000_000
    assert scenario["bottleneck"]["forward"]["delay_ns"] == 20_000_000
    assert scenario["duration_ns"] == 5_000_000_000


def test_a_held_load_point_gives_each_flow_a_gigabit() -> None:
    scenario = held_load(3, "1s")
    assert scenario["interval_ns"] == 100_000_000
    assert len(scenario["flows"]) == 3
    assert scenario["bottleneck"]["forward"]["rate_bps"] == 3_000_000_000
    assert scenario["access"]["rate_bps"] == 3_000_000_000
    assert scenario["duration_ns"] == 1_000_000_000


def test_a_point_counts_what_the_link_can_carry() -> None:
    point = measure("flows", dumbbell(1, "4Mbps", "2s"))
    # 4 Mbit/s for 2 s carries at most 4e6 x 2 / 8 / 1500 = 666.7 full packets (1448 B of
    # payload in 1500 B on the wire); slow start from 10 segments fills it within 2 s, so
    # more than half of that arrives.
    assert 333 < point.delivered_pkts <= 666.7
    # Stepped hop by hop, a delivered data packet takes an event on each of its three links
    # (access, bottleneck, access), its ACK (at most one per segment) three more, and the
    # receiver's delayed-ACK timer and the sender's retransmission timer at most one each:
    # at most 8 a packet. The core's shortcuts (a packet passed on, handed over, handled at
    # its endpoint ahead of time) only take events away; some remain (the series samples).
    assert 0 < point.events <= 8 * point.delivered_pkts
    assert point.cpu_s > 0
    assert point.peak_rss_mib >= point.base_rss_mib > 0


def _point(axis: str, flows: int, rate: str, cpu_s: float, pkts: float) -> ScalePoint:
    return ScalePoint(axis, flows, rate, "60 s", "1000 ms", cpu_s, int(2 * pkts), pkts, 10, 5)


def test_the_scaling_targets_compare_cpu_per_delivered_packet() -> None:
    points = [
        _point("flows", 1, "1000 Mbit/s", 0.5, 5e6),  # 100 ns a packet
        _point("flows", 1_000, "1000 Mbit/s", 1.0, 5e6),  # 200 ns: twice as much
        _point("flows", 10_000, "1000 Mbit/s", 0.7, 5e6),  # 140 ns: 1.4 times
        _point("rate", 10, "100 Mbit/s", 0.1, 0.5e6),  # 200 ns
        _point("rate", 10, "10000 Mbit/s", 6.0, 50e6),  # 120 ns: 0.6 times
    ]
    targets = scaling_targets(points)
    assert [t.what for t in targets] == [
        "scaling target, 1,000 flows against one, CPU per delivered packet",
        "scaling target, 10,000 flows against one, CPU per delivered packet",
        "scaling target, 10000 Mbit/s against 100 Mbit/s, CPU per delivered packet",
    ]
    assert [round(t.measured, 6) for t in targets] == [2.0, 1.4, 0.6]
    assert [t.met for t in targets] == [False, True, True]
    assert targets[0].describe().endswith("2.00 x (target <= 1.50 x): missed")
    # the events per delivered packet: 2 per packet in these points
    assert points[0].events_per_pkt == 2
    # a table without its reference points states no target
    assert scaling_targets(points[1:3]) == []
