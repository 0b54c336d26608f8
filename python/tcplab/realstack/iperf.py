"""iperf3 command lines for a planned flow, and the parts of iperf3's JSON the conversion
reads.

Each flow is one iperf3 pair: the server (`-s -1`) on the receiver host and the client on
the sender host, so data flows from the scenario's server side to its client side and the
client's JSON carries the sender's view (RTT, cwnd, retransmissions per interval) plus, with
`--get-server-output`, the receiver's (bytes delivered per interval). Reports come every
100 ms, iperf3's finest interval; the conversion sums them into the scenario's intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .plan import IPERF_PORT, FlowPlan

#: iperf3's reporting interval (its minimum), seconds.
REPORT_INTERVAL_S: Final = 0.1


def server_argv(flow: FlowPlan) -> list[str]:
    """One-off iperf3 server on the receiver host, bound to the receiver's address."""
    return [
        "iperf3",
        "-s",
        "-1",
        "--json",
        "-p",
        str(IPERF_PORT),
        "-B",
        flow.receiver_addr,
        "-i",
        str(REPORT_INTERVAL_S),
    ]


def client_argv(flow: FlowPlan) -> list[str]:
    """iperf3 client on the sender host: `-C cca`, `-t`, `-w`, or UDP (`-u -b -l`) for CBR."""
    argv = [
        "iperf3",
        "-c",
        flow.connect_addr,
        "-p",
        str(flow.connect_port),
        "--json",
        "--get-server-output",
        "-i",
        str(REPORT_INTERVAL_S),
    ]
    if flow.kind == "cbr":
        argv += ["-u", "-b", str(flow.cbr_rate_bps), "-l", str(flow.cbr_packet_bytes)]
        return [*argv, "-t", str(flow.run_s)]
    # `tcplab emulate` runs file downloads with `fileflow`: iperf3's own `-n` ends the test
    # when the last byte is written (the receiver stops counting with up to a send buffer
    # still on its way). Here a file would run like a bulk flow, whose conversion takes the
    # completion from the receiver's byte count (recordings made that way still convert).
    argv += ["-C", flow.cca, "-t", str(flow.run_s)]
    if flow.window_bytes is not None:
        argv += ["-w", str(flow.window_bytes)]
    return argv


@dataclass(frozen=True)
class Sample:
    """One iperf3 interval report of one side, times in ns since that side's test start."""

    start_ns: int
    end_ns: int
    bytes: int
    rtt_ns: int | None = None
    cwnd_bytes: int | None = None
    retransmits: int = 0
    packets: int = 0
    lost_packets: int = 0


def _ns(seconds: Any) -> int:
    return round(float(seconds) * 1e9)


def _stream(interval: Mapping[str, Any]) -> Mapping[str, Any]:
    streams = interval.get("streams") or []
    first: Mapping[str, Any] = streams[0] if streams else interval.get("sum", {})
    return first


def sender_samples(client: Mapping[str, Any]) -> list[Sample]:
    """The client's (sender's) intervals: bytes written, srtt, cwnd, retransmissions."""
    out = []
    for interval in client.get("intervals", []):
        s = _stream(interval)
        rtt_us = s.get("rtt")
        out.append(
            Sample(
                start_ns=_ns(s.get("start", 0)),
                end_ns=_ns(s.get("end", 0)),
                bytes=int(s.get("bytes", 0)),
                rtt_ns=int(rtt_us) * 1000 if rtt_us else None,
                cwnd_bytes=int(s["snd_cwnd"]) if "snd_cwnd" in s else None,
                retransmits=int(s.get("retransmits", 0) or 0),
                packets=int(s.get("packets", 0) or 0),
            )
        )
    return out


def receiver_json(client: Mapping[str, Any]) -> Mapping[str, Any]:
    """The server's own JSON inside the client's (`--get-server-output`)."""
    server = client.get("server_output_json")
    return server if isinstance(server, Mapping) else {}


def receiver_samples(client: Mapping[str, Any]) -> list[Sample]:
    """The server's (receiver's) intervals: bytes delivered (and UDP packets/lost)."""
    out = []
    for interval in receiver_json(client).get("intervals", []):
        s = interval.get("sum") or _stream(interval)
        out.append(
            Sample(
                start_ns=_ns(s.get("start", 0)),
                end_ns=_ns(s.get("end", 0)),
                bytes=int(s.get("bytes", 0)),
                packets=int(s.get("packets", 0) or 0),
                lost_packets=int(s.get("lost_packets", 0) or 0),
            )
        )
    return out


def error_of(client: Mapping[str, Any]) -> str | None:
    """iperf3's own error message, if it reported one."""
    error = client.get("error")
    return str(error) if error else None


def total_retransmits(client: Mapping[str, Any], samples: Sequence[Sample]) -> int:
    end = client.get("end", {}).get("sum_sent", {})
    if "retransmits" in end:
        return int(end["retransmits"])
    return sum(s.retransmits for s in samples)
