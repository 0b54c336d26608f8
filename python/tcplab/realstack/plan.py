"""The topology plan of an emulation: pure data computed from the normalized scenario.

Nodes, as in the simulator: per flow a sender host `s<i>` (the scenario's server side) and a
receiver host `c<i>` (client side), and the path's routers `n0 … n<k>` (a dumbbell is the
one-segment path `bottleneck`: `n0` is R2, `n1` is R1). Every node is a network namespace
named `tcplab-<run>-<node>`.

Wires: segment `j` joins `n<j>` and `n<j+1>` through two TUN devices and the emulator
(`link = "emu"`), or through a veth pair whose qdiscs model it (`link = "netem"`, see
`netem`); access links are veth pairs. Their propagation delay is added to the first and last
segments (exact end to end; the 1 Gbit/s serialization of a veth is negligible). When flows
have access links of their own, every access link is emulated instead (TUN devices too),
so each flow keeps its own RTT.

Addresses (private, confined to the run's namespaces): sender host `i` 10.1.i.2 (its router
end 10.1.i.1), receiver host `i` 10.2.i.2 (10.2.i.1), segment `j` 10.3.j.1 (server side) /
10.3.j.2. Every address pair is point-to-point (`addr A peer B`).

PEPs (`path.pep` = gateway/distributed) run `tcplab-pep` at the node before the satellite
segment (and after it), one process per flow: transparent (nftables TPROXY at that node,
the sender connects to the receiver as usual) or explicit (the sender connects to the PEP,
which connects onward).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

from ..errors import ScenarioError
from ..limits import LIMITS
from ..scenario.topology import path_info, pep_mode, segments
from .kernel_tcp import kernel_tcp

PREFIX: Final = "tcplab-"
IPERF_PORT: Final = 5201
PEP_PORT_BASE: Final = 7000
#: Mark and routing table of TPROXY'd packets at a PEP node.
TPROXY_MARK: Final = 1
TPROXY_TABLE: Final = 100
MAX_FLOWS: Final = 250
MAX_SEGMENTS: Final = 250
#: A sending host never drops its own packets (TCP Small Queues): "unlimited" queue.
HOST_QUEUE_PKTS: Final = 1_000_000
ROUTER_QUEUE_PKTS: Final = 1000
#: Shortest iperf3 reporting interval.
IPERF_MIN_INTERVAL_NS: Final = 100_000_000
HOST_DEV: Final = "tcplab-h"

PepMode = Literal["transparent", "explicit"]


@dataclass(frozen=True)
class End:
    """One end of a wire: a device with an address in a namespace."""

    netns: str
    dev: str
    addr: str


@dataclass(frozen=True)
class Wire:
    """A point-to-point link, `a` on the server side. `emulated` holds the normalized
    `forward`/`reverse` DirConfigs when tcplab models it (TUN devices and the emulator, or
    netem qdiscs on a veth pair), None for a plain veth pair."""

    name: str
    a: End
    b: End
    emulated: Mapping[str, Any] | None = None
    #: a path segment (reported in the result's links), not an access link
    segment: bool = False


@dataclass(frozen=True)
class Route:
    netns: str
    dest: str
    via: str
    dev: str
    options: tuple[str, ...] = ()

    def argv(self) -> list[str]:
        return [
            "ip",
            "-n",
            self.netns,
            "route",
            "add",
            self.dest,
            "via",
            self.via,
            "dev",
            self.dev,
            *self.options,
        ]


@dataclass(frozen=True)
class FlowPlan:
    """One flow: an iperf3 server on the receiver host, an iperf3 client on the sender."""

    id: int
    kind: Literal["tcp", "cbr"]
    cca: str
    sender_ns: str
    receiver_ns: str
    receiver_addr: str
    #: where the client connects: the receiver, or PEP1 in explicit mode
    connect_addr: str
    connect_port: int
    start_ns: int
    #: `-t` seconds (iperf3 takes whole seconds)
    run_s: int
    size_bytes: int | None = None
    window_bytes: int | None = None
    cbr_rate_bps: int | None = None
    cbr_packet_bytes: int | None = None
    mss_bytes: int = LIMITS.tcp_defaults["mss_bytes"]


@dataclass(frozen=True)
class PepPlan:
    """One `tcplab-pep` process (per flow and PEP node); it writes `report_name` (its
    `--report`: per connection, bytes, relay buffer and the kernel's TCP_INFO) at exit."""

    flow_id: int
    node: str
    netns: str
    port: int
    upstream: str | None
    cca_upstream: str
    cca_downstream: str
    buffer_bytes: int

    @property
    def report_name(self) -> str:
        return f"pep-flow{self.flow_id}-{self.node}.json"

    def argv(self, binary: str, report: str | None = None) -> list[str]:
        target = ["--upstream", self.upstream] if self.upstream else ["--transparent"]
        return [
            binary,
            "--listen",
            f"0.0.0.0:{self.port}",
            *target,
            "--cca-upstream",
            self.cca_upstream,
            "--cca-downstream",
            self.cca_downstream,
            "--buffer",
            str(self.buffer_bytes),
            *(["--report", report] if report else []),
        ]


@dataclass(frozen=True)
class Plan:
    run_id: str
    namespaces: tuple[str, ...]
    routers: tuple[str, ...]
    wires: tuple[Wire, ...]
    routes: tuple[Route, ...]
    sysctls: tuple[tuple[str, str, str], ...]
    flows: tuple[FlowPlan, ...]
    peps: tuple[PepPlan, ...] = ()
    #: (namespace, nftables ruleset) of transparent PEP nodes
    nft: tuple[tuple[str, str], ...] = ()
    #: (namespace, `ip` arguments) policy routing of transparent PEP nodes
    policy: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: iperf3 reporting interval
    interval_ns: int = 10**9
    notes: tuple[str, ...] = field(default=())
    #: who models the links: `tcplab-emu` between TUN devices, or netem qdiscs on veths
    link: Literal["emu", "netem"] = "emu"
    #: the largest iperf3 `-w` of the flows: net.core.rmem_max/wmem_max must allow it
    socket_buffer_bytes: int | None = None

    @property
    def hosts(self) -> tuple[str, ...]:
        """The flows' sender and receiver namespaces."""
        return tuple(ns for flow in self.flows for ns in (flow.sender_ns, flow.receiver_ns))

    def tun(self, wire: Wire) -> bool:
        """Whether `wire` is two TUN devices (the emulator carries it), not a veth pair."""
        return wire.emulated is not None and self.link == "emu"

    @property
    def emu_netns(self) -> str:
        """The emulator runs in the first router's namespace (so a leftover one is found
        with the namespace)."""
        return self.routers[0]

    def emu_config(self, seed: int, interval_ns: int, measure_ns: int) -> dict[str, Any]:
        """The `tcplab-emu run` configuration of every emulated wire."""
        links = [
            {
                "name": wire.name,
                "a": {"netns": wire.a.netns, "dev": wire.a.dev},
                "b": {"netns": wire.b.netns, "dev": wire.b.dev},
                "forward": dict(wire.emulated["forward"]),
                "reverse": dict(wire.emulated["reverse"]),
            }
            for wire in self.wires
            if wire.emulated is not None and self.tun(wire)
        ]
        return {"seed": seed, "interval_ns": interval_ns, "measure_ns": measure_ns, "links": links}


def netns_name(run_id: str, node: str) -> str:
    return f"{PREFIX}{run_id}-{node}"


def _with_delay(direction: Mapping[str, Any], extra_ns: int) -> dict[str, Any]:
    out = copy.deepcopy(dict(direction))
    out["delay_ns"] = int(out["delay_ns"]) + extra_ns
    if extra_ns and out.get("rate_trace"):
        out["rate_trace"] = [
            [t, rate, None if delay is None else int(delay) + extra_ns]
            for t, rate, delay in out["rate_trace"]
        ]
    return out


def _access_dir(access: Mapping[str, Any], host_side: bool) -> dict[str, Any]:
    limit = access.get("queue_pkts") or (HOST_QUEUE_PKTS if host_side else ROUTER_QUEUE_PKTS)
    return {
        "rate_bps": int(access["rate_bps"]),
        "delay_ns": int(access["delay_ns"]),
        "per": 0.0,
        "ber": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": int(limit)},
    }


def _flow_access(normalized: Mapping[str, Any], flow: Mapping[str, Any]) -> Mapping[str, Any]:
    own = flow.get("access")
    return own if isinstance(own, Mapping) else normalized["access"]


class _Builder:
    """Accumulates the plan's parts; `plan_topology` drives it."""

    def __init__(self, normalized: Mapping[str, Any], run_id: str) -> None:
        self.n = normalized
        self.run_id = run_id
        self.segs = segments(normalized)
        self.flows: list[Mapping[str, Any]] = list(normalized["flows"])
        if not self.segs:
            raise ScenarioError("emulate: the scenario has neither [bottleneck] nor [path]")
        if normalized.get("cross"):
            raise ScenarioError(
                "cross: emulate has no cross-traffic generator; remove the [[cross]] tables "
                "(or run the scenario in the simulator)"
            )
        if len(self.flows) > MAX_FLOWS or len(self.segs) > MAX_SEGMENTS:
            raise ScenarioError(
                f"emulate: at most {MAX_FLOWS} flows and {MAX_SEGMENTS} segments are emulated"
            )
        self.k = len(self.segs)
        self.routers = [netns_name(run_id, f"n{j}") for j in range(self.k + 1)]
        self.wires: list[Wire] = []
        self.routes: list[Route] = []
        self.sysctls: list[tuple[str, str, str]] = []
        self.notes: list[str] = []
        # One shared access link: fold its delay into the end segments. Flows with access
        # links of their own: emulate every access link.
        self.emulate_access = any(flow.get("access") is not None for flow in self.flows)

    def host(self, side: str, i: int) -> str:
        return netns_name(self.run_id, f"{side}{i}")

    def node_addr(self, j: int) -> str:
        """An address of router `n<j>` (its side of an adjacent segment)."""
        return f"10.3.{j}.1" if j < self.k else f"10.3.{j - 1}.2"

    def add_segments(self) -> None:
        fold = 0 if self.emulate_access else int(self.n["access"]["delay_ns"])
        for j, seg in enumerate(self.segs):
            extra = fold * ((j == 0) + (j == self.k - 1))
            dirs = {
                "forward": _with_delay(seg.forward, extra),
                "reverse": _with_delay(seg.reverse, extra),
            }
            a = End(self.routers[j], f"{PREFIX}e{j}a", f"10.3.{j}.1")
            b = End(self.routers[j + 1], f"{PREFIX}e{j}b", f"10.3.{j}.2")
            self.wires.append(Wire(seg.name, a, b, dirs, segment=True))

    def add_hosts(self) -> None:
        first, last = self.routers[0], self.routers[-1]
        for i, flow in enumerate(self.flows):
            access = _flow_access(self.n, flow)
            fwd_s = rev_s = fwd_c = rev_c = None
            if self.emulate_access:
                fwd_s, rev_s = _access_dir(access, True), _access_dir(access, False)
                fwd_c, rev_c = _access_dir(access, False), _access_dir(access, True)
            sender, receiver = self.host("s", i), self.host("c", i)
            self.wires.append(
                Wire(
                    f"access.s{i}",
                    End(sender, HOST_DEV, f"10.1.{i}.2"),
                    End(first, f"{PREFIX}s{i}", f"10.1.{i}.1"),
                    None if fwd_s is None else {"forward": fwd_s, "reverse": rev_s},
                )
            )
            self.wires.append(
                Wire(
                    f"access.c{i}",
                    End(last, f"{PREFIX}c{i}", f"10.2.{i}.1"),
                    End(receiver, HOST_DEV, f"10.2.{i}.2"),
                    None if fwd_c is None else {"forward": fwd_c, "reverse": rev_c},
                )
            )

    def add_router_routes(self) -> None:
        for j, ns in enumerate(self.routers):
            left = (f"10.3.{j - 1}.1", f"{PREFIX}e{j - 1}b") if j > 0 else None
            right = (f"10.3.{j}.2", f"{PREFIX}e{j}a") if j < self.k else None
            if left is not None:
                self.routes.append(Route(ns, "10.1.0.0/16", *left))
            if right is not None:
                self.routes.append(Route(ns, "10.2.0.0/16", *right))
            for m in range(self.k):
                if m < j - 1 and left is not None:
                    self.routes.append(Route(ns, f"10.3.{m}.0/24", *left))
                elif m > j and right is not None:
                    self.routes.append(Route(ns, f"10.3.{m}.0/24", *right))
            self.sysctls += [
                (ns, "net.ipv4.ip_forward", "1"),
                (ns, "net.ipv4.conf.all.rp_filter", "0"),
                (ns, "net.ipv4.conf.default.rp_filter", "0"),
            ]

    def flow_plan(self, i: int, flow: Mapping[str, Any]) -> FlowPlan:
        sender, receiver = self.host("s", i), self.host("c", i)
        app = flow["app"]
        kind: Literal["tcp", "cbr"] = "cbr" if app["kind"] == "cbr" else "tcp"
        cca = str(flow.get("cca", "cubic"))
        tcp = kernel_tcp(flow.get("tcp") or {}, cca, f"flows[{i}]")
        self.notes += tcp.notes
        if flow.get("cca_params"):
            self.notes.append(f"flows[{i}].cca_params: kernel module parameters are not set")
        for ns in (sender, receiver):
            self.sysctls += [(ns, key, value) for key, value in tcp.sysctls.items()]
        self.routes.append(Route(sender, "default", f"10.1.{i}.1", HOST_DEV, tcp.sender_route))
        self.routes.append(Route(receiver, "default", f"10.2.{i}.1", HOST_DEV, tcp.receiver_route))
        duration_ns = int(self.n["duration_ns"])
        start_ns = int(flow.get("start_ns", 0))
        run_ns = max(duration_ns - start_ns, 10**9)
        run_s = max(1, round(run_ns / 1e9))
        if run_s * 10**9 != run_ns:
            self.notes.append(f"flows[{i}]: iperf3 runs whole seconds; {run_s} s instead")
        return FlowPlan(
            id=i,
            kind=kind,
            cca=cca,
            sender_ns=sender,
            receiver_ns=receiver,
            receiver_addr=f"10.2.{i}.2",
            connect_addr=f"10.2.{i}.2",
            connect_port=IPERF_PORT,
            start_ns=start_ns,
            run_s=run_s,
            size_bytes=int(app["size_bytes"]) if app["kind"] == "file" else None,
            window_bytes=tcp.window_bytes,
            cbr_rate_bps=int(app["rate_bps"]) if kind == "cbr" else None,
            cbr_packet_bytes=int(app["packet_bytes"]) if kind == "cbr" else None,
            mss_bytes=int(
                (flow.get("tcp") or {}).get("mss_bytes", LIMITS.tcp_defaults["mss_bytes"])
            ),
        )


def _pep_nodes(normalized: Mapping[str, Any], k: int) -> list[tuple[str, int]]:
    """(name, router index) of the PEPs: the node before the satellite segment, and for a
    distributed PEP also the node after it."""
    mode = pep_mode(normalized)
    if mode == "none":
        return []
    sat = path_info(normalized).satellite_segment
    nodes = [("pep1", sat)]
    if mode == "distributed":
        nodes.append(("pep2", sat + 1))
    return nodes


def _add_peps(
    b: _Builder, plan_flows: list[FlowPlan], mode: PepMode
) -> tuple[list[PepPlan], list[tuple[str, str]], list[tuple[str, tuple[str, ...]]]]:
    nodes = _pep_nodes(b.n, b.k)
    peps: list[PepPlan] = []
    rules: dict[str, list[str]] = {}
    for flow, fp in zip(b.flows, plan_flows, strict=True):
        pep = flow.get("pep")
        if not nodes or fp.kind != "tcp" or not isinstance(pep, Mapping):
            continue
        port = PEP_PORT_BASE + fp.id
        sat_cca = str(pep.get("cca", fp.cca))
        for position, (name, j) in enumerate(nodes):
            next_hop = (
                f"{b.node_addr(nodes[position + 1][1])}:{port}"
                if position + 1 < len(nodes)
                else f"{fp.receiver_addr}:{IPERF_PORT}"
            )
            first = position == 0
            peps.append(
                PepPlan(
                    flow_id=fp.id,
                    node=name,
                    netns=b.routers[j],
                    port=port,
                    upstream=None if mode == "transparent" else next_hop,
                    cca_upstream=sat_cca if first else fp.cca,
                    cca_downstream=fp.cca if first else sat_cca,
                    buffer_bytes=int(pep.get("buffer_bytes", LIMITS.default_pep_buffer_bytes)),
                )
            )
            ingress = f"{PREFIX}s{fp.id}" if j == 0 else f"{PREFIX}e{j - 1}b"
            rules.setdefault(b.routers[j], []).append(
                f'iifname "{ingress}" ip daddr {fp.receiver_addr} tcp dport {IPERF_PORT} '
                f"tproxy to :{port} meta mark set {TPROXY_MARK} accept"
            )
    if mode == "explicit":
        for i, fp in enumerate(plan_flows):
            if any(p.flow_id == fp.id for p in peps):
                first_node = nodes[0][1]
                plan_flows[i] = replace(
                    fp, connect_addr=b.node_addr(first_node), connect_port=PEP_PORT_BASE + fp.id
                )
        return peps, [], []
    nft = [(ns, _tproxy_ruleset(lines)) for ns, lines in rules.items()]
    policy: list[tuple[str, tuple[str, ...]]] = [
        (ns, cmd)
        for ns in rules
        for cmd in (
            ("rule", "add", "fwmark", str(TPROXY_MARK), "lookup", str(TPROXY_TABLE)),
            ("route", "add", "local", "0.0.0.0/0", "dev", "lo", "table", str(TPROXY_TABLE)),
        )
    ]
    return peps, nft, policy


def _tproxy_ruleset(lines: list[str]) -> str:
    body = "\n".join(f"    {line}" for line in lines)
    return (
        "table ip tcplab {\n"
        "  chain prerouting {\n"
        "    type filter hook prerouting priority mangle; policy accept;\n"
        f"    meta l4proto tcp socket transparent 1 meta mark set {TPROXY_MARK} accept\n"
        f"{body}\n"
        "  }\n"
        "}\n"
    )


def plan_topology(normalized: Mapping[str, Any], run_id: str, pep: PepMode = "transparent") -> Plan:
    """The plan for a normalized scenario (docs/interface.md), namespaces named
    `tcplab-<run_id>-<node>`; `pep`: how PEPs intercept connections."""
    b = _Builder(normalized, run_id)
    b.add_segments()
    b.add_hosts()
    b.add_router_routes()
    flows = [b.flow_plan(i, flow) for i, flow in enumerate(b.flows)]
    peps, nft, policy = _add_peps(b, flows, pep)
    # A PEP node's TCP options: those of the first flow it relays (sysctls are per node).
    for p in {p.netns: p for p in reversed(peps)}.values():
        pep_cfg = b.flows[p.flow_id]["pep"]
        tcp = kernel_tcp(pep_cfg.get("tcp") or {}, p.cca_upstream, f"flows[{p.flow_id}].pep")
        b.sysctls += [(p.netns, key, value) for key, value in tcp.sysctls.items()]
    hosts = [name for fp in flows for name in (fp.sender_ns, fp.receiver_ns)]
    windows = [fp.window_bytes for fp in flows if fp.window_bytes is not None]
    interval_ns = max(
        int(normalized.get("interval_ns", LIMITS.default_interval_ns)), IPERF_MIN_INTERVAL_NS
    )
    return Plan(
        run_id=run_id,
        namespaces=(*b.routers, *hosts),
        routers=tuple(b.routers),
        wires=tuple(b.wires),
        routes=tuple(b.routes),
        sysctls=tuple(b.sysctls),
        flows=tuple(flows),
        peps=tuple(peps),
        nft=tuple(nft),
        policy=tuple(policy),
        interval_ns=interval_ns,
        notes=tuple(dict.fromkeys(b.notes)),
        socket_buffer_bytes=max(windows) if windows else None,
    )
