"""The links of a normalized scenario, dumbbell or path (docs/interface.md, "Paths, PEPs…").

A dumbbell (`bottleneck`) is the one-segment path named `bottleneck`, so the plan and the
conversion walk `segments()` and never need to know which form the scenario had.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple


class Segment(NamedTuple):
    """One segment: its name and the normalized `DirConfig` of each direction."""

    name: str
    forward: Mapping[str, Any]
    reverse: Mapping[str, Any]


def segments(normalized: Mapping[str, Any]) -> list[Segment]:
    """The segments from the server side to the client side."""
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
    """The segment named `satellite`, else the one with the largest forward delay."""
    if "satellite" in names:
        return list(names).index("satellite")
    return max(range(len(forward_delays_ns)), key=lambda i: (forward_delays_ns[i], -i))


def bottleneck_index(normalized: Mapping[str, Any]) -> int:
    """The segment with the lowest forward rate (the first of equals)."""
    segs = segments(normalized)
    if not segs:
        return 0
    return min(range(len(segs)), key=lambda i: (int(segs[i].forward["rate_bps"]), i))


def base_rtt_ns(normalized: Mapping[str, Any]) -> int:
    """Round-trip propagation delay: every segment both ways plus the access link twice in
    each direction."""
    total = sum(
        int(s.forward["delay_ns"]) + int(s.reverse["delay_ns"]) for s in segments(normalized)
    )
    return total + 4 * int(normalized["access"]["delay_ns"])
