"""tcplab: a fast, deterministic lab for TCP congestion control.

    >>> import tcplab
    >>> result = tcplab.run("scenarios/geo-sat.toml", duration="60s")
    >>> result.flows[0].goodput_bps

Scenarios are TOML files (see `scenarios/`), validated here and simulated by the Rust core
(`tcplab._core`).
"""

from importlib.metadata import PackageNotFoundError, version

# Before the submodules: they record it (provenance) and may be imported by the lines below.
try:
    __version__ = version("tcplab")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

from .catalogue import CcaInfo, ccas
from .errors import ScenarioError
from .loader import load_scenario
from .result import FlowResult, LinkResult, RunResult
from .runner import run
from .scenario import Scenario

__all__ = [
    "CcaInfo",
    "FlowResult",
    "LinkResult",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "__version__",
    "ccas",
    "load_scenario",
    "run",
]
