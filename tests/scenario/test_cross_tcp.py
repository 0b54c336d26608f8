"""`[[cross]]` with `kind = "tcp-flows"`: TCP downloads arriving as a Poisson process, run by
the core's own TCP, that back off on loss. The expected numbers come from the arrival law
and from a hand-worked timeline of one download, never from the core's formulas."""

from __future__ import annotations

from typing import Any

import pytest
from tcplab import ScenarioError, load_scenario, run
from tcplab.scenario.normalize import normalize
from test_cross import assert_refused_in_one_line

RATE_BPS = 10e6
# payload per wire byte of a full segment: MSS 1448 in a 1500-byte packet
PAYLOAD_CAPACITY_BPS = RATE_BPS * 1448 / 1500


def scenario(
    *cross: dict[str, Any], flows: list[dict[str, Any]] | None = None, seed: int = 1, **top: Any
) -> dict[str, Any]:
    return {
        "duration": "60s",
        "seed": seed,
        "bottleneck": {"rate": "10Mbps", "delay": "20ms", "queue": "100pkts"},
        # an idle flow under test: a 1 KB download at the start
        "flows": flows or [{"cca": "cubic", "app": "file", "size": "1KB"}],
        "cross": list(cross),
        **top,
    }


PERIOD: dict[str, Any] = {"dist": "exponential", "mean": "1s"}

TCP: dict[str, Any] = {
    "kind": "tcp-flows",
    "rate": "3Mbps",
    "size": {"dist": "lognormal", "mean": "50KB", "sigma": 1.0},
}


def test_a_tcp_flows_table_becomes_the_core_config_with_the_core_defaults() -> None:
    out = normalize(load_scenario(scenario(TCP), catalogue=()))
    assert out["cross"] == [
        {
            "kind": "tcp_flows",
            "segment": None,
            "reverse": False,
            "offered_bps": 3_000_000,
            "size": {"dist": "lognormal", "mean": 50_000.0, "sigma": 1.0},
            "cca": "cubic",
            "cca_params": {},
            "max_connections": 1000,
            "rtt_ns": None,
        }
    ]
    given = {**TCP, "cca": "vegas", "max_connections": 20, "rtt": "100ms", "direction": "reverse"}
    (cross,) = normalize(load_scenario(scenario(given), catalogue=()))["cross"]
    assert (cross["cca"], cross["max_connections"], cross["rtt_ns"], cross["reverse"]) == (
        "vegas",
        20,
        100_000_000,
        True,
    )


def test_alone_on_an_idle_link_it_delivers_its_offered_load_and_completes_its_arrivals() -> None:
    # 1 Mbit/s of 20 kB downloads on 10 Mbit/s (load 0.1) for 100 s: arrivals are Poisson
    # with rate 1e6 / (8 x 20e3) = 6.25/s, so N ~ Poisson(625), sd 25; with constant sizes
    # the delivered rate is N x 20 kB x 8 / 100 s, within 3 sd = 12 % of 1 Mbit/s.
    cross = {"kind": "tcp-flows", "rate": "1Mbps", "size": {"dist": "constant", "mean": "20KB"}}
    result = run(load_scenario(scenario(cross, duration="100s")))
    (c,) = result.cross
    assert c.tcp is not None
    assert abs(c.bursts - 625) <= 75, c.bursts
    assert c.bytes_offered == 20_000 * c.bursts
    assert c.tcp.goodput_bps == pytest.approx(1e6, rel=0.12)
    # every arrival was opened; all but the few still open at the end completed
    t = c.tcp
    assert (t.connections_started, t.connections_refused) == (c.bursts, 0)
    assert t.connections_completed + t.connections_open == t.connections_started
    assert t.connections_open <= 3
    assert t.connections_completed * 20_000 <= t.payload_bytes_delivered
    assert t.payload_bytes_delivered <= t.connections_started * 20_000
    # slots are reused: at load 0.1 a handful are ever open at once
    assert t.connections_peak <= 10
    # one download on the idle path (RTT 40.4 ms: 2 x 20 ms + 4 x 0.1 ms access; 1500 B
    # take 1.2 ms at 10 Mbit/s): SYN, SYN-ACK and the request reach the server at 1.5 RTT =
    # 60.6 ms; IW10 leaves back to back and arrives by 60.6 + 12 + 20.2 = 92.8 ms; the first
    # two ACKs reach the server at 102.2 and 103.4 ms and release the last 4 of the 14
    # segments (slow start: 2 per ACK), done serialising by about 106.8 ms and received at
    # about 127.0 ms. Overlapping downloads (load 0.1) only add queueing.
    assert t.completion_mean_ns is not None
    assert 126e6 <= t.completion_mean_ns <= 135e6, t.completion_mean_ns
    assert (t.cca, t.rtt_ns, t.retransmits) == ("cubic", 40_400_000, 0)
    # not a flow: the flows' numbers are the 1 KB download's alone
    assert len(result.flows) == 1 and result.flows[0].bytes_delivered == 1000


