"""`tcplab emulate`: run a scenario on the kernel's TCP through emulated links.

Order of events: check the machine (root, TUN, tools, the flows' algorithms in the kernel,
TPROXY for PEPs) → plan → choose the link backend (`--link`: netem qdiscs where the kernel
and the scenario allow, else `tcplab-emu`) → build the namespaces and start `tcplab-emu`
or add the qdiscs (`topology`) → the
PEPs (each prints `ready`) and the iperf3 servers (listening) → start the emulator's
measurement (SIGUSR1: the scenario's t = 0) → launch each iperf3 client at its flow's start
offset → wait for them (bulk: `-t`; files: until done, at most the scenario's duration) →
stop the iperf3 servers, then the PEPs (SIGTERM: each writes its `--report`, read at once)
→ stop the emulator (it writes its report) → convert. Whatever happens, the namespaces are
removed afterwards (and every child still running is stopped first).
"""

from __future__ import annotations

import json
import platform
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from ..errors import ScenarioError
from ..results.parse import RunResult
from ..scenario.load import Overrides, ScenarioSource, load_scenario, override_pairs
from ..scenario.normalize import normalize
from ..scenario.topology import base_rtt_ns, pep_mode
from ..trace.request import CaptureFile, TraceOutput
from . import capture, commands, features, fileflow, machine_lock, netem
from .bins import require_binary
from .cleanup import new_run_id
from .convert import FlowRun, result_json, run_errors
from .errors import EmulationError, MissingFeature
from .iperf import client_argv, server_argv
from .options import EmulateOptions
from .pep_report import PepRun
from .plan import IPERF_PORT, FlowPlan, PepMode, PepPlan, Plan, plan_topology
from .procs import Proc
from .topology import Topology, topology

_LISTEN_TIMEOUT_S: Final = 15.0
#: Time allowed past a flow's planned end (iperf3's set-up takes a few RTTs).
_GRACE_S: Final = 10.0
#: A PEP aborts what it still relays at SIGTERM and exits within its 10 s grace period.
_PEP_STOP_S: Final = 15.0


@dataclass(frozen=True)
class Emulation:
    """An emulated run: the result (same schema as a simulation), what differs from the
    scenario (notes), the emulator's raw report (netem: the qdiscs' counters), the
    namespaces left with `keep`, who modelled the links (`emu` or `netem`), the result as
    the JSON `RunResult.from_json` reads (`result_data`, shaped like the core's) and the raw
    recording it was converted from (`recording`: the normalized scenario, each flow's
    iperf3 client JSON, the emulator's report and the PEPs' reports, as
    tests/data/realstack/record.py writes fixtures; `recorded_result` converts it again)."""

    result: RunResult
    notes: tuple[str, ...]
    emulator: Mapping[str, Any]
    kept: tuple[str, ...] = field(default=())
    link: str = "emu"
    result_data: Mapping[str, Any] = field(default_factory=dict)
    recording: Mapping[str, Any] = field(default_factory=dict)

    def to_json_dict(self) -> dict[str, Any]:
        """`RunResult.to_json_dict()` plus an `emulation` object."""
        out = self.result.to_json_dict()
        out["emulation"] = {
            "notes": list(self.notes),
            "kernel": platform.release(),
            "namespaces_kept": list(self.kept),
            "link": self.link,
        }
        return out


def emulate(
    scenario: ScenarioSource,
    seed: int | None = None,
    duration: str | None = None,
    overrides: Overrides = (),
    options: EmulateOptions | None = None,
) -> Emulation:
    """Like `tcplab.run`, on the kernel's TCP; raises `MissingFeature` (what the machine
    lacks) or `EmulationError` (what failed) with a one-line message."""
    pairs: list[tuple[str, Any]] = override_pairs(overrides)
    if seed is not None:
        pairs.append(("seed", seed))
    if duration is not None:
        pairs.append(("duration", duration))
    return emulate_normalized(normalize(load_scenario(scenario, pairs)), options)


def kernel_cca_fields(normalized: Mapping[str, Any]) -> list[tuple[str, str]]:
    """`(field, cca)` of every algorithm the kernel must provide (TCP flows, PEP legs)."""
    out = []
    for i, flow in enumerate(normalized["flows"]):
        if flow["app"]["kind"] == "cbr":
            continue
        out.append((f"flows[{i}].cca", str(flow["cca"])))
        pep = flow.get("pep")
        if isinstance(pep, Mapping) and pep_mode(normalized) != "none":
            out.append((f"flows[{i}].pep.cca", str(pep.get("cca", flow["cca"]))))
    return out


