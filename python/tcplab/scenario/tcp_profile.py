"""TCP stack profiles: the value of every `[flows.tcp]` option the user did not give.

`stack = "linux"` (the default) models Linux 4.x to 6.x with its default sysctls; `stack = "ns2"`
models ns-2's one-way TCP agents (`Agent/TCP/*` with `TCPSink`) as configured by
`ns-default.tcl`. A profile only fills options that are absent: an explicit value always wins.

The SACK-based options (`dsack`, `fack`, `rack`, `tlp`) need SACK. When not given they follow
the resolved `sack` (the profile's default when SACK is on, false when it is off); an explicit
`true` while SACK is off is a conflict that `check_tcp_conflicts` reports, never silently
dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

from ..errors import field_error
from ..limits import LIMITS
from .model import TcpSpec

#: ns-2 `Agent/TCP set windowInit_`. Provisional (ns-default.tcl has said 2 since the 2001
#: change; the test suites pin 1): the core team is confirming it. The only place it is set.
NS2_INITIAL_WINDOW_PKTS: Final = 2
#: ns-2 `packetSize_` is the TCP segment size (payload); headers add 40 B on the wire.
NS2_MSS_BYTES: Final = 1000
#: ns-2 `window_` (receiver window) is 20 packets.
NS2_RWND_PKTS: Final = 20
#: ns-2 agents that use SACK blocks (`Agent/TCP/Sack1`, `Agent/TCP/Fack`); every other agent
#: (Tahoe, Reno, NewReno, Vegas, ...) has no SACK.
NS2_SACK_CCAS: Final = frozenset({"sack", "fack"})
#: options that need SACK; they follow `sack` when not given
SACK_OPTIONS: Final = ("dsack", "fack", "rack", "tlp")
#: largest receive window without the RFC 7323 window scale option
NO_WSCALE_MAX_RWND_BYTES: Final = LIMITS.no_wscale_max_rwnd_bytes
#: the core's `TcpConfig::default()`: Linux's defaults, kept in one place
_CORE_TCP: Final = LIMITS.tcp_defaults
#: Linux's default tcp_rmem maximum (6 MiB)
LINUX_RWND_BYTES: Final[int] = _CORE_TCP["rwnd_bytes"]


@dataclass(frozen=True)
class TcpOptions:
    """Every TCP option with its final value; field names are the core's (`TcpConfig`)."""

    stack: str
    mss_bytes: int
    sack: bool
    dsack: bool
    fack: bool
    rack: bool
    tlp: bool
    frto: bool
    prr: bool
    timestamps: bool
    random_ts_offset: bool
    delayed_ack: bool
    initial_window_pkts: int
    rwnd_bytes: int  # as given or defaulted; the 65535 cap is applied by `effective_rwnd_bytes`
    window_scaling: bool
    pacing: bool
    tso: bool
    ecn: bool
    slow_start_after_idle: bool

    @property
    def effective_rwnd_bytes(self) -> int:
        """Without window scaling the receiver cannot announce more than 65535 bytes."""
        if self.window_scaling:
            return self.rwnd_bytes
        return min(self.rwnd_bytes, NO_WSCALE_MAX_RWND_BYTES)


@dataclass(frozen=True)
class _Profile:
    """A stack's fixed defaults; `sack` and `rwnd` depend on the flow (`_default_sack`,
    `_default_rwnd_bytes`)."""

    mss_bytes: int
    dsack: bool
    fack: bool
    rack: bool
    tlp: bool
    frto: bool
    prr: bool
    timestamps: bool
    random_ts_offset: bool
    delayed_ack: bool
    initial_window_pkts: int
    window_scaling: bool
    pacing: bool
    tso: bool
    ecn: bool
    slow_start_after_idle: bool


#: Linux defaults, which are the core's own (`TcpConfig::default()`): net.ipv4.tcp_{sack,dsack,
#: timestamps,window_scaling,frto,slow_start_after_idle} = 1, tcp_recovery = RACK (with TLP),
#: PRR, tcp_ecn = 2 (answer only, never ask), IW10 (RFC 6928), MSS 1448 (a 1500 B MTU less
#: 40 B of headers and the 12 B timestamp option), no FACK (removed in 4.15), no pacing
#: without fq/BBR, TSO/GSO on.
LINUX: Final = _Profile(**{f.name: _CORE_TCP[f.name] for f in fields(_Profile)})

