"""The core's catalogue of congestion-control algorithms (`_core.ccas_json()`), typed."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import _core


@dataclass(frozen=True)
class CcaParamInfo:
    """One tunable parameter of an algorithm, with its default in the core's units."""

    name: str
    default: float | int | str | bool | None
    unit: str
    help: str


@dataclass(frozen=True)
class CcaInfo:
    """One algorithm: `feedback` is "loss", "delay", "hybrid" or "rate"."""

    name: str
    summary: str
    feedback: str
    reference: str
    params: tuple[CcaParamInfo, ...]

    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)


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
        )
        for e in entries
    )


def ccas() -> tuple[CcaInfo, ...]:
    """The algorithms built into the core, in the core's order (empty while the core is a stub).

    Not cached: the call is cheap and caching would be global state.
    """
    return parse_catalogue(_core.ccas_json())


def ccas_json_list() -> list[dict[str, Any]]:
    """The raw catalogue, for `tcplab ccas --json`."""
    data: list[dict[str, Any]] = json.loads(_core.ccas_json())
    return data
