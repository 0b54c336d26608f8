"""Link traces read from files: rate/delay schedules (CSV) and Mahimahi delivery traces.

Both are read once while the scenario is validated; the normalized scenario carries their
contents (docs/interface.md, `rate_trace` and `delivery_trace`), so the core never opens a
file and a changed trace file changes the scenario hash.

**Rate trace (CSV)**: one change per line, `time,rate[,delay]`:

* `time`: a duration with a unit (`"1.5s"`, `"500ms"`) or a plain number of **seconds**;
* `rate`: a rate with a unit (`"10Mbps"`) or a plain number of **bit/s**, greater than 0;
* `delay`: optional one-way delay, with a unit or a plain number of **milliseconds**; an empty
  or missing field keeps the delay in force.

Times must increase strictly. Each line holds from its time until the next line's (the last
until the end of the run; the trace does not repeat). Before the first line's time the link's
own `rate`/`delay` apply. Blank lines and `#` comments are skipped, and so is a header line
(a first line whose time field is not a number, such as `time,rate,delay`).

**Delivery trace (Mahimahi)**: one integer millisecond per line, non-decreasing; each line is
one opportunity to deliver a 1500-byte packet at that instant (a repeated number is several
opportunities in the same millisecond). The trace repeats with a period equal to its last
timestamp, as in Mahimahi's `mm-link`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from ..errors import Problem
from ..files import MAX_TRACE_FILE_BYTES_PER_LINE, FileError, read_text
from ..input_limits import exact_number
from ..limits import LIMITS
from ..units import format_duration_ns, format_rate_bps, parse_duration_ns, parse_rate_bps

#: Bytes a link may deliver per Mahimahi opportunity (one MTU-sized packet).
# a delivery opportunity carries one full packet, and a trace is as long as the core takes
MAHIMAHI_BYTES_PER_OPPORTUNITY: Final = LIMITS.mtu_bytes
MAX_TRACE_LINES: Final = LIMITS.max_trace_len
RATE_TRACE_ALLOWED: Final = (
    'lines "time,rate[,delay]": time in s or with a unit, rate in bit/s or with a unit, '
    "delay in ms or with a unit"
)
DELIVERY_TRACE_ALLOWED: Final = "one integer millisecond per line (Mahimahi format)"
_PLAIN_NUMBER: Final = re.compile(r"^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$")
_NS_PER_MS: Final = 1_000_000
_NS_PER_S: Final = 1_000_000_000


@dataclass(frozen=True)
class RateTrace:
    """A parsed rate trace: `(t_ns, rate_bps, delay_ns or None)` with strictly increasing
    times. `path` is the absolute file name (what the scenario dump writes back)."""

    path: str
    points: tuple[tuple[int, int, int | None], ...]


@dataclass(frozen=True)
class DeliveryTrace:
    """A parsed Mahimahi trace: opportunity instants (ns, non-decreasing) repeating every
    `period_ns` (the last instant)."""

    path: str
    opportunities_ns: tuple[int, ...]
    period_ns: int

    @property
    def mean_rate_bps(self) -> float:
        """The rate the trace offers on average (every opportunity used by a full packet)."""
        bits = len(self.opportunities_ns) * MAHIMAHI_BYTES_PER_OPPORTUNITY * 8
        return bits * _NS_PER_S / self.period_ns


_LATEST_MS: Final = f"at most {LIMITS.max_duration_ns // _NS_PER_MS} ms"
_MAX_MS_DIGITS: Final = len(str(LIMITS.max_duration_ns // _NS_PER_MS))


def _in_range(number: int, what: str, value: int, most: int, show: Callable[[int], str]) -> None:
    """A line's value the core would refuse, refused naming the line."""
    if value > most:
        raise Problem(
            f"line {number}: the {what} {show(value)} is too large", f"at most {show(most)}"
        )


def _plain(text: str, scale: int) -> int:
    """A unit-less number times `scale`, exactly (decimal text → Fraction)."""
    value = exact_number(text)
    if value < 0:
        raise Problem("must not be negative")
    return round(value * scale)


def _field(text: str, plain_scale: int, kind: Literal["duration", "rate"]) -> int:
    """A plain number times `plain_scale`, or a quantity with a unit."""
    if _PLAIN_NUMBER.match(text):
        return _plain(text, plain_scale)
    if kind == "rate":
        return parse_rate_bps(text.strip())
    return parse_duration_ns(text.strip())