def has_peps(normalized: Mapping[str, Any]) -> bool:
    return pep_mode(normalized) != "none" and any(
        isinstance(f.get("pep"), Mapping) for f in normalized["flows"]
    )


def _interception(normalized: Mapping[str, Any], options: EmulateOptions, run_id: str) -> PepMode:
    """Transparent (TPROXY) interception where the kernel allows it, unless told otherwise."""
    if options.pep == "explicit":
        return "explicit"
    if not has_peps(normalized):
        return "transparent"  # nothing to intercept
    why = features.tproxy_support(f"tcplab-{run_id}-probe")
    if why is None:
        return "transparent"
    if options.pep == "transparent":
        raise MissingFeature(f"transparent PEPs need TPROXY: {why}")
    options.say(f"TPROXY unavailable ({why}); PEPs run in explicit mode")
    return "explicit"


_ALLOWED_LINKS: Final = ", ".join(netem.LINK_CHOICES)


def choose_link(plan: Plan, options: EmulateOptions) -> Plan:
    """`plan` with its link backend: netem when asked for or (auto) when the scenario fits
    netem + tbf and the kernel has the qdiscs, else tcplab-emu. A note says which and why.
    Packet captures are taken on the emulator's TUN devices: they need tcplab-emu."""
    if options.link == "emu":
        return replace(plan, notes=(*plan.notes, "links: tcplab-emu (--link emu)"))
    if options.capture is not None:
        if options.link == "netem":
            raise ScenarioError(
                "--pcap: captures are taken on tcplab-emu's TUN devices, at both ends of the "
                "emulated link; allowed: --link emu or auto"
            )
        return replace(plan, notes=(*plan.notes, "links: tcplab-emu (--pcap captures at it)"))
    refused = netem.refusal(plan)
    if refused is not None and options.link == "netem":
        raise ScenarioError(f"--link netem: {refused}")
    missing = None if refused else features.link_qdisc_support(netem.qdisc_kinds(plan))
    if missing is not None and options.link == "netem":
        raise MissingFeature(f"--link netem: {missing}; allowed: {_ALLOWED_LINKS}")
    if refused is None and missing is None:
        notes = (
            f"links: tc netem + tbf (--link {options.link})",
            "links: netem queue occupancy is not sampled (queue mean/max read 0)",
        )
        return replace(plan, link="netem", notes=(*plan.notes, *notes))
    why = refused.removesuffix("; use --link emu") if refused else missing
    return replace(plan, notes=(*plan.notes, f"links: tcplab-emu (--link auto: {why})"))


def wifi_link(normalized: Mapping[str, Any]) -> str | None:
    """The key of the first Wi-Fi link of a normalized scenario, if it has one."""
    bottleneck = normalized.get("bottleneck")
    if isinstance(bottleneck, Mapping) and bottleneck.get("wifi") is not None:
        return "bottleneck"
    path = normalized.get("path")
    for index, segment in enumerate(path["segments"] if isinstance(path, Mapping) else []):
        if segment.get("wifi") is not None:
            return f"path.segments[{index}]"
    return None


def emulate_normalized(
    normalized: Mapping[str, Any], options: EmulateOptions | None = None
) -> Emulation:
    """Emulate a normalized scenario (docs/interface.md)."""
    options = options or EmulateOptions()
    wifi = wifi_link(normalized)
    if wifi is not None:
        raise ScenarioError(
            f"{wifi}.wifi: a Wi-Fi link exists only in the simulator (the real-stack links are "
            "wires: rate, delay, queue); run the scenario with tcplab run"
        )
    needed = ("tcpdump",) if options.capture is not None else ()
    features.check_base((*needed, "tcplab-pep") if has_peps(normalized) else needed)
    features.check_ccas(kernel_cca_fields(normalized))
    run_id = new_run_id()
    plan = plan_topology(normalized, run_id, _interception(normalized, options, run_id))
    plan = choose_link(plan, options)
    for note in plan.notes:
        options.say(note)
    with machine_lock.exclusive(options.say):
        started = time.perf_counter()
        with topology(plan, normalized, options, int(normalized["duration_ns"])) as topo:
            capturing = None
            if options.capture is not None:
                capturing = capture.start(topo, options.capture)
            runs = _run_traffic(topo, normalized)
            report = topo.stop_emulator()
            captured: tuple[CaptureFile, ...] = ()
            if capturing is not None and topo.t0_real_ns is not None:
                captured, lost = capture.finish(
                    capturing, topo.t0_real_ns, _capture_comment(normalized, plan.link)
                )
                plan = replace(plan, notes=(*plan.notes, *lost))
                for note in lost:
                    options.say(note)
        wall_s = time.perf_counter() - started
    errors = run_errors(runs)
    if errors:
        raise EmulationError("; ".join(errors))
    links = "tc netem" if plan.link == "netem" else "tcplab-emu"
    tools = ["fileflow"] if any(_is_tcp(f) for f in plan.flows) else []
    if not all(_is_tcp(f) for f in plan.flows):
        tools.append(iperf_version())
    version = f"emulated: Linux {platform.release()}, {', '.join(tools)}, {links}"
    data = result_json(normalized, runs, report, plan.interval_ns, version)
    result = RunResult.from_json(data, wall_s=wall_s, scenario=normalized)
    if options.capture is not None:
        result = replace(result, trace=TraceOutput(captures=captured))
    kept = plan.namespaces if options.keep else ()
    return Emulation(
        result, plan.notes, report, kept, plan.link, data, recording(normalized, runs, report)
    )


