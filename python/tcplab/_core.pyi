# Type stub for the Rust extension module (crates/py). See docs/interface.md for the JSON formats.

__all__ = ["ccas_json", "core_version", "model_version", "run_json"]

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
