"""Numbers in tables: one precision per column, intervals in the mean's precision.

A column's decimals are chosen once from its largest value (`SIGNIFICANT` significant
digits there): 38.76 and 9.733 in one goodput column become "38.76" and "9.73"; 0.8445 ±
7.78e-05 in a Jain column whose largest value is 0.9 becomes "0.8445 ± 0.0001". Scientific
and fixed notation are never mixed. An interval is `mean ± half` (symmetric), `mean +a/-b`
(clipped at the metric's range), the mean alone for one run; identical repetitions are
"deterministic", not "± 0". Swept values keep `labels.format_value`'s short form.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

SIGNIFICANT: Final = 4
MAX_DECIMALS: Final = 6


def decimals(values: Iterable[float], significant: int = SIGNIFICANT) -> int:
    """Decimals that give the largest finite |value| `significant` significant digits; none
    when every value is a whole number."""
    finite = [abs(v) for v in values if v == v and math.isfinite(v) and v != 0]
    if not finite or all(v == int(v) for v in finite):  # counts stay whole numbers
        return 0
    exponent = math.floor(math.log10(max(finite)))
    return max(0, min(MAX_DECIMALS, significant - 1 - exponent))


def fixed(value: float, places: int) -> str:
    if value != value:
        return "-"
    text = f"{value:.{places}f}"
    return "0" if text.strip("-0.") == "" else text


@dataclass(frozen=True)
class Interval:
    mean: float
    half: float  # NaN: one run
    low: float
    high: float

    @property
    def deterministic(self) -> bool:
        return self.half == 0

    def text(self, places: int) -> str:
        """The interval at `places` decimals (the deterministic note is left to the caller)."""
        m = fixed(self.mean, places)
        if self.half != self.half or self.half == 0:
            return m
        below, above = self.mean - self.low, self.high - self.mean
        if math.isclose(below, self.half) and math.isclose(above, self.half):
            return f"{m} ± {_half(self.half, places)}"
        return f"{m} +{_half(above, places)}/-{_half(below, places)}"


def _half(value: float, places: int) -> str:
    """A half-width at the mean's precision; below it, "<0.001" rather than a false 0."""
    text = fixed(value, places)
    if float(text) == 0 and value > 0:
        return f"<{fixed(10.0**-places, places)}"
    return text
