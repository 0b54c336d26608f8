"""What the machine offers the real-stack mode, checked before anything is built.

Every check raises `MissingFeature` with one line saying what is missing and how to get it;
`missing()` collects the reasons instead (tests skip with them).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Final

from . import commands
from .bins import find_binary, require_binary
from .cleanup import new_run_id
from .errors import EmulationError, MissingFeature
from .plan import PREFIX

_AVAILABLE_CCAS: Final = Path("/proc/sys/net/ipv4/tcp_available_congestion_control")
_TUN: Final = Path("/dev/net/tun")


def check_root() -> None:
    if os.geteuid() != 0:
        raise MissingFeature(
            "tcplab emulate needs root (network namespaces, TUN devices, sysctls): run it as root"
        )


def check_tun() -> None:
    if not _TUN.exists():
        raise MissingFeature("/dev/net/tun is missing: the kernel has no TUN support (CONFIG_TUN)")


def check_netns() -> None:
    if not Path("/proc/self/ns/net").exists():
        raise MissingFeature("the kernel has no network namespaces (CONFIG_NET_NS)")


def kernel_ccas() -> list[str]:
    """Congestion controls the running kernel offers (empty if it does not say)."""
    try:
        return _AVAILABLE_CCAS.read_text(encoding="ascii").split()
    except OSError:
        return []


def check_ccas(named: Iterable[tuple[str, str]]) -> None:
    """Each `(field, cca)` must be a kernel algorithm, e.g. `("flows[0].cca", "hybla")`."""
    available = kernel_ccas()
    for field, cca in named:
        if cca not in available:
            allowed = ", ".join(available) or "none listed"
            raise MissingFeature(
                f'{field} = "{cca}": the kernel has no such congestion control; '
                f"available: {allowed}"
            )


def check_base(extra_binaries: Sequence[str] = ()) -> None:
    """Root, namespaces, TUN, `ip`, `iperf3`, `tcplab-emu` and `extra_binaries`."""
    check_root()
    check_netns()
    check_tun()
    for name in ("ip", "iperf3", "tcplab-emu", *extra_binaries):
        require_binary(name)


def missing(extra_binaries: Sequence[str] = ()) -> str | None:
    """Why the real-stack mode cannot run here, or None if it can."""
    try:
        check_base(extra_binaries)
    except MissingFeature as exc:
        return str(exc)
    return None


#: A minimal TPROXY ruleset: fails to load when the kernel lacks nft_tproxy/nft_socket.
_TPROXY_PROBE: Final = """\
table ip tcplab_probe {
  chain prerouting {
    type filter hook prerouting priority mangle; policy accept;
    meta l4proto tcp socket transparent 1 meta mark set 1 accept
    meta l4proto tcp ip daddr 192.0.2.1 tcp dport 9 tproxy to :9 meta mark set 1 accept
  }
}
"""


def tproxy_support(probe_netns: str) -> str | None:
    """None if TPROXY rules load (nftables `tproxy` and `socket`), else why not. Tried in a
    scratch namespace `probe_netns`, created and removed here."""
    if find_binary("nft") is None:
        return "nft not found (make system-deps installs nftables)"
    try:
        commands.run(["ip", "netns", "add", probe_netns])
    except EmulationError as exc:
        return str(exc)
    try:
        commands.run(commands.in_netns(probe_netns, ["nft", "-f", "-"]), stdin=_TPROXY_PROBE)
    except EmulationError as exc:
        return f"the kernel rejects TPROXY rules ({exc})"
    finally:
        commands.run(["ip", "netns", "del", probe_netns], check=False)
    return None


#: Minimal arguments of each qdisc the netem link backend may need (`netem.qdisc_kinds`).
_PROBE_QDISCS: Final = {
    "netem": ("netem", "delay", "1ms", "loss", "random", "1%"),
    "tbf": ("tbf", "rate", "1mbit", "burst", "1600", "limit", "3000"),
    "pfifo": ("pfifo", "limit", "10"),
    "bfifo": ("bfifo", "limit", "15000"),
    "codel": ("codel", "limit", "10"),
}


@functools.cache
def link_qdisc_support(kinds: tuple[str, ...]) -> str | None:
    """None if `tc`, `ethtool` and every qdisc in `kinds` are there, else why not (one
    line). The qdiscs are added to a veth (the kernel may lack dummy devices) in a scratch
    namespace, created and removed here; the answer is kept for the process, since the
    kernel does not change under it."""
    try:
        for tool in ("tc", "ethtool"):
            require_binary(tool)
    except MissingFeature as exc:
        return str(exc)
    probe = f"{PREFIX}{new_run_id()}-probe"
    try:
        commands.run(["ip", "netns", "add", probe])
    except EmulationError as exc:
        return str(exc)
    try:
        commands.run(["ip", "-n", probe, "link", "add", "p0", "type", "veth", "peer", "name", "p1"])
        for kind in kinds:
            try:
                commands.run(
                    [
                        "tc",
                        "-n",
                        probe,
                        "qdisc",
                        "replace",
                        "dev",
                        "p0",
                        "root",
                        *_PROBE_QDISCS[kind],
                    ]
                )
            except EmulationError as exc:
                said = str(exc).rsplit(": ", 1)[-1]
                return f"the kernel has no sch_{kind} (CONFIG_NET_SCH_{kind.upper()}; tc: {said})"
    except EmulationError as exc:
        return str(exc)
    finally:
        commands.run(["ip", "netns", "del", probe], check=False)
    return None
