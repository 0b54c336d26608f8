"""iperf3's JSON, the emulator's report and the PEPs' reports → the core's result JSON
(docs/interface.md), so an emulation parses into the same `RunResult` as a simulation and
both plot together.

What each field means here:
- `bytes_delivered`: bytes the receiver's iperf3 read within the flow's run (`-t`), or the
  whole file (`-n`); `goodput_bps` over the flow's active time as in the simulator.
- `retransmits`: the kernel's count (`tcpi_total_retrans`); `bytes_sent` / `throughput_bps`
  add one MSS per retransmission to the bytes delivered (payload put on the wire).
- `rtt`: the kernel's smoothed RTT (`tcpi_rtt`) sampled every 100 ms — the mean, min,
  p50, p95 and max of those samples (the simulator averages every RTT sample instead).
- File downloads run with `fileflow` instead of iperf3 (the file over one connection, then
  both sides close), which prints iperf3-shaped JSON plus exact times (`tcplab_file`):
  `completion_ns` when the receiver had the last byte, `server_done_ns` when the sender's FIN
  was acknowledged, `closed_ns` when the receiver's was (the sockets' states polled every
  1 ms), from the sender's connect. The sender opens the connection (as iperf3 does), half a
  round trip sooner than the simulator's client, which opens it and sends a request.
- `rto_count`, `fast_recoveries`, `spurious_undos` are not observable through iperf3 and
  read 0; `final_ssthresh_bytes` is null.
- `links`: the emulator's counters of every path segment (the simulator's own link code).
- `legs` (flows through PEPs; from each tcplab-pep's `--report`, read by `pep_report`): the
  TCP connections of the flow's iperf3 data connection, server side first
  (`server→pep1[→pep2]→client`).
  - `cca`: read back from the sending socket; the first leg's is iperf3's
    `sender_tcp_congestion`.
  - `bytes_delivered`: what the leg's receiver got — for a leg into a PEP, that socket's
    `tcpi_bytes_received` (iperf3's 37-byte cookie included), for the last leg the flow's
    own bytes. Counted until the end of the run, taken as the moment the last PEP's sending
    socket had the flow's bytes acknowledged (at the first 100 ms sample from then on); a
    download's legs until their receiver had the whole file.
  - `goodput_bps`: over the flow's active time; a download's leg over the time until its
    receiver had the file, from the flow's time 0 (placed on the PEPs' clock by the last
    PEP seeing the file acknowledged at the flow's `completion_ns`).
  - `retransmits`, `rto_count`, `rtt`: the first leg's are the iperf3 client's (the flow's;
    RTOs 0); a PEP's leg's come from its sending socket: `tcpi_total_retrans` and
    `tcpi_total_rto` (Linux ≥ 6.7, else 0) at the leg's end, and the smoothed RTT sampled
    every 100 ms while the socket had data in flight or got some acknowledged.
  - `sender_done_ns`, `closed_ns`: null (the flow's own `server_done_ns`/`closed_ns` are
    measured for downloads; iperf3 ends a bulk connection with a reset).
- `pep_buffer`: per PEP, the relay ring of the flow's direction over the data connection's
  life: `max_bytes` exact, `mean_bytes` time-weighted from 100 ms samples, `limit_bytes`
  the PEP's `--buffer`, over the connection's life.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..results.parse import FLOW_COUNTERS, LINK_KEYS, SERIES_FLOW_KEYS
from ..scenario.topology import bottleneck_index, segments
from .iperf import (
    Sample,
    error_of,
    receiver_json,
    receiver_samples,
    sender_samples,
    total_retransmits,
)
from .pep_report import PepRun, pep_results
from .plan import FlowPlan
from .summary import rtt_json

#: A receiver report starting this close to the end of the run is the drain after it.
_EDGE_NS = 1_000_000


@dataclass(frozen=True)
class FlowRun:
    """A flow's plan, its iperf3 client JSON (empty if iperf3 printed none) and the reports
    of its PEPs, in path order (none without PEPs)."""

    plan: FlowPlan
    client: Mapping[str, Any]
    peps: tuple[PepRun, ...] = ()


@dataclass(frozen=True)
class Grid:
    """The scenario's series intervals: `[t - interval, t)` for each `t` in `t_ns`."""

    interval_ns: int
    duration_ns: int

    @property
    def t_ns(self) -> list[int]:
        n = math.ceil(self.duration_ns / self.interval_ns)
        return [min((g + 1) * self.interval_ns, self.duration_ns) for g in range(n)]

    def bucket(self, flow_start_ns: int, sample: Sample) -> int | None:
        """Interval of a sample (by its midpoint on the scenario's clock), None past the end."""
        mid = flow_start_ns + (sample.start_ns + sample.end_ns) // 2
        return mid // self.interval_ns if 0 <= mid < self.duration_ns else None

    def seconds(self, g: int) -> float:
        return (self.t_ns[g] - g * self.interval_ns) / 1e9


