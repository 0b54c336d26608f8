"""Packet captures of an emulation (`tcplab emulate --pcap DIR`), taken where the simulator
takes its own: Debian's `tcpdump` on the two TUN devices of each captured segment.

The sender side is the TUN device of the router before the emulated link: the kernel routes
data into it (before the emulator's queue and losses decide anything) and receives the ACKs
out of it; the receiver side is the device after the link. So a packet the emulator drops
is in the sender-side file only, as in a simulation's. The frames are the kernel's, as
they are (raw IP: a TUN device has no link layer). tcpdump writes classic pcap with
nanosecond timestamps; `finish` rewrites each file as pcapng named like the simulator's
(`<segment>.sender-side.pcapng`), its times measured from the emulation's t = 0 — with the
core's writer (`_core.pcap_to_pcapng`), not a second one here.
"""

from __future__ import annotations

import re
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .. import _core
from ..errors import ScenarioError, field_error
from ..trace.request import SIDES, CaptureFile, Trace, capture_name, prepare
from .bins import require_binary
from .errors import EmulationError
from .plan import Plan, Wire
from .procs import Proc
from .topology import Topology

_READY_TIMEOUT_S: Final = 10.0
_STOP_TIMEOUT_S: Final = 10.0
#: tcpdump's kernel buffer: a 100 Mbit/s link fills 16 MiB in over a second.
_BUFFER_KIB: Final = 16_384


@dataclass
class _Tap:
    proc: Proc
    raw: Path
    log: Path
    segment: str
    side: str


@dataclass
class Capturing:
    """The tcpdump processes of an emulation and where their files go."""

    taps: list[_Tap]
    out: Path
    window_ns: tuple[int, int | None]


def wires_of(plan: Plan, links: tuple[str, ...] | list[str]) -> list[Wire]:
    """The emulated segments to capture at (default: the bottleneck, the segment with the
    lowest forward rate, as the simulator's default)."""
    segments = [w for w in plan.wires if w.segment and plan.tun(w)]
    names = [w.name for w in segments]
    if not links:
        rates = [int(w.emulated["forward"]["rate_bps"]) if w.emulated else 0 for w in segments]
        return [segments[rates.index(min(rates))]] if segments else []
    chosen = []
    for name in links:
        if name not in names:
            raise field_error("--pcap-link", name, "not an emulated segment", ", ".join(names))
        chosen.append(segments[names.index(name)])
    return chosen


def start(topo: Topology, trace: Trace) -> Capturing:
    """tcpdump on both ends of every chosen segment, each listening before this returns."""
    binary = str(require_binary("tcpdump"))
    prepared = prepare(trace, "")
    assert prepared.pcap_dir is not None
    spec = prepared.spec
    hosts = None
    if spec["flows"] is not None:
        flows = {f.id: f for f in topo.plan.flows}
        missing = [i for i in spec["flows"] if i not in flows]
        if missing:
            raise field_error("--trace-flow", missing[0], "no such flow", f"0 to {len(flows) - 1}")
        hosts = " or ".join(f"host {flows[i].receiver_addr}" for i in spec["flows"])
    taps = []
    for wire in wires_of(topo.plan, tuple(spec["links"])):
        for side, end in zip(SIDES, (wire.a, wire.b), strict=True):
            raw = topo.workdir / f"{wire.name}.{side}.pcap"
            log = topo.workdir / f"{wire.name}.{side}.tcpdump.log"
            argv = [
                binary,
                "-n",
                "-i",
                end.dev,
                "-s",
                str(spec["snaplen_bytes"]),
                "--time-stamp-precision=nano",
                "-B",
                str(_BUFFER_KIB),
                "-Z",
                "root",
                "-w",
                str(raw),
            ]
            if hosts:
                argv.append(hosts)
            proc = Proc(f"tcpdump {wire.name} {side}", end.netns, argv, None, log)
            topo.cleanup.push(f"stop {proc.name}", _stopper(proc))
            taps.append(_Tap(proc, raw, log, wire.name, side))
    for tap in taps:
        _wait_listening(tap)
    return Capturing(taps, prepared.pcap_dir, (int(spec["from_ns"]), spec["to_ns"]))


def _stopper(proc: Proc) -> Callable[[], None]:
    """Kill `proc` at cleanup if it still runs (`finish` stops it properly before)."""
    return lambda: proc.stop(signal.SIGKILL, 1.0)


def _log(tap: _Tap) -> str:
    try:
        return tap.log.read_text(errors="replace")
    except OSError:
        return ""


def _wait_listening(tap: _Tap) -> None:
    """tcpdump says `listening on DEV` on stderr once its capture runs."""
    deadline = time.monotonic() + _READY_TIMEOUT_S
    while time.monotonic() < deadline:
        text = _log(tap)
        if "listening on" in text:
            return
        if not tap.proc.running():
            raise EmulationError(f"{tap.proc.name} exited: {text}")
        time.sleep(0.02)
    raise EmulationError(f"{tap.proc.name}: not listening after {_READY_TIMEOUT_S:g} s")


def finish(
    capturing: Capturing, t0_real_ns: int, comment: str
) -> tuple[tuple[CaptureFile, ...], list[str]]:
    """Stop tcpdump (SIGINT: it flushes its file) and rewrite each capture as pcapng timed
    from `t0_real_ns` (the emulation's t = 0 on the real-time clock); notes on what tcpdump
    lost."""
    for tap in capturing.taps:
        tap.proc.send_signal(signal.SIGINT)
    notes = []
    files = []
    lo, hi = capturing.window_ns
    for tap in capturing.taps:
        tap.proc.stop(signal.SIGINT, _STOP_TIMEOUT_S)
        dropped = _kernel_drops(_log(tap))
        if dropped:
            notes.append(f"capture {tap.segment} {tap.side}: tcpdump lost {dropped} packets")
        if not tap.raw.exists():
            raise EmulationError(f"{tap.proc.name} wrote no capture: {tap.proc.stderr_tail()}")
        target = capturing.out / capture_name(tap.segment, tap.side)
        description = (
            f"{tap.side} of emulated segment {tap.segment!r}: the kernel's packets on the TUN "
            f"device {'before' if tap.side == SIDES[0] else 'after'} the emulated link"
        )
        try:
            packets = _core.pcap_to_pcapng(
                str(tap.raw),
                str(target),
                t0_real_ns,
                lo,
                hi if hi is not None else 2**64 - 1,
                f"{tap.segment}.{tap.side}",
                description,
                comment,
            )
        except ValueError as exc:
            raise ScenarioError(f"--pcap: {exc}") from None
        files.append(CaptureFile(target, tap.segment, tap.side, packets, target.stat().st_size))
    return tuple(files), notes


_DROPS = re.compile(r"(\d+) packets dropped by kernel")


def _kernel_drops(text: str) -> int:
    m = _DROPS.search(text)
    return int(m.group(1)) if m else 0
