"""tcplab-pep's `--report` → the `legs` and `pep_buffer` of a PEP-split flow (the core's
result, docs/interface.md "Results (additions)"; what each field means here: `convert`).

A report (crates/pep/README.md, `--report`) has one record per connection a PEP relayed:
bytes per direction, the relay ring's peak and time-weighted mean, each socket's congestion
control and final `TCP_INFO`, and `TCP_INFO` samples every 100 ms on `CLOCK_MONOTONIC`
(shared by every namespace, so the records of both PEPs of a flow share one time line).

iperf3 relays a control and a data connection per flow through the PEPs (a download's
`fileflow` only one); the data connection is the one that moved the most bytes. Its bytes go
from the socket that received them from the previous hop (`rx`) to the one sending them on
(`tx`); the sender (iperf3's client, or fileflow's source: the scenario's server side)
connects, so that is the PEP's `client` → `server` (`up`) direction. At the end of the test
iperf3's server closes the data connection with bytes unread, i.e. resets it, and the reset
runs back through the PEPs, so the records end a little after the flow's run;
`pep_results` cuts every leg at the run's end (a download's when its receiver had the file).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .plan import FlowPlan
from .summary import rtt_json

Side = Literal["client", "server"]


@dataclass(frozen=True)
class PepRun:
    """One tcplab-pep process of a flow: its node (`pep1`, `pep2`) and its report."""

    node: str
    report: Mapping[str, Any]


def _moved(record: Mapping[str, Any], direction: str) -> int:
    return int(record.get(direction, {}).get("bytes_read", 0))


@dataclass(frozen=True)
class DataConn:
    """The flow's data connection through one PEP, oriented along the flow's bytes."""

    node: str
    record: Mapping[str, Any]
    limit_bytes: int | None
    #: the socket receiving the flow's bytes, and the one sending them on
    rx: Side
    tx: Side

    @classmethod
    def of(cls, run: PepRun) -> DataConn | None:
        """The record that moved the most bytes, None if the PEP relayed nothing."""
        conns = [c for c in run.report.get("conns", []) if c.get("samples")]
        if not conns:
            return None
        record = max(conns, key=lambda c: _moved(c, "up") + _moved(c, "down"))
        up = _moved(record, "up") >= _moved(record, "down")
        limit = run.report.get("buffer_limit_bytes")
        return cls(
            node=run.node,
            record=record,
            limit_bytes=None if limit is None else int(limit),
            rx="client" if up else "server",
            tx="server" if up else "client",
        )

    @property
    def direction(self) -> str:
        return "up" if self.rx == "client" else "down"

    def socket(self, side: Side) -> Mapping[str, Any]:
        sock = self.record.get("sockets", {}).get(side)
        return sock if isinstance(sock, Mapping) else {}

    def info(self, side: Side) -> Mapping[str, Any]:
        """The socket's `TCP_INFO` at the end of the connection."""
        info = self.socket(side).get("tcp_info")
        return info if isinstance(info, Mapping) else {}

    @property
    def t_mono_ns(self) -> list[int]:
        start = int(self.record["accepted_mono_ns"])
        return [start + int(t) for t in self.record["samples"]["t_ns"]]

    def column(self, side: Side, name: str) -> list[int | None]:
        values = self.record["samples"][f"{side}_{name}"]
        return [None if v is None else int(v) for v in values]

    def crossing_mono_ns(self, side: Side, name: str, threshold: int) -> float | None:
        """When the counter `name` of `side` reached `threshold` (linear between samples)."""
        prev_t, prev_v = None, 0
        for t, v in zip(self.t_mono_ns, self.column(side, name), strict=True):
            if v is not None and v >= threshold:
                if prev_t is None or v == prev_v:
                    return float(t)
                return prev_t + (threshold - prev_v) / (v - prev_v) * (t - prev_t)
            prev_t, prev_v = t, v or 0
        return None

    def at(self, side: Side, name: str, t_mono_ns: float | None) -> int | None:
        """Counter `name` of `side` at the first sample from `t_mono_ns` on (None: at the
        end of the connection)."""
        if t_mono_ns is not None:
            for t, v in zip(self.t_mono_ns, self.column(side, name), strict=True):
                if t >= t_mono_ns:
                    return v
        value = self.info(side).get(name)
        return None if value is None else int(value)

    def rtts_ns(self, until_mono_ns: float | None) -> list[int]:
        """The sending socket's smoothed RTT of each sample taken while it was sending (data
        in flight, or acknowledged since the previous sample), up to `until_mono_ns`."""
        out, acked_before = [], None
        t_mono = self.t_mono_ns
        rtts = self.column(self.tx, "rtt_us")
        unacked = self.column(self.tx, "unacked_pkts")
        acked = self.column(self.tx, "bytes_acked")
        for t, rtt, in_flight, now in zip(t_mono, rtts, unacked, acked, strict=True):
            if until_mono_ns is not None and t > until_mono_ns:
                break
            sending = bool(in_flight) or (acked_before is not None and (now or 0) > acked_before)
            if sending and rtt:
                out.append(rtt * 1000)
            acked_before = now or 0
        return out

    def buffer_json(self) -> dict[str, Any]:
        """The core's `pep_buffer` entry: the ring of the flow's direction."""
        ring = self.record.get(self.direction, {})
        peak = ring.get("peak_buffered_bytes")
        return {
            "node": self.node,
            "mean_bytes": ring.get("mean_buffered_bytes"),
            "max_bytes": None if peak is None else int(peak),
            "limit_bytes": self.limit_bytes,
        }