def _in_run(plan: FlowPlan, samples: Sequence[Sample]) -> list[Sample]:
    """Receiver reports within the run (the drain after `-t` is left out); for a file,
    those up to the one that completed it."""
    limit = plan.run_s * 10**9 - _EDGE_NS
    within = [s for s in samples if s.start_ns < limit]
    if plan.size_bytes is None:
        return within
    got, out = 0, []
    for s in within:
        out.append(s)
        got += s.bytes
        if got >= plan.size_bytes:
            break
    return out


def _completion_ns(size: int, samples: Sequence[Sample]) -> int | None:
    got = 0
    for s in samples:
        if s.bytes and got + s.bytes >= size:
            fraction = (size - got) / s.bytes
            return round(s.start_ns + fraction * (s.end_ns - s.start_ns))
        got += s.bytes
    return None


def _rtt_json(samples: Sequence[Sample]) -> dict[str, Any]:
    return rtt_json([s.rtt_ns for s in samples if s.rtt_ns])


def _in_time(times: Any, run_ns: int) -> dict[str, int]:
    """A download's exact times (`fileflow`) that fall within the flow's run: like the
    simulator, which stops at the scenario's duration, nothing later counts."""
    if not isinstance(times, Mapping):
        return {}
    return {k: int(v) for k, v in times.items() if v is not None and int(v) <= run_ns}


def flow_json(run: FlowRun, duration_ns: int) -> dict[str, Any]:
    """The core's per-flow result object for one emulated flow."""
    plan = run.plan
    received = _in_run(plan, receiver_samples(run.client))
    delivered = sum(s.bytes for s in received)
    completion = None
    exact = _in_time(run.client.get("tcplab_file"), duration_ns - plan.start_ns)
    if plan.size_bytes is not None:
        completion = exact.get("completion_ns") or _completion_ns(plan.size_bytes, received)
        delivered = min(delivered, plan.size_bytes)
    active_ns = completion if completion is not None else max(duration_ns - plan.start_ns, 1)
    sent = sender_samples(run.client)
    if completion is not None:  # the download's own part of the bulk run
        sent = [s for s in sent if s.start_ns < completion]
    common: dict[str, Any] = {
        "id": plan.id,
        "kind": plan.kind,
        "start_ns": plan.start_ns,
        "active_ns": active_ns,
        "completion_ns": completion,
        "goodput_bps": 8 * delivered * 1e9 / active_ns,
        "bytes_delivered": delivered,
        "rto_count": 0,
        "fast_recoveries": 0,
        "spurious_undos": 0,
        "final_ssthresh_bytes": None,
        "server_done_ns": None,
        "closed_ns": None,
        # not observable on the kernel's side (TCP_INFO has no such counters)
        **dict.fromkeys(FLOW_COUNTERS, 0),
    }
    if plan.kind == "cbr":
        return {**common, **_cbr_json(run, sent, received, active_ns)}
    retransmits = (
        total_retransmits(run.client, sent)
        if completion is None or exact  # a fileflow connection carried the download only
        else sum(s.retransmits for s in sent)
    )
    bytes_sent = delivered + retransmits * plan.mss_bytes
    cwnds = [s.cwnd_bytes for s in sent if s.cwnd_bytes is not None]
    out = {
        **common,
        "cca": plan.cca,
        "app": "file" if plan.size_bytes is not None else "bulk",
        "bytes_sent": bytes_sent,
        "segments_sent": math.ceil(delivered / plan.mss_bytes) + retransmits,
        "retransmits": retransmits,
        "throughput_bps": 8 * bytes_sent * 1e9 / active_ns,
        "rtt": _rtt_json(sent),
        "final_cwnd_bytes": cwnds[-1] if cwnds else 0,
        "server_done_ns": exact.get("server_done_ns"),
        "closed_ns": exact.get("closed_ns"),
    }
    if run.peps:
        out.update(pep_results(plan, run.client, run.peps, out))
    return out


