"""The simulator's pcapng captures read by Wireshark's own dissector (Debian's tshark, which
`make test` installs): every frame parses with correct checksums, and what Wireshark's TCP
analysis finds — retransmissions, SACK blocks, ACK round-trip times, the reassembled
stream, ECN marks — is what tcplab says happened.

Wireshark is the independent party here: nothing below re-derives a number with tcplab's
own code; the expected values are tcplab's results and event log, or figures worked out
from the scenario (the access links' delay and serialization between capture point and
host).
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import SCENARIOS
from tcplab import Trace, run
from tcplab.results.parse import RunResult
from tcplab.trace.events import read_events

TSHARK = shutil.which("tshark")
pytestmark = pytest.mark.skipif(
    TSHARK is None, reason="tshark is not installed (make test installs Debian's tshark)"
)

SENDER, RECEIVER = "bottleneck.sender-side.pcapng", "bottleneck.receiver-side.pcapng"
#: Wireshark verifies checksums only when asked to.
CHECKSUMS = [
    "-o",
    "tcp.check_checksum:TRUE",
    "-o",
    "ip.check_checksum:TRUE",
    "-o",
    "udp.check_checksum:TRUE",
]


def tshark_fields(path: Path, *fields: str, display: str | None = None) -> list[list[str]]:
    """One row per frame of `path` (matching `display`), the `fields` in order; a field
    absent from a frame is "", a flag present "1", several values comma-separated."""
    assert TSHARK is not None
    argv = [TSHARK, "-n", "-r", str(path), *CHECKSUMS, "-T", "fields", "-E", "separator=/t"]
    if display:
        argv += ["-Y", display]
    for f in fields:
        argv += ["-e", f]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True)
    return [line.split("\t") for line in out.stdout.splitlines()]


def traced(tmp: Path, scenario: Path, *overrides: str, **trace: Any) -> RunResult:
    """A run with captures (whole frames) and the event log in `tmp`."""
    result = run(
        scenario,
        overrides=list(overrides),
        trace=Trace(pcap=tmp, events=tmp / "events.parquet", snaplen_bytes=65_535, **trace),
    )
    assert result.trace is not None and len(result.trace.captures) == 2
    return result


@pytest.fixture(scope="module")
def geo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    """60 s of CUBIC on the GEO path at PER 1e-3: queue and error drops, SACK recoveries."""
    tmp = tmp_path_factory.mktemp("geo")
    return tmp, traced(tmp, SCENARIOS / "geo-sat.toml", "duration=60s", "bottleneck.per=1e-3")


#: Every kind of frame: Reno with ECN through a marking RED queue, a file download (its
#: request and FINs) without ECN, UDP datagrams.
MIXED_TOML = """\
name = "mixed-trace"
duration = "20s"
seed = 1
[bottleneck]
rate = "20Mbps"
delay = "25ms"
queue = "300pkts"
aqm = "red"
[bottleneck.red]
min_th = "20pkts"
max_th = "60pkts"
max_p = 0.1
w_q = 0.002
gentle = true
ecn = true
[[flows]]
cca = "reno"
count = 2
[flows.tcp]
ecn = true
[[flows]]
cca = "cubic"
app = "file"
size = "3MB"
[[flows]]
app = "cbr"
rate = "1Mbps"
packet_size = "1000B"
"""


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, RunResult]:
    tmp = tmp_path_factory.mktemp("mixed")
    scenario = tmp / "mixed.toml"
    scenario.write_text(MIXED_TOML)
    return tmp, traced(tmp, scenario)


# ------------------------------------------------------------------- parsing and checksums


@pytest.mark.parametrize("which", ["geo", "mixed"])
@pytest.mark.parametrize("side", [SENDER, RECEIVER])
def test_wireshark_parses_every_frame_and_every_checksum_is_correct(
    which: str, side: str, request: pytest.FixtureRequest
) -> None:
    tmp, result = request.getfixturevalue(which)
    rows = tshark_fields(
        tmp / side,
        "frame.protocols",
        "ip.checksum.status",
        "tcp.checksum.status",
        "udp.checksum.status",
        "_ws.malformed",
        "_ws.expert.severity",
        "frame.cap_len",
        "frame.len",
    )
    assert result.trace is not None
    (capture,) = [c for c in result.trace.captures if c.path.name == side]
    assert len(rows) == capture.packets > 1000
    for protocols, ip_ok, tcp_ok, udp_ok, malformed, severity, cap, wire in rows:
        # a payload, zeros, is undissected "data"
        assert protocols.removesuffix(":data") in ("eth:ethertype:ip:tcp", "eth:ethertype:ip:udp")
        assert ip_ok == "1"  # 1: good (0 bad, 2 unverified)
        assert (tcp_ok or udp_ok) == "1"
        assert malformed == ""
        # the most severe expert note: warnings are TCP analysis (out-of-order, lost
        # segment), never an error
        assert not severity or max(int(s) for s in severity.split(",")) < 0x800000
        assert cap == wire


def test_frames_cut_at_the_snap_length_keep_their_length_on_the_wire(tmp_path: Path) -> None:
    run(
        SCENARIOS / "geo-sat.toml",
        overrides=["duration=5s"],
        trace=Trace(pcap=tmp_path, snaplen_bytes=96),
    )
    rows = tshark_fields(tmp_path / SENDER, "frame.cap_len", "frame.len", "ip.len", "tcp.len")
    data = [r for r in rows if r[3] != "0"]
    assert data and all(r[0] == "96" and r[1] == "1514" and r[2] == "1500" for r in data)
    assert {r[3] for r in data} == {"1448"}


# ------------------------------------------------------------------- retransmissions


def test_wireshark_counts_tcplabs_retransmissions_on_a_path_of_isolated_losses(
    tmp_path: Path,
) -> None:
    # One loss per recovery (random PER 1e-3, a receive window too small to fill the
    # queue) and RFC 6675's third-duplicate-ACK retransmission (RACK off): each
    # retransmission follows Wireshark's "fast retransmission" rule (two or more duplicate
    # ACKs for its sequence number, less than 20 ms before it).
    result = traced(
        tmp_path,
        SCENARIOS / "terrestrial-40ms.toml",
        "bottleneck.per=1e-3",
        "bottleneck.queue=4bdp",
        "flows.0.tcp.rwnd=64KB",
        "flows.0.tcp.rack=false",
        "flows.0.tcp.tlp=false",
    )
    (flow,) = result.flows
    assert result.bottleneck.queue_drops == 0 and flow.rto_count == 0
    assert flow.retransmits == flow.fast_recoveries == 40, "isolated losses"
    rows = tshark_fields(
        tmp_path / SENDER,
        "tcp.analysis.retransmission",
        "tcp.analysis.fast_retransmission",
        "tcp.analysis.out_of_order",
    )
    assert sum(1 for r in rows if r[0] or r[1]) == flow.retransmits
    assert sum(1 for r in rows if r[1]) == flow.retransmits
    assert not any(r[2] for r in rows)


def test_every_segment_wireshark_flags_at_the_sender_side_is_one_tcplab_retransmitted(
    geo: tuple[Path, RunResult],
) -> None:
    # Linux's default RACK retransmits while new data still flows. Wireshark then labels a
    # retransmission "out-of-order" when it comes less than the handshake's RTT after the
    # highest segment (packet-tcp.c, tcp_analyze_sequence_number); links never reorder, so
    # at the sender side that label, too, means a retransmission.
    tmp, result = geo
    rows = tshark_fields(
        tmp / SENDER,
        "tcp.seq",
        "tcp.analysis.retransmission",
        "tcp.analysis.fast_retransmission",
        "tcp.analysis.spurious_retransmission",
        "tcp.analysis.out_of_order",
        display="ip.src == 10.0.0.1 && tcp.len > 0",
    )
    flagged = Counter(int(r[0]) - 1 for r in rows if any(r[1:]))  # relative seq starts at 1
    events, _, _ = read_events(tmp / "events.parquet")
    resent = events[events["event"] == "retransmission"]
    logged = Counter(int(s) for s in resent["seq_bytes"])
    (flow,) = result.flows
    assert sum(flagged.values()) == flow.retransmits == len(resent) > 100
    assert flagged == logged


# ------------------------------------------------------------------- RTT and SACK


def test_wireshark_ack_rtt_at_the_sender_side_is_tcplabs_rtt_less_the_access_links(
    geo: tuple[Path, RunResult],
) -> None:
    # Between the sender host and the capture point: the access link, 0.1 ms each way, with
    # a 1500 B segment serialized at 1 Gbit/s (12 us) and a 52 B ACK (0.416 us).
    offset_s = 2 * 0.1e-3 + 1500 * 8 / 1e9 + 52 * 8 / 1e9
    tmp, result = geo
    rows = tshark_fields(
        tmp / SENDER,
        "frame.number",
        "ip.src",
        "tcp.seq",
        "tcp.len",
        "tcp.ack",
        "tcp.analysis.ack_rtt",
        "tcp.analysis.acks_frame",
        "tcp.analysis.retransmission",
        "tcp.analysis.out_of_order",
    )
    frames = {int(r[0]): r for r in rows}
    resent = [
        (int(r[2]), int(r[2]) + int(r[3])) for r in rows if r[1] == "10.0.0.1" and (r[7] or r[8])
    ]
    samples, acked = [], 1
    for r in rows:
        if r[1] != "10.128.0.1":
            continue
        ack = int(r[4])
        # Karn's rule, as Linux applies it: no sample from an ACK covering retransmitted data
        if (
            r[5]
            and int(frames[int(r[6])][3]) > 0
            and not any(a < ack and b > acked for a, b in resent)
        ):
            samples.append(float(r[5]))
        acked = max(acked, ack)
    rtt = result.flows[0].rtt
    assert rtt.min_ns is not None and rtt.max_ns is not None and len(samples) > 5000
    # The smallest: the same ACK of the same segment on both sides, to the nanosecond.
    assert min(samples) + offset_s == pytest.approx(rtt.min_ns / 1e9, abs=1e-9)
    # Wireshark times an ACK from the newest segment it covers, Linux from the oldest.
    assert max(samples) + offset_s <= rtt.max_ns / 1e9


def test_sack_blocks_report_data_the_receiver_had_in_rfc_2018_order(
    geo: tuple[Path, RunResult],
) -> None:
    # At the receiver side an ACK leaves after the data it reports arrived: every SACK block
    # Wireshark decodes covers received bytes only, lies above the cumulative ACK (or is
    # a D-SACK, RFC 2883: the first block, of data received twice), and the first block
    # holds the segment that triggered the ACK unless that segment advanced the cumulative
    # ACK (RFC 2018 §4).
    tmp, _ = geo
    rows = tshark_fields(
        tmp / RECEIVER,
        "ip.src",
        "tcp.seq",
        "tcp.len",
        "tcp.ack",
        "tcp.options.sack_le",
        "tcp.options.sack_re",
    )
    received: list[tuple[int, int]] = []
    last = (0, 0)
    checked, prior_ack = 0, 0
    for src, seq, length, ack, les, res in rows:
        if src == "10.0.0.1":
            if int(length):
                last = (int(seq), int(seq) + int(length))
                received.append(last)
            continue
        advanced, prior_ack = int(ack) > prior_ack, max(prior_ack, int(ack))
        if not les:
            continue
        blocks = list(zip(map(int, les.split(",")), map(int, res.split(",")), strict=True))
        for i, (le, re) in enumerate(blocks):
            assert le < re
            assert _covered(le, re, received), (le, re)
            assert re > int(ack) or i == 0, "only the first block may be a D-SACK"
        first = blocks[0]
        if not advanced:
            assert (first[0] <= last[0] and last[1] <= first[1]) or first[1] <= int(ack)
            checked += 1
    assert checked > 1000


def _covered(le: int, re: int, segments: list[tuple[int, int]]) -> bool:
    """[le, re) lies within the union of `segments`."""
    at = le
    for a, b in sorted(segments):
        if a <= at < b:
            at = b
        if at >= re:
            return True
    return at >= re


# ------------------------------------------------------------------- reassembly, ECN


def _follow_bytes(path: Path, receivers: Sequence[str]) -> dict[str, tuple[int, int]]:
    """Bytes Wireshark reassembles in each direction of the TCP connection of each receiver
    address in `receivers` (first: the side that sent the connection's first frame). One
    tshark pass finds the connections, one more follows them all."""
    assert TSHARK is not None
    streams: dict[str, set[str]] = {r: set() for r in receivers}
    for stream, src, dst in tshark_fields(path, "tcp.stream", "ip.src", "ip.dst", display="tcp"):
        for end in {src, dst} & streams.keys():
            streams[end].add(stream)
    assert all(len(s) == 1 for s in streams.values()), streams
    argv = [TSHARK, "-n", "-r", str(path), "-q"]
    for (stream,) in streams.values():
        argv += ["-z", f"follow,tcp,raw,{stream}"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=True).stdout
    counted = _follow_counts(out)
    return {r: counted[int(stream)] for r, (stream,) in streams.items()}


def _follow_counts(text: str) -> dict[int, tuple[int, int]]:
    """Bytes per direction of each block of tshark's `-z follow,tcp,raw` output, by stream
    number (tshark prints the blocks in its own order, each between two rules of `=`)."""
    counts: dict[int, tuple[int, int]] = {}
    stream: int | None = None
    inside = False
    for line in text.splitlines():
        if line.startswith("====="):
            inside = not inside
            stream = None
            continue
        if not inside or not line or line.startswith(("Follow:", "Node ")):
            continue
        if line.startswith("Filter: tcp.stream eq "):
            stream = int(line.rsplit(" ", 1)[1])
            counts[stream] = (0, 0)
            continue
        assert stream is not None, line
        first, second = counts[stream]
        if line.startswith("\t"):
            counts[stream] = (first, second + len(line.strip()) // 2)
        else:
            counts[stream] = (first + len(line) // 2, second)
    return counts


def test_wireshark_reassembles_exactly_the_bytes_tcplab_delivered(
    geo: tuple[Path, RunResult], mixed: tuple[Path, RunResult]
) -> None:
    # A flow's receiver is 10.128.0.N for flow N - 1 (tcplab's addressing, README).
    tmp, result = geo
    # The first frame is the bulk sender's SYN: it opens, like iperf3's client.
    followed = _follow_bytes(tmp / RECEIVER, ["10.128.0.1"])
    assert followed == {"10.128.0.1": (result.flows[0].bytes_delivered, 0)}
    tmp, result = mixed
    followed = _follow_bytes(tmp / RECEIVER, [f"10.128.0.{f.id + 1}" for f in result.tcp_flows])
    for flow in result.tcp_flows:
        first, second = followed[f"10.128.0.{flow.id + 1}"]
        if flow.app == "file":  # the client opens and asks with a 100-byte request
            assert (first, second) == (100, flow.bytes_delivered)
            assert flow.bytes_delivered == 3_000_000
        else:
            assert (first, second) == (flow.bytes_delivered, 0)


def test_ce_marks_and_ecn_flags_are_where_the_simulation_put_them(
    mixed: tuple[Path, RunResult],
) -> None:
    tmp, result = mixed
    rows = tshark_fields(
        tmp / RECEIVER,
        "ip.src",
        "ip.dsfield.ecn",
        "tcp.flags.ece",
        "tcp.flags.cwr",
        "tcp.flags.syn",
    )
    ce = sum(1 for r in rows if r[1] == "3")
    # The receiver side sees every packet that left the RED queue: its marks, all of them
    # (no random loss after the queue).
    assert ce == result.bottleneck.ecn_marks > 0
    assert any(r[2] == "1" for r in rows if r[0].startswith("10.128."))  # ECE in ACKs
    assert any(r[3] == "1" for r in rows if r[0].startswith("10.0."))  # CWR in data
    # RFC 3168 §6.1.1: ECN-setup SYN (ECE+CWR) from the ECN flows' openers.
    syns = [r for r in rows if r[4] == "1" and r[0] == "10.0.0.1"]
    assert syns and all(r[2] == r[3] == "1" for r in syns)
