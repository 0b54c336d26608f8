"""A built topology with its links running (the emulator, or netem qdiscs), as a context
manager: everything started inside is stopped, and every namespace deleted, when the block
ends (see `cleanup`)."""

from __future__ import annotations

import json
import signal
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from . import commands, netem, netns
from .bins import require_binary
from .cleanup import Cleanup, guarded
from .errors import EmulationError
from .options import EmulateOptions
from .plan import Plan
from .procs import Proc

_READY_TIMEOUT_S: Final = 15.0


@dataclass
class Topology:
    """The namespaces of `plan`, a work directory and the emulator (or the netem qdiscs'
    counters at the measurement's start); `measure_ns`: the measured time (utilization)."""

    plan: Plan
    workdir: Path
    cleanup: Cleanup
    options: EmulateOptions
    measure_ns: int = 0
    emu: Proc | None = None
    qdiscs_at_start: dict[str, netem.Counters] | None = None
    #: the scenario's t = 0 on the real-time clock (ns since the epoch; packet captures)
    t0_real_ns: int | None = None

    def start(self, name: str, ns: str, argv: list[str], out: Path | None) -> Proc:
        """A child in namespace `ns`, killed at cleanup if it is still running."""
        proc = Proc(name, ns, argv, out)
        self.cleanup.push(f"stop {name}", lambda: proc.stop(signal.SIGKILL, 1.0))
        return proc

    def start_ready(self, name: str, ns: str, argv: list[str], err: Path | None = None) -> Proc:
        """A child that prints `ready` when it is (emulator, PEP); stopped with SIGTERM
        (at cleanup too, whatever ends the run); stderr to `err` if given."""
        proc = Proc(name, ns, argv, None, err)
        self.cleanup.push(f"stop {name}", lambda: proc.stop(signal.SIGTERM, 5.0))
        proc.wait_line("ready", _READY_TIMEOUT_S)
        return proc

    def start_emulator(self, seed: int, measure_ns: int) -> Proc:
        """`tcplab-emu` on every emulated wire, in the first router's namespace."""
        config = self.plan.emu_config(seed, self.plan.interval_ns, measure_ns)
        path = self.workdir / "emu.json"
        path.write_text(json.dumps(config))
        argv = [
            str(require_binary("tcplab-emu")),
            "run",
            str(path),
            "--stats",
            str(self.report_path),
            "--spin-us",
            str(self.options.spin_us),
            "--rt-prio",
            str(self.options.rt_prio),
        ]
        self.emu = self.start_ready("tcplab-emu", self.plan.emu_netns, argv)
        return self.emu

    @property
    def report_path(self) -> Path:
        return self.workdir / "emu-report.json"

    def start_measurement(self) -> None:
        """The scenario's t = 0 for the emulator's counters, series, outages and traces
        (netem: the qdiscs' counters are read, to be subtracted at the end)."""
        self.t0_real_ns = time.time_ns()
        if self.emu is not None:
            self.emu.send_signal(signal.SIGUSR1)
        elif self.plan.link == "netem":
            self.qdiscs_at_start = self._qdisc_counters()

    def _qdisc_counters(self) -> dict[str, netem.Counters]:
        out = {}
        for direction in netem.shaped(self.plan):
            shown = json.loads(commands.run(netem.stats_command(direction)) or "[]")
            out[direction.name] = netem.Counters.parse(shown)
        return out

    def _netem_report(self) -> dict[str, Any]:
        """The netem links' counters since `start_measurement`, shaped like the emulator's
        report."""
        now = self._qdisc_counters()
        before = self.qdiscs_at_start or {}
        links = [
            netem.link_report(
                d, now[d.name].minus(before.get(d.name, netem.Counters())), self.measure_ns
            )
            for d in netem.shaped(self.plan)
        ]
        return {"links": links}

    def stop_emulator(self) -> dict[str, Any]:
        """Stop the emulator (SIGTERM: it writes its report) and read the report; with
        netem links, their counters instead."""
        if self.plan.link == "netem":
            return self._netem_report()
        if self.emu is None:
            return {}
        self.emu.stop(signal.SIGTERM, 10.0)
        if not self.report_path.exists():
            raise EmulationError(f"tcplab-emu wrote no report: {self.emu.stderr_tail()}")
        report: dict[str, Any] = json.loads(self.report_path.read_text())
        return report


@contextmanager
def topology(
    plan: Plan, normalized: Mapping[str, Any], options: EmulateOptions, measure_ns: int
) -> Iterator[Topology]:
    """Build `plan`, start the emulator (netem: the qdiscs are part of the build), yield;
    undo everything afterwards."""
    with tempfile.TemporaryDirectory(prefix="tcplab-emulate-") as tmp:
        cleanup = Cleanup()
        with guarded(cleanup):
            netns.build(plan, cleanup, keep=options.keep, say=options.say)
            topo = Topology(plan, Path(tmp), cleanup, options, measure_ns)
            if plan.link == "emu":
                topo.start_emulator(int(normalized.get("seed", 0)), measure_ns)
            yield topo
        if cleanup.errors:
            options.say("cleanup: " + "; ".join(cleanup.errors))
