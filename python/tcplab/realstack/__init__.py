"""Real-stack mode: run a scenario on the Linux kernel's own TCP.

`emulate()` builds the scenario's topology out of network namespaces (sender hosts, the
routers of the path, receiver hosts, PEP hosts), puts `tcplab-emu` — the simulator's link
model run on the wall clock — on every path segment, runs the flows with iperf3 using each
flow's congestion control, and returns the same `RunResult` as `tcplab.run`. `validate()`
runs both and compares them; `calibrate()` measures the emulator itself.

Modules: `bins` (finding binaries), `features` (root, TUN, tools, kernel algorithms,
TPROXY, netem qdiscs), `kernel_tcp` (TCP options as Linux
settings), `plan` (topology plan, pure), `netns` (building it), `cleanup` (undo stack,
signals, atexit, leftovers), `procs` (child processes), `topology` (a built topology with
its emulator or netem links), `iperf` and `convert` (iperf3 commands; its JSON → result,
pure), `netem` (the kernel's link emulation: tc/ethtool commands from the plan, pure),
`emulate`, `calibrate`, `validate`, `cli`; `sockbuf` (socket-buffer maxima for large
windows); `validate --matrix`: `matrix` (the grid, running, summary), `kernel_cache` (the
DuckDB cache of kernel runs), `matrix_report` (console, Markdown, HTML).
"""

from __future__ import annotations

from .calibrate import CalibrationReport, calibrate
from .emulate import Emulation, emulate, emulate_normalized
from .options import EmulateOptions
from .validate import Agreement, validate

__all__ = [
    "Agreement",
    "CalibrationReport",
    "EmulateOptions",
    "Emulation",
    "calibrate",
    "emulate",
    "emulate_normalized",
    "validate",
]
