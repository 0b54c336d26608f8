"""What packet captures and the event log cost (`make bench`): the 600 s GEO 4 Mbit/s
benchmark run without tracing, with both captures of its bottleneck and its event log
written to /dev/null (the tracer's own work: building every frame and record), and written
to files on disk; and, for the disk, the time to write files of the same sizes as plain
bytes (1 MiB blocks to each in turn, each file synced). Tracing should stay under twice the
untraced time plus that write.

The untraced run is the simulator as every run uses it: the tracer's hooks are compiled in
and cost one pointer test per packet per hop when no tracer is set.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from .. import _core
from ..scenario.load import load_scenario
from ..scenario.normalize import normalize
from ..trace.request import SIDES, capture_name, trace_format
from .demo import builtin_scenario

#: The geo-4mbps benchmark (`bench.BENCHMARKS`): CUBIC, 4 Mbit/s, 250 ms, PER 1e-5, 600 s.
OVERRIDES: Final = [("name", "geo-4mbps"), ("bottleneck.per", 1e-5)]
_BLOCK: Final = 1 << 20


@dataclass(frozen=True)
class TraceBench:
    untraced_s: float
    traced_null_s: float
    traced_disk_s: float
    disk_write_s: float
    frames: int
    bytes_written: int
    files: int
    events: int

    @property
    def null_ratio(self) -> float:
        return self.traced_null_s / self.untraced_s

    @property
    def within_budget(self) -> bool:
        """Traced (to disk) under twice the untraced time plus the disk write."""
        return self.traced_disk_s < 2 * self.untraced_s + self.disk_write_s


def _best(f: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    best, out = math.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        value = f()
        elapsed = time.perf_counter() - start
        if elapsed < best:
            best, out = elapsed, value
    return best, out


def _spec(directory: Path) -> str:
    return json.dumps(
        {
            "pcap_dir": str(directory),
            "snaplen_bytes": trace_format()["default_snaplen_bytes"],
            "events_path": str(directory / "events.raw"),
        }
    )


def _outputs(directory: Path) -> list[Path]:
    return [directory / capture_name("bottleneck", s) for s in SIDES] + [directory / "events.raw"]


def _write_files(paths: list[Path], sizes: list[int]) -> None:
    """Write files of `sizes` bytes as a traced run writes its outputs: side by side, a block
    of 1 MiB at a time to each in turn, then each synced to disk (the traced run's files are
    synced one by one too, and each file's sync costs the disk a commit of its own)."""
    block = b"\0" * _BLOCK
    files = [path.open("wb") for path in paths]
    try:
        left = list(sizes)
        while any(left):
            for i, f in enumerate(files):
                if left[i]:
                    n = min(left[i], _BLOCK)
                    f.write(block[:n])
                    left[i] -= n
        for f in files:
            f.flush()
            os.fsync(f.fileno())
    finally:
        for f in files:
            f.close()


def run_trace_benchmark(repeat: int = 3, duration: str | None = None) -> TraceBench:
    extra = [] if duration is None else [("duration", duration)]
    text = json.dumps(
        normalize(load_scenario(builtin_scenario("geo-sat.toml"), [*OVERRIDES, *extra]))
    )
    untraced, _ = _best(lambda: _core.run_json(text), repeat)
    with tempfile.TemporaryDirectory(prefix="tcplab-trace-bench-") as tmp:
        null_dir, disk_dir = Path(tmp) / "null", Path(tmp) / "disk"
        null_dir.mkdir()
        disk_dir.mkdir()
        for path in _outputs(null_dir):
            path.symlink_to(os.devnull)
        traced_null, (_, report) = _best(
            lambda: _core.run_traced_json(text, _spec(null_dir)), repeat
        )

        def to_disk() -> tuple[str, str]:
            out = _core.run_traced_json(text, _spec(disk_dir))
            for path in _outputs(disk_dir):
                with path.open("rb+") as f:
                    os.fsync(f.fileno())
            return out

        traced_disk, _ = _best(to_disk, repeat)
        info = json.loads(report)
        sizes = [path.stat().st_size for path in _outputs(disk_dir)]
        plain = [disk_dir / f"plain-{i}.bin" for i in range(len(sizes))]
        disk_write, _ = _best(lambda: _write_files(plain, sizes), repeat)
    return TraceBench(
        untraced_s=untraced,
        traced_null_s=traced_null,
        traced_disk_s=traced_disk,
        disk_write_s=disk_write,
        frames=sum(int(c["packets"]) for c in info["captures"]),
        bytes_written=sum(sizes),
        files=len(sizes),
        events=int(info["events"]["records"]),
    )


def describe(b: TraceBench) -> str:
    return (
        f"tracing, geo-4mbps (600 s): untraced {b.untraced_s:.3f} s; both captures and the "
        f"event log ({b.frames:,} frames, {b.events:,} events, {b.bytes_written / 1e6:.0f} MB) "
        f"to /dev/null {b.traced_null_s:.3f} s ({b.null_ratio:.2f}x), to disk "
        f"{b.traced_disk_s:.3f} s, against 2 x untraced + writing {b.files} files of the same "
        f"sizes ({b.disk_write_s:.3f} s) = {2 * b.untraced_s + b.disk_write_s:.3f} s: "
        f"{'within' if b.within_budget else 'OVER'} budget (best of each)"
    )