def test_against_a_bulk_flow_it_takes_its_load_and_backs_off_where_open_loop_traffic_does_not() -> (
    None
):
    size = TCP["size"]
    bulk = [{"cca": "cubic"}]
    tcp = run(load_scenario(scenario(TCP, flows=bulk)))
    opened = {"kind": "flows", "rate": "3Mbps", "peak_rate": "10Mbps", "size": size}
    open_loop = run(load_scenario(scenario(opened, flows=bulk)))
    (c,) = tcp.cross
    assert c.tcp is not None
    # the same seed and source index draw the same arrivals whatever the kind
    assert (c.bursts, c.bytes_offered) == (
        open_loop.cross[0].bursts,
        open_loop.cross[0].bytes_offered,
    )
    # lognormal sizes, sigma 1: E[S^2] = m^2 e^(sigma^2), N ~ 3e6 x 60 / (8 x 50e3) = 450
    # arrivals, so the offered bytes have a relative sd of sqrt(e / 450) = 7.8 %: within 3 sd
    offered_bps = c.bytes_offered * 8 / 60
    assert offered_bps == pytest.approx(3e6, rel=0.23)
    # it gets (nearly) what it offered: only the downloads open at the end are short
    assert c.tcp.goodput_bps >= 0.85 * offered_bps
    # the bulk flow gets the rest, and the two never exceed the link
    flow = tcp.flows[0]
    assert flow.goodput_bps + c.tcp.goodput_bps <= PAYLOAD_CAPACITY_BPS * 1.001
    assert flow.goodput_bps >= 0.9 * (PAYLOAD_CAPACITY_BPS - offered_bps)
    # open-loop bursts at 10 Mbit/s overflow the queue whatever the bulk flow does, and it
    # retransmits what they crowd out; TCP cross traffic backs off instead (measured at
    # seeds 1-4: 46-83 against 634-938 retransmissions in 60 s; 32 with no cross traffic)
    assert open_loop.flows[0].retransmits >= 5 * flow.retransmits, (
        open_loop.flows[0].retransmits,
        flow.retransmits,
    )


def test_arrivals_beyond_max_connections_are_refused_and_counted() -> None:
    # 8 Mbit/s of 200 kB downloads with one connection allowed: a download takes several
    # RTTs (about 0.3 s), arrivals come every 0.2 s on average, so many find it busy
    cross = {**TCP, "rate": "8Mbps", "size": {"dist": "constant", "mean": "200KB"}}
    (c,) = run(load_scenario(scenario({**cross, "max_connections": 1}, duration="20s"))).cross
    assert c.tcp is not None
    t = c.tcp
    assert t.connections_peak == 1
    assert t.connections_refused > 0
    assert t.connections_started + t.connections_refused == c.bursts
    assert t.connections_completed + t.connections_open == t.connections_started


def test_the_same_seed_gives_the_same_result_and_another_seed_another() -> None:
    a = run(load_scenario(scenario(TCP, flows=[{"cca": "cubic"}], duration="20s")))
    b = run(load_scenario(scenario(TCP, flows=[{"cca": "cubic"}], duration="20s")))
    c = run(load_scenario(scenario(TCP, flows=[{"cca": "cubic"}], duration="20s", seed=2)))
    keep = ("events", "flows", "links", "cross", "aggregate_goodput_bps")
    da, db, dc = (r.to_json_dict() for r in (a, b, c))
    assert all(da[k] == db[k] for k in keep)
    assert da["cross"] != dc["cross"]


