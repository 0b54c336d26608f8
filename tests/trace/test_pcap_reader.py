"""The capture reader on files built byte by byte here (pcapng block layout of
draft-ietf-opsawg-pcapng, classic pcap's record header, RFC 791/793/7323/2018 headers): every
field read back as written, and damaged files refused in one line."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from tcplab.errors import ScenarioError
from tcplab.trace import tseq
from tcplab.trace.pcapng import frames, tcp_segment

SRC, DST = bytes([10, 0, 0, 2]), bytes([10, 128, 0, 2])


def ipv4_tcp(seq: int, ack: int, payload: int, options: bytes = b"", flags: int = 0x10) -> bytes:
    """An IPv4 packet (no IP options) holding a TCP segment with `options` (padded)."""
    options += b"\x00" * (-len(options) % 4)
    thl = 20 + len(options)
    total = 20 + thl + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 7, 0, 64, 6, 0, SRC, DST)
    tcp = struct.pack("!HHIIBBHHH", 5001, 80, seq, ack, (thl // 4) << 4, flags, 1000, 0, 0)
    return ip + tcp + options + b"\xab" * payload


def option_block(code: int, value: bytes, order: str) -> bytes:
    return struct.pack(order + "HH", code, len(value)) + value + b"\x00" * (-len(value) % 4)


def block(kind: int, body: bytes, order: str) -> bytes:
    length = 12 + len(body)
    return struct.pack(order + "II", kind, length) + body + struct.pack(order + "I", length)


def pcapng(packets: list[tuple[int, bytes, bytes]], order: str = "<", tsresol: int = 9) -> bytes:
    """Section header, one raw-IP interface (link type 101) with `if_tsresol`, and an enhanced
    packet block per (time in ticks, data, options)."""
    shb = block(0x0A0D0D0A, struct.pack(order + "IHHq", 0x1A2B3C4D, 1, 0, -1), order)
    idb_opts = option_block(9, bytes([tsresol]), order) + struct.pack(order + "HH", 0, 0)
    idb = block(1, struct.pack(order + "HHI", 101, 0, 0) + idb_opts, order)
    out = shb + idb
    for ticks, data, opts in packets:
        head = struct.pack(order + "IIIII", 0, ticks >> 32, ticks & 0xFFFFFFFF, len(data), 1500)
        out += block(6, head + data + b"\x00" * (-len(data) % 4) + opts, order)
    return out


SACK = bytes([1, 1, 5, 18]) + struct.pack("!IIII", 3000, 4000, 6000, 7000)
TS = bytes([1, 1, 8, 10]) + struct.pack("!II", 123456, 654321)
WSCALE = bytes([1, 3, 3, 7])


def test_every_field_is_read_back_as_written(tmp_path: Path) -> None:
    flags_out = option_block(2, struct.pack("<I", 2), "<")  # epb_flags: outbound
    comment_then_flags = option_block(1, b"hello", "<") + option_block(2, struct.pack("<I", 1), "<")
    packets = [
        (5_000_000_123, ipv4_tcp(1, 0, 0, WSCALE, flags=0x02), b""),
        (6_000_000_000, ipv4_tcp(1001, 2000, 1448, TS), flags_out),
        (2**33 + 5, ipv4_tcp(2000, 3000, 0, SACK), comment_then_flags),
    ]
    path = tmp_path / "x.pcapng"
    path.write_bytes(pcapng(packets))
    got = list(frames(path))
    assert [(f.t_ns, f.linktype, f.orig_len, f.direction) for f in got] == [
        (5_000_000_123, 101, 1500, 0),
        (6_000_000_000, 101, 1500, 2),
        (2**33 + 5, 101, 1500, 1),
    ]
    syn, data, sack = (tcp_segment(f) for f in got)
    assert syn is not None and data is not None and sack is not None
    assert (syn.flags, syn.wscale, syn.seq, syn.payload_bytes) == (0x02, 7, 1, 0)
    assert (data.src, data.dst) == ((SRC, 5001), (DST, 80))
    assert (data.seq, data.ack, data.payload_bytes, data.window, data.ip_id) == (
        1001,
        2000,
        1448,
        1000,
        7,
    )
    assert (data.tsval, data.tsecr, data.sack) == (123456, 654321, ())
    assert sack.sack == ((3000, 4000), (6000, 7000)) and sack.tsval is None


def test_big_endian_and_microsecond_resolution(tmp_path: Path) -> None:
    path = tmp_path / "be.pcapng"
    path.write_bytes(pcapng([(1_500_000, ipv4_tcp(9, 0, 100), b"")], order=">", tsresol=6))
    (frame,) = frames(path)
    assert frame.t_ns == 1_500_000_000  # 1.5 s in µs ticks
    seg = tcp_segment(frame)
    assert seg is not None and (seg.seq, seg.payload_bytes) == (9, 100)


def test_classic_pcap_in_nanoseconds(tmp_path: Path) -> None:
    data = ipv4_tcp(77, 0, 10)
    head = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 101)
    rec = struct.pack("<IIII", 3, 250, len(data), len(data)) + data
    path = tmp_path / "x.pcap"
    path.write_bytes(head + rec + rec)
    got = list(frames(path))
    assert [f.t_ns for f in got] == [3_000_000_250] * 2
    seg = tcp_segment(got[0])
    assert seg is not None and seg.seq == 77


def test_damaged_captures_are_refused_in_one_line(tmp_path: Path) -> None:
    packets = [(i * 1000, ipv4_tcp(i * 100, 0, 100, TS), b"") for i in range(20)]
    good = pcapng(packets)
    rng = random.Random(5)
    cases = [b"", b"\x00" * 23, b"not a capture at all, just text"]
    cases += [good[:n] for n in range(24, len(good), 37)]
    for _ in range(200):
        bad = bytearray(good)
        for _ in range(rng.randint(1, 8)):
            bad[rng.randrange(len(bad))] = rng.randrange(256)
        cases.append(bytes(bad))
    path = tmp_path / "bad.pcapng"
    refused = 0
    for case in cases:
        path.write_bytes(case)
        try:
            for f in frames(path):
                tcp_segment(f)
        except ScenarioError as exc:
            refused += 1
            assert "\n" not in str(exc) and str(path) in str(exc)
    # The short, textual and cut files at least (a cut at a block boundary is a whole file).
    assert refused >= 3 + 10


def test_a_file_that_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="cannot read"):
        list(frames(tmp_path / "missing.pcapng"))


def _reply(seq: int, ack: int, payload: int, flags: int = 0x10) -> bytes:
    """`ipv4_tcp` in the other direction (receiver to sender)."""
    pkt = bytearray(ipv4_tcp(seq, ack, payload, flags=flags))
    pkt[12:16], pkt[16:20] = DST, SRC
    pkt[20:22], pkt[22:24] = struct.pack("!H", 80), struct.pack("!H", 5001)
    return bytes(pkt)


def test_the_time_sequence_view_reads_a_capture_longer_than_what_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A handshake (ISN 999), 30 segments of 100 bytes every ms, each ACKed 10 ms later, and
    # segment 20 (stream offset 2,000) sent again at 40 ms.
    ms = 1_000_000
    packets = [(0, ipv4_tcp(999, 0, 0, flags=0x02), b""), (10 * ms, _reply(5, 1000, 0, 0x12), b"")]
    packets.append((10 * ms + 1, ipv4_tcp(1000, 6, 0), b""))
    for i in range(30):
        packets.append((11 * ms + i * ms, ipv4_tcp(1000 + 100 * i, 6, 100), b""))
    packets.append((40 * ms + 500, ipv4_tcp(1000 + 2000, 6, 100), b""))
    packets += [(21 * ms + i * ms, _reply(6, 1100 + 100 * i, 0), b"") for i in range(30)]
    packets.sort(key=lambda p: p[0])
    path = tmp_path / "c.pcapng"
    path.write_bytes(pcapng(packets))
    whole = tseq.time_sequence(path, None, 0, (0, 100 * ms))
    monkeypatch.setattr(tseq, "_HOLD_SEGMENTS", 3)  # the first pass outgrows what it keeps
    again = tseq.time_sequence(path, None, 0, (None, None), rtt_s=0.01)
    assert whole.handshake_rtt_s == pytest.approx(0.010000001)  # SYN to the third packet
    assert len(whole.data) == 31 and whole.retransmitted == [(0.0400005, 2000, 100)]
    assert whole.acks[0] == (0.010, 0) and whole.acks[-1] == (0.050, 3000)  # SYN-ACK, last
    # The default window: 20 round trips from one before segment 20 was first sent (31 ms).
    assert again.window_s == pytest.approx((0.021, 0.221))
    assert again.retransmitted == whole.retransmitted
    assert again.data == [d for d in whole.data if d[0] >= 0.021]
