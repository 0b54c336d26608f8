"""Rules that relate several fields of a validated `Scenario`, or the scenario to the core.

Pydantic validates each value on its own; these checks need context (the run's duration, the
app kind, the core's catalogue) and report the full TOML path of the offending key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .catalogue import CcaInfo
from .errors import NO_VALUE, field_error
from .normalize import base_rtt_ns, cca_param_entry, flow_tcp, queue_json
from .scenario import FlowSpec, QueueSpec, Scenario
from .tcp_profile import check_tcp_conflicts
from .units import format_duration_ns

MAX_SERIES_POINTS: Final = 10**7  # duration / interval; beyond this the series alone is > 1 GB
MAX_FLOWS: Final = 10_000


def check_scenario(scenario: Scenario, catalogue: Sequence[CcaInfo]) -> None:
    """Raise `ScenarioError` for the first inconsistency. An empty catalogue (core not built
    yet) skips the algorithm checks; the core re-validates everything anyway."""
    duration_text = format_duration_ns(scenario.duration_ns)
    if not scenario.flows:
        raise field_error("flows", [], "no flows", "at least one [[flows]] table")
    if scenario.interval_ns > scenario.duration_ns:
        raise field_error(
            "interval",
            format_duration_ns(scenario.interval_ns),
            "longer than the run",
            f"at most duration ({duration_text})",
        )
    if scenario.duration_ns // scenario.interval_ns > MAX_SERIES_POINTS:
        raise field_error(
            "interval",
            format_duration_ns(scenario.interval_ns),
            "too short for this duration",
            f"at most {MAX_SERIES_POINTS} intervals per run",
        )
    total_flows = sum(flow.count for flow in scenario.flows)
    if total_flows > MAX_FLOWS:
        raise field_error("flows", f"{total_flows} flows", "too many flows", f"at most {MAX_FLOWS}")
    _check_ecn_thresholds(scenario)
    for index, flow in enumerate(scenario.flows):
        _check_flow(f"flows[{index}]", flow, scenario, catalogue)


def _check_ecn_thresholds(scenario: Scenario) -> None:
    """A threshold at or above a packet limit never marks: a packet that finds `limit`
    packets waiting is dropped, so no accepted packet ever sees K waiting."""
    bn = scenario.bottleneck
    rtt_ns = base_rtt_ns(bn, scenario.access.delay_ns)
    return_rate_bps = bn.return_rate_bps if bn.return_rate_bps is not None else bn.rate_bps
    return_queue = bn.return_queue if bn.return_queue is not None else bn.queue
    directions: list[tuple[str, int | None, QueueSpec, int]] = [
        ("ecn_threshold", bn.ecn_threshold_pkts, bn.queue, bn.rate_bps),
        ("return_ecn_threshold", bn.return_ecn_threshold_pkts, return_queue, return_rate_bps),
    ]
    for key, threshold_pkts, queue, rate_bps in directions:
        limit_pkts = queue_json(queue, rate_bps, rtt_ns).get("limit_pkts")
        if threshold_pkts is not None and limit_pkts is not None and threshold_pkts >= limit_pkts:
            raise field_error(
                f"bottleneck.{key}",
                f"{threshold_pkts}pkts",
                f"never marks: the queue holds at most {limit_pkts} packets",
                f"1 to {limit_pkts - 1} packets" if limit_pkts > 1 else "a larger queue",
            )


def _check_flow(
    path: str, flow: FlowSpec, scenario: Scenario, catalogue: Sequence[CcaInfo]
) -> None:
    if flow.start_ns >= scenario.duration_ns:
        raise field_error(
            f"{path}.start",
            format_duration_ns(flow.start_ns),
            "starts after the run ends",
            f"less than duration ({format_duration_ns(scenario.duration_ns)})",
        )
    if flow.app == "file" and flow.size_bytes is None:
        raise field_error(
            f"{path}.size", NO_VALUE, 'required when app = "file"', 'a size such as "5MB"'
        )
    if flow.app == "bulk" and flow.size_bytes is not None:
        raise field_error(f"{path}.size", flow.size_bytes, 'only allowed with app = "file"')
    check_tcp_conflicts(f"{path}.tcp", flow.tcp, flow.cca)
    tcp = flow_tcp(flow)
    if tcp.effective_rwnd_bytes < tcp.mss_bytes:
        raise field_error(
            f"{path}.tcp.rwnd",
            tcp.rwnd_bytes,
            "smaller than one segment",
            f"at least mss ({tcp.mss_bytes} bytes)",
        )
    _check_cca(path, flow, catalogue)


def _check_cca(path: str, flow: FlowSpec, catalogue: Sequence[CcaInfo]) -> None:
    seen: dict[str, str] = {}
    for key, value in flow.cca_params.items():
        core_key, _ = cca_param_entry(key, value)
        if core_key in seen:
            raise field_error(
                f"{path}.cca_params.{key}",
                value,
                f"same parameter as {seen[core_key]} (both become {core_key})",
                "one of them",
            )
        seen[core_key] = key
    if not catalogue:
        return
    by_name = {info.name: info for info in catalogue}
    info = by_name.get(flow.cca)
    if info is None:
        raise field_error(f"{path}.cca", flow.cca, "unknown algorithm", ", ".join(by_name))
    known = info.param_names()
    for key, value in flow.cca_params.items():
        core_key, _ = cca_param_entry(key, value)
        if core_key not in known:
            raise field_error(
                f"{path}.cca_params.{key}",
                value,
                f"unknown parameter of {info.name}",
                ", ".join(known) or "none",
            )
