"""Turn a validated `Scenario` into the normalized scenario JSON of docs/interface.md.

The normalized form has integers in base units only (ns, bit/s, bytes), `count` expanded into
individual flows (numbered 0.. in file order), `"<k>bdp"` queues resolved to packets and trace
files read into lists, so the core needs no unit, default or file logic of its own.

Keys of the link and flow models that came with paths, PEPs and CBR (`loss`, `outages`,
`rate_trace`, `delivery_trace`, `pep`) and later (`policer`) are written only when in use: a
scenario that does not use them normalizes to exactly the JSON it did before, so its scenario
hash (and a results database's record of it) stays the same, and older cores still run it.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any, Final

from ..errors import Problem
from ..limits import LIMITS
from ..units import parse_duration_ns, parse_rate_bps
from .model import (
    CBR_DEFAULT_PACKET_BYTES,
    CROSS_DEFAULT_PACKET_BYTES,
    CrossSpec,
    Direction,
    FlowSpec,
    LinkSpec,
    PepSpec,
    QueueSpec,
    Scenario,
)
from .tcp_profile import TcpOptions, resolve_tcp
from .topology import PathInfo, path_info_of
from .traces import MAHIMAHI_BYTES_PER_OPPORTUNITY

#: Wire size of a full data packet used to turn a BDP into packets (interface.md): the MTU.
_NS_PER_S: Final = 10**9


def scenario_path_info(scenario: Scenario) -> PathInfo:
    """What the core makes of the scenario's path (`topology.PathInfo`), before it is
    normalized: the base RTT of the default path sizes every `"<k>bdp"` queue (a queue is
    shared by all flows, so it cannot follow each flow's own RTT)."""
    links = []
    for _, name, link in scenario.links():
        forward, reverse = link.direction(True), link.direction(False)
        links.append((name, forward.rate_bps, forward.delay_ns, reverse.rate_bps, reverse.delay_ns))
    return path_info_of(links, scenario.access.delay_ns)


def scenario_base_rtt_ns(scenario: Scenario) -> int:
    """The base RTT that sizes every `"<k>bdp"` queue of the scenario."""
    return scenario_path_info(scenario).base_rtt_ns


def queue_json(spec: QueueSpec, rate_bps: int, rtt_ns: int) -> dict[str, Any]:
    """DropTail limit; `k·bdp` → `ceil(k · rate_bps · rtt_s / (8 · 1500))` packets, computed
    exactly in rationals so 333.6 becomes 334 and never 333 through float error."""
    if spec.kind == "bytes":
        return {"kind": "droptail", "limit_bytes": int(spec.amount)}
    if spec.kind == "pkts":
        return {"kind": "droptail", "limit_pkts": int(spec.amount)}
    bdp_pkts = Fraction(rate_bps * rtt_ns, 8 * LIMITS.mtu_bytes * _NS_PER_S)
    return {"kind": "droptail", "limit_pkts": max(1, math.ceil(spec.amount * bdp_pkts))}


def direction_queue_json(direction: Direction, rtt_ns: int) -> dict[str, Any]:
    """The queue of one link direction: its limit and, for RED/CoDel, every parameter
    explicit (so the core's defaults never apply)."""
    queue = queue_json(direction.queue, direction.rate_bps, rtt_ns)
    if direction.aqm == "red":
        red = direction.red
        queue["kind"] = "red"
        queue["red"] = {
            "min_th_pkts": red.min_th_pkts,
            "max_th_pkts": red.max_th_pkts,
            "max_p": red.max_p,
            "w_q": red.w_q,
            "gentle": red.gentle,
            "ecn": red.ecn,
        }
    elif direction.aqm == "codel":
        codel = direction.codel
        queue["kind"] = "codel"
        queue["codel"] = {
            "target_ns": codel.target_ns,
            "interval_ns": codel.interval_ns,
            "ecn": codel.ecn,
        }
    return queue


def direction_json(direction: Direction, rtt_ns: int) -> dict[str, Any]:
    """The core's `DirConfig` (docs/interface.md); the later keys only when in use."""
    out: dict[str, Any] = {
        "rate_bps": direction.rate_bps,
        "delay_ns": direction.delay_ns,
        "per": direction.per,
        "ber": direction.ber,
        "queue": direction_queue_json(direction, rtt_ns),
        "ecn_threshold_pkts": direction.ecn_threshold_pkts,
    }
    if direction.loss is not None:
        loss = direction.loss
        out["loss"] = {
            "kind": "gilbert_elliott",
            "p_gb": loss.p_gb,
            "p_bg": loss.p_bg,
            "loss_good": loss.loss_good,
            "loss_bad": loss.loss_bad,
        }
    if direction.outages_ns:
        out["outages"] = [[start, end] for start, end in direction.outages_ns]
    if direction.rate_trace is not None:
        points = list(direction.rate_trace.points)
        if points[0][0] > 0:  # the link's own rate and delay until the trace's first line
            points.insert(0, (0, direction.rate_bps, None))
        out["rate_trace"] = [[t_ns, rate_bps, delay_ns] for t_ns, rate_bps, delay_ns in points]
    if direction.delivery_trace is not None:
        trace = direction.delivery_trace
        out["delivery_trace"] = {
            "opportunities_ns": list(trace.opportunities_ns),
            "period_ns": trace.period_ns,
            "bytes_per_opportunity": MAHIMAHI_BYTES_PER_OPPORTUNITY,
        }
    if direction.policer is not None:
        out["policer"] = {
            "rate_bps": direction.policer.rate_bps,
            "burst_bytes": direction.policer.burst_bytes,
        }
    return out


def link_json(link: LinkSpec, rtt_ns: int) -> dict[str, Any]:
    out = {
        "forward": direction_json(link.direction(True), rtt_ns),
        "reverse": direction_json(link.direction(False), rtt_ns),
    }
    # only Wi-Fi links carry the key, so the normalized form (and hash) of the others is
    # unchanged
    if link.wifi is not None:
        out["wifi"] = link.wifi.normalized()
    return out


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


def pep_cca(flow: FlowSpec, pep: PepSpec) -> tuple[str, dict[str, bool | int | float | str]]:
    """The PEP's algorithm and parameters: its own, or else the flow's (both of them)."""
    if pep.cca is None:
        params = flow.cca_params if pep.cca_params is None else pep.cca_params
        return flow.cca, dict(params)
    return pep.cca, dict(pep.cca_params or {})


def pep_tcp(flow: FlowSpec, pep: PepSpec) -> TcpOptions:
    """The PEP's TCP options: its own keys, the stack profile for the rest."""
    return resolve_tcp(pep, pep_cca(flow, pep)[0])


def _pep_json(scenario: Scenario, flow: FlowSpec) -> dict[str, Any] | None:
    """The flow's `pep` entry; None when no PEP splits it (a CBR flow, or `pep = "none"`)."""
    pep = flow.pep
    if pep is None or not flow.is_tcp or scenario.path is None or scenario.path.pep == "none":
        return None
    cca, params = pep_cca(flow, pep)
    return {
        "cca": cca,
        "cca_params": dict(cca_param_entry(k, v) for k, v in params.items()),
        "tcp": tcp_json(pep_tcp(flow, pep)),
        "buffer_bytes": (
            LIMITS.default_pep_buffer_bytes if pep.buffer_bytes is None else pep.buffer_bytes
        ),
    }


def tcp_json(tcp: TcpOptions) -> dict[str, Any]:
    """The core's `TcpConfig`: every option explicit (but `random_ts_offset`, see below), so
    the core's own defaults never apply and the normalized JSON alone says what ran.
    `rwnd_bytes` is already capped at 65535 bytes without window scaling (the core would do
    the same)."""
    out: dict[str, Any] = {
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
        "tso": tcp.tso,
        "ecn": tcp.ecn,
        "slow_start_after_idle": tcp.slow_start_after_idle,
    }
    # Written only when it changes what runs: without timestamps there is nothing to offset,
    # and the offsets are the core's default, so scenarios that leave the option out keep
    # their run keys.
    if tcp.timestamps and not tcp.random_ts_offset:
        out["random_ts_offset"] = False
    return out


def _flow_json(scenario: Scenario, flow: FlowSpec) -> dict[str, Any]:
    app: dict[str, Any] = {"kind": "bulk"}
    if flow.app == "file":
        app = {"kind": "file", "size_bytes": flow.size_bytes}
    elif flow.app == "cbr":
        packet_bytes = flow.packet_bytes
        app = {
            "kind": "cbr",
            "rate_bps": flow.rate_bps,
            "packet_bytes": CBR_DEFAULT_PACKET_BYTES if packet_bytes is None else packet_bytes,
        }
    access = None
    if flow.access is not None:
        rate_bps, delay_ns = flow_access(scenario, flow)
        access = {"rate_bps": rate_bps, "delay_ns": delay_ns}
    out = {
        "cca": flow.cca,
        "cca_params": dict(cca_param_entry(k, v) for k, v in flow.cca_params.items()),
        "start_ns": flow.start_ns,
        "app": app,
        "tcp": tcp_json(flow_tcp(flow)),
        "access": access,
    }
    pep = _pep_json(scenario, flow)
    if pep is not None:
        out["pep"] = pep
    return out


def normalize(scenario: Scenario) -> dict[str, Any]:
    """The normalized scenario as a JSON-ready dict (see docs/interface.md)."""
    # Queues are sized for the default path (top-level access link): a queue is shared by all
    # flows, so it cannot follow each flow's own RTT.
    rtt_ns = scenario_base_rtt_ns(scenario)
    out: dict[str, Any] = {
        "name": scenario.name,
        "seed": scenario.seed,
        "duration_ns": scenario.duration_ns,
        "interval_ns": scenario.interval_ns,
    }
    if scenario.path is not None:
        out["path"] = {
            "pep": scenario.path.pep,
            "segments": [
                {"name": segment.name, **link_json(segment, rtt_ns)}
                for segment in scenario.path.segments
            ],
        }
    elif scenario.bottleneck is not None:
        out["bottleneck"] = link_json(scenario.bottleneck, rtt_ns)
    else:
        raise Problem("the scenario has neither [bottleneck] nor [path]")  # checks.py said so
    out["access"] = {"rate_bps": scenario.access.rate_bps, "delay_ns": scenario.access.delay_ns}
    if scenario.access.queue_pkts is not None:  # written only when used: old hashes stay valid
        out["access"]["queue_pkts"] = scenario.access.queue_pkts
    out["flows"] = [_flow_json(scenario, flow) for flow in expanded_flows(scenario)]
    if scenario.cross:  # written only when used: old hashes stay valid
        out["cross"] = [cross_json(cross) for cross in scenario.cross]
    return out


def cross_json(cross: CrossSpec) -> dict[str, Any]:
    """The core's `CrossConfig` of one `[[cross]]` table."""
    if cross.kind == "tcp-flows":
        assert cross.size is not None  # the model checked the keys of each kind
        cca = LIMITS.default_cross_cca if cross.cca is None else cross.cca
        out_tcp: dict[str, Any] = {
            "kind": "tcp_flows",
            "segment": cross.segment,
            "reverse": cross.direction == "reverse",
            "offered_bps": cross.rate_bps,
            "size": cross.size.law_json(cross.size.mean_bytes),
            "cca": cca,
            "cca_params": dict(cca_param_entry(k, v) for k, v in (cross.cca_params or {}).items()),
            "max_connections": (
                LIMITS.default_cross_connections
                if cross.max_connections is None
                else cross.max_connections
            ),
            "rtt_ns": cross.rtt_ns,
        }
        if cross.tcp is not None:  # written only when given: old hashes stay valid
            out_tcp["tcp"] = tcp_json(resolve_tcp(cross.tcp, cca))
        return out_tcp
    out: dict[str, Any] = {
        "kind": "flows" if cross.kind == "flows" else "on_off",
        "segment": cross.segment,
        "reverse": cross.direction == "reverse",
        "peak_bps": cross.peak_rate_bps,
        "packet_bytes": (
            CROSS_DEFAULT_PACKET_BYTES if cross.packet_bytes is None else cross.packet_bytes
        ),
    }
    if cross.kind == "flows":
        assert cross.size is not None  # the model checked the keys of each kind
        out["offered_bps"] = cross.rate_bps
        out["size"] = cross.size.law_json(cross.size.mean_bytes)
    else:
        assert cross.on is not None and cross.off is not None
        out["on"] = cross.on.law_json(cross.on.mean_ns)
        out["off"] = cross.off.law_json(cross.off.mean_ns)
    return out


def normalized_json(scenario: Scenario, *, indent: int | None = None) -> str:
    """`normalize` as JSON text (what `_core.run_json` receives)."""
    return json.dumps(normalize(scenario), indent=indent)
