"""TCP flows on the kernel's TCP for `tcplab emulate`: file downloads (`app = "file"`) and
bulk transfers (`app = "bulk"`, `--size 0`: the source writes until its stop time).

iperf3 cannot time a download: its `-n` ends the test when the sender has *written* the last
byte (the receiver stops counting with a socket buffer still on its way), and at the end it
resets the connection, so there is no close to time. This pair of small programs moves the
file over one TCP connection and times it as the simulator does:

- `source` (on the scenario's server side) opens the connection — in the same direction as
  iperf3, so the transparent PEPs intercept it by the same rule — writes the file, closes
  (its FIN follows the last byte) and waits for the peer's close. It samples the kernel's
  `TCP_INFO` every 100 ms (RTT, cwnd, retransmissions, bytes acknowledged) and notes when its
  FIN was acknowledged (FIN-WAIT-2).
- `sink` (on the client side) reads until the end of file, noting when the last byte came
  (completion), then closes and notes when its FIN was acknowledged (CLOSED).

A bulk transfer through this pair rather than iperf3 puts on the wire exactly what the
simulator's bulk flow does — SYN, ACK, then data from the flow's start — where iperf3 first
opens a control connection and sends a cookie on the data connection. So the packets through
the emulated links are the simulated ones in the same order, and a lossy link drops the same
ones (`tcplab-emu` draws from the simulator's random streams).

Each prints one JSON object with absolute CLOCK_MONOTONIC times (shared by every network
namespace); `merge` turns the pair into the subset of iperf3's client JSON that `convert`
reads, with times from the flow's start (the source's connect), plus the exact completion
and teardown times under `tcplab_file`. The simulator's client opens the connection and sends
a request, which costs half a round trip more before the first byte than a source that
opens it itself: emulated completions are that much shorter.

Run in a namespace: `python -m tcplab.realstack.fileflow sink|source ...` (`sink_argv`,
`source_argv`).
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .plan import IPERF_PORT, FlowPlan

#: `TCP_INFO` fields read: (struct format, byte offset in Linux's `struct tcp_info`,
#: include/uapi/linux/tcp.h).
_INFO_FIELDS: Final = {
    "state": ("=B", 0),
    "snd_mss": ("=I", 16),
    "rtt_us": ("=I", 68),
    "snd_cwnd": ("=I", 80),
    "total_retrans": ("=I", 100),
    "bytes_acked": ("=Q", 120),
}
_INFO_BYTES: Final = 128
#: Linux TCP states (`include/net/tcp_states.h`).
_FIN_WAIT2, _TIME_WAIT, _CLOSE = 5, 6, 7
#: Sampling period of the source's `TCP_INFO` and of the series.
SAMPLE_NS: Final = 100_000_000
#: How often a closing socket's state is polled (the teardown times' resolution).
_POLL_S: Final = 0.001
_CHUNK: Final = 1 << 18


def tcp_info(sock: socket.socket) -> dict[str, int]:
    """state, snd_mss, rtt_us, snd_cwnd (packets), total_retrans, bytes_acked."""
    raw = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, _INFO_BYTES).ljust(
        _INFO_BYTES, b"\0"
    )
    return {name: struct.unpack_from(fmt, raw, off)[0] for name, (fmt, off) in _INFO_FIELDS.items()}


def _now() -> int:
    return time.monotonic_ns()


def _wait_state(sock: socket.socket, states: tuple[int, ...], deadline: float) -> int | None:
    """When the socket reached one of `states` (polled), None at the deadline."""
    while time.monotonic() < deadline:
        try:
            if tcp_info(sock)["state"] in states:
                return _now()
        except OSError:
            return None
        time.sleep(_POLL_S)
    return None


class _Sampler(threading.Thread):
    """`TCP_INFO` every 100 ms while the connection lives."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__(daemon=True)
        self.sock = sock
        self.samples: list[dict[str, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.wait(SAMPLE_NS / 1e9):
            self.take()

    def take(self) -> None:
        try:
            self.samples.append({"t_ns": _now(), **tcp_info(self.sock)})
        except OSError:
            self.done.set()


def source(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"role": "source", "size_bytes": args.size}
    if args.size == 0:
        out["stop_mono_ns"] = args.stop_mono_ns
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sampler = _Sampler(sock)
    try:
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, args.cca.encode())
        except OSError as err:
            raise OSError(f"the kernel has no congestion control {args.cca!r} ({err})") from err
        if args.window:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, args.window)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.window)
        sock.settimeout(args.deadline_s)
        if args.at_mono_ns:  # connect at the flow's start, not when Python had loaded
            time.sleep(max(0.0, (args.at_mono_ns - _now()) / 1e9))
        deadline = time.monotonic() + args.deadline_s
        out["connect_mono_ns"] = _now()
        sock.connect((args.connect, args.port))
        out["established_mono_ns"] = _now()
        out["cca"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, 16)
        out["cca"] = out["cca"].rstrip(b"\0").decode()
        sampler.start()
        chunk, left = memoryview(bytes(_CHUNK)), args.size
        if args.size == 0:  # bulk: write until the stop time (a blocked send waits there)
            while (left_ns := args.stop_mono_ns - _now()) > 0:
                # no longer than that: a send blocked behind a retransmission timeout (seconds
                # on a lossy long path) must not outlast the run and its grace
                sock.settimeout(left_ns / 1e9)
                try:
                    sock.send(chunk)
                except TimeoutError:
                    break
            out["written_mono_ns"] = _now()
            _abort(sock, sampler)
            out["samples"] = sampler.samples
            return out
        while left > 0:
            sent = sock.send(chunk[: min(left, _CHUNK)])
            left -= sent
        out["written_mono_ns"] = _now()
        sock.shutdown(socket.SHUT_WR)  # FIN after the last byte
        out["fin_acked_mono_ns"] = _wait_state(sock, (_FIN_WAIT2, _TIME_WAIT, _CLOSE), deadline)
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        while sock.recv(_CHUNK):
            pass
        out["peer_fin_mono_ns"] = _now()
    except TimeoutError:
        out["timed_out"] = True  # the download did not finish in the run: not an error
    except OSError as err:
        out["error"] = f"source: {err}"
    finally:
        sampler.done.set()
        if sampler.is_alive():
            sampler.join()
            sampler.take()  # the end of the connection
        sock.close()
    out["samples"] = sampler.samples
    return out


