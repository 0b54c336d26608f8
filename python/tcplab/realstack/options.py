"""Options of an emulation (shared by `emulate`, `calibrate` and `validate`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from ..trace.request import Trace


@dataclass(frozen=True)
class EmulateOptions:
    """`pep`: how PEPs intercept connections (auto: TPROXY if the kernel has it, else
    explicit); `keep`: leave the namespaces for inspection (`tcplab emulate --cleanup`
    removes them); `spin_us`: the emulator's busy-wait before each departure; `rt_prio`: run
    the emulator under SCHED_FIFO at this priority (0: normal scheduling; measured to cut
    its p99 lateness from milliseconds to tens of microseconds while TCP runs beside it);
    `link`: who models the links (auto: tc netem + tbf where the kernel has them and the
    scenario fits them, else tcplab-emu; see `netem`); `note`: where notes about the
    emulation go (e.g. stderr); `capture`: pcapng captures at both ends of the bottleneck
    (or of the segments it names), taken with tcpdump on the emulator's TUN devices
    (`capture`; its `events` is not for the kernel)."""

    pep: Literal["auto", "transparent", "explicit"] = "auto"
    keep: bool = False
    spin_us: int = 50
    rt_prio: int = 10
    link: Literal["auto", "emu", "netem"] = "auto"
    note: Callable[[str], None] | None = None
    capture: Trace | None = None

    def say(self, message: str) -> None:
        if self.note is not None:
            self.note(message)