def _cbr_json(
    run: FlowRun, sent: Sequence[Sample], received: Sequence[Sample], active_ns: int
) -> dict[str, Any]:
    end = receiver_json(run.client).get("end", {}).get("sum", {})
    packets_sent = sum(s.packets for s in sent) or int(end.get("packets", 0))
    lost = int(end.get("lost_packets", sum(s.lost_packets for s in received)))
    packets_received = max(int(end.get("packets", packets_sent)) - lost, 0)
    bytes_sent = sum(s.bytes for s in sent)
    return {
        "cca": "",
        "app": "cbr",
        "bytes_sent": bytes_sent,
        "segments_sent": packets_sent,
        "retransmits": 0,
        "throughput_bps": 8 * bytes_sent * 1e9 / active_ns,
        "rtt": _rtt_json([]),
        "final_cwnd_bytes": 0,
        "packets_sent": packets_sent,
        "packets_received": packets_received,
        "loss_ratio": (packets_sent - packets_received) / packets_sent if packets_sent else 0.0,
        "owd": rtt_json([]),  # iperf3 reports jitter, not one-way delays
    }


def flow_series(run: FlowRun, grid: Grid) -> dict[str, Any]:
    """Per-interval goodput, throughput, RTT, cwnd and retransmissions of one flow."""
    plan = run.plan
    n = len(grid.t_ns)
    delivered = [0] * n
    wire = [0] * n
    rtt_sum, rtt_n = [0] * n, [0] * n
    cwnd: list[int | None] = [None] * n
    retrans = [0] * n
    for s in _in_run(plan, receiver_samples(run.client)):
        g = grid.bucket(plan.start_ns, s)
        if g is not None:
            delivered[g] += s.bytes
    for s in sender_samples(run.client):
        g = grid.bucket(plan.start_ns, s)
        if g is None:
            continue
        if plan.kind == "cbr":
            wire[g] += s.bytes
            continue
        retrans[g] += s.retransmits
        wire[g] += s.retransmits * plan.mss_bytes
        if s.rtt_ns:
            rtt_sum[g] += s.rtt_ns
            rtt_n[g] += 1
        if s.cwnd_bytes is not None:
            cwnd[g] = s.cwnd_bytes
    held, filled = 0, []
    for value in cwnd:  # the value at the end of each interval, held while nothing is reported
        held = held if value is None else value
        filled.append(held)
    if plan.kind == "tcp":
        wire = [d + w for d, w in zip(delivered, wire, strict=True)]
    return {
        "id": plan.id,
        "goodput_bps": [8 * delivered[g] / grid.seconds(g) for g in range(n)],
        "throughput_bps": [8 * wire[g] / grid.seconds(g) for g in range(n)],
        "rtt_mean_ns": [rtt_sum[g] / rtt_n[g] if rtt_n[g] else None for g in range(n)],
        "cwnd_bytes": filled,
        "retransmits": retrans,
    }


#: Time averages the emulator takes over the time it measured.
_TIME_AVERAGED = ("utilization", "queue_mean_pkts", "queue_mean_bytes")


