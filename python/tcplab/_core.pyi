# Type stub for the Rust extension module (crates/py). See docs/interface.md for the JSON formats.

__all__ = [
    "ccas_json",
    "core_version",
    "limits_json",
    "model_version",
    "path_json",
    "run_json",
    "run_json_series",
]

def run_json(scenario_json: str) -> str:
    """Run one simulation of a normalized scenario; returns the result JSON.

    Raises ValueError with a one-line message when the scenario is invalid.
    """

def run_json_series(scenario_json: str, series_path: str | None = None) -> str:
    """Run one simulation without keeping its series in memory: streamed to the binary
    series file `series_path` in chunks, or not kept when it is None. The result JSON's
    `series` is `{"interval_ns", "intervals", "file"}`.

    Raises ValueError with a one-line message when the scenario is invalid or the file
    cannot be written.
    """

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
