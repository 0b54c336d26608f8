"""The report figures' own SVG writer, checked against positions and ticks worked out by
hand: where a value lands inside the panel's frame, which "nice" ticks a range gets, log
decades and the zero left of a break, one marker per point, bars and hatches, and the same
bytes for the same chart."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest
from tcplab.present.chart import Chart, Panel, Point, Series
from tcplab.present.style import line_style, make_style
from tcplab.present.svg_axes import log_ticks, nice_ticks, text_width
from tcplab.present.svg_canvas import path_of
from tcplab.present.svg_figure import svg_figure

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"


def _frame(root: ET.Element) -> tuple[float, float, float, float]:
    """(left, top, right, bottom) of the first panel's frame: the black unfilled box."""
    for rect in root.iter(f"{SVG}rect"):
        if rect.get("fill") == "none" and rect.get("stroke") == "#000":
            x, y = float(rect.get("x", "")), float(rect.get("y", ""))
            return x, y, x + float(rect.get("width", "")), y + float(rect.get("height", ""))
    raise AssertionError("no panel frame")


def _uses(root: ET.Element, gid: str) -> list[tuple[float, float]]:
    group = next(g for g in root.iter(f"{SVG}g") if g.get("id") == gid)
    return [(float(u.get("x", "")), float(u.get("y", ""))) for u in group.iter(f"{SVG}use")]


def _texts(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(f"{SVG}text"))


def _one_panel(panel: Panel, kind: str = "lines") -> ET.Element:
    svg = svg_figure(Chart("t", "T", [panel], "algorithm", "c", kind=kind), make_style("web"))  # type: ignore[arg-type]
    return ET.fromstring(svg)


def test_a_point_lands_where_the_axis_ranges_put_it() -> None:
    # x from 0 to 10 with a 5 % margin each side: the view is -0.5 .. 10.5 (11 wide); y is
    # fixed at 0 .. 10, so y = 2.5 sits a quarter of the height above the bottom
    pts = [Point(0.0, 2.5), Point(5.0, 5.0), Point(10.0, 10.0)]
    panel = Panel("p", "x", "y", [Series("a", line_style(0), pts)], ylim=(0.0, 10.0))
    root = _one_panel(panel)
    left, top, right, bottom = _frame(root)
    w, h = right - left, bottom - top
    expected = [
        (left + 0.5 / 11 * w, bottom - 0.25 * h),
        (left + 0.5 * w, bottom - 0.5 * h),
        (left + 10.5 / 11 * w, top),
    ]
    got = _uses(root, "pts-0-0")
    assert len(got) == 3
    for (gx, gy), (ex, ey) in zip(got, expected, strict=True):
        assert gx == pytest.approx(ex, abs=0.11) and gy == pytest.approx(ey, abs=0.11)


def test_nice_ticks_for_hand_picked_ranges() -> None:
    # 1300 / 6 = 216.7 per interval: the next step of 1, 2, 2.5, 5 x 10^k is 250
    assert nice_ticks(0, 1300, 6) == [0, 250, 500, 750, 1000, 1250]
    # 0.97 / 5 = 0.194: step 0.2, exact decimals (no 0.6000000000000001)
    assert nice_ticks(0, 0.97, 5) == [0, 0.2, 0.4, 0.6, 0.8]
    # 11.1 / 9 = 1.23: step 2, from -2 (the first multiple inside) to 6
    assert nice_ticks(-3.2, 7.9, 9) == [-2, 0, 2, 4, 6]
    # 45 / 4 = 11.25: step 20
    assert nice_ticks(0, 45, 4) == [0, 20, 40]


def test_the_y_axis_is_labelled_with_whole_numbers_from_zero() -> None:
    # values up to 1230 with the 5 % margin: 0 .. 1291.5; at most 9 intervals of a 3.6 in
    # panel, so the step is 200 or 250; every label is a plain integer (no 1.2e+03)
    panel = Panel("p", "x", "y", [Series("a", line_style(0), [Point(1, 1230.0), Point(2, 400.0)])])
    labels = [t.text or "" for t in _texts(_one_panel(panel)) if t.get("text-anchor") == "end"]
    assert labels[0] == "0"
    assert labels in (
        ["0", "200", "400", "600", "800", "1000", "1200"],
        ["0", "250", "500", "750", "1000", "1250"],
    )