def _sender_cca(plan: FlowPlan, client: Mapping[str, Any]) -> str:
    cca = client.get("end", {}).get("sender_tcp_congestion")
    return str(cca) if cca else plan.cca


def pep_results(
    plan: FlowPlan,
    client: Mapping[str, Any],
    peps: Sequence[PepRun],
    flow: Mapping[str, Any],
) -> dict[str, Any]:
    """`legs` and `pep_buffer` of one flow from its PEPs' reports (in path order) and its
    converted end-to-end result `flow`; empty when a PEP relayed no connection.

    The flow's end-to-end bytes (iperf3's receiver, within the run; a download's size) are
    what the last PEP's sending socket saw acknowledged at `end`: that instant is the end
    of the flow's run on the PEPs' clock, and every leg is counted up to it. A download's
    legs end when their own receiver had the whole file; `end` minus the flow's completion
    time is the flow's time 0 there.
    """
    found = [DataConn.of(run) for run in peps]
    conns = [c for c in found if c is not None]
    if not conns or len(conns) != len(found):
        return {}
    names = ["server", *(c.node for c in conns), "client"]
    target = int(flow["bytes_delivered"])
    last = conns[-1]
    end = last.crossing_mono_ns(last.tx, "bytes_acked", target) if target else None
    completion = flow.get("completion_ns")
    zero = None if end is None or completion is None else end - int(completion)
    legs = []
    for k in range(len(conns) + 1):
        done, delivered = end, target
        if k < len(conns):
            into = conns[k]
            if zero is not None:
                done = into.crossing_mono_ns(into.rx, "bytes_received", target)
            if zero is None or done is None:
                delivered = into.at(into.rx, "bytes_received", end) or 0
        if plan.size_bytes is not None:
            delivered = min(delivered, plan.size_bytes)
        span_ns = int(flow["active_ns"])
        if zero is not None and done is not None:
            span_ns = max(round(done - zero), 1)
        leg: dict[str, Any] = {
            "from": names[k],
            "to": names[k + 1],
            "bytes_delivered": delivered,
            "goodput_bps": 8 * delivered * 1e9 / span_ns,
            "sender_done_ns": None,
            "closed_ns": None,
        }
        if k == 0:  # the iperf3 client sends: the flow's own sender figures
            leg |= {
                "cca": _sender_cca(plan, client),
                "retransmits": flow["retransmits"],
                "rto_count": 0,
                "rtt": flow["rtt"],
            }
        else:
            sender = conns[k - 1]
            leg |= {
                "cca": sender.socket(sender.tx).get("cca") or None,
                "retransmits": sender.at(sender.tx, "total_retrans", done) or 0,
                "rto_count": sender.at(sender.tx, "total_rto", done) or 0,
                "rtt": rtt_json(sender.rtts_ns(done)),
            }
        legs.append(leg)
    return {"legs": legs, "pep_buffer": [c.buffer_json() for c in conns]}
