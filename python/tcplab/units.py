"""Parse the unit-carrying strings of scenario files into integers.

Everything past the Python boundary is an integer in base units (ns, bit/s, bytes), so unit
strings are parsed here once. Parsing is exact (decimal text → `Fraction`, no float rounding:
`"0.1ms"` is exactly 100 000 ns); a result that is not whole is rounded to the nearest base unit
(ties to even), which is below any resolution the simulator can express.

Units:

* durations: `ns`, `us` (or `µs`), `ms`, `s`, `min`; a bare number is refused because it is
  ambiguous (`600` could be seconds or nanoseconds).
* rates: `bps`, `kbps`, `Mbps`, `Gbps`, `Tbps` (also `Mbit/s` style), case-insensitive, powers of
  1000. `MBps` (capital B before `ps`) is refused: it usually means megabytes per second.
* sizes: `B`, `KB`, `MB`, `GB` (powers of 1000) and `KiB`, `MiB`, `GiB` (powers of 1024); the
  final `B` must be upper case (`kb` would be kilobits). A bare integer is a byte count.
  Note: TCP folklore's "64KB window" means 65535 bytes, but here `rwnd = "64KB"` is 64 000 B;
  write `65535` or `"64KiB"` (65 536 B) when that is what you mean.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Final

from .errors import Problem
from .input_limits import exact_number

_QUANTITY: Final = re.compile(
    r"^\s*(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*(?P<unit>[A-Za-zµ/]*)\s*$"
)

DURATION_UNITS_NS: Final[dict[str, int]] = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "min": 60_000_000_000,
}
RATE_UNITS_BPS: Final[dict[str, int]] = {
    "bps": 1,
    "kbps": 10**3,
    "mbps": 10**6,
    "gbps": 10**9,
    "tbps": 10**12,
}
# Keys are lower-cased prefixes + "b"; the trailing "B" is checked separately (bits vs bytes).
SIZE_UNITS_BYTES: Final[dict[str, int]] = {
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
}

DURATION_ALLOWED: Final = 'ns, us, ms, s, min (e.g. "250ms")'
RATE_ALLOWED: Final = 'bps, kbps, Mbps, Gbps, Tbps (e.g. "4Mbps")'
SIZE_ALLOWED: Final = 'B, KB, MB, GB, KiB, MiB, GiB or an integer byte count (e.g. "64KB")'


def _split(text: str, allowed: str) -> tuple[Fraction, str]:
    match = _QUANTITY.match(text)
    if match is None:
        raise Problem("not a number followed by a unit", allowed)
    number = exact_number(match["num"])
    if number < 0:
        raise Problem("must not be negative", allowed)
    return number, match["unit"]


def _reject_non_string(value: object, kind: str, allowed: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise Problem(f"expected a {kind} string", allowed)
    if isinstance(value, int | float):
        raise Problem(f"a {kind} needs a unit (write it as a string)", allowed)
    raise Problem(f"expected a {kind} string", allowed)


def parse_duration_ns(value: object) -> int:
    """`"250ms"` → 250 000 000. Raises `Problem` naming the allowed units."""
    text = _reject_non_string(value, "duration", DURATION_ALLOWED)
    number, unit = _split(text, DURATION_ALLOWED)
    scale = DURATION_UNITS_NS.get(unit.lower())
    if scale is None:
        raise Problem(_unit_problem(unit, "duration"), DURATION_ALLOWED)
    return round(number * scale)


def parse_rate_bps(value: object) -> int:
    """`"4Mbps"` → 4 000 000 (bits per second). Raises `Problem` naming the allowed units."""
    text = _reject_non_string(value, "rate", RATE_ALLOWED)
    number, unit = _split(text, RATE_ALLOWED)
    if unit.endswith("Bps"):
        raise Problem("'Bps' means bytes per second; rates are in bits per second", RATE_ALLOWED)
    scale = RATE_UNITS_BPS.get(unit.lower().replace("bit/s", "bps").replace("b/s", "bps"))
    if scale is None:
        raise Problem(_unit_problem(unit, "rate"), RATE_ALLOWED)
    return round(number * scale)


def parse_size_bytes(value: object) -> int:
    """`"64KB"` → 64 000, `"64KiB"` → 65 536, `1500` → 1500. Raises `Problem` on bad input."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise Problem("must not be negative", SIZE_ALLOWED)
        return value
    if isinstance(value, float):
        raise Problem("a byte count must be an integer", SIZE_ALLOWED)
    text = _reject_non_string(value, "size", SIZE_ALLOWED)
    if text.strip().isdigit():
        return int(exact_number(text))
    number, unit = _split(text, SIZE_ALLOWED)
    if unit.endswith("b") and unit.lower() in SIZE_UNITS_BYTES:
        raise Problem("a lower-case 'b' means bits; sizes are in bytes (B)", SIZE_ALLOWED)
    scale = SIZE_UNITS_BYTES.get(unit.lower()) if unit.endswith("B") else None
    if scale is None:
        raise Problem(_unit_problem(unit, "size"), SIZE_ALLOWED)
    return round(number * scale)


def _unit_problem(unit: str, kind: str) -> str:
    return f"missing {kind} unit" if not unit else f"unknown {kind} unit {unit!r}"


def format_duration_ns(value_ns: int) -> str:
    """The shortest exact unit string for a duration (`250_000_000` → `"250ms"`)."""
    for unit in ("s", "ms", "us"):  # no "min": users think of run lengths in seconds
        scale = DURATION_UNITS_NS[unit]
        if value_ns and value_ns % scale == 0:
            return f"{value_ns // scale}{unit}"
    return f"{value_ns}ns"


def format_rate_bps(value_bps: int) -> str:
    """The shortest exact unit string for a rate (`4_000_000` → `"4Mbps"`)."""
    for unit, scale in (("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("kbps", 10**3)):
        if value_bps and value_bps % scale == 0:
            return f"{value_bps // scale}{unit}"
    return f"{value_bps}bps"


def format_size_bytes(value_bytes: int) -> str:
    """An exact size in the largest binary unit that divides it (`2**30` → `"1GiB"`)."""
    for unit, factor in (("PiB", 2**50), ("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20)):
        if value_bytes >= factor and value_bytes % factor == 0:
            return f"{value_bytes // factor}{unit}"
    return f"{value_bytes}B"