def _read_lines(path: Path) -> list[str]:
    try:
        text = read_text(path, MAX_TRACE_LINES * MAX_TRACE_FILE_BYTES_PER_LINE)
    except FileError as exc:
        raise Problem(exc.problem, exc.allowed) from None
    lines = text.splitlines()
    if len(lines) > MAX_TRACE_LINES:
        raise Problem("too many lines", f"at most {MAX_TRACE_LINES}")
    return lines


def parse_rate_trace_text(lines: list[str], path: str = "") -> RateTrace:
    """Parse the lines of a rate trace (see the module doc). Raises `Problem` naming the
    line number."""
    points: list[tuple[int, int, int | None]] = []
    first_data_line = True
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = [part.strip() for part in line.split(",")]
        if first_data_line and not re.match(r"[0-9.+-]", fields[0]):
            first_data_line = False
            continue  # a header such as "time,rate,delay"
        first_data_line = False
        if len(fields) not in (2, 3):
            raise Problem(
                f"line {number}: expected 2 or 3 comma-separated fields", RATE_TRACE_ALLOWED
            )
        try:
            t_ns = _field(fields[0], _NS_PER_S, "duration")
            rate_bps = _field(fields[1], 1, "rate")
            delay_ns = None
            if len(fields) == 3 and fields[2]:
                delay_ns = _field(fields[2], _NS_PER_MS, "duration")
        except Problem as exc:
            raise Problem(
                f"line {number}: {exc.problem}", exc.allowed or RATE_TRACE_ALLOWED
            ) from None
        if rate_bps <= 0:
            raise Problem(
                f"line {number}: the rate must be greater than 0",
                "a positive rate (write an outage for a dead link)",
            )
        _in_range(number, "time", t_ns, LIMITS.max_duration_ns, format_duration_ns)
        _in_range(number, "rate", rate_bps, LIMITS.max_rate_bps, format_rate_bps)
        if delay_ns is not None:
            _in_range(number, "delay", delay_ns, LIMITS.max_delay_ns, format_duration_ns)
        if points and t_ns <= points[-1][0]:
            raise Problem(
                f"line {number}: time {t_ns / 1e9:g}s is not after the previous line's "
                f"({points[-1][0] / 1e9:g}s)",
                "strictly increasing times",
            )
        points.append((t_ns, rate_bps, delay_ns))
    if not points:
        raise Problem("the trace has no entries", RATE_TRACE_ALLOWED)
    return RateTrace(path, tuple(points))


def parse_delivery_trace_text(lines: list[str], path: str = "") -> DeliveryTrace:
    """Parse the lines of a Mahimahi trace (see the module doc). Raises `Problem` naming the
    line number."""
    instants_ms: list[int] = []
    for number, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if not line.isdigit():
            raise Problem(f"line {number}: {line[:20]!r} is not an integer", DELIVERY_TRACE_ALLOWED)
        if len(line) > _MAX_MS_DIGITS:
            raise Problem(f"line {number}: {line[:20]}... ms is too late", _LATEST_MS)
        value = int(line)
        if value * _NS_PER_MS > LIMITS.max_duration_ns:
            raise Problem(f"line {number}: {value} ms is too late", _LATEST_MS)
        if instants_ms and value < instants_ms[-1]:
            raise Problem(
                f"line {number}: {value} ms is before the previous line's {instants_ms[-1]} ms",
                "non-decreasing milliseconds",
            )
        instants_ms.append(value)
    if not instants_ms:
        raise Problem("the trace has no entries", DELIVERY_TRACE_ALLOWED)
    if instants_ms[-1] == 0:
        raise Problem("the last timestamp (the period) must be greater than 0 ms")
    return DeliveryTrace(
        path, tuple(ms * _NS_PER_MS for ms in instants_ms), instants_ms[-1] * _NS_PER_MS
    )


def resolve(written: str, base_dir: Path | None) -> Path:
    """A trace path as written in a scenario: relative paths are relative to the scenario
    file's directory (`base_dir`), or to the working directory when there is no file."""
    path = Path(written).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    return path.absolute()


def read_rate_trace(written: str, base_dir: Path | None) -> RateTrace:
    path = resolve(written, base_dir)
    return parse_rate_trace_text(_read_lines(path), str(path))


def read_delivery_trace(written: str, base_dir: Path | None) -> DeliveryTrace:
    path = resolve(written, base_dir)
    return parse_delivery_trace_text(_read_lines(path), str(path))
