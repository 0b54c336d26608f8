"""What to record of a run (`Trace`), checked in one line per mistake before the run starts,
and the trace specification the core takes (docs/interface.md "Trace specification").

Captures go to a directory (created if missing), one pcapng file per capture point:
`<segment>.sender-side.pcapng` and `<segment>.receiver-side.pcapng` for each chosen path
segment (default: the bottleneck). The event log goes to a Parquet file; the core writes
raw records beside it first (`<file>.raw`), which `events.to_parquet` converts and deletes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Final

from .. import _core
from ..errors import Problem, field_error
from ..units import DURATION_ALLOWED, parse_duration_ns


@lru_cache(maxsize=1)
def trace_format() -> dict[str, Any]:
    """The core's trace formats (`_core.trace_format_json`): snap lengths, event records,
    the capture points' names and file names."""
    fmt: dict[str, Any] = json.loads(_core.trace_format_json())
    return fmt


#: The capture points of one segment (where data enters it, where it leaves it), as the
#: core names their files.
SIDES: Final = (str(trace_format()["sides"][0]), str(trace_format()["sides"][1]))


def capture_name(segment: str, side: str) -> str:
    """The file a capture point writes."""
    return str(trace_format()["capture_file"]).format(segment=segment, side=side)


@dataclass(frozen=True)
class Trace:
    """What to record of a run.

    `pcap`: a directory for pcapng captures; `events`: a `.parquet` file for the event log;
    `flows`: flow indices to record (None: all); `start`/`end`: the time window (durations
    from the run's start, e.g. `"10s"`; None: the run's start / end); `links`: path
    segments to capture at (empty: the bottleneck); `snaplen_bytes`: bytes kept per frame
    (None: every header, `trace_format()["default_snaplen_bytes"]`).
    """

    pcap: str | os.PathLike[str] | None = None
    events: str | os.PathLike[str] | None = None
    flows: Sequence[int] | None = None
    start: str | None = None
    end: str | None = None
    links: Sequence[str] = ()
    snaplen_bytes: int | None = None

    @property
    def empty(self) -> bool:
        return self.pcap is None and self.events is None


@dataclass(frozen=True)
class CaptureFile:
    """One capture point's pcapng file and what it holds."""

    path: Path
    segment: str
    side: str
    packets: int
    bytes: int


@dataclass(frozen=True)
class TraceOutput:
    """What a traced run wrote."""

    captures: tuple[CaptureFile, ...] = ()
    events: Path | None = None
    event_count: int = 0

    @classmethod
    def from_report(cls, report: Mapping[str, Any], prepared: Prepared) -> TraceOutput:
        captures = tuple(
            CaptureFile(
                Path(c["path"]),
                str(c["segment"]),
                str(c["side"]),
                int(c["packets"]),
                int(c["bytes"]),
            )
            for c in report.get("captures", [])
        )
        return cls(captures=captures)


@dataclass(frozen=True)
class Prepared:
    """A checked `Trace`: the core's specification and where the files go."""

    spec: Mapping[str, Any]
    pcap_dir: Path | None
    events: Path | None
    events_raw: Path | None


def _window_ns(value: str | None, name: str) -> int | None:
    if value is None:
        return None
    try:
        return parse_duration_ns(value)
    except Problem as exc:
        raise field_error(name, value, exc.problem, DURATION_ALLOWED) from None


def _writable_dir(path: Path, option: str) -> Path:
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise field_error(
            option, str(path), f"cannot create the directory ({exc.strerror})"
        ) from None
    if not path.is_dir():
        raise field_error(option, str(path), "not a directory")
    if not os.access(path, os.W_OK | os.X_OK):
        raise field_error(option, str(path), "directory is not writable")
    return path


def prepare(
    trace: Trace,
    comment: str,
    segments: Sequence[str] | None = None,
    n_flows: int | None = None,
) -> Prepared:
    """Check `trace` (one-line errors naming the option; against the scenario's path
    `segments` and its number of flows when given) and build the core's specification;
    `comment` goes into each capture's section header (what run it is)."""
    fmt = trace_format()
    if segments is not None:
        for link in trace.links:
            if link not in segments:
                raise field_error("--pcap-link", link, "no such path segment", ", ".join(segments))
    if n_flows is not None:
        for f in trace.flows or ():
            if not 0 <= int(f) < n_flows:
                raise field_error("--trace-flow", f, "no such flow", f"0 to {n_flows - 1}")
    pcap_dir = _writable_dir(Path(trace.pcap), "--pcap") if trace.pcap is not None else None
    events = events_raw = None
    if trace.events is not None:
        events = Path(trace.events)
        if events.suffix.lower() != ".parquet":
            raise field_error("--events", str(events), "unknown file extension", ".parquet")
        if not events.parent.is_dir():
            raise field_error("--events", str(events), "directory does not exist")
        if not os.access(events.parent, os.W_OK | os.X_OK):
            raise field_error("--events", str(events), "directory is not writable")
        events_raw = events.with_name(events.name + ".raw")
    start = _window_ns(trace.start, "--trace-window start") or 0
    end = _window_ns(trace.end, "--trace-window end")
    if end is not None and end <= start:
        raise field_error(
            "--trace-window", f"{trace.start or '0s'}:{trace.end}", "ends before it starts"
        )
    snap = fmt["default_snaplen_bytes"] if trace.snaplen_bytes is None else trace.snaplen_bytes
    if not 64 <= snap <= fmt["max_snaplen_bytes"]:
        raise field_error("--snaplen", snap, "out of range", f"64 to {fmt['max_snaplen_bytes']}")
    flows = None if trace.flows is None else sorted({int(f) for f in trace.flows})
    if flows is not None and any(f < 0 for f in flows):
        raise field_error("--trace-flow", flows[0], "a flow index is 0 or more")
    spec = {
        "pcap_dir": None if pcap_dir is None else str(pcap_dir),
        "links": list(trace.links),
        "flows": flows,
        "from_ns": start,
        "to_ns": end,
        "snaplen_bytes": snap,
        "events_path": None if events_raw is None else str(events_raw),
        "comment": comment,
    }
    return Prepared(spec, pcap_dir, events, events_raw)


def parse_window(text: str) -> tuple[str | None, str | None]:
    """`--trace-window FROM:TO` (either end may be empty: `10s:`, `:30s`)."""
    start, sep, end = text.partition(":")
    if not sep:
        raise field_error("--trace-window", text, "not FROM:TO", 'e.g. "10s:20s", "10s:" or ":30s"')
    return (start.strip() or None, end.strip() or None)