def test_log_axis_decades_in_plain_text_and_unlabelled_minor_marks() -> None:
    major, minor = log_ticks(2e-6, 3e-2)
    assert major == pytest.approx([1e-5, 1e-4, 1e-3, 1e-2])
    # 2..9 x 10^-6, -5, -4, -3 (8 each) and 2, 3 x 10^-2
    assert len(minor) == 34 and minor[0] == pytest.approx(2e-6) and minor[-1] == pytest.approx(3e-2)
    xs = [1e-5, 1e-4, 1e-3, 1e-2]
    panel = Panel(
        "p",
        "packet error rate",
        "goodput",
        [Series("a", line_style(0), [Point(x, 1.0) for x in xs])],
        xscale="log",
    )
    root = _one_panel(panel)
    decades = [t.text for t in _texts(root) if (t.text or "").startswith("10")]
    assert decades == ["10\u207b\u2075", "10\u207b\u2074", "10\u207b\u00b3", "10\u207b\u00b2"]
    marks = next(p for p in root.iter(f"{SVG}path") if p.get("id") == "minor-x")
    # the view is the decades widened by 5 % of 3 decades: 10^-5.15 .. 10^-1.85, i.e.
    # 7.08e-6 .. 0.0141, so the minor marks are 8, 9 x 10^-6 and 2..9 x 10^-5, -4, -3
    assert marks.get("d", "").count("M") == 2 + 24


def test_zero_of_a_log_axis_is_left_of_a_break() -> None:
    # zero at 1e-4, data at 1e-3 and 1e-2: the view is 1e-4 / 2.5 .. 1e-2 x 2, i.e.
    # log10 -4.398 .. -1.699 (2.699 decades); the "0" tick is 0.398 / 2.699 = 14.74 % in,
    # the break mark at sqrt(1e-4 x 1e-3) = 10^-3.5 is 0.898 / 2.699 = 33.27 % in
    pts = [Point(0.0, 1.0), Point(1e-3, 2.0), Point(1e-2, 3.0)]
    panel = Panel("p", "per", "g", [Series("a", line_style(0), pts)], xscale="log", zero_at=1e-4)
    root = _one_panel(panel)
    left, _, right, _ = _frame(root)
    texts = {t.text: t for t in _texts(root)}
    assert float(texts["0"].get("x", "")) == pytest.approx(
        left + 0.14744 * (right - left), abs=0.15
    )
    assert float(texts["//"].get("x", "")) == pytest.approx(
        left + 0.33270 * (right - left), abs=0.15
    )
    assert "0.001" in texts and "0.01" in texts  # numbers, as the saved figures write them
    assert len(_uses(root, "pts-0-0")) == 2 and len(_uses(root, "pts-0-0-zero")) == 1
    ((zx, _),) = _uses(root, "pts-0-0-zero")
    assert zx == pytest.approx(float(texts["0"].get("x", "")), abs=0.11)


def test_every_point_once_in_its_group_with_error_bars() -> None:
    series = [
        Series(
            f"s{j}",
            line_style(j),
            [Point(x, 1.0 + j + x, 0.5 + j + x, 1.5 + j + x) for x in range(4)],
        )
        for j in range(3)
    ]
    series.append(Series("theory", line_style(3), [Point(0, 1.0), Point(3, 4.0)], reference=True))
    root = _one_panel(Panel("p", "x", "y", series))
    for j in range(3):
        assert len(_uses(root, f"pts-0-{j}")) == 4
    groups = [g.get("id") for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("pts-")]
    assert groups == ["pts-0-0", "pts-0-1", "pts-0-2"]  # the reference is no data series
    # each error bar: one vertical stroke and two caps
    group = next(g for g in root.iter(f"{SVG}g") if g.get("id") == "pts-0-1")
    bars = [p.get("d", "") for p in group.iter(f"{SVG}path") if "V" in p.get("d", "")]
    assert len(bars) == 1 and bars[0].count("V") == 4 and bars[0].count("h") == 8


def test_grouped_bars_and_hatches_after_eight_colours() -> None:
    cats = ["bbr", "cubic", "reno"]
    series = [
        Series(f"s{j}", line_style(j), [Point(c, 5.0, 4.0, 6.0) for c in cats]) for j in range(10)
    ]
    panel = Panel(
        "p", "algorithm", "goodput", series, xscale="category", categories=cats, ylim=(0.0, 10.0)
    )
    svg = svg_figure(Chart("t", "T", [panel], "a", "c", kind="bars"), make_style("web"))
    root = ET.fromstring(svg)
    bars = [g for g in root.iter(f"{SVG}g") if (g.get("id") or "").startswith("bar-")]
    assert len(bars) == 30
    _, top, _, bottom = _frame(root)
    for g in bars:
        rect = next(g.iter(f"{SVG}rect"))
        # 5 on a 0..10 axis: half the frame's height, standing on its bottom
        assert float(rect.get("height", "")) == pytest.approx((bottom - top) / 2, abs=0.15)
        hatched = any("url(#" in (r.get("fill") or "") for r in g.iter(f"{SVG}rect"))
        series_index = int((g.get("id") or "").split("-")[2])
        assert hatched == (series_index >= 8)  # HATCHES[1] = "//" for the second round
    # the error bars: black, one stroke and two caps per bar
    errors = [p.get("d", "") for p in root.iter(f"{SVG}path") if p.get("stroke") == "#000"]
    assert sum(d.count("V") for d in errors if "h" in d) == 30
    assert len(re.findall(r"<pattern ", svg)) == 1  # defined once, used by 6 bars + legend
    # bars of one category side by side inside 0.8 of a category's width, in series order
    xs = [
        float(next(g.iter(f"{SVG}rect")).get("x", ""))
        for g in bars
        if g.get("id", "").endswith("-0")
    ]
    assert xs == sorted(xs)


