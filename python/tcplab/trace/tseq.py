"""The time-sequence (Stevens) view of one TCP connection from two capture points.

From the capture at the sender side of a link: every data segment (time, relative
sequence number, length; a segment that does not advance the highest sequence number seen
there is a retransmission, since links never reorder), every ACK of the reverse direction
(the cumulative ACK and its SACK blocks). From the capture at the receiver side: which of
those data segments arrived — the others were dropped on the link. A segment is matched by
its sequence number, length and TSval (timestamps tell a retransmission from its original);
without timestamps, arrivals are counted per (sequence number, length) and the earliest
transmissions are taken as the ones that arrived. Segments sent so late that they could
still be on the link when the capture ended are never called dropped.

Sequence numbers are relative to the data sender's first byte (its ISN + 1 when the
handshake is in the capture, else the first data segment's), unwrapped past 2^32.
"""

from __future__ import annotations

import os
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from ..errors import ScenarioError
from .pcapng import Segment, frames, tcp_segment

SYN: Final = 0x02
ACK: Final = 0x10
_WRAP: Final = 1 << 32


@dataclass(frozen=True)
class Endpoints:
    """A connection's data sender and receiver: (IPv4 address, port) each."""

    sender: tuple[bytes, int]
    receiver: tuple[bytes, int]

    def text(self) -> str:
        def one(e: tuple[bytes, int]) -> str:
            return f"{'.'.join(str(b) for b in e[0])}:{e[1]}"

        return f"{one(self.sender)} → {one(self.receiver)}"


@dataclass
class TimeSequence:
    """One connection in a time window, as seen at one capture point (times in s)."""

    endpoints: Endpoints
    stream: int
    #: (t_s, seq_bytes, len_bytes) of every data segment; `retransmitted` the ones that did
    #: not advance the highest sequence number seen
    data: list[tuple[float, int, int]] = field(default_factory=list)
    retransmitted: list[tuple[float, int, int]] = field(default_factory=list)
    dropped: list[tuple[float, int, int]] = field(default_factory=list)
    #: (t_s, ack_bytes) of every ACK, (t_s, left, right) of every SACK block
    acks: list[tuple[float, int]] = field(default_factory=list)
    sacks: list[tuple[float, int, int]] = field(default_factory=list)
    window_s: tuple[float, float] = (0.0, 0.0)
    #: SYN to the handshake's third packet at this capture point (None: no handshake seen)
    handshake_rtt_s: float | None = None
    #: the receiver-side capture was compared (drops are known)
    drops_known: bool = False


def _key(seg: Segment) -> frozenset[tuple[bytes, int]]:
    return frozenset((seg.src, seg.dst))


