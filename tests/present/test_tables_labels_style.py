"""Table numbers, key names and units, styles and the palette, against hand-worked values."""

from __future__ import annotations

import itertools
import math

import pytest
from tcplab.errors import ScenarioError
from tcplab.present.labels import KeyContext, format_number, key_label, key_name
from tcplab.present.style import (
    COLOURS,
    STYLES,
    assign_styles,
    line_style,
    make_style,
    parse_size,
)
from tcplab.present.tables import Interval, decimals, fixed


def test_a_column_has_one_precision_from_its_largest_value() -> None:
    # 38.76 has its 4th significant digit at 0.01: two decimals for the whole column
    assert decimals([38.7589, 9.7333, 0.5]) == 2
    assert [fixed(v, 2) for v in (38.7589, 9.7333)] == ["38.76", "9.73"]
    # Jain's index below 1: 4 decimals; its tiny interval is "<" the precision, never 0
    assert decimals([0.8445, 0.5]) == 4
    i = Interval(0.8445, 7.78e-05, 0.8445 - 7.78e-05, 0.8445 + 7.78e-05)
    assert i.text(4) == "0.8445 ± 0.0001"
    assert Interval(0.8445, 1e-6, 0.8445 - 1e-6, 0.8445 + 1e-6).text(4) == "0.8445 ± <0.0001"
    # counts in the thousands: no decimals, no scientific notation
    assert decimals([19730.0, 1131.0]) == 0
    assert Interval(19730.4, 1131.2, 18599.2, 20861.6).text(0) == "19730 ± 1131"


def test_clipped_deterministic_and_single_run_intervals() -> None:
    # 45 ± 63.5 clipped to [0, 50]: asymmetric, both sides stated
    assert Interval(45.0, 63.53, 0.0, 50.0).text(2) == "45.00 +5.00/-45.00"
    # identical repetitions and one run: the mean alone (the caller says "deterministic")
    assert Interval(3.487, 0.0, 3.487, 3.487).deterministic
    assert Interval(3.487, 0.0, 3.487, 3.487).text(3) == "3.487"
    assert Interval(3.487, math.nan, math.nan, math.nan).text(3) == "3.487"


def test_keys_have_human_names_and_the_unit_the_study_wrote() -> None:
    ctx = KeyContext(
        segments=("internet", "satellite"),
        written={"path.segments.1.rate": ("1Mbps", "4Mbps"), "bottleneck.delay": ("250ms",)},
    )
    assert key_name("bottleneck.per") == "packet error rate"
    label = key_label("path.segments.1.rate", "bit/s", ctx)
    assert (label.text, label.factor) == ("satellite link rate (Mbit/s)", 1e-6)
    assert key_label("bottleneck.delay", "ms", ctx).text == "bottleneck one-way delay (ms)"
    kbps = KeyContext(written={"bottleneck.rate": ("500kbps",)})
    assert key_label("bottleneck.rate", "bit/s", kbps).unit == "kbit/s"
    assert key_name("flows.0.pep.cca") == "flow 0 PEP-leg algorithm"
    assert format_number(2.0571e-06) == "2.06e-06" and format_number(64.0) == "64"


def test_24_lines_are_told_apart_by_colour_marker_and_dash() -> None:
    looks = [line_style(i) for i in range(64)]
    assert len({(s.colour, s.marker, s.dash) for s in looks}) == 64
    # neighbours in a legend never share a colour
    assert all(a.colour != b.colour for a, b in itertools.pairwise(looks))
    # the 9th line has the 1st line's colour but another marker
    assert looks[8].colour == looks[0].colour == COLOURS[0]
    assert looks[8].marker != looks[0].marker
    names = [(f"cca{i}",) for i in range(24)]
    assert len({(s.colour, s.marker, s.dash) for s in assign_styles(names).values()}) == 24
    # two keys: colour by the algorithm, marker and dash by the second key
    two = assign_styles([("cubic", "none"), ("cubic", "pep"), ("reno", "none")])
    assert two[("cubic", "none")].colour == two[("cubic", "pep")].colour
    assert two[("cubic", "none")].marker != two[("cubic", "pep")].marker


def test_styles_sizes_and_fonts() -> None:
    # web: 12 in at 100 dpi fills a 1200 px page; no tick text below 9 pt
    assert STYLES["web"].width_in * STYLES["web"].dpi == 1200
    assert all(s.tick_pt >= 7.2 for s in STYLES.values())
    assert STYLES["web"].tick_pt >= 9.0
    assert parse_size("17x8cm", 300) == pytest.approx((17 / 2.54, 8 / 2.54))
    assert parse_size("1200x600px", 100) == (12.0, 6.0)
    style = make_style("paper", "7x3", 9)
    assert (style.width_in, style.height_in, style.font_pt) == (7.0, 3.0, 9.0)
    for bad, needle in (("7by3", "--size"), ("0.5x3", "out of range")):
        with pytest.raises(ScenarioError, match=needle):
            make_style("web", bad)
    with pytest.raises(ScenarioError, match="--font-size"):
        make_style("web", None, 100)


def test_caption_does_not_fix_a_queue_that_a_varied_rate_resizes() -> None:
    """geo-leaky's queue is 2 x BDP: 334 packets at 4 Mbit/s and ~500 ms RTT
    (2 x 4e6 x 0.5002 / (8 x 1500) = 333.5 -> 334), but 4169 in its 50 Mbit/s variant, so a
    caption may state 334 only where no sweep or variant changes a rate or a delay."""
    from tcplab.present.describe import fixed_parameters

    link = {
        "rate_bps": 4_000_000,
        "delay_ns": 250_000_000,
        "per": 0.0,
        "queue": {"kind": "droptail", "limit_pkts": 334},
    }
    base = {
        "bottleneck": {"forward": link, "reverse": link},
        "flows": [{"cca": "cubic", "app": {"kind": "bulk"}}],
        "duration_ns": 600_000_000_000,
    }
    plain = {"base_scenario": base, "sweep": {"bottleneck.per": [0, 1e-3]}, "variants": {"": {}}}
    assert "DropTail queue 334 packets" in fixed_parameters(plain, ["bottleneck.per"])
    variant = {**plain, "variants": {"": {}, "fast": {"bottleneck.rate": "50Mbps"}}}
    text = fixed_parameters(variant, ["bottleneck.per"])
    assert "queue 334 packets" not in text
    assert "sized per point" in text
    swept_delay = {**plain, "sweep": {"bottleneck.delay": ["10ms", "250ms"]}}
    assert "sized per point" in fixed_parameters(swept_delay, ["bottleneck.delay"])
