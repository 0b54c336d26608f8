"""Rules that relate several fields of a validated `Scenario`, or the scenario to the core.

Pydantic validates each value on its own; these checks need context (the run's duration, the
app kind, the core's catalogue) and report the full TOML path of the offending key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..catalogue import CcaInfo
from ..errors import NO_VALUE, field_error
from ..limits import LIMITS
from ..units import format_duration_ns, format_rate_bps
from .model import (
    CrossSpec,
    Direction,
    FlowSpec,
    LinkSpec,
    PathSpec,
    Scenario,
    effective_aqm,
)
from .normalize import (
    cca_param_entry,
    flow_tcp,
    pep_cca,
    pep_tcp,
    queue_json,
    scenario_base_rtt_ns,
    scenario_path_info,
)
from .tcp_profile import check_tcp_conflicts


def check_scenario(scenario: Scenario, catalogue: Sequence[CcaInfo]) -> None:
    """Raise `ScenarioError` for the first inconsistency. An empty catalogue (core not built
    yet) skips the algorithm checks; the core re-validates everything anyway."""
    duration_text = format_duration_ns(scenario.duration_ns)
    if scenario.bottleneck is None and scenario.path is None:
        raise field_error(
            "bottleneck",
            NO_VALUE,
            "missing required key",
            "a [bottleneck] table, or a [path] with [[path.segments]]",
        )
    if scenario.bottleneck is not None and scenario.path is not None:
        raise field_error(
            "path",
            NO_VALUE,
            "not allowed together with [bottleneck]",
            "one of [bottleneck] (a dumbbell) or [path] (a chain of segments)",
        )
    if not scenario.flows:
        raise field_error("flows", [], "no flows", "at least one [[flows]] table")
    if scenario.interval_ns > scenario.duration_ns:
        raise field_error(
            "interval",
            format_duration_ns(scenario.interval_ns),
            "longer than the run",
            f"at most duration ({duration_text})",
        )
    if scenario.duration_ns // scenario.interval_ns > LIMITS.max_intervals:
        raise field_error(
            "interval",
            format_duration_ns(scenario.interval_ns),
            "too short for this duration",
            f"at most {LIMITS.max_intervals} intervals per run",
        )
    total_flows = sum(flow.count for flow in scenario.flows)
    if total_flows > LIMITS.max_flows:
        raise field_error(
            "flows", f"{total_flows} flows", "too many flows", f"at most {LIMITS.max_flows}"
        )
    if scenario.path is not None:
        _check_path(scenario, scenario.path)
    rtt_ns = scenario_base_rtt_ns(scenario)
    for prefix, _, link in scenario.links():
        for forward in (True, False):
            _check_direction(prefix, link, link.direction(forward), rtt_ns)
    for index, flow in enumerate(scenario.flows):
        _check_flow(f"flows[{index}]", flow, scenario, catalogue)
    names = [name for _, name, _ in scenario.links()]
    for index, cross in enumerate(scenario.cross):
        if cross.segment is not None and cross.segment not in names:
            raise field_error(
                f"cross[{index}].segment",
                cross.segment,
                "no such segment",
                ", ".join(f'"{name}"' for name in names),
            )
        if cross.kind == "tcp-flows":
            _check_tcp_cross(f"cross[{index}]", cross, scenario, catalogue)


def _check_tcp_cross(
    path: str, cross: CrossSpec, scenario: Scenario, catalogue: Sequence[CcaInfo]
) -> None:
    """TCP cross traffic: its algorithm, and a base RTT no shorter than the round trip of
    the segment it crosses (its delay links add the rest)."""
    cca = LIMITS.default_cross_cca if cross.cca is None else cross.cca
    _check_cca(path, cca, cross.cca_params or {}, catalogue, stack="linux")
    if cross.rtt_ns is None:
        return
    links = scenario.links()
    names = [name for _, name, _ in links]
    at = (
        names.index(cross.segment)
        if cross.segment is not None
        else scenario_path_info(scenario).bottleneck_segment
    )
    link = links[at][2]
    least = link.direction(True).delay_ns + link.direction(False).delay_ns
    if cross.rtt_ns < least:
        raise field_error(
            f"{path}.rtt",
            format_duration_ns(cross.rtt_ns),
            "shorter than the round trip of its segment",
            f"at least {format_duration_ns(least)}",
        )


def _check_path(scenario: Scenario, path: PathSpec) -> None:
    """Segment count and names, and room for the PEPs around the satellite segment."""
    segments = path.segments
    if not segments or len(segments) > LIMITS.max_segments:
        raise field_error(
            "path.segments",
            f"{len(segments)} segments",
            "wrong number of segments",
            f"1 to {LIMITS.max_segments} [[path.segments]] tables",
        )
    first_use: dict[str, int] = {}
    for index, segment in enumerate(segments):
        if segment.name in first_use:
            raise field_error(
                f"path.segments[{index}].name",
                segment.name,
                f"duplicate segment name (also path.segments[{first_use[segment.name]}])",
                "a name used once",
            )
        first_use[segment.name] = index
    if path.pep == "none":
        return
    names = [segment.name for segment in segments]
    sat = scenario_path_info(scenario).satellite_segment
    where = f'the satellite segment "{names[sat]}" (path.segments[{sat}])'
    allowed = 'pep = "none", or more [[path.segments]]'
    needed = 2 if path.pep == "gateway" else 3
    if len(segments) < needed:
        problem = f"needs at least {needed} segments, the path has {len(segments)}"
        raise field_error("path.pep", path.pep, problem, allowed)
    if sat == 0:
        problem = f"needs a segment before {where}: the PEP sits between them"
        raise field_error("path.pep", path.pep, problem, allowed)
    if path.pep == "distributed" and sat == len(segments) - 1:
        problem = f"needs a segment after {where}: PEP2 sits between them"
        raise field_error("path.pep", path.pep, problem, allowed)


def _check_direction(prefix: str, link: LinkSpec, d: Direction, rtt_ns: int) -> None:
    """Settings of one link direction that contradict each other."""
    red_key, codel_key = d.key("red"), d.key("codel")
    red = link.red if d.forward else link.return_red
    codel = link.codel if d.forward else link.return_codel
    if effective_aqm(link.aqm if d.forward else link.return_aqm, red, codel) is None:
        raise field_error(
            f"{prefix}.{codel_key}",
            NO_VALUE,
            f"both [{prefix}.{red_key}] and [{prefix}.{codel_key}] are given",
            f'{d.key("aqm")} = "red" or "codel" to choose one',
        )
    limit_pkts = queue_json(d.queue, d.rate_bps, rtt_ns).get("limit_pkts")
    threshold_pkts = d.ecn_threshold_pkts
    if threshold_pkts is not None:
        key = f"{prefix}.{d.key('ecn_threshold')}"
        if d.aqm != "droptail":
            table = red_key if d.aqm == "red" else codel_key
            raise field_error(
                key,
                f"{threshold_pkts}pkts",
                f'step marking is for DropTail queues, not aqm = "{d.aqm}"',
                f"no {d.key('ecn_threshold')}: {d.aqm} marks by itself ({table}.ecn = true)",
            )
        # A threshold at or above a packet limit never marks: a packet that finds `limit`
        # packets waiting is dropped, so no accepted packet ever sees K waiting.
        if limit_pkts is not None and threshold_pkts >= limit_pkts:
            raise field_error(
                key,
                f"{threshold_pkts}pkts",
                f"never marks: the queue holds at most {limit_pkts} packets",
                f"1 to {limit_pkts - 1} packets" if limit_pkts > 1 else "a larger queue",
            )
    if d.aqm == "red":
        if d.red.min_th_pkts >= d.red.max_th_pkts:
            raise field_error(
                f"{prefix}.{red_key}.max_th",
                f"{d.red.max_th_pkts}pkts",
                f"must be above min_th ({d.red.min_th_pkts} packets)",
            )
        if limit_pkts is not None and d.red.max_th_pkts >= limit_pkts:
            raise field_error(
                f"{prefix}.{red_key}.max_th",
                f"{d.red.max_th_pkts}pkts",
                f"never reached: the queue holds at most {limit_pkts} packets",
                f"below {limit_pkts} packets, or a larger queue",
            )
    if d.aqm == "codel" and d.codel.target_ns >= d.codel.interval_ns:
        raise field_error(
            f"{prefix}.{codel_key}.target",
            format_duration_ns(d.codel.target_ns),
            f"must be shorter than interval ({format_duration_ns(d.codel.interval_ns)})",
        )
    if d.loss is not None and (d.per > 0.0 or d.ber > 0.0):
        name = "per" if d.per > 0.0 else "ber"
        raise field_error(
            f"{prefix}.{d.key(name)}",
            d.per if name == "per" else d.ber,
            f"{d.key('loss')} replaces per and ber",
            f"{d.key(name)} = 0 with a loss model",
        )
    if d.rate_trace is not None and d.delivery_trace is not None:
        raise field_error(
            f"{prefix}.{d.key('delivery_trace')}",
            d.delivery_trace.path,
            f"cannot be combined with {d.key('rate_trace')}",
            "one of rate_trace (a rate schedule) or delivery_trace (delivery instants)",
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
    if flow.app != "file" and flow.size_bytes is not None:
        raise field_error(f"{path}.size", flow.size_bytes, 'only allowed with app = "file"')
    if flow.app == "cbr" and flow.rate_bps is None:
        raise field_error(
            f"{path}.rate", NO_VALUE, 'required when app = "cbr"', 'a rate such as "250kbps"'
        )
    if flow.app != "cbr":
        if flow.rate_bps is not None:
            rate = format_rate_bps(flow.rate_bps)
            raise field_error(f"{path}.rate", rate, 'only allowed with app = "cbr"')
        if flow.packet_bytes is not None:
            size = flow.packet_bytes
            raise field_error(f"{path}.packet_size", size, 'only allowed with app = "cbr"')
    if flow.pep is not None:
        if scenario.path is None:
            raise field_error(
                f"{path}.pep",
                NO_VALUE,
                "needs a [path]: a [bottleneck] dumbbell has no PEP",
                'a [path] with pep = "gateway" or "distributed"',
            )
        if not flow.is_tcp:
            raise field_error(
                f"{path}.pep",
                NO_VALUE,
                'only for TCP flows: PEPs do not split app = "cbr" (UDP)',
                'app = "bulk" or "file", or no [flows.pep]',
            )
    if flow.is_tcp:
        # a CBR flow ignores cca/tcp (docs/interface.md); they are still checked against the
        # catalogue below, since the core receives them
        check_tcp_conflicts(f"{path}.tcp", flow.tcp, flow.cca)
        tcp = flow_tcp(flow)
        if tcp.effective_rwnd_bytes < tcp.mss_bytes:
            raise field_error(
                f"{path}.tcp.rwnd",
                tcp.rwnd_bytes,
                "smaller than one segment",
                f"at least mss ({tcp.mss_bytes} bytes)",
            )
    _check_cca(path, flow.cca, flow.cca_params, catalogue, stack=flow.tcp.stack)
    if flow.pep is not None:
        _check_pep(f"{path}.pep", flow, catalogue)


def _check_pep(path: str, flow: FlowSpec, catalogue: Sequence[CcaInfo]) -> None:
    pep = flow.pep
    assert pep is not None
    cca, params = pep_cca(flow, pep)
    check_tcp_conflicts(path, pep, cca)
    tcp = pep_tcp(flow, pep)
    if tcp.effective_rwnd_bytes < tcp.mss_bytes:
        raise field_error(
            f"{path}.rwnd",
            tcp.rwnd_bytes,
            "smaller than one segment",
            f"at least mss ({tcp.mss_bytes} bytes)",
        )
    segments = LIMITS.min_pep_buffer_segments
    if pep.buffer_bytes is not None and pep.buffer_bytes < segments * tcp.mss_bytes:
        raise field_error(
            f"{path}.buffer",
            pep.buffer_bytes,
            f"smaller than {segments} segments",
            f"at least {segments} x mss ({segments * tcp.mss_bytes} bytes)",
        )
    if pep.cca is not None or pep.cca_params is not None:
        # the flow's own algorithm and parameters were checked with the flow
        _check_cca(path, cca, params, catalogue, stack=tcp.stack, check_name=pep.cca is not None)


def _check_cca(
    path: str,
    cca: str,
    params: Mapping[str, bool | int | float | str],
    catalogue: Sequence[CcaInfo],
    *,
    stack: str,
    check_name: bool = True,
) -> None:
    seen: dict[str, str] = {}
    for key, value in params.items():
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
    info = by_name.get(cca)
    if info is None:
        if not check_name:
            return  # reported with the flow's own `cca`
        raise field_error(f"{path}.cca", cca, "unknown algorithm", ", ".join(by_name))
    known = info.param_names(stack)
    for key, value in params.items():
        core_key, _ = cca_param_entry(key, value)
        if core_key not in known:
            raise field_error(
                f"{path}.cca_params.{key}",
                value,
                f"unknown parameter of {info.name}" + (" (ns-2 agent)" if stack == "ns2" else ""),
                ", ".join(known) or "none",
            )