def _abort(sock: socket.socket, sampler: _Sampler) -> None:
    """End a bulk flow at its stop time: what its send buffer still holds (up to the socket
    buffer, seconds of data on a slow link) is no part of the run, so the connection is
    reset after a last `TCP_INFO` sample instead of drained."""
    sampler.done.set()
    if sampler.is_alive():
        sampler.join()
    sampler.take()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def sink(args: argparse.Namespace) -> dict[str, Any]:
    deadline = time.monotonic() + args.deadline_s
    out: dict[str, Any] = {"role": "sink", "size_bytes": args.size}
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.window:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, args.window)
    listener.bind((args.bind, args.port))
    listener.listen(1)
    listener.settimeout(args.deadline_s)
    got, log = 0, []
    try:
        conn, _ = listener.accept()
        out["accepted_mono_ns"] = _now()
        conn.settimeout(max(deadline - time.monotonic(), 0.001))
        buf = bytearray(_CHUNK)
        slot = -1
        while n := conn.recv_into(buf):
            got += n
            t = _now()
            if 0 < args.size <= got and "complete_mono_ns" not in out:
                out["complete_mono_ns"] = t
            if t // 10_000_000 != slot:  # the byte count at most every 10 ms
                slot = t // 10_000_000
                log.append((t, got))
        out["eof_mono_ns"] = _now()
        log.append((out["eof_mono_ns"], got))
        conn.shutdown(socket.SHUT_WR)  # the client application closes after reading it all
        out["closed_mono_ns"] = _wait_state(conn, (_CLOSE,), deadline)
        conn.close()
    except ConnectionResetError as err:
        if args.size != 0:
            out["error"] = f"sink: {err}"
        else:  # a bulk source resets the connection at its stop time
            out["eof_mono_ns"] = _now()
            log.append((out["eof_mono_ns"], got))
    except TimeoutError:
        out["timed_out"] = True
    except OSError as err:
        out["error"] = f"sink: {err}"
    finally:
        listener.close()
    out["bytes"] = got
    out["log"] = log
    return out


def _cumulative_at(log: Sequence[Sequence[int]], t_ns: int) -> int:
    """Bytes received by `t_ns` (the last logged count at or before it)."""
    got = 0
    for t, cum in log:
        if t > t_ns:
            break
        got = cum
    return got


def _rel(value: Any, t0: int) -> int | None:
    return None if value is None else int(value) - t0


