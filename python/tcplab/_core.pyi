# Type stub for the Rust extension module (crates/py). See docs/interface.md for the JSON formats.

__all__ = [
    "ccas_json",
    "core_version",
    "limits_json",
    "model_version",
    "path_json",
    "run_json",
]

def run_json(scenario_json: str) -> str:
    """Run one simulation of a normalized scenario; returns the result JSON.

    Raises ValueError with a one-line message when the scenario is invalid.
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
