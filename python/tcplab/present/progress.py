"""Progress of one long run on stderr: simulated time reached, events and their rate, and
the wall time left, every few seconds (`_core.run_json(progress=...)` calls it). On a
terminal the line is rewritten in place; elsewhere (a log file) each report is a line.
"""

from __future__ import annotations

import time
from typing import TextIO


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"


class RunProgress:
    """A `progress(now_ns, end_ns, events)` callback writing to `out`."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.tty = out.isatty()
        self.started = time.monotonic()
        self.shown = False

    def line(self, now_ns: int, end_ns: int, events: int, wall_s: float) -> str:
        """The report: `simulated 1:30 of 10:00 (15 %), 12.3 M events (4.1 M/s), 0:30 left`."""
        share = now_ns / end_ns if end_ns else 1.0
        rate = events / wall_s if wall_s > 0 else 0.0
        left = f", {_clock(wall_s * (1 - share) / share)} left" if share > 0 else ""
        return (
            f"simulated {_clock(now_ns / 1e9)} of {_clock(end_ns / 1e9)} ({share:.0%}), "
            f"{events / 1e6:.1f} M events ({rate / 1e6:.1f} M/s){left}"
        )

    def __call__(self, now_ns: int, end_ns: int, events: int) -> None:
        text = self.line(now_ns, end_ns, events, time.monotonic() - self.started)
        self.out.write(f"\r\x1b[K{text}" if self.tty else f"{text}\n")
        self.out.flush()
        self.shown = True

    def close(self) -> None:
        """End the rewritten line, so what follows starts on its own."""
        if self.tty and self.shown:
            self.out.write("\n")
            self.out.flush()