class _Unwrap:
    """32-bit sequence numbers as 64-bit offsets from `base`, following their progress."""

    def __init__(self, base: int) -> None:
        self.base = base
        self.last = 0

    def __call__(self, raw: int) -> int:
        rel = (raw - self.base) % _WRAP
        k = (self.last - rel + _WRAP // 2) // _WRAP
        value = rel + k * _WRAP
        self.last = max(self.last, value)
        return value


def _segments(path: Path) -> Iterator[Segment]:
    for f in frames(path):
        seg = tcp_segment(f)
        if seg is not None:
            yield seg


def _stream(path: Path, stream: int) -> Iterator[Segment]:
    """The segments of the `stream`-th TCP connection in `path` (connections numbered in order
    of first appearance, as Wireshark's tcp.stream)."""
    seen: dict[frozenset[tuple[bytes, int]], int] = {}
    for seg in _segments(path):
        if seen.setdefault(_key(seg), len(seen)) == stream:
            yield seg
    if len(seen) <= stream:
        have = len(seen)
        raise ScenarioError(
            f"--flow = {stream}: {path} has {have} TCP connection{'s' * (have != 1)}; "
            f"allowed: 0 to {have - 1}"
            if have
            else f"{path}: no TCP connection in the capture"
        )


#: Segments of the first pass over the sender side kept for the second (about 700 bytes
#: each, so at most ~70 MB): the window starts before the first retransmission that pass
#: looks for.
_HOLD_SEGMENTS: Final = 100_000


class _Replay:
    """One connection of a capture read twice but parsed once where it is small enough: the
    first pass keeps what it reads; the second replays that and reads on from the file."""

    def __init__(self, path: Path, stream: int) -> None:
        self.path, self.stream = path, stream
        self.held: list[Segment] = []
        self.live = _stream(path, stream)
        self.whole = True  # `held` is every segment the first pass read

    def first(self) -> Iterator[Segment]:
        for seg in self.live:
            if self.whole:
                if len(self.held) < _HOLD_SEGMENTS:
                    self.held.append(seg)
                else:
                    self.whole = False
                    self.held = []
            yield seg

    def again(self) -> Iterator[Segment]:
        if not self.whole:
            yield from _stream(self.path, self.stream)
            return
        yield from self.held
        yield from self.live


#: Segments looked at to tell the data sender (the side with more payload) from the receiver.
_PROBE_SEGMENTS: Final = 200


@dataclass(frozen=True)
class _Probe:
    ends: Endpoints
    base: int
    rtt_s: float | None
    first_data_ns: int
    first_retrans_ns: int | None
    #: when the first retransmitted segment was sent the first time (None: not seen)
    first_original_ns: int | None


def _probe(it: Iterator[Segment], find_retrans: bool) -> _Probe:
    """Who sends the data, its first sequence number and the handshake's RTT; with
    `find_retrans`, when the first retransmission happened (the file is read that far)."""
    head = [s for _, s in zip(range(_PROBE_SEGMENTS), it, strict=False)]
    payload: Counter[tuple[bytes, int]] = Counter()
    for s in head:
        payload[s.src] += s.payload_bytes
    a, b = head[0].src, head[0].dst
    sender = a if payload[a] >= payload[b] else b
    ends = Endpoints(sender, b if sender == a else a)
    syn = next((s for s in head if s.src == sender and s.flags & SYN), None)
    data = [s for s in head if s.src == sender and s.payload_bytes > 0]
    base = (syn.seq + 1) % _WRAP if syn is not None else (data[0].seq if data else head[0].seq)
    first_data = data[0].t_ns if data else head[0].t_ns
    first_retrans = first_original = None
    if find_retrans:
        # Segments sent and not yet cumulatively ACKed at this capture point (a window's
        # worth), to find when the first retransmitted one was first sent.
        unwrap, highest = _Unwrap(base), 0
        unacked: deque[tuple[int, int, int]] = deque()  # seq, end, first sent
        for s in _chain(head, it):
            if s.src != sender:
                if s.flags & ACK:
                    ack = unwrap(s.ack)
                    while unacked and unacked[0][1] <= ack:
                        unacked.popleft()
                continue
            if s.payload_bytes == 0:
                continue
            seq = unwrap(s.seq)
            end = seq + s.payload_bytes
            if end <= highest:
                first_retrans = s.t_ns
                first_original = next((t for q, _, t in unacked if q == seq), None)
                break
            highest = end
            unacked.append((seq, end, s.t_ns))
    return _Probe(ends, base, _handshake_rtt(head), first_data, first_retrans, first_original)


def _chain(head: list[Segment], rest: Iterator[Segment]) -> Iterator[Segment]:
    yield from head
    yield from rest


def _handshake_rtt(segs: list[Segment]) -> float | None:
    syn = next((s for s in segs if s.flags & SYN and not s.flags & ACK), None)
    synack = next((s for s in segs if s.flags & SYN and s.flags & ACK), None)
    if syn is None or synack is None:
        return None
    third = next(
        (s for s in segs if s.t_ns > synack.t_ns and s.src == syn.src and not s.flags & SYN),
        None,
    )
    return None if third is None else (third.t_ns - syn.t_ns) / 1e9


def time_sequence(
    sender_side: str | os.PathLike[str],
    receiver_side: str | os.PathLike[str] | None = None,
    stream: int = 0,
    window_ns: tuple[int | None, int | None] = (None, None),
    rtt_s: float | None = None,
) -> TimeSequence:
    """Connection `stream` of the capture `sender_side` in `window_ns` (a None end: the
    default window's, `default_window`, with round trips of `rtt_s` if given), with drops
    found in `receiver_side` if given. Only the window, and up to `_HOLD_SEGMENTS` segments
    read while looking for the first retransmission, are held in memory: the files are read
    as they are."""
    replay = _Replay(Path(sender_side), stream)
    probe = _probe(replay.first(), None in window_ns)
    start, end = default_window(probe, rtt_s)
    lo = window_ns[0] if window_ns[0] is not None else start
    hi = window_ns[1] if window_ns[1] is not None else end
    ends = probe.ends
    ts = TimeSequence(ends, stream, window_s=(lo / 1e9, hi / 1e9), handshake_rtt_s=probe.rtt_s)
    unwrap = _Unwrap(probe.base)
    highest = 0
    sent: list[tuple[int, int, int, int | None]] = []  # t_ns, seq, len, tsval (in the window)
    for s in replay.again():
        if s.src == ends.sender:
            if s.payload_bytes == 0:
                continue
            seq = unwrap(s.seq)
            retrans = seq + s.payload_bytes <= highest
            highest = max(highest, seq + s.payload_bytes)
            if lo <= s.t_ns < hi:
                point = (s.t_ns / 1e9, seq, s.payload_bytes)
                ts.data.append(point)
                sent.append((s.t_ns, seq, s.payload_bytes, s.tsval))
                if retrans:
                    ts.retransmitted.append(point)
        elif s.flags & ACK:
            ack = unwrap(s.ack)
            blocks = [(unwrap(le), unwrap(re)) for le, re in s.sack]
            if lo <= s.t_ns < hi:
                ts.acks.append((s.t_ns / 1e9, ack))
                ts.sacks.extend((s.t_ns / 1e9, le, re) for le, re in blocks)
        if s.t_ns >= hi:
            break
    if receiver_side is not None:
        ts.dropped = _drops(Path(receiver_side), ends, probe.base, sent)
        ts.drops_known = True
    return ts


def default_window(probe: _Probe, rtt_s: float | None = None) -> tuple[int, int]:
    """20 round trips (`rtt_s`, else the handshake's, else 1 s) from one round trip before
    the first retransmitted segment was first sent (two before its retransmission when its
    first transmission is not in the capture), or from the first data segment when nothing
    was retransmitted."""
    rtt_ns = int((rtt_s or probe.rtt_s or 1.0) * 1e9)
    if probe.first_retrans_ns is None:
        start = probe.first_data_ns
    elif probe.first_original_ns is not None:
        start = max(probe.first_original_ns - rtt_ns, 0)
    else:
        start = max(probe.first_retrans_ns - 2 * rtt_ns, 0)
    return (start, start + 20 * rtt_ns)


def _drops(
    path: Path, ends: Endpoints, base: int, sent: list[tuple[int, int, int, int | None]]
) -> list[tuple[float, int, int]]:
    """The segments of `sent` (time, sequence number, length, TSval) that never reached the
    capture `path`."""
    wanted = Counter((q, n, tv) for _, q, n, tv in sent)
    arrived: Counter[tuple[int, int, int | None]] = Counter()
    first_arrival: dict[tuple[int, int, int | None], int] = {}
    unwrap = _Unwrap(base)
    last_ns = 0
    for s in _segments(path):
        last_ns = max(last_ns, s.t_ns)
        if s.src != ends.sender or s.dst != ends.receiver or s.payload_bytes == 0:
            continue
        key = (unwrap(s.seq), s.payload_bytes, s.tsval)
        if key in wanted:
            arrived[key] += 1
            first_arrival.setdefault(key, s.t_ns)
    # The longest a matched segment took between the two capture points: a segment sent
    # less than that before the end of the receiver-side capture may still be on its way.
    delay = max(
        (first_arrival[(q, n, tv)] - t for t, q, n, tv in sent if (q, n, tv) in first_arrival),
        default=0,
    )
    dropped = []
    for t, seq, n, tsval in sent:
        key = (seq, n, tsval)
        if arrived[key] > 0:
            arrived[key] -= 1
        elif t + delay <= last_ns:
            dropped.append((t / 1e9, seq, n))
    return dropped
