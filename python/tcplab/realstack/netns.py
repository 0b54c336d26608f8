"""Build a `Plan` out of real namespaces, devices, addresses, routes, sysctls, rules and
(with `link = "netem"`) the links' qdiscs.

Every namespace is registered with the `Cleanup` right after it is created, so whatever
fails later, deleting the namespaces removes everything (devices, addresses, routes,
nftables rules and policy routing all live inside them).
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable

from . import commands, netem, sockbuf
from .cleanup import Cleanup, delete_netns
from .plan import End, Plan, Wire

_NO_IPV6 = ("net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")


def _ip(netns: str, *args: str) -> None:
    commands.run(["ip", "-n", netns, *args])


def _create_wire(wire: Wire, tun: bool) -> None:
    if not tun:
        commands.run(
            [
                "ip",
                "link",
                "add",
                wire.a.dev,
                "netns",
                wire.a.netns,
                "type",
                "veth",
                "peer",
                "name",
                wire.b.dev,
                "netns",
                wire.b.netns,
            ]
        )
    else:
        for end in (wire.a, wire.b):
            _ip(end.netns, "tuntap", "add", "mode", "tun", "name", end.dev)
    for end, peer in ((wire.a, wire.b), (wire.b, wire.a)):
        _address(end, peer)


def _address(end: End, peer: End) -> None:
    _ip(end.netns, "addr", "add", end.addr, "peer", peer.addr, "dev", end.dev)
    _ip(end.netns, "link", "set", end.dev, "up")


def build(
    plan: Plan,
    cleanup: Cleanup,
    *,
    keep: bool = False,
    say: Callable[[str], None] = lambda _: None,
) -> None:
    """Create everything in `plan`; unless `keep`, `cleanup` deletes it again (a global
    sysctl raised for large socket buffers is put back either way); notes go to `say`."""
    for netns in plan.namespaces:
        commands.run(["ip", "netns", "add", netns])
        if not keep:
            cleanup.push(f"delete {netns}", functools.partial(delete_netns, netns))
        _ip(netns, "link", "set", "lo", "up")
    sysctls: defaultdict[str, list[str]] = defaultdict(lambda: list(_NO_IPV6))
    for netns, key, value in plan.sysctls:
        sysctls[netns].append(f"{key}={value}")
    for netns in plan.namespaces:
        commands.run(commands.in_netns(netns, ["sysctl", "-q", "-w", *sysctls[netns]]))
    sockbuf.raise_ceilings(plan.socket_buffer_bytes, plan.hosts, cleanup, say)
    for wire in plan.wires:
        _create_wire(wire, plan.tun(wire))
    if plan.link == "netem":
        for argv in netem.link_commands(plan):
            commands.run(argv)
    for route in plan.routes:
        commands.run(route.argv())
    for netns, ruleset in plan.nft:
        commands.run(commands.in_netns(netns, ["nft", "-f", "-"]), stdin=ruleset)
    for netns, args in plan.policy:
        _ip(netns, *args)
