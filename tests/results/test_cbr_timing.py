"""A CBR source sends at its configured rate from its start: datagram n (n = 1, 2, ...) leaves
one period after the one before, the first one period after the start, so no window from the
start carries more than rate x length."""

from __future__ import annotations

import tcplab


def test_cbr_sends_the_hand_counted_datagrams_in_one_second() -> None:
    # 250 kbit/s of 1200-byte payloads: one datagram per 9600 bit / 250 kbit/s = 38.4 ms.
    # By 1 s: n x 38.4 ms <= 1000 ms for n = 1..26 (26 x 38.4 = 998.4 ms), so 26 datagrams,
    # 31,200 bytes. Each takes 1 ms of propagation plus 1228 B x 8 / 10 Mbit/s = 0.98 ms of
    # serialization: the 26th (998.4 ms) arrives after the end, 25 arrive: 30,000 bytes,
    # 240 kbit/s over the 1 s run (the first datagram at the start made it 27 and 26).
    result = tcplab.run(
        {
            "duration": "1s",
            "interval": "1s",
            "bottleneck": {"rate": "10Mbps", "delay": "1ms", "queue": "1bdp"},
            "flows": [{"app": "cbr", "rate": "250kbps"}],
        }
    )
    flow = result.flows[0]
    assert flow.cbr is not None
    assert (flow.cbr.packets_sent, flow.bytes_sent) == (26, 31_200)
    assert (flow.cbr.packets_received, flow.bytes_delivered) == (25, 30_000)
    assert flow.goodput_bps == 240_000.0
    assert flow.goodput_bps <= 250_000
