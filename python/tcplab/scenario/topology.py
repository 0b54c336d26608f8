"""The links of a normalized scenario, whether it is a dumbbell or a path of segments.

A dumbbell (`bottleneck`) is the one-segment path named `bottleneck` (docs/interface.md), so
code that reads results or computes theory walks `segments()` and never needs to know which
form the scenario had.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple


class Segment(NamedTuple):
    """One segment of a normalized scenario: its name and `DirConfig` dicts."""

    name: str
    forward: Mapping[str, Any]
    reverse: Mapping[str, Any]


def segments(normalized: Mapping[str, Any]) -> list[Segment]:
    """The segments from the server side to the client side (`[bottleneck]` for a dumbbell;
    empty for a mapping that is not a normalized scenario)."""
    path = normalized.get("path")
    if isinstance(path, Mapping):
        return [Segment(s["name"], s["forward"], s["reverse"]) for s in path.get("segments", [])]
    bottleneck = normalized.get("bottleneck")
    if isinstance(bottleneck, Mapping):
        return [Segment("bottleneck", bottleneck["forward"], bottleneck["reverse"])]
    return []


def pep_mode(normalized: Mapping[str, Any]) -> str:
    """`"none"`, `"gateway"` or `"distributed"` (a dumbbell has no PEP)."""
    path = normalized.get("path")
    return str(path.get("pep", "none")) if isinstance(path, Mapping) else "none"


def satellite_index(names: Sequence[str], forward_delays_ns: Sequence[int]) -> int:
    """The satellite segment: the one named `satellite`, else the one with the largest
    forward delay (the first of equals), as the core picks it."""
    if "satellite" in names:
        return list(names).index("satellite")
    best = 0
    for index, delay_ns in enumerate(forward_delays_ns):
        if delay_ns > forward_delays_ns[best]:
            best = index
    return best


def bottleneck_index(normalized: Mapping[str, Any]) -> int:
    """The segment whose forward rate is lowest (the first of equals): the link summaries
    call it "the bottleneck". 0 for a dumbbell."""
    segs = segments(normalized)
    best = 0
    for index, segment in enumerate(segs):
        if segment.forward["rate_bps"] < segs[best].forward["rate_bps"]:
            best = index
    return best


def bottleneck_link_names(normalized: Mapping[str, Any]) -> tuple[str, str]:
    """Result link names (forward, reverse) of the bottleneck segment."""
    segs = segments(normalized)
    name = segs[bottleneck_index(normalized)].name if segs else "bottleneck"
    return f"{name}.forward", f"{name}.reverse"


def base_rtt_ns(normalized: Mapping[str, Any], access_delay_ns: int | None = None) -> int:
    """Round-trip propagation delay: every segment's forward and reverse delay plus the access
    link twice in each direction (sender side and receiver side). `access_delay_ns` defaults
    to the scenario's top-level access link."""
    if access_delay_ns is None:
        access_delay_ns = int(normalized["access"]["delay_ns"])
    total = sum(
        int(s.forward["delay_ns"]) + int(s.reverse["delay_ns"]) for s in segments(normalized)
    )
    return total + 4 * access_delay_ns


def direction(normalized: Mapping[str, Any], link_name: str) -> Mapping[str, Any]:
    """The `DirConfig` of a result link name such as `satellite.forward` (empty if unknown)."""
    name, _, which = link_name.rpartition(".")
    for segment in segments(normalized):
        if segment.name == name:
            return segment.forward if which == "forward" else segment.reverse
    return {}


def combined_loss(probabilities: Sequence[float]) -> float:
    """Probability that a packet is lost on at least one of several links, 1 - prod(1 - p);
    exact (no float detour) when at most one link loses packets."""
    lossy = [p for p in probabilities if p > 0.0]
    if len(lossy) <= 1:
        return lossy[0] if lossy else 0.0
    kept = 1.0
    for p in lossy:
        kept *= 1.0 - p
    return 1.0 - kept
