"""`tcplab emulate --calibrate`: how exactly the emulator holds a configured link.

Each measurement builds a one-segment topology (sender host — n0 —emulator— n1 — receiver
host) and sends UDP probes (`tcplab-emu probe-send` / `probe-recv`) through it:

- **rate**: 20 % more than the link rate, 1500-byte packets: the queue stays backlogged, so
  the receiver sees the link's own rate (first to last arrival);
- **delay**: 228-byte packets at 10 % load: one-way delay (both ends read the same
  monotonic clock) minus the packet's serialization time is the delay the path adds — the
  configured delay plus what the kernel (veth, forwarding, TUN) and the emulator's timing
  add;
- **loss**: packets at 20 % load through a link with a packet error rate: the loss count
  against the binomial expectation (z = (lost - np) / sqrt(np(1 - p))).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Final

from . import commands, features, machine_lock
from .bins import require_binary
from .cleanup import new_run_id
from .options import EmulateOptions
from .plan import plan_topology
from .topology import Topology, topology

PROBE_PORT: Final = 9000
UDP_IP_BYTES: Final = 28
#: Default measurement points.
RATES_BPS: Final = (4_000_000, 10_000_000, 50_000_000, 100_000_000)
DELAYS_NS: Final = (10_000_000, 250_000_000)
LOSS_PER: Final = 0.01


@dataclass(frozen=True)
class RateRow:
    configured_bps: int
    achieved_bps: float

    @property
    def error_ratio(self) -> float:
        return self.achieved_bps / self.configured_bps - 1.0


@dataclass(frozen=True)
class DelayRow:
    configured_ns: int
    #: mean one-way delay minus the serialization time
    added_mean_ns: float
    #: the median: what the emulator adds, a stall of the host moving only the probes it holds
    added_p50_ns: float
    added_p99_ns: float
    added_max_ns: float
    #: the emulator's own lateness (departure after the model's instant)
    emulator_late_mean_ns: float | None

    @property
    def error_ns(self) -> float:
        return self.added_mean_ns - self.configured_ns

    @property
    def median_error_ns(self) -> float:
        return self.added_p50_ns - self.configured_ns


@dataclass(frozen=True)
class LossRow:
    per: float
    sent: int
    lost: int

    @property
    def expected(self) -> float:
        return self.per * self.sent

    @property
    def sigma(self) -> float:
        return math.sqrt(self.sent * self.per * (1.0 - self.per))

    @property
    def z(self) -> float:
        return (self.lost - self.expected) / self.sigma if self.sigma else 0.0


@dataclass(frozen=True)
class CalibrationReport:
    rates: tuple[RateRow, ...]
    delays: tuple[DelayRow, ...]
    losses: tuple[LossRow, ...]

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "rates": [{**asdict(r), "error_ratio": r.error_ratio} for r in self.rates],
            "delays": [
                {**asdict(d), "error_ns": d.error_ns, "median_error_ns": d.median_error_ns}
                for d in self.delays
            ],
            "losses": [
                {**asdict(lo), "expected": lo.expected, "sigma": lo.sigma, "z": lo.z}
                for lo in self.losses
            ],
        }


def _direction(rate_bps: int, delay_ns: int, per: float, limit_pkts: int) -> dict[str, Any]:
    return {
        "rate_bps": rate_bps,
        "delay_ns": delay_ns,
        "per": per,
        "ber": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": limit_pkts},
        "ecn_threshold_pkts": None,
    }


def probe_scenario(rate_bps: int, delay_ns: int, per: float = 0.0) -> dict[str, Any]:
    """A normalized one-link scenario for the probes (no access delay, 100-packet queue)."""
    return {
        "name": "calibrate",
        "seed": 1,
        "duration_ns": 10**9,
        "interval_ns": 10**9,
        "bottleneck": {
            "forward": _direction(rate_bps, delay_ns, per, 100),
            "reverse": _direction(rate_bps, delay_ns, 0.0, 100),
        },
        "access": {"rate_bps": 10**9, "delay_ns": 0},
        "flows": [{"cca": "cubic", "start_ns": 0, "app": {"kind": "bulk"}, "tcp": {}}],
    }


def _probe(
    topo: Topology, rate_bps: float, payload: int, duration_ms: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Send probes from the sender host to the receiver host; (sender's, receiver's)
    summaries."""
    binary = str(require_binary("tcplab-emu"))
    flow = topo.plan.flows[0]
    bind = f"{flow.receiver_addr}:{PROBE_PORT}"
    recv_argv = [
        binary,
        "probe-recv",
        "--bind",
        bind,
        "--idle-ms",
        "1000",
        "--max-ms",
        str(duration_ms + 30_000),
    ]
    receiver = topo.start("probe-recv", flow.receiver_ns, recv_argv, None)
    receiver.wait_line("ready", 10.0)
    send_argv = [
        binary,
        "probe-send",
        "--to",
        bind,
        "--rate-bps",
        str(round(rate_bps)),
        "--payload",
        str(payload),
        "--duration-ms",
        str(duration_ms),
    ]
    sent: dict[str, Any] = json.loads(commands.run(commands.in_netns(flow.sender_ns, send_argv)))
    received: dict[str, Any] = json.loads(receiver.wait_line("{", duration_ms / 1e3 + 30.0))
    return sent, received


