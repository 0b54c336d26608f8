"""Turn a validated `Scenario` into the normalized scenario JSON of docs/interface.md.

The normalized form has integers in base units only (ns, bit/s, bytes), `count` expanded into
individual flows (numbered 0.. in file order) and `"<k>bdp"` queues resolved to packets, so the
core needs no unit or default logic of its own.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any, Final

from .errors import Problem
from .scenario import BottleneckSpec, FlowSpec, QueueSpec, Scenario
from .tcp_profile import TcpOptions, resolve_tcp
from .units import parse_duration_ns, parse_rate_bps

#: Wire size of a full data packet used to turn a BDP into packets (interface.md): the MTU.
BDP_PACKET_BYTES: Final = 1500
_NS_PER_S: Final = 10**9


def base_rtt_ns(bottleneck: BottleneckSpec, access_delay_ns: int) -> int:
    """Round-trip propagation delay: forward + return bottleneck delay, plus the access link
    twice in each direction (sender side and receiver side). GEO example:
    250 ms + 250 ms + 4 x 0.1 ms = 500.4 ms."""
    forward_ns = bottleneck.delay_ns
    return_ns = bottleneck.return_delay_ns if bottleneck.return_delay_ns is not None else forward_ns
    return forward_ns + return_ns + 4 * access_delay_ns


def queue_json(spec: QueueSpec, rate_bps: int, rtt_ns: int) -> dict[str, Any]:
    """DropTail limit; `k·bdp` → `ceil(k · rate_bps · rtt_s / (8 · 1500))` packets, computed
    exactly in rationals so 333.6 becomes 334 and never 333 through float error."""
    if spec.kind == "bytes":
        return {"kind": "droptail", "limit_bytes": int(spec.amount)}
    if spec.kind == "pkts":
        return {"kind": "droptail", "limit_pkts": int(spec.amount)}
    bdp_pkts = Fraction(rate_bps * rtt_ns, 8 * BDP_PACKET_BYTES * _NS_PER_S)
    return {"kind": "droptail", "limit_pkts": max(1, math.ceil(spec.amount * bdp_pkts))}


def cca_param_entry(key: str, value: bool | int | float | str) -> tuple[str, int | float]:
    """`("rtt0", "25ms")` → `("rtt0_ns", 25_000_000)`; rates get `_bps`; booleans become 1/0;
    numbers pass as is."""
    if isinstance(value, bool):
        return key, int(value)
    if not isinstance(value, str):
        return key, value
    try:
        return f"{key}_ns", parse_duration_ns(value)
    except Problem:
        # scenario validation guaranteed the string is a duration or a rate
        return f"{key}_bps", parse_rate_bps(value)


def expanded_flows(scenario: Scenario) -> list[FlowSpec]:
    """One entry per simulated flow, index = flow id in the result."""
    return [flow for flow in scenario.flows for _ in range(flow.count)]


def flow_access(scenario: Scenario, flow: FlowSpec) -> tuple[int, int]:
    """(rate_bps, delay_ns) of the access links this flow uses."""
    top = scenario.access
    if flow.access is None:
        return top.rate_bps, top.delay_ns
    rate_bps = flow.access.rate_bps if flow.access.rate_bps is not None else top.rate_bps
    delay_ns = flow.access.delay_ns if flow.access.delay_ns is not None else top.delay_ns
    return rate_bps, delay_ns


def flow_tcp(flow: FlowSpec) -> TcpOptions:
    """The flow's TCP options with the stack profile's defaults filled in."""
    return resolve_tcp(flow.tcp, flow.cca)


def tcp_json(tcp: TcpOptions) -> dict[str, Any]:
    """The core's `TcpConfig`: every option explicit, so the core's own defaults never apply
    and the normalized JSON alone says what ran. `rwnd_bytes` is already capped at 65535
    bytes without window scaling (the core would do the same)."""
    return {
        "stack": tcp.stack,
        "mss_bytes": tcp.mss_bytes,
        "sack": tcp.sack,
        "dsack": tcp.dsack,
        "fack": tcp.fack,
        "rack": tcp.rack,
        "tlp": tcp.tlp,
        "frto": tcp.frto,
        "prr": tcp.prr,
        "timestamps": tcp.timestamps,
        "delayed_ack": tcp.delayed_ack,
        "initial_window_pkts": tcp.initial_window_pkts,
        "rwnd_bytes": tcp.effective_rwnd_bytes,
        "window_scaling": tcp.window_scaling,
        "pacing": tcp.pacing,
        "ecn": tcp.ecn,
        "slow_start_after_idle": tcp.slow_start_after_idle,
    }


def _flow_json(scenario: Scenario, flow: FlowSpec) -> dict[str, Any]:
    app: dict[str, Any] = {"kind": "bulk"}
    if flow.app == "file":
        app = {"kind": "file", "size_bytes": flow.size_bytes}
    access = None
    if flow.access is not None:
        rate_bps, delay_ns = flow_access(scenario, flow)
        access = {"rate_bps": rate_bps, "delay_ns": delay_ns}
    return {
        "cca": flow.cca,
        "cca_params": dict(cca_param_entry(k, v) for k, v in flow.cca_params.items()),
        "start_ns": flow.start_ns,
        "app": app,
        "tcp": tcp_json(flow_tcp(flow)),
        "access": access,
    }


def normalize(scenario: Scenario) -> dict[str, Any]:
    """The normalized scenario as a JSON-ready dict (see docs/interface.md)."""
    bn = scenario.bottleneck
    # Queues are sized for the default path (top-level access link): a queue is shared by all
    # flows, so it cannot follow each flow's own RTT.
    rtt_ns = base_rtt_ns(bn, scenario.access.delay_ns)
    return_rate_bps = bn.return_rate_bps if bn.return_rate_bps is not None else bn.rate_bps
    return_delay_ns = bn.return_delay_ns if bn.return_delay_ns is not None else bn.delay_ns
    return_queue = bn.return_queue if bn.return_queue is not None else bn.queue
    return {
        "name": scenario.name,
        "seed": scenario.seed,
        "duration_ns": scenario.duration_ns,
        "interval_ns": scenario.interval_ns,
        "bottleneck": {
            "forward": {
                "rate_bps": bn.rate_bps,
                "delay_ns": bn.delay_ns,
                "per": bn.per,
                "ber": bn.ber,
                "queue": queue_json(bn.queue, bn.rate_bps, rtt_ns),
                "ecn_threshold_pkts": bn.ecn_threshold_pkts,
            },
            "reverse": {
                "rate_bps": return_rate_bps,
                "delay_ns": return_delay_ns,
                "per": bn.return_per,
                "ber": bn.return_ber,
                "queue": queue_json(return_queue, return_rate_bps, rtt_ns),
                "ecn_threshold_pkts": bn.return_ecn_threshold_pkts,
            },
        },
        "access": {"rate_bps": scenario.access.rate_bps, "delay_ns": scenario.access.delay_ns},
        "flows": [_flow_json(scenario, flow) for flow in expanded_flows(scenario)],
    }


def normalized_json(scenario: Scenario, *, indent: int | None = None) -> str:
    """`normalize` as JSON text (what `_core.run_json` receives)."""
    return json.dumps(normalize(scenario), indent=indent)