def test_same_chart_same_bytes_parseable_with_unique_ids() -> None:
    def make() -> Chart:
        s = [
            Series(
                f"s{j}",
                line_style(j),
                [Point(float(x), x * (j + 1.0)) for x in range(50)],
                mark="steps" if j else "line",
            )
            for j in range(3)
        ]
        return Chart(
            "t",
            "T",
            [Panel("a", "time (s)", "cwnd", s), Panel("b", "time (s)", "cwnd", s)],
            "flow",
            "c",
            kind="series",
        )

    one, two = svg_figure(make(), make_style("web")), svg_figure(make(), make_style("web"))
    assert one == two
    root = ET.fromstring(one)
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids))
    assert 'width="' not in one.split(">", 1)[0] and "viewBox" in one.split(">", 1)[0]
    # a line of 50 points gets about 12 markers (every 4th: 0, 4, ..., 48)
    assert len(_uses(root, "pts-0-0")) == 13


def test_text_widths_follow_the_sans_serif_font() -> None:
    # DejaVu Sans advances (units of 2048 per em): digits 1303, "m" 1995, "i" 569
    assert text_width("0", 10.0) == pytest.approx(10 * 1303 / 2048, rel=0.01)
    assert text_width("mi", 10.0) == pytest.approx(10 * (1995 + 569) / 2048, rel=0.01)
    assert math.isclose(text_width("", 10.0), 0.0)


@pytest.mark.parametrize("style", ["web", "paper", "slides"])
def test_awkward_charts_still_give_well_formed_svg(style: str) -> None:
    nan = math.nan
    s = line_style(0)
    charts = [
        Chart("a", "A", [Panel("", "x", "y")], "t", "c"),  # nothing to draw
        Chart(
            "a",
            "A",
            [Panel("p", "x", "y", [Series("s", s, [Point(1, nan), Point(2, nan)])])],
            "t",
            "c",
        ),
        Chart(
            "a",
            "A",
            [Panel("p", "x", "y", [Series("s", s, [Point(3, 5.0)])], ylim=(2.0, 2.0))],
            "t",
            "c",
        ),
        Chart(
            "a",
            "A",
            [Panel("p", "x", "y", [Series("s", s, [Point(3, 5.0)])], xscale="log")],
            "t",
            "c",
            kind="series",
        ),
    ]
    cats = list("abcdefgh")
    label = "it's <b> & more"
    bars = Panel(
        "p",
        "x",
        "y",
        [Series(label, s, [Point(c, 1.0) for c in cats])],
        xscale="category",
        categories=cats,
    )
    charts.append(Chart("b", "B", [bars], "t", "c", kind="bars", shared_legend=False))
    for c in charts:
        root = ET.fromstring(svg_figure(c, make_style(style)))
        assert root.tag == f"{SVG}svg"
    # text is text, escaped and read back as written
    assert label in [t.text for t in _texts(root)]


def test_a_polyline_writes_tenths_and_leaves_out_points_that_round_alike() -> None:
    # 0.04 and -0.04 both round to 0 (no "-0"); 1.25 rounds to 1.2 (binary 1.25 is exact,
    # Python rounds half to even) but 10.05 to 10.1 (stored slightly above); -3.0 loses its
    # ".0"; (0.01, 0.02) rounds to the previous point and is left out, (1.26, 2.0) is not.
    points = [(0.04, -0.04), (0.01, 0.02), (1.25, 2.0), (1.26, 2.0), (-3.0, 10.05)]
    assert path_of(points) == "M0 0L1.2 2L1.3 2L-3 10.1"
    assert path_of([]) == ""


def test_a_scale_maps_many_values_as_it_maps_one() -> None:
    from tcplab.present.svg_axes import Scale

    # [0, 10] onto [100, 200]: 5 is half way; a log scale [1, 100] onto [0, 10]: 10 is too
    lin, log = Scale(0.0, 10.0, 100.0, 200.0), Scale(1.0, 100.0, 0.0, 10.0, log=True)
    assert lin.many([0.0, 5.0, 10.0, 2.5]) == [100.0, 150.0, 200.0, 125.0]
    assert log.many([1.0, 10.0, 100.0]) == [0.0, 5.0, 10.0]
    values = [0.1 * i for i in range(1, 300)]
    assert lin.many(values) == [lin(v) for v in values]
    assert log.many(values) == [log(v) for v in values]
