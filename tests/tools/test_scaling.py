"""The scaling table of `make bench`: its points are what they say, and its figures obey
the physical bounds of the path (the speed itself is measured by `make bench`, not here)."""

from __future__ import annotations

import pytest
from tcplab.tools.scaling import (
    ScalePoint,
    cost_splits,
    dumbbell,
    held_load,
    main,
    measure,
    scaling_targets,
)


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
    # Every delivered packet was sent at least once, and Linux's receiver acknowledges at
    # least every second full segment: at least 1.5 packets sent per delivered one, less a
    # few for the ACK of an odd last segment. At most, every segment was acknowledged on its
    # own, and the unacknowledged tail is at most the path's 2 BDP queue plus one BDP
    # (4 Mbit/s x 40 ms = 13.3 packets, so about 40) of the more than 333 delivered.
    assert 1.45 < point.sent_per_pkt < 2 * (1 + 40 / 333)
    assert point.cpu_s > 0
    assert point.peak_rss_mib >= point.base_rss_mib > 0


def _point(
    axis: str, flows: int, rate: str, cpu_s: float, pkts: float, events_per_pkt: float = 2
) -> ScalePoint:
    return ScalePoint(
        axis,
        flows,
        rate,
        "60 s",
        "1000 ms",
        cpu_s,
        int(events_per_pkt * pkts),
        pkts,
        10,
        5,
        sent_pkts=int(1.5 * pkts),
    )


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


def test_a_target_ratio_splits_into_events_per_packet_and_cpu_per_event() -> None:
    one = _point("flows", 1, "1000 Mbit/s", 0.5, 5e6, events_per_pkt=1)  # 100 ns an event
    many = ScalePoint(
        "flows",
        1_000,
        "1000 Mbit/s",
        "60 s",
        "1000 ms",
        cpu_s=1.5,
        events=int(2.5 * 5e6),
        delivered_pkts=5e6,
        peak_rss_mib=10,
        base_rss_mib=5,
        sent_pkts=int(1.8 * 5e6),
    )
    [split] = cost_splits([one, many])
    # 300 ns against 100 ns a delivered packet: 2.5 events against 1, of 120 ns against 100
    assert split.what == "1,000 flows against one"
    assert round(split.cost_ratio, 9) == 3.0
    assert round(split.events_ratio, 9) == 2.5
    assert round(split.per_event_ratio, 9) == 1.2
    # 1.8 packets sent per delivered one against 1.5
    assert round(split.sent_ratio, 9) == 1.2
    assert split.describe().startswith(
        "1,000 flows against one: 3.00x the CPU per delivered packet = 2.50x the events"
    )
    assert cost_splits([many]) == []


def test_the_table_alone_refuses_a_bad_duration_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--duration", "soon"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith('error: duration = "soon"')
    assert "allowed: ns, us, ms, s, min" in err
