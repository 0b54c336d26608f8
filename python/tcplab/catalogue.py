"""The core's catalogue of congestion-control algorithms (`_core.ccas_json()`), typed."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import _core
from .units import format_rate_bps


def _number_text(value: float) -> str:
    # the core sends every default as a float; 717.0 reads better as 717
    return str(int(value)) if value.is_integer() else repr(value)


@dataclass(frozen=True)
class CcaParamInfo:
    """One tunable parameter of an algorithm, with its default in the core's units.

    Durations (`<key>_ns`) and rates (`<key>_bps`) are what the core receives; users write
    them with a unit under the short key (`rtt0 = "25ms"`), which is how `toml_key` and
    `default_text` show them."""

    name: str
    default: float | int | str | bool | None
    unit: str
    help: str

    @property
    def kind(self) -> str:
        """One of "duration", "rate", "bool" or "number"."""
        if self.name.endswith("_ns"):
            return "duration"
        if self.name.endswith("_bps"):
            return "rate"
        if self.unit == "bool":
            return "bool"
        return "number"

    @property
    def toml_key(self) -> str:
        """The key to write under `[flows.cca_params]` (`rtt0_ns` → `rtt0`)."""
        if self.kind == "duration":
            return self.name.removesuffix("_ns")
        if self.kind == "rate":
            return self.name.removesuffix("_bps")
        return self.name

    @property
    def default_text(self) -> str:
        """The default as a user would write it: `25ms`, `10Mbps`, `true`, `717/1024`,
        `16 pkts`; durations are always shown in ms."""
        value = self.default
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "-" if value is None else str(value).lower()
        if self.kind == "duration":
            return f"{_number_text(value / 1e6)}ms"
        if self.kind == "rate":
            return format_rate_bps(round(value))
        if self.kind == "bool":
            return "true" if value else "false"
        number = _number_text(float(value))
        if not self.unit:
            return number
        return f"{number}{self.unit}" if self.unit.startswith("/") else f"{number} {self.unit}"


@dataclass(frozen=True)
class CcaInfo:
    """One algorithm: `feedback` is "loss", "delay", "hybrid" or "rate"."""

    name: str
    summary: str
    feedback: str
    reference: str
    params: tuple[CcaParamInfo, ...]
    #: `reno` and `vegas` on `tcp.stack = "ns2"` run ns-2's agents, whose parameters these are
    ns2_params: tuple[CcaParamInfo, ...] = ()

    def param_names(self, stack: str = "linux") -> tuple[str, ...]:
        """The parameter names a flow of this algorithm accepts on TCP stack `stack`."""
        params = self.ns2_params if stack == "ns2" and self.ns2_params else self.params
        return tuple(p.name for p in params)


def find_cca(catalogue: Sequence[CcaInfo], name: str) -> CcaInfo | None:
    """The entry called `name` (exact match, as in scenario files), if any."""
    return next((info for info in catalogue if info.name == name), None)


def _param(raw: dict[str, Any]) -> CcaParamInfo:
    return CcaParamInfo(
        name=str(raw["name"]),
        default=raw.get("default"),
        unit=str(raw.get("unit", "")),
        help=str(raw.get("help", "")),
    )


def parse_catalogue(text: str) -> tuple[CcaInfo, ...]:
    """Parse `ccas_json()` output; missing optional fields default to empty strings."""
    entries: list[dict[str, Any]] = json.loads(text)
    return tuple(
        CcaInfo(
            name=str(e["name"]),
            summary=str(e.get("summary", "")),
            feedback=str(e.get("feedback", "")),
            reference=str(e.get("reference", "")),
            params=tuple(_param(p) for p in e.get("params", [])),
            ns2_params=tuple(_param(p) for p in e.get("ns2_params", [])),
        )
        for e in entries
    )


def ccas() -> tuple[CcaInfo, ...]:
    """The algorithms built into the core, in the core's order.

    Not cached: the call is cheap and caching would be global state.
    """
    return parse_catalogue(_core.ccas_json())


def ccas_json_list() -> list[dict[str, Any]]:
    """The raw catalogue, for `tcplab ccas --json`."""
    data: list[dict[str, Any]] = json.loads(_core.ccas_json())
    return data