#: ns-2 defaults (ns-default.tcl): packetSize_ 1000, timestamps_ false, TCPSink (no delayed
#: ACKs), windowInit_ 2, no DSACK/RACK/TLP/F-RTO/PRR, no pacing or TSO, ecn_ 0, no window scaling;
#: slow_start_restart_ true, which is Linux's slow_start_after_idle.
NS2: Final = _Profile(
    mss_bytes=NS2_MSS_BYTES,
    dsack=False,
    fack=False,
    rack=False,
    tlp=False,
    frto=False,
    prr=False,
    timestamps=False,
    # ns-2's timestamps carry the clock as it is; they are off here anyway
    random_ts_offset=False,
    delayed_ack=False,
    initial_window_pkts=NS2_INITIAL_WINDOW_PKTS,
    window_scaling=False,
    pacing=False,
    tso=False,
    ecn=False,
    slow_start_after_idle=True,
)

PROFILES: Final = {"linux": LINUX, "ns2": NS2}


def _pick(given: bool | None, default: bool) -> bool:
    return default if given is None else given


def _default_sack(stack: str, cca: str) -> bool:
    return cca in NS2_SACK_CCAS if stack == "ns2" else bool(_CORE_TCP["sack"])


def _default_rwnd_bytes(stack: str, mss_bytes: int) -> int:
    return NS2_RWND_PKTS * mss_bytes if stack == "ns2" else LINUX_RWND_BYTES


def resolve_tcp(tcp: TcpSpec, cca: str) -> TcpOptions:
    """Fill every option the user left out from the stack profile (see module doc)."""
    profile = PROFILES[tcp.stack]
    mss_bytes = profile.mss_bytes if tcp.mss_bytes is None else tcp.mss_bytes
    sack = _pick(tcp.sack, _default_sack(tcp.stack, cca))
    rwnd_bytes = tcp.rwnd_bytes
    if rwnd_bytes is None:
        rwnd_bytes = _default_rwnd_bytes(tcp.stack, mss_bytes)
    return TcpOptions(
        stack=tcp.stack,
        mss_bytes=mss_bytes,
        sack=sack,
        dsack=_pick(tcp.dsack, profile.dsack and sack),
        fack=_pick(tcp.fack, profile.fack and sack),
        rack=_pick(tcp.rack, profile.rack and sack),
        tlp=_pick(tcp.tlp, profile.tlp and sack),
        frto=_pick(tcp.frto, profile.frto),
        prr=_pick(tcp.prr, profile.prr),
        timestamps=_pick(tcp.timestamps, profile.timestamps),
        random_ts_offset=_pick(tcp.random_ts_offset, profile.random_ts_offset),
        delayed_ack=_pick(tcp.delayed_ack, profile.delayed_ack),
        initial_window_pkts=(
            profile.initial_window_pkts
            if tcp.initial_window_pkts is None
            else tcp.initial_window_pkts
        ),
        rwnd_bytes=rwnd_bytes,
        window_scaling=_pick(tcp.window_scaling, profile.window_scaling),
        pacing=_pick(tcp.pacing, profile.pacing),
        tso=_pick(tcp.tso, profile.tso),
        ecn=_pick(tcp.ecn, profile.ecn),
        slow_start_after_idle=_pick(tcp.slow_start_after_idle, profile.slow_start_after_idle),
    )


def check_tcp_conflicts(path: str, tcp: TcpSpec, cca: str) -> None:
    """Raise `ScenarioError` for an option that cannot take effect as written.

    * a SACK-based option set to true while SACK is off (given or by the profile);
    * with `stack = "ns2"`, an `rwnd` (given, or 20 x mss) above 65535 bytes while the
      profile turned window scaling off: the core would cap it at 65535 bytes, which ns-2
      (whose window is a packet count) never does.
    """
    options = resolve_tcp(tcp, cca)
    for name in SACK_OPTIONS:
        if getattr(tcp, name) is True and not options.sack:
            if tcp.sack is False:
                problem = "needs SACK, but sack = false"
            else:
                problem = f'needs SACK, which stack = "{tcp.stack}" turns off for cca "{cca}"'
            raise field_error(f"{path}.{name}", True, problem, f"{name} = false, or sack = true")
    if (
        tcp.stack == "ns2"
        and tcp.window_scaling is None
        and options.rwnd_bytes > NO_WSCALE_MAX_RWND_BYTES
    ):
        implied = "" if tcp.rwnd_bytes is not None else f" ({NS2_RWND_PKTS} x mss)"
        raise field_error(
            f"{path}.rwnd",
            options.rwnd_bytes,
            f'above {NO_WSCALE_MAX_RWND_BYTES} bytes{implied}, but stack = "ns2" turns '
            f"window_scaling off (the window would be capped at {NO_WSCALE_MAX_RWND_BYTES} bytes)",
            f"window_scaling = true, or rwnd <= {NO_WSCALE_MAX_RWND_BYTES}",
        )