def _capture_comment(normalized: Mapping[str, Any], link: str) -> str:
    from ..scenario.identity import scenario_hash

    return (
        f"tcplab emulation of scenario {normalized.get('name', '')!r} on Linux "
        f"{platform.release()} (links: {'tc netem' if link == 'netem' else 'tcplab-emu'}): "
        f"scenario hash {scenario_hash(normalized)}, seed {normalized.get('seed')}"
    )


def recording(
    normalized: Mapping[str, Any], runs: list[FlowRun], report: Mapping[str, Any]
) -> dict[str, Any]:
    """What an emulation measured, raw: enough to convert it again (`recorded_result`)."""
    data: dict[str, Any] = {
        "normalized": normalized,
        "clients": [run.client for run in runs],
        "emu": report,
    }
    if any(run.peps for run in runs):
        data["peps"] = [
            [{"node": pep.node, "report": pep.report} for pep in run.peps] for run in runs
        ]
    return data


def recorded_json(data: Mapping[str, Any], version: str) -> dict[str, Any]:
    """Convert a `recording` (or a fixture of tests/data/realstack) into the result JSON."""
    normalized = data["normalized"]
    plan = plan_topology(normalized, "0x0")
    peps = data.get("peps") or [[] for _ in plan.flows]
    runs = [
        FlowRun(f, client, tuple(PepRun(p["node"], p["report"]) for p in flow_peps))
        for f, client, flow_peps in zip(plan.flows, data["clients"], peps, strict=True)
    ]
    return result_json(normalized, runs, data["emu"], plan.interval_ns, version)


def recorded_result(data: Mapping[str, Any], version: str, wall_s: float = 0.0) -> RunResult:
    """Convert a `recording` (or a fixture of tests/data/realstack) into the result."""
    converted = recorded_json(data, version)
    return RunResult.from_json(converted, wall_s=wall_s, scenario=data["normalized"])


def iperf_version() -> str:
    """`iperf3 <version>` of the iperf3 on PATH."""
    out = commands.run(["iperf3", "--version"], check=False).split()
    return f"iperf3 {out[1]}" if len(out) > 1 else "iperf3"


