"""A flow's `tcp` options (the normalized `TcpConfig`) as Linux settings.

Most options are per-network-namespace sysctls, and every host has its own namespace, so
each flow gets exactly its options. The rest are route attributes (`initcwnd`, `advmss`,
`quickack`) or iperf3 arguments (`-w` for a receive window other than Linux's default).
Options Linux cannot express are listed as notes rather than silently dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..limits import LIMITS

#: Linux's defaults (net.ipv4.tcp_rmem / tcp_wmem: min, default, max); the simulator's
#: default rwnd is the 6 MiB maximum of tcp_rmem.
DEFAULT_RWND_BYTES: Final[int] = LIMITS.tcp_defaults["rwnd_bytes"]
LINUX_RMEM: Final = f"4096 131072 {DEFAULT_RWND_BYTES}"
LINUX_WMEM: Final = "4096 16384 4194304"
#: MSS option of a 1500-byte MTU (payload 1448 with the 12-byte timestamp option).
MTU_ADVMSS: Final = LIMITS.mtu_bytes - LIMITS.header_bytes
TIMESTAMP_OPTION_BYTES: Final = LIMITS.timestamp_option_bytes
DEFAULT_IW_PKTS: Final[int] = LIMITS.tcp_defaults["initial_window_pkts"]


def _flag(value: bool) -> str:
    return "1" if value else "0"


def _at_least(triple: str, max_bytes: int) -> str:
    """A tcp_rmem/tcp_wmem triple whose maximum is at least `max_bytes` (a window larger
    than Linux's default needs buffers that large; see `sockbuf` for the global ceilings)."""
    low, default, high = triple.split()
    return f"{low} {default} {max(int(high), max_bytes)}"


@dataclass(frozen=True)
class KernelTcp:
    """How one flow's TCP options are set on its hosts."""

    sysctls: Mapping[str, str]
    #: attributes of the sender's default route (`initcwnd`, `advmss`)
    sender_route: tuple[str, ...]
    #: attributes of the receiver's default route (`advmss`, `quickack`)
    receiver_route: tuple[str, ...]
    #: iperf3 `-w` (socket buffers; net.core.rmem_max/wmem_max must allow it, see `sockbuf`)
    #: or None for Linux's autotuning up to 6 MiB
    window_bytes: int | None
    notes: tuple[str, ...]


def kernel_tcp(tcp: Mapping[str, Any], cca: str, where: str) -> KernelTcp:
    """Map the normalized `tcp` table of `where` (e.g. `flows[0]`) to Linux settings."""
    rwnd = int(tcp.get("rwnd_bytes", DEFAULT_RWND_BYTES))
    sack = bool(tcp.get("sack", True))
    timestamps = bool(tcp.get("timestamps", True))
    random_offset = bool(tcp.get("random_ts_offset", True))
    sysctls = {
        "net.ipv4.tcp_sack": _flag(sack),
        "net.ipv4.tcp_dsack": _flag(bool(tcp.get("dsack", True))),
        # 1: timestamps with a random per-connection offset (Linux >= 4.10), 2: without
        "net.ipv4.tcp_timestamps": ("1" if random_offset else "2") if timestamps else "0",
        "net.ipv4.tcp_window_scaling": _flag(bool(tcp.get("window_scaling", True))),
        "net.ipv4.tcp_frto": "2" if tcp.get("frto", True) else "0",
        "net.ipv4.tcp_ecn": "1" if tcp.get("ecn", False) else "2",
        "net.ipv4.tcp_slow_start_after_idle": _flag(bool(tcp.get("slow_start_after_idle", True))),
        "net.ipv4.tcp_recovery": "1" if tcp.get("rack", True) else "0",
        "net.ipv4.tcp_early_retrans": "3" if tcp.get("tlp", True) else "0",
        "net.ipv4.tcp_rmem": _at_least(LINUX_RMEM, rwnd),
        "net.ipv4.tcp_wmem": _at_least(LINUX_WMEM, rwnd),
        "net.ipv4.tcp_no_metrics_save": "1",
    }
    notes: list[str] = []
    mss = int(tcp.get("mss_bytes", LIMITS.tcp_defaults["mss_bytes"]))
    advmss = mss + (TIMESTAMP_OPTION_BYTES if timestamps else 0)
    if advmss > MTU_ADVMSS:
        notes.append(f"{where}.tcp.mss = {mss}: larger than a 1500-byte MTU allows; capped")
        advmss = MTU_ADVMSS
    mss_route = ("advmss", str(advmss)) if advmss != MTU_ADVMSS else ()
    iw = int(tcp.get("initial_window_pkts", DEFAULT_IW_PKTS))
    sender_route = (*(("initcwnd", str(iw)) if iw != DEFAULT_IW_PKTS else ()), *mss_route)
    quickack = () if tcp.get("delayed_ack", True) else ("quickack", "1")
    if not tcp.get("prr", True):
        notes.append(f"{where}.tcp.prr = false: Linux always uses PRR; emulated with PRR")
    if tcp.get("fack", False):
        notes.append(f"{where}.tcp.fack = true: FACK was removed from Linux 4.15; ignored")
    if tcp.get("pacing", False) and cca != "bbr":
        notes.append(
            f"{where}.tcp.pacing = true: Linux paces {cca} only under sch_fq; not emulated"
        )
    if not tcp.get("tso", True):
        notes.append(f"{where}.tcp.tso = false: the kernel keeps TSO/GSO on; not emulated")
    if tcp.get("stack", "linux") != "linux":
        notes.append(f"{where}.tcp.stack = {tcp.get('stack')!r}: the kernel's own TCP runs")
    return KernelTcp(
        sysctls=sysctls,
        sender_route=sender_route,
        receiver_route=(*mss_route, *quickack),
        window_bytes=None if rwnd == DEFAULT_RWND_BYTES else rwnd,
        notes=tuple(notes),
    )
