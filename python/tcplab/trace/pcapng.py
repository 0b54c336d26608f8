"""Reading packet captures: pcapng (either byte order, several sections and interfaces,
`if_tsresol` of any power of 10 or 2) and classic pcap (µs or ns), as tcplab writes them and
as tcpdump does. Only what the time-sequence view needs is decoded: IPv4 and TCP headers
(with their options) behind Ethernet, raw IP or Linux cooked-capture link layers.
"""

from __future__ import annotations

import mmap
import os
import struct
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, NamedTuple

from ..errors import ScenarioError

#: Link types decoded (LINKTYPE_*): the offset of the IP header in a frame.
_IP_OFFSET: Final = {1: 14, 101: 0, 228: 0, 113: 16}
_PCAP_MAGIC: Final = {
    b"\xd4\xc3\xb2\xa1": ("<", 1_000),
    b"\xa1\xb2\xc3\xd4": (">", 1_000),
    b"\x4d\x3c\xb2\xa1": ("<", 1),
    b"\xa1\xb2\x3c\x4d": (">", 1),
}


#: IPv4 header: version/IHL, total length, identification, protocol, addresses.
_IP4: Final = struct.Struct("!BxHH3xB2x4s4s")
#: TCP header up to the window.
_TCP: Final = struct.Struct("!HHIIBBH")
_TWO_WORDS: Final = struct.Struct("!II")


class Frame(NamedTuple):
    """One captured frame: time (ns since the epoch of the capture), its link type, the bytes
    kept, its length on the wire and its direction at the capture point (pcapng `epb_flags`:
    1 inbound, 2 outbound, 0 unknown)."""

    t_ns: int
    linktype: int
    data: bytes
    orig_len: int
    direction: int = 0


class Segment(NamedTuple):
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


def _tsresol_ns(value: int) -> float:
    """ns per tick of `if_tsresol` (high bit: a power of 2, else of 10)."""
    base = 2.0 if value & 0x80 else 10.0
    return 1e9 / base ** (value & 0x7F)


def _options(buf: mmap.mmap, start: int, stop: int, order: str) -> Iterator[tuple[int, bytes]]:
    i = start
    while i + 4 <= stop:
        code, length = struct.unpack_from(order + "HH", buf, i)
        if code == 0:
            return
        yield code, bytes(buf[i + 4 : min(i + 4 + length, stop)])
        i += 4 + (length + 3) // 4 * 4


class _Truncated(Exception):
    pass


def _pcapng(buf: mmap.mmap, bad: Callable[[str], ScenarioError]) -> Iterator[Frame]:
    # The file is mapped, not read block by block: a frame costs a few unpacks and one copy
    # of its bytes.
    order = "<"
    interfaces: list[tuple[int, float]] = []
    size = len(buf)
    i = 0
    # Fewer bytes than a block header after the last block end the file, as a capture still
    # being written leaves it.
    while i + 8 <= size:
        if buf[i : i + 4] == b"\x0a\x0d\x0d\x0a":
            if i + 12 > size:
                raise _Truncated
            order = "<" if buf[i + 8 : i + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            length = struct.unpack_from(order + "I", buf, i + 4)[0]
            if length < 28 or length % 4:
                raise bad(f"block length {length}")
            if i + length > size:
                raise _Truncated
            i += length
            interfaces = []
            continue
        kind, length = struct.unpack_from(order + "II", buf, i)
        if length < 12 or length % 4:
            raise bad(f"block length {length}")
        if i + length > size:
            raise _Truncated
        body, stop = i + 8, i + length - 4
        if kind == 6:  # enhanced packet
            if body + 20 > stop:
                raise _Truncated
            iface, hi, lo, cap, orig = struct.unpack_from(order + "IIIII", buf, body)
            if iface >= len(interfaces):
                raise bad(f"packet of undeclared interface {iface}")
            linktype, resol = interfaces[iface]
            data_at = body + 20
            if data_at + cap > stop:
                raise _Truncated
            direction = 0
            opts = data_at + (cap + 3) // 4 * 4
            if opts + 4 <= stop:
                code, olen = struct.unpack_from(order + "HH", buf, opts)
                if code == 2 and olen == 4 and opts + 8 <= stop:  # epb_flags alone, as usual
                    direction = struct.unpack_from(order + "I", buf, opts + 4)[0] & 3
                else:
                    for code, value in _options(buf, opts, stop, order):
                        if code == 2 and len(value) == 4:
                            direction = struct.unpack(order + "I", value)[0] & 3
            ticks = (hi << 32) | lo
            yield Frame(
                round(ticks * resol), linktype, buf[data_at : data_at + cap], orig, direction
            )
        elif kind == 1:  # interface description
            linktype = struct.unpack_from(order + "H", buf, body)[0]
            resol = 1_000.0  # default: µs
            for code, value in _options(buf, body + 8, stop, order):
                if code == 9 and value:
                    resol = _tsresol_ns(value[0])
            interfaces.append((linktype, resol))
        elif kind == 3 and interfaces:  # simple packet
            orig = struct.unpack_from(order + "I", buf, body)[0]
            yield Frame(0, interfaces[0][0], buf[body + 4 : stop], orig)
        i += length


def _pcap(buf: mmap.mmap, order: str, unit_ns: int) -> Iterator[Frame]:
    linktype = struct.unpack_from(order + "I", buf, 20)[0] & 0x0FFF_FFFF
    size = len(buf)
    i = 24
    while i + 16 <= size:
        sec, frac, cap, orig = struct.unpack_from(order + "IIII", buf, i)
        if i + 16 + cap > size:
            raise _Truncated
        yield Frame(
            sec * 1_000_000_000 + frac * unit_ns, linktype, buf[i + 16 : i + 16 + cap], orig
        )
        i += 16 + cap


def frames(path: str | os.PathLike[str]) -> Iterator[Frame]:
    """Every frame of a pcapng or pcap file, in file order."""
    p = Path(path)

    def bad(why: str) -> ScenarioError:
        return ScenarioError(f"{p}: not a readable capture ({why})")

    try:
        f = p.open("rb")
    except OSError as exc:
        raise ScenarioError(f"{p}: cannot read ({exc.strerror})") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size < 24:
            raise bad("too short")
        try:
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:
            raise ScenarioError(f"{p}: cannot read ({exc})") from None
        with buf:
            magic = buf[:4]
            try:
                if magic == b"\x0a\x0d\x0d\x0a":
                    yield from _pcapng(buf, bad)
                elif magic in _PCAP_MAGIC:
                    order, unit = _PCAP_MAGIC[magic]
                    yield from _pcap(buf, order, unit)
                else:
                    raise bad("unknown file format; allowed: pcapng, pcap")
            except _Truncated:
                raise bad("truncated") from None
            except struct.error as exc:
                raise bad(str(exc)) from None


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
    vihl, total, ip_id, proto, src_ip, dst_ip = _IP4.unpack_from(d, off)
    if vihl >> 4 != 4 or proto != 6:
        return None
    ihl = (vihl & 0x0F) * 4
    t = off + ihl
    if len(d) < t + 20:
        return None
    sport, dport, seq, ack, hl, flags, window = _TCP.unpack_from(d, t)
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
            tsval, tsecr = _TWO_WORDS.unpack_from(d, i + 2)
        elif kind == 5 and i + length <= end:
            for b in range(i + 2, i + length - 7, 8):
                sack.append(_TWO_WORDS.unpack_from(d, b))
        elif kind == 3 and length == 3 and i + 3 <= end:
            wscale = d[i + 2]
        i += length
    src = (src_ip, sport)
    dst = (dst_ip, dport)
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