@pytest.mark.parametrize(
    ("cross", "fragments"),
    [
        ({**TCP, "peak_rate": "5Mbps"}, ("cross[0]", "'peak_rate' does not apply", "tcp-flows")),
        ({**TCP, "packet_size": "1000B"}, ("cross[0]", "'packet_size' does not apply")),
        ({k: v for k, v in TCP.items() if k != "rate"}, ("cross[0]", "needs 'rate'")),
        ({**TCP, "max_connections": 0}, ("cross[0].max_connections", "1 to 10000")),
        ({**TCP, "max_connections": 10_001}, ("cross[0].max_connections", "1 to 10000")),
        ({**TCP, "cca": "nope"}, ("cross[0].cca", "unknown algorithm", "cubic")),
        ({**TCP, "cca_params": {"nope": 0.5}}, ("cross[0].cca_params.nope", "unknown parameter")),
        ({**TCP, "rtt": "10ms"}, ("cross[0].rtt", "at least 40ms")),
        ({"kind": "flows", "rate": "1Mbps", "size": TCP["size"]}, ("needs 'peak_rate'",)),
        ({**TCP, "cca": "reno", "kind": "on-off"}, ("cross[0]", "needs 'on'")),
        ({**TCP, "tcp": {"mss": 10}}, ("cross[0].tcp.mss", "64 to 65495")),
        ({**TCP, "tcp": {"sacks": True}}, ("cross[0].tcp", "sacks")),
        (
            {"kind": "on-off", "on": PERIOD, "off": PERIOD, "peak_rate": "1Mbps", "tcp": {}},
            ("cross[0]", "'tcp' does not apply"),
        ),
    ],
)
def test_bad_tcp_flows_tables_are_one_line_errors(
    cross: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    assert_refused_in_one_line(scenario(cross), fragments)


def test_an_ns2_agent_is_refused_by_the_core_in_one_line() -> None:
    # `newreno` exists only as ns-2's agent, which TCP cross traffic (Linux TCP) cannot run
    with pytest.raises(ScenarioError) as err:
        run(load_scenario(scenario({**TCP, "cca": "newreno"})))
    message = str(err.value)
    assert "\n" not in message and "cross[0].cca" in message and "ns-2 agent" in message
    assert "cubic" in message
    with pytest.raises(ScenarioError) as err:
        run(load_scenario(scenario({**TCP, "tcp": {"stack": "ns2"}})))
    message = str(err.value)
    assert "\n" not in message and "cross[0].tcp.stack" in message
    assert message.endswith("allowed: linux")


def test_a_tcp_table_sets_the_connections_options_and_only_then_is_written() -> None:
    # 1 MB downloads (691 segments of 1448 B) over a 500 ms base RTT on an idle 10 Mbit/s
    # link with a 1,000-packet queue (no loss). By hand, counting round trips from the
    # arrival: the handshake, then slow start from 10 segments. With window scaling off the
    # window stops at 65535 B (45 segments): 10, 20, 40, then 14 windows for the other 621
    # segments, 18 round trips = 9.0 s (a 45-segment window is sent in 54 ms, within a round
    # trip). With it (Linux's default) 10, 20, ..., 320 and the last 61: 8 round trips, 4.0 s,
    # plus the time the larger windows take to send (320 x 1.2 ms) and overlapping downloads.
    download = {
        **TCP,
        "rate": "800kbps",
        "size": {"dist": "lognormal", "mean": "1MB", "sigma": 0.0},
        "rtt": "500ms",
    }
    top: dict[str, Any] = {"duration": "200s", "seed": 3}
    capped = scenario({**download, "tcp": {"window_scaling": False}}, **top)
    capped["bottleneck"]["queue"] = "1000pkts"
    default = scenario(download, **top)
    default["bottleneck"]["queue"] = "1000pkts"
    (written,) = normalize(load_scenario(capped, catalogue=()))["cross"]
    assert written["tcp"]["window_scaling"] is False and written["tcp"]["rwnd_bytes"] == 65535
    assert "tcp" not in normalize(load_scenario(default, catalogue=()))["cross"][0]
    times_s = []
    for doc in (capped, default):
        (c,) = run(load_scenario(doc)).to_json_dict()["cross"]
        assert c["connections_completed"] >= 20 and c["retransmits"] == 0
        times_s.append(c["completion_mean_ns"] / 1e9)
    assert 9.0 <= times_s[0] <= 9.3
    assert 4.0 <= times_s[1] <= 5.0
