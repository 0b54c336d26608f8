"""The links of a normalized scenario, whether it is a dumbbell or a path of segments.

A dumbbell (`bottleneck`) is the one-segment path named `bottleneck` (docs/interface.md), so
code that reads results or computes theory walks `segments()` and never needs to know which
form the scenario had.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from .. import _core


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


@dataclass(frozen=True)
class PathInfo:
    """What the core makes of a path (`_core.path_json`): the base (propagation) RTT of the
    default path (top-level access links) and of each flow's, and which segment is the
    bottleneck (lowest forward rate) and which the satellite (named `satellite`, else the
    longest forward delay: where PEPs sit). Nothing here decides it again."""

    base_rtt_ns: int
    flow_base_rtt_ns: tuple[int, ...]
    bottleneck_segment: int
    satellite_segment: int
    segments: tuple[str, ...]


SegmentLink = tuple[str, int, int, int, int]
"""(name, forward rate_bps, forward delay_ns, reverse rate_bps, reverse delay_ns)"""


def path_info_of(
    links: Sequence[SegmentLink],
    access_delay_ns: int,
    flow_access_delays_ns: Sequence[int | None] = (),
) -> PathInfo:
    """`PathInfo` of a path given by its segments and access delays (a flow's `None`: the
    top-level access link), for code that has no normalized scenario yet."""
    skeleton = {
        "duration_ns": 1,
        "access": {"rate_bps": 1, "delay_ns": access_delay_ns},
        "path": {
            "segments": [
                {
                    "name": name,
                    "forward": {"rate_bps": f_rate, "delay_ns": f_delay, "queue": {}},
                    "reverse": {"rate_bps": r_rate, "delay_ns": r_delay, "queue": {}},
                }
                for name, f_rate, f_delay, r_rate, r_delay in links
            ]
        },
        "flows": [
            {
                "cca": "",
                "app": {"kind": "bulk"},
                "access": None if delay is None else {"rate_bps": 1, "delay_ns": delay},
            }
            for delay in flow_access_delays_ns
        ],
    }
    return _path_info(json.dumps(skeleton))


@functools.lru_cache(maxsize=256)
def _path_info(text: str) -> PathInfo:
    info = json.loads(_core.path_json(text))
    return PathInfo(
        base_rtt_ns=int(info["base_rtt_ns"]),
        flow_base_rtt_ns=tuple(int(v) for v in info["flow_base_rtt_ns"]),
        bottleneck_segment=int(info["bottleneck_segment"]),
        satellite_segment=int(info["satellite_segment"]),
        segments=tuple(info["segments"]),
    )


def path_info(normalized: Mapping[str, Any]) -> PathInfo:
    """`PathInfo` of a normalized scenario."""
    links = [
        (
            s.name,
            int(s.forward["rate_bps"]),
            int(s.forward["delay_ns"]),
            int(s.reverse["rate_bps"]),
            int(s.reverse["delay_ns"]),
        )
        for s in segments(normalized)
    ]
    flows = normalized.get("flows", [])
    accesses = [None if not f.get("access") else int(f["access"]["delay_ns"]) for f in flows]
    return path_info_of(links, int(normalized["access"]["delay_ns"]), accesses)


def bottleneck_index(normalized: Mapping[str, Any]) -> int:
    """The segment the link summaries call "the bottleneck" (0 for a dumbbell)."""
    return path_info(normalized).bottleneck_segment if segments(normalized) else 0


def bottleneck_link_names(normalized: Mapping[str, Any]) -> tuple[str, str]:
    """Result link names (forward, reverse) of the bottleneck segment."""
    segs = segments(normalized)
    name = segs[bottleneck_index(normalized)].name if segs else "bottleneck"
    return f"{name}.forward", f"{name}.reverse"


def base_rtt_ns(normalized: Mapping[str, Any], flow_id: int | None = None) -> int:
    """Round-trip propagation delay of the default path (top-level access links), or of
    flow `flow_id` with its own access links."""
    info = path_info(normalized)
    return info.base_rtt_ns if flow_id is None else info.flow_base_rtt_ns[flow_id]


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
