"""Reading packet captures: pcapng (either byte order, several sections and interfaces,
`if_tsresol` of any power of 10 or 2) and classic pcap (µs or ns), as tcplab writes them and
as tcpdump does. Only what the time-sequence view needs is decoded: IPv4 and TCP headers
(with their options) behind Ethernet, raw IP or Linux cooked-capture link layers.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final

from ..errors import ScenarioError

#: Link types decoded (LINKTYPE_*): the offset of the IP header in a frame.
_IP_OFFSET: Final = {1: 14, 101: 0, 228: 0, 113: 16}
_PCAP_MAGIC: Final = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}


@dataclass(frozen=True)
class Frame:
    """One captured frame: time (ns since the epoch of the capture), its link type, the bytes
    kept, its length on the wire and its direction at the capture point (pcapng `epb_flags`:
    1 inbound, 2 outbound, 0 unknown)."""

    t_ns: int
    linktype: int
    data: bytes
    orig_len: int
    direction: int = 0


@dataclass(frozen=True)
class Segment:
    """A TCP segment's header fields (IPv4)."""

    t_ns: int
    src: tuple[bytes, int]
    dst: tuple[bytes, int]
    seq: int
    ack: int
    flags: int
    window: int
    payload_bytes: int
    ip_id: int
    sack: tuple[tuple[int, int], ...]
    tsval: int | None
    tsecr: int | None
    wscale: int | None


class _Reader:
    def __init__(self, f: BinaryIO, path: Path) -> None:
        self.f = f
        self.path = path

    def read(self, n: int) -> bytes:
        b = self.f.read(n)
        if len(b) < n:
            raise EOFError
        return b

    def bad(self, why: str) -> ScenarioError:
        return ScenarioError(f"{self.path}: not a readable capture ({why})")


def _tsresol_ns(value: int) -> float:
    """ns per tick of `if_tsresol` (high bit: a power of 2, else of 10)."""
    base = 2.0 if value & 0x80 else 10.0
    return 1e9 / base ** (value & 0x7F)


def _options(body: bytes, start: int, order: str) -> Iterator[tuple[int, bytes]]:
    i = start
    while i + 4 <= len(body):
        code, length = struct.unpack_from(order + "HH", body, i)
        if code == 0:
            return
        yield code, body[i + 4 : i + 4 + length]
        i += 4 + (length + 3) // 4 * 4


def _pcapng(r: _Reader) -> Iterator[Frame]:
    order = "<"
    interfaces: list[tuple[int, float]] = []
    while True:
        try:
            head = r.read(8)
        except EOFError:
            return
        if head[:4] == b"\x0a\x0d\x0d\x0a":
            magic = r.read(4)
            order = "<" if magic == b"\x4d\x3c\x2b\x1a" else ">"
            length = struct.unpack(order + "I", head[4:])[0]
            r.read(length - 12)
            interfaces = []
            continue
        kind, length = struct.unpack(order + "II", head)
        if length < 12 or length % 4:
            raise r.bad(f"block length {length}")
        body = r.read(length - 8)[:-4]
        if kind == 1:  # interface description
            linktype = struct.unpack_from(order + "H", body, 0)[0]
            resol = 1_000.0  # default: µs
            for code, value in _options(body, 8, order):
                if code == 9 and value:
                    resol = _tsresol_ns(value[0])
            interfaces.append((linktype, resol))
        elif kind == 6:  # enhanced packet
            iface, hi, lo, cap, orig = struct.unpack_from(order + "IIIII", body, 0)
            if iface >= len(interfaces):
                raise r.bad(f"packet of undeclared interface {iface}")
            linktype, resol = interfaces[iface]
            direction = 0
            for code, value in _options(body, 20 + (cap + 3) // 4 * 4, order):
                if code == 2 and len(value) == 4:
                    direction = struct.unpack(order + "I", value)[0] & 3
            ticks = (hi << 32) | lo
            yield Frame(round(ticks * resol), linktype, body[20 : 20 + cap], orig, direction)
        elif kind == 3 and interfaces:  # simple packet
            orig = struct.unpack_from(order + "I", body, 0)[0]
            yield Frame(0, interfaces[0][0], body[4:], orig)


def _pcap(r: _Reader, order: str, unit_ns: int, head: bytes) -> Iterator[Frame]:
    linktype = struct.unpack_from(order + "I", head, 16)[0] & 0x0FFF_FFFF
    while True:
        try:
            rec = r.read(16)
        except EOFError:
            return
        sec, frac, cap, orig = struct.unpack(order + "IIII", rec)
        yield Frame(sec * 1_000_000_000 + frac * unit_ns, linktype, r.read(cap), orig)


def frames(path: str | os.PathLike[str]) -> Iterator[Frame]:
    """Every frame of a pcapng or pcap file, in file order."""
    p = Path(path)
    try:
        f = p.open("rb")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read ({exc.strerror})") from None
    with f:
        r = _Reader(f, p)
        try:
            head = r.read(24)
        except EOFError:
            raise r.bad("too short") from None
        try:
            if head[:4] == b"\x0a\x0d\x0d\x0a":
                f.seek(0)
                yield from _pcapng(r)
            elif head[:4] in _PCAP_MAGIC:
                order, unit = _PCAP_MAGIC[head[:4]]
                yield from _pcap(r, order, unit, head)
            else:
                raise r.bad("unknown file format; allowed: pcapng, pcap")
        except EOFError:
            raise r.bad("truncated") from None
        except struct.error as exc:
            raise r.bad(str(exc)) from None


def tcp_segment(frame: Frame) -> Segment | None:
    """The TCP header of an IPv4 frame (None for anything else or a frame cut too short)."""
    off = _IP_OFFSET.get(frame.linktype)
    d = frame.data
    if off is None or len(d) < off + 20:
        return None
    if frame.linktype == 1 and d[12:14] != b"\x08\x00":
        return None
    if frame.linktype == 113 and d[14:16] != b"\x08\x00":
        return None
    if d[off] >> 4 != 4 or d[off + 9] != 6:
        return None
    ihl = (d[off] & 0x0F) * 4
    total = struct.unpack_from("!H", d, off + 2)[0]
    ip_id = struct.unpack_from("!H", d, off + 4)[0]
    t = off + ihl
    if len(d) < t + 20:
        return None
    sport, dport, seq, ack, hl, flags, window = struct.unpack_from("!HHIIBBH", d, t)
    thl = (hl >> 4) * 4
    sack: list[tuple[int, int]] = []
    tsval = tsecr = wscale = None
    i, end = t + 20, min(t + thl, len(d))
    while i < end:
        kind = d[i]
        if kind == 0:
            break
        if kind == 1:
            i += 1
            continue
        if i + 1 >= end or d[i + 1] < 2:
            break
        length = d[i + 1]
        if kind == 8 and length == 10 and i + 10 <= end:
            tsval, tsecr = struct.unpack_from("!II", d, i + 2)
        elif kind == 5 and i + length <= end:
            for b in range(i + 2, i + length - 7, 8):
                sack.append(struct.unpack_from("!II", d, b))
        elif kind == 3 and length == 3 and i + 3 <= end:
            wscale = d[i + 2]
        i += length
    src = (bytes(d[off + 12 : off + 16]), sport)
    dst = (bytes(d[off + 16 : off + 20]), dport)
    return Segment(
        frame.t_ns,
        src,
        dst,
        seq,
        ack,
        flags,
        window,
        max(total - ihl - thl, 0),
        ip_id,
        tuple(sack),
        tsval,
        tsecr,
        wscale,
    )
