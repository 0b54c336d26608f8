"""tcplab: a fast, deterministic lab for TCP congestion control.

    >>> import tcplab
    >>> result = tcplab.run("scenarios/geo-sat.toml", duration="60s")
    >>> result.flows[0].goodput_bps

Scenarios are TOML files (see `scenarios/`), validated here and simulated by the Rust core
(`tcplab._core`).

The names below are imported on first use, so `import tcplab` (and `tcplab --version`) stays
cheap: the scenario model needs pydantic, results and studies need more.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catalogue import CcaInfo, ccas
    from .errors import ScenarioError
    from .results.parse import FlowResult, LinkResult, RunResult
    from .runner import run
    from .scenario.load import load_scenario
    from .scenario.model import Scenario
    from .study.store import Store
    from .trace.request import Trace

    __version__: str

#: public name -> the module that defines it
_LAZY = {
    "CcaInfo": ".catalogue",
    "ccas": ".catalogue",
    "ScenarioError": ".errors",
    "FlowResult": ".results.parse",
    "LinkResult": ".results.parse",
    "RunResult": ".results.parse",
    "run": ".runner",
    "load_scenario": ".scenario.load",
    "Scenario": ".scenario.model",
    "Store": ".study.store",
    "Trace": ".trace.request",
}

__all__ = [
    "CcaInfo",
    "FlowResult",
    "LinkResult",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "Store",
    "Trace",
    "__version__",
    "ccas",
    "load_scenario",
    "run",
]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tcplab")
    except PackageNotFoundError:  # running from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value: Any = _version()
    elif name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
