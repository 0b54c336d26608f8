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
    # Each delivered data packet crossed three links (access, bottleneck, access) in one
    # event (the sender's interface passes it on to the bottleneck at once, which hands it
    # to the receiver's access link as it leaves), and at least one ACK per two of them
    # crossed three more in one event: at least 1.5 events a packet.
    assert point.events >= 1.5 * point.delivered_pkts
    assert point.cpu_s > 0
    assert point.peak_rss_mib >= point.base_rss_mib > 0