def links_json(normalized: Mapping[str, Any], emu: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The emulator's counters of every segment direction, in path order. An emulation of
    downloads only ends when they have: its time averages are brought to the scenario's
    duration (the links were idle after), as the simulator reports them."""
    by_name = {link["name"]: link for link in emu.get("links", [])}
    duration_ns = int(normalized["duration_ns"])
    measured_ns = int(emu.get("measured_ns") or duration_ns)
    scale = min(measured_ns / duration_ns, 1.0) if duration_ns else 1.0
    out = []
    for seg in segments(normalized):
        for direction in ("forward", "reverse"):
            link = by_name.get(f"{seg.name}.{direction}")
            if link is not None:
                # the core's LinkResult; the emulator's own timing counters stay in its
                # report, and drops it cannot have (outages, AQM) are 0
                row = {key: link.get(key) or 0 for key in LINK_KEYS}
                for key in _TIME_AVERAGED:
                    if key in row:
                        row[key] = row[key] * scale
                out.append(row)
    return out


def _bottleneck_series(
    normalized: Mapping[str, Any], emu: Mapping[str, Any], n: int
) -> tuple[list[float], list[float]]:
    segs = segments(normalized)
    name = f"{segs[bottleneck_index(normalized)].name}.forward" if segs else ""
    link = next((lk for lk in emu.get("links", []) if lk.get("name") == name), None)
    series = link.get("series", {}) if link else {}
    queue = [float(v) for v in series.get("queue_pkts", [])][:n]
    util = [float(v) for v in series.get("utilization", [])][:n]
    return queue + [0.0] * (n - len(queue)), util + [0.0] * (n - len(util))


def result_json(
    normalized: Mapping[str, Any],
    runs: Sequence[FlowRun],
    emu: Mapping[str, Any],
    interval_ns: int,
    version: str,
) -> dict[str, Any]:
    """The whole result object (`RunResult.from_json` reads it like the core's)."""
    duration_ns = int(normalized["duration_ns"])
    grid = Grid(interval_ns, duration_ns)
    queue, util = _bottleneck_series(normalized, emu, len(grid.t_ns))
    return {
        "name": normalized.get("name", ""),
        "seed": int(normalized.get("seed", 0)),
        "duration_ns": duration_ns,
        "events": 0,
        "core_version": version,
        "model_version": None,  # the kernel's numbers have no simulator model
        "flows": [flow_json(run, duration_ns) for run in runs],
        "links": links_json(normalized, emu),
        "series": {
            "interval_ns": interval_ns,
            "t_ns": grid.t_ns,
            "flows": [flow_series(run, grid) for run in runs],
            "bottleneck_queue_pkts": queue,
            "bottleneck_utilization": util,
        },
    }


def run_errors(runs: Sequence[FlowRun]) -> list[str]:
    """iperf3's own error messages, one per failed flow."""
    return [
        f"flow {run.plan.id}: iperf3: {error}"
        for run in runs
        if (error := error_of(run.client)) is not None
    ]


def upgrade_result(data: Mapping[str, Any]) -> dict[str, Any]:
    """A real-stack result JSON written by an earlier converter (a kernel cache or a
    recording's result without its raw recording), in today's shape: the counters the kernel
    cannot observe as 0, no model version, the core's link fields only (the emulator's timing
    counters were once passed through), series without the flow kind. A result already in
    today's shape comes back unchanged."""
    out = copy.deepcopy(dict(data))
    out.setdefault("model_version", None)
    for flow in out.get("flows", []):
        for key in FLOW_COUNTERS:
            flow.setdefault(key, 0)
        flow.setdefault("server_done_ns", None)
        flow.setdefault("closed_ns", None)
        flow["rtt"].setdefault("srtt_time_mean_ns", flow["rtt"].get("mean_ns"))
        if flow.get("kind") == "cbr":
            flow.setdefault("owd", rtt_json([]))
    out["links"] = [{key: link.get(key) or 0 for key in LINK_KEYS} for link in out["links"]]
    series = out.get("series", {})
    series["flows"] = [
        {key: value for key, value in flow.items() if key in SERIES_FLOW_KEYS}
        for flow in series.get("flows", [])
    ]
    return out
