"""The scaling table of `make bench`: its points are what they say, and its figures obey
the physical bounds of the path (the speed itself is measured by `make bench`, not here)."""

from __future__ import annotations

from tcplab.tools.scaling import dumbbell, measure


def test_a_dumbbell_has_the_asked_flows_rate_and_length() -> None:
    scenario = dumbbell(2_500, "10Gbps", "5s")
    assert len(scenario["flows"]) == 2_500
    assert {f["cca"] for f in scenario["flows"]} == {"cubic"}
    assert scenario["bottleneck"]["forward"]["rate_bps"] == 10_000_000_000
    assert scenario["bottleneck"]["forward"]["delay_ns"] == 20_000_000
    assert scenario["duration_ns"] == 5_000_000_000


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
