"""The core's ranges and defaults (`_core.limits_json`), read once.

The Python layer checks a scenario file against these for its one-line messages and fills
defaults from them; the core checks the normalized scenario against the same constants for
safety. Nothing here is a number of its own: a limit changes in `crates/core/src/limits.rs`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from . import _core


@dataclass(frozen=True)
class Limits:
    """`_core.limits_json()`; constructing it from the JSON fails on a key added to or missing
    from the core, so the two cannot drift apart unnoticed. Ranges are inclusive pairs."""

    max_duration_ns: int
    max_rate_bps: int
    max_delay_ns: int
    min_interval_ns: int
    default_interval_ns: int
    max_intervals: int
    max_trace_len: int
    min_queue_bytes: int
    mtu_bytes: int
    max_segments: int
    max_flows: int
    max_runs: int
    max_events: int
    max_memory_bytes: int
    max_seed: int
    mss_bytes: tuple[int, int]
    initial_window_pkts: tuple[int, int]
    max_rwnd_bytes: int
    no_wscale_max_rwnd_bytes: int
    max_file_bytes: int
    cbr_packet_bytes: tuple[int, int]
    default_pep_buffer_bytes: int
    min_pep_buffer_segments: int
    max_pep_buffer_bytes: int
    policer_burst_bytes: tuple[int, int]
    cross_packet_bytes: tuple[int, int]
    cross_connections: tuple[int, int]
    default_cross_connections: int
    default_cross_cca: str
    header_bytes: int
    timestamp_option_bytes: int
    rto_min_ns: int
    tcp_defaults: dict[str, Any]
    red_defaults: dict[str, Any]
    codel_defaults: dict[str, Any]

    @classmethod
    def from_json(cls, text: str) -> Limits:
        raw: dict[str, Any] = json.loads(text)
        for key in (
            *("mss_bytes", "initial_window_pkts", "cbr_packet_bytes", "policer_burst_bytes"),
            *("cross_packet_bytes", "cross_connections"),
        ):
            raw[key] = tuple(raw[key])
        return cls(**raw)


LIMITS: Final = Limits.from_json(_core.limits_json())
