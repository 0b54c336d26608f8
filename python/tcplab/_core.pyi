# Type stub for the Rust extension module (crates/py). See docs/interface.md for the JSON formats.

from collections.abc import Callable
from typing import final

__all__ = [
    "Cancel",
    "Cancelled",
    "budget_json",
    "ccas_json",
    "core_version",
    "limits_json",
    "model_version",
    "path_json",
    "pcap_to_pcapng",
    "run_json",
    "run_json_series",
    "run_traced_json",
    "trace_format_json",
]

@final
class Cancel:
    """A flag that stops every run it is given at its next check (within milliseconds)."""

    def __new__(cls) -> Cancel: ...
    def set(self) -> None:
        """Stop the runs given this flag."""

    def is_set(self) -> bool: ...

class Cancelled(Exception):
    """A run stopped by its `Cancel` flag before its end."""

def run_json(
    scenario_json: str,
    cancel: Cancel | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    progress_every_s: float = 2.0,
) -> str:
    """Run one simulation of a normalized scenario; returns the result JSON.

    Raises ValueError with a one-line message when the scenario is invalid. The run stops
    early with `Cancelled` when `cancel` is set, with `KeyboardInterrupt` on Ctrl-C (on the
    main thread), or with what `progress` raises.
    """

def run_json_series(
    scenario_json: str,
    series_path: str | None = None,
    cancel: Cancel | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    progress_every_s: float = 2.0,
) -> str:
    """Run one simulation without keeping its series in memory: streamed to the binary
    series file `series_path` in chunks, or not kept when it is None. The result JSON's
    `series` is `{"interval_ns", "intervals", "file"}`.

    Raises ValueError with a one-line message when the scenario is invalid or the file
    cannot be written; stops early as `run_json` does.
    """

def run_traced_json(
    scenario_json: str,
    trace_json: str,
    keep_series: bool = True,
    series_path: str | None = None,
    cancel: Cancel | None = None,
    progress: Callable[[int, int, int], object] | None = None,
    progress_every_s: float = 2.0,
) -> tuple[str, str]:
    """Run one simulation with packet captures and/or an event log (`trace_json`, see
    docs/interface.md); returns the result JSON and the JSON report of the files written.
    The series stay in the result when `keep_series` is true; otherwise they are streamed
    to `series_path` or not kept, as in `run_json_series`.

    Raises ValueError with a one-line message for invalid input or an unwritable file;
    stops early as `run_json` does.
    """

def budget_json(scenario_json: str, series: str) -> str:
    """The resource budget of a normalized scenario whose series go where `series` says
    ("none", "file", "memory") as JSON text: `events`, `memory_bytes`, `max_events`,
    `max_memory_bytes` and `refusal` (a one-line message, or null when within the limits).

    Raises ValueError when the text is not a normalized scenario.
    """

def pcap_to_pcapng(
    src: str,
    dst: str,
    t0_ns: int,
    from_ns: int,
    to_ns: int,
    if_name: str,
    if_description: str,
    comment: str,
) -> int:
    """Rewrite a classic pcap capture (tcpdump's) as pcapng with times from `t0_ns` (ns since
    the epoch), the frames in `[from_ns, to_ns)` of that time, and the capture point's name;
    returns the frames written.

    Raises ValueError with a one-line message for an unreadable or unwritable file.
    """

def trace_format_json() -> str:
    """The formats of the trace outputs as JSON text: the event log's record layout and
    names (`events`), `default_snaplen_bytes` and `max_snaplen_bytes`."""

def ccas_json() -> str:
    """The catalogue of built-in congestion-control algorithms as JSON text."""

def core_version() -> str:
    """Version of the simulation core."""

def model_version() -> int:
    """Version of the simulation model: bumped by any change that alters results."""

def limits_json() -> str:
    """The ranges and defaults a scenario is validated and filled with (the core's own
    constants) as JSON text."""

def path_json(scenario_json: str) -> str:
    """The core's view of a normalized scenario's path as JSON text: `base_rtt_ns`,
    `flow_base_rtt_ns`, `bottleneck_segment`, `satellite_segment`, `segments`.

    Raises ValueError when the text is not a normalized scenario.
    """