def merge(src: Mapping[str, Any], snk: Mapping[str, Any]) -> dict[str, Any]:
    """The pair's JSON as iperf3's client JSON (sender intervals from the source's samples,
    receiver intervals under `server_output_json`), times in seconds from the source's
    connect; exact times in ns under `tcplab_file`."""
    t0 = int(src.get("connect_mono_ns", 0))
    samples = list(src.get("samples", []))
    if src.get("stop_mono_ns"):  # a bulk flow: what its send buffer drains after is no part
        samples = [s for s in samples if s["t_ns"] <= int(src["stop_mono_ns"])]
    intervals, prev_t, prev = [], t0, {"total_retrans": 0, "bytes_acked": 0}
    for s in samples:
        mss = int(s.get("snd_mss") or 0)
        intervals.append(
            {
                "streams": [
                    {
                        "start": (prev_t - t0) / 1e9,
                        "end": (s["t_ns"] - t0) / 1e9,
                        "bytes": s["bytes_acked"] - prev["bytes_acked"],
                        "rtt": s["rtt_us"],
                        "snd_cwnd": s["snd_cwnd"] * mss,
                        "retransmits": s["total_retrans"] - prev["total_retrans"],
                    }
                ]
            }
        )
        prev_t, prev = s["t_ns"], s
    log = snk.get("log", [])
    end = log[-1][0] if log else t0
    received, start = [], t0
    while start < end:
        stop = min(start + SAMPLE_NS, end)
        got = _cumulative_at(log, stop) - _cumulative_at(log, start)
        received.append(
            {"sum": {"start": (start - t0) / 1e9, "end": (stop - t0) / 1e9, "bytes": got}}
        )
        start = stop
    out: dict[str, Any] = {
        "intervals": intervals,
        "server_output_json": {"intervals": received},
        "end": {
            "sum_sent": {"retransmits": prev["total_retrans"]},
            "sender_tcp_congestion": src.get("cca"),
        },
        "tcplab_file": {
            "completion_ns": _rel(snk.get("complete_mono_ns"), t0),
            "server_done_ns": _rel(src.get("fin_acked_mono_ns"), t0),
            "closed_ns": _rel(snk.get("closed_mono_ns"), t0),
        },
    }
    errors = [str(e) for e in (src.get("error"), snk.get("error")) if e]
    if errors:
        out["error"] = "; ".join(errors)
    return out


_RUN: Final = "import sys; from tcplab.realstack.fileflow import main; sys.exit(main())"


def _argv(role: str, addr: str, port: int, size: int, deadline_s: float) -> list[str]:
    # `-c` rather than `-m`: the package imports this module first, which `-m` warns about
    args = [sys.executable, "-c", _RUN, role, "--size", str(size)]
    args += ["--bind" if role == "sink" else "--connect", addr, "--port", str(port)]
    return [*args, "--deadline-s", f"{deadline_s:.3f}"]


def sink_argv(flow: FlowPlan, deadline_s: float) -> list[str]:
    """The flow's receiving side (it gives up `deadline_s` after it starts)."""
    argv = _argv("sink", flow.receiver_addr, IPERF_PORT, int(flow.size_bytes or 0), deadline_s)
    return [*argv, "--window", str(flow.window_bytes)] if flow.window_bytes else argv


def source_argv(flow: FlowPlan, deadline_s: float, at_mono_ns: int, stop_mono_ns: int) -> list[str]:
    """The flow's sending side with the flow's algorithm: it connects at `at_mono_ns` on
    the shared monotonic clock (as iperf3's client would, so transparent PEPs intercept it);
    a bulk source writes until `stop_mono_ns`."""
    size = int(flow.size_bytes or 0)
    argv = _argv("source", flow.connect_addr, flow.connect_port, size, max(deadline_s, 1.0))
    argv += ["--cca", flow.cca, "--at-mono-ns", str(at_mono_ns)]
    argv += ["--stop-mono-ns", str(stop_mono_ns)]
    return [*argv, "--window", str(flow.window_bytes)] if flow.window_bytes else argv


def main(raw: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tcplab.realstack.fileflow")
    sub = parser.add_subparsers(dest="role", required=True)
    for role in ("source", "sink"):
        p = sub.add_parser(role)
        p.add_argument("--bind" if role == "sink" else "--connect", required=True)
        p.add_argument("--port", type=int, required=True)
        p.add_argument("--size", type=int, required=True)
        p.add_argument("--window", type=int, default=0)
        p.add_argument("--deadline-s", type=float, required=True)
        if role == "source":
            p.add_argument("--cca", default="cubic")
            p.add_argument("--at-mono-ns", type=int, default=0, help="CLOCK_MONOTONIC start")
            p.add_argument(
                "--stop-mono-ns", type=int, default=0, help="CLOCK_MONOTONIC end of a bulk flow"
            )
    args = parser.parse_args(raw)
    out = source(args) if args.role == "source" else sink(args)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