def _run_traffic(topo: Topology, normalized: Mapping[str, Any]) -> list[FlowRun]:
    """PEPs, servers, then the clients on schedule; returns each flow's client JSON and
    its PEPs' reports."""
    plan = topo.plan
    peps = _start_peps(topo)
    grace_s = _GRACE_S + 6 * base_rtt_ns(normalized) / 1e9
    run_s = int(normalized["duration_ns"]) / 1e9 + grace_s
    servers: dict[int, tuple[Proc, Path]] = {}
    for flow in plan.flows:
        out = topo.workdir / f"server{flow.id}.json"
        # a sink ends by itself, a little after its source gives up at the latest
        argv = fileflow.sink_argv(flow, run_s + 5.0) if _is_tcp(flow) else server_argv(flow)
        tool = "fileflow" if _is_tcp(flow) else "iperf3"
        servers[flow.id] = (
            topo.start(f"{tool} server {flow.id}", flow.receiver_ns, argv, out),
            out,
        )
    for flow in plan.flows:
        _wait_listening(flow.receiver_ns, servers[flow.id][0])
    # TCP sources start a little ahead (a Python program takes a few hundred ms to load)
    # and connect at their flow's start on the shared monotonic clock.
    tcp = [f for f in plan.flows if _is_tcp(f)]
    t0 = time.monotonic() + (_SOURCE_LEAD_S if tcp else 0.0)
    end_ns = round(t0 * 1e9) + int(normalized["duration_ns"])
    clients: list[tuple[FlowPlan, Proc, Path]] = []
    for flow in tcp:
        out = topo.workdir / f"client{flow.id}.json"
        at_ns = round(t0 * 1e9) + flow.start_ns
        argv = fileflow.source_argv(flow, run_s - flow.start_ns / 1e9, at_ns, end_ns)
        clients.append(
            (flow, topo.start(f"fileflow client {flow.id}", flow.sender_ns, argv, out), out)
        )
    time.sleep(max(0.0, t0 - time.monotonic()))
    topo.start_measurement()
    for flow in sorted(plan.flows, key=lambda f: f.start_ns):
        if _is_tcp(flow):
            continue
        time.sleep(max(0.0, t0 + flow.start_ns / 1e9 - time.monotonic()))
        out = topo.workdir / f"client{flow.id}.json"
        proc = topo.start(f"iperf3 client {flow.id}", flow.sender_ns, client_argv(flow), out)
        clients.append((flow, proc, out))
    deadline = t0 + run_s
    for _, proc, _ in clients:
        if not proc.wait(deadline - time.monotonic()):
            proc.stop(signal.SIGINT, 5.0)  # iperf3 still prints its JSON on SIGINT
    for flow in plan.flows:
        server = servers[flow.id][0]
        if _is_tcp(flow):
            server.wait(_SINK_WAIT_S)  # its close takes a round trip
        server.stop(signal.SIGTERM, 2.0)
    reports = _stop_peps(peps)
    runs = []
    for flow, proc, out in clients:
        client = _read_json(out, proc)
        if _is_tcp(flow):
            sink, sink_out = servers[flow.id]
            client = fileflow.merge(client, _read_json(sink_out, sink))
        runs.append(FlowRun(flow, client, reports.get(flow.id, ())))
    return sorted(runs, key=lambda r: r.plan.id)


#: How far ahead of the measurement's start download sources are launched.
_SOURCE_LEAD_S: Final = 1.5
#: How long a file sink may take to close after its source ended.
_SINK_WAIT_S: Final = 10.0


def _is_tcp(flow: FlowPlan) -> bool:
    """TCP flows run with `fileflow`, CBR (UDP) ones with iperf3."""
    return flow.kind == "tcp"


def _start_peps(topo: Topology) -> list[tuple[PepPlan, Proc, Path]]:
    """Every PEP of the plan, each with `--report` into the work directory."""
    if not topo.plan.peps:
        return []
    binary = str(require_binary("tcplab-pep"))
    started = []
    for pep in topo.plan.peps:
        report = topo.workdir / pep.report_name
        argv = pep.argv(binary, str(report))
        name = f"tcplab-pep {pep.node} flow {pep.flow_id}"
        log = report.with_suffix(".log")
        started.append((pep, topo.start_ready(name, pep.netns, argv, log), report))
    return started


def _stop_peps(peps: list[tuple[PepPlan, Proc, Path]]) -> dict[int, tuple[PepRun, ...]]:
    """SIGTERM every PEP (each aborts what it still relays and writes its report), then
    wait for each and read its report; by flow, in node order."""
    for _, proc, _ in peps:  # all at once: their shutdowns overlap
        proc.send_signal(signal.SIGTERM)
    by_flow: dict[int, list[PepRun]] = {}
    for pep, proc, report in peps:
        proc.stop(signal.SIGTERM, _PEP_STOP_S)
        by_flow.setdefault(pep.flow_id, []).append(PepRun(pep.node, _read_report(report, proc)))
    return {flow_id: tuple(runs) for flow_id, runs in by_flow.items()}


def _read_report(path: Path, proc: Proc) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        raise EmulationError(f"{proc.name} wrote no report: {proc.stderr_tail()}") from None
    if not isinstance(data, dict):
        raise EmulationError(f"{proc.name}: its report is not a JSON object")
    return data


def _wait_listening(ns: str, server: Proc) -> None:
    """Until `ss` shows the server's port listening in `ns`."""
    deadline = time.monotonic() + _LISTEN_TIMEOUT_S
    query = ["ss", "-Hltn", f"sport = :{IPERF_PORT}"]
    while time.monotonic() < deadline:
        if commands.run(commands.in_netns(ns, query), check=False).strip():
            return
        if not server.running():
            raise EmulationError(f"{server.name} exited: {server.stderr_tail()}")
        time.sleep(0.02)
    raise EmulationError(f"{server.name}: not listening after {_LISTEN_TIMEOUT_S:g} s")


def _read_json(path: Path, proc: Proc) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        raise EmulationError(f"{proc.name} printed no JSON: {proc.stderr_tail()}") from None
    return data if isinstance(data, dict) else {}
