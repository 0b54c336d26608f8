"""Axes of the report figures without a font or a plotting library: how wide a label is
(a per-character width table of DejaVu Sans, the sans-serif the pages ask for first), where
the ticks go ("nice" steps of 1, 2, 2.5 or 5 x 10^k on a linear axis, decades on a log one)
and how a value maps to a position.

All lengths are in points (1/72 in), the unit of the figure's viewBox.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from .labels import format_number
from .layout import decade_label

#: Advance widths of DejaVu Sans in em (1/1000 of its 2048-unit em, rounded); characters
#: not listed count as `_WIDE`, so an unknown glyph makes room rather than overlap.
_WIDTHS: Final[dict[str, float]] = {
    " ": 0.318, "!": 0.401, '"': 0.460, "#": 0.838, "%": 0.950, "&": 0.780, "'": 0.275,
    "(": 0.390, ")": 0.390, "*": 0.500, "+": 0.838, ",": 0.318, "-": 0.361, ".": 0.318,
    "/": 0.337, ":": 0.337, ";": 0.337, "<": 0.838, "=": 0.838, ">": 0.838, "?": 0.531,
    "@": 1.000, "[": 0.390, "]": 0.390, "_": 0.500, "|": 0.337, "~": 0.838, "\u00d7": 0.838,
    "\u00b1": 0.838, "\u00b7": 0.318, "\u00b5": 0.636, "\u2013": 0.500, "\u2014": 1.000,
    "\u2265": 0.838, "\u2264": 0.838, "\u207b": 0.536, "\u2192": 0.838,
    # superscript digits of the log axes' decades (10\u207b\u2075)
    **dict.fromkeys("\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079", 0.401),
    **dict.fromkeys("0123456789", 0.636),
    **dict(zip("abcdefghijklmnopqrstuvwxyz", (
        0.613, 0.635, 0.550, 0.635, 0.615, 0.352, 0.635, 0.634, 0.278, 0.278, 0.579, 0.278,
        0.974, 0.634, 0.612, 0.635, 0.635, 0.411, 0.521, 0.392, 0.634, 0.592, 0.818, 0.592,
        0.592, 0.525), strict=True)),
    **dict(zip("ABCDEFGHIJKLMNOPQRSTUVWXYZ", (
        0.684, 0.686, 0.698, 0.770, 0.632, 0.575, 0.775, 0.752, 0.295, 0.295, 0.656, 0.557,
        0.863, 0.748, 0.787, 0.603, 0.787, 0.695, 0.635, 0.611, 0.732, 0.684, 0.989, 0.685,
        0.611, 0.685), strict=True)),
}  # fmt: skip
_WIDE: Final = 0.80


def text_width(text: str, size_pt: float) -> float:
    """The width of `text` set in `size_pt` sans-serif, in points."""
    return sum(_WIDTHS.get(ch, _WIDE) for ch in text) * size_pt


#: Steps of a linear axis, per power of ten.
NICE_STEPS: Final = (1.0, 2.0, 2.5, 5.0, 10.0)


def nice_ticks(low: float, high: float, most: int) -> list[float]:
    """Ticks inside [low, high] at the smallest step of `NICE_STEPS` x 10^k that makes at
    most `most` intervals of the range."""
    if not high > low:
        return [low]
    raw = (high - low) / max(most, 1)
    scale = 10.0 ** math.floor(math.log10(raw))
    step = next(s * scale for s in NICE_STEPS if s * scale >= raw * (1 - 1e-9))
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    # k * step, not a running sum: 0.1 + 0.2 must be written 0.3
    return [_clean(k * step) for k in range(first, last + 1)]


def _clean(v: float) -> float:
    return 0.0 if v == 0 else float(f"{v:.12g}")


def tick_label(v: float, step: float) -> str:
    """A linear tick's number: all its integer digits and as many decimals as the step
    has (1200 for a step of 200, 0.25 for a step of 0.05, 2.5 for 2.5), no float noise."""
    if v == 0:
        return "0"
    mantissa = step / 10.0 ** math.floor(math.log10(step))
    decimals = max(0, -math.floor(math.log10(step)) + (1 if round(mantissa, 6) == 2.5 else 0))
    return format_number(v, max(1, math.floor(math.log10(abs(v))) + 1 + decimals))


def log_ticks(low: float, high: float) -> tuple[list[float], list[float]]:
    """(decades, minor ticks at 2..9 x 10^k) inside [low, high], `low` > 0."""
    first = math.floor(math.log10(low))
    last = math.ceil(math.log10(high))
    major, minor = [], []
    for k in range(first, last + 1):
        d = 10.0**k
        if low * (1 - 1e-9) <= d <= high * (1 + 1e-9):
            major.append(d)
        minor += [m * d for m in range(2, 10) if low <= m * d <= high]
    return major, minor


@dataclass(frozen=True)
class Scale:
    """Data values on [low, high] to positions on [start, end] (points; y runs downwards,
    so its `start` is the bottom of the panel)."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __call__(self, v: float) -> float:
        if self.log:
            a, b, v = math.log10(self.low), math.log10(self.high), math.log10(v)
        else:
            a, b = self.low, self.high
        return self.start + (v - a) / (b - a) * (self.end - self.start)

    def many(self, values: Sequence[float]) -> list[float]:
        """`self(v)` of each value, the same arithmetic without a call each (a 600 s series
        panel has tens of thousands of points)."""
        a, b, start = self.low, self.high, self.start
        span, width = b - a, self.end - start
        if self.log:
            a, b = math.log10(self.low), math.log10(self.high)
            span = b - a
            log10 = math.log10
            return [start + (log10(v) - a) / span * width for v in values]
        return [start + (v - a) / span * width for v in values]


@dataclass(frozen=True)
class Ticks:
    """Where an axis is marked and what is written there; minor marks carry no label."""

    at: Sequence[float]
    labels: Sequence[str]
    minor: Sequence[float] = ()


def linear_ticks(low: float, high: float, most: int) -> Ticks:
    at = nice_ticks(low, high, most)
    step = at[1] - at[0] if len(at) > 1 else (abs(at[0]) or 1.0)
    return Ticks(at, [tick_label(v, step) for v in at])


def log_axis_ticks(low: float, high: float) -> Ticks:
    """Decades labelled 10ⁿ with unlabelled minor marks; a range holding fewer than two
    decades labels 1, 2 and 5 x 10^k instead, so the axis still reads."""
    major, minor = log_ticks(low, high)
    if len(major) >= 2:
        return Ticks(major, [decade_label(v) for v in major], minor)
    at = [v for v in sorted([*major, *minor]) if f"{v:.1e}"[0] in "125"]
    rest = [v for v in minor if v not in at]
    return Ticks(at, [format_number(v, 2) for v in at], rest)


def padded(low: float, high: float, log: bool = False, margin: float = 0.05) -> tuple[float, float]:
    """The data range widened by `margin` of its span each side (in log space on a log
    axis), as a plot leaves room around its outermost points."""
    if log:
        a, b = math.log10(low), math.log10(high)
        if a == b:
            a, b = a - 0.5, b + 0.5
        span = (b - a) * margin
        return 10.0 ** (a - span), 10.0 ** (b + span)
    if low == high:
        pad = abs(low) * 0.05 or 0.5
        return low - pad, high + pad
    span = (high - low) * margin
    return low - span, high + span
