"""The capture reader on files built byte by byte here (pcapng block layout of
draft-ietf-opsawg-pcapng, classic pcap's record header, RFC 791/793/7323/2018 headers): every
field read back as written, and damaged files refused in one line."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from tcplab.errors import ScenarioError
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