@dataclass(frozen=True)
class _Measured:
    sent: Mapping[str, Any]
    received: Mapping[str, Any]
    emulator: Mapping[str, Any]


def _measure(
    normalized: Mapping[str, Any], options: EmulateOptions, rate_bps: float, payload: int, ms: int
) -> _Measured:
    plan = plan_topology(normalized, new_run_id())
    with topology(plan, normalized, options, 0) as topo:
        sent, received = _probe(topo, rate_bps, payload, ms)
        report = topo.stop_emulator()
    return _Measured(sent, received, report)


def calibrate(
    options: EmulateOptions | None = None,
    *,
    rates_bps: tuple[int, ...] = RATES_BPS,
    delays_ns: tuple[int, ...] = DELAYS_NS,
    per: float = LOSS_PER,
    seconds: float = 2.0,
    loss_packets: int = 20_000,
) -> CalibrationReport:
    """Measure rate, delay and loss accuracy (about `seconds` per point)."""
    options = options or EmulateOptions()
    features.check_base()
    with machine_lock.exclusive(options.say):
        return _calibrate(options, rates_bps, delays_ns, per, seconds, loss_packets)


def _calibrate(
    options: EmulateOptions,
    rates_bps: tuple[int, ...],
    delays_ns: tuple[int, ...],
    per: float,
    seconds: float,
    loss_packets: int,
) -> CalibrationReport:
    ms = round(seconds * 1000)
    rates = []
    for rate in rates_bps:
        m = _measure(probe_scenario(rate, 10_000_000), options, 1.2 * rate, 1472, ms)
        rates.append(RateRow(rate, float(m.received.get("rate_bps") or 0.0)))
    delays = []
    for delay in delays_ns:
        link_bps, payload = 10_000_000, 200
        m = _measure(probe_scenario(link_bps, delay), options, 0.1 * link_bps, payload, ms)
        summary = m.received
        serialization_ns = (payload + UDP_IP_BYTES) * 8 * 1e9 / link_bps
        link = m.emulator["links"][0]
        delays.append(
            DelayRow(
                configured_ns=delay,
                added_mean_ns=float(summary["owd_mean_ns"]) - serialization_ns,
                added_p50_ns=float(summary["owd_p50_ns"]) - serialization_ns,
                added_p99_ns=float(summary["owd_p99_ns"]) - serialization_ns,
                added_max_ns=float(summary["owd_max_ns"]) - serialization_ns,
                emulator_late_mean_ns=link.get("late_mean_ns"),
            )
        )
    losses = []
    if per > 0:
        link_bps, payload = 50_000_000, 200
        send_bps = 0.2 * link_bps
        wire_bits = (payload + UDP_IP_BYTES) * 8
        ms_loss = max(ms, math.ceil(loss_packets * wire_bits / send_bps * 1000))
        m = _measure(probe_scenario(link_bps, 1_000_000, per), options, send_bps, payload, ms_loss)
        sent = int(m.sent["sent"])
        losses.append(LossRow(per, sent, sent - int(m.received["received"])))
    return CalibrationReport(tuple(rates), tuple(delays), tuple(losses))
